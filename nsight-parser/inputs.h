/* The readers of the three input kinds. Each fills an initialised np_report and returns false
 * after printing what is wrong with the input and how to fix it. */
#ifndef NP_INPUTS_H
#define NP_INPUTS_H

#include <stdbool.h>

#include "report.h"

/* An SQLite export (nsys export --type sqlite). */
bool np_read_sqlite(const char *path, struct np_report *report);
/* The CSV of `nsys stats --report cuda_kern_exec_trace --format csv` (no streams, no NVTX). */
bool np_read_kern_exec_csv(const char *path, struct np_report *report);
/* Exports an .nsys-rep to SQLite in a fresh temporary directory with nsys (nsys_path, or nsys
 * found on PATH when NULL). On success *sqlite_path and *temp_dir are malloc'd; remove both with
 * np_remove_export once done. */
bool np_export_nsys_rep(const char *rep_path, const char *nsys_path, char **sqlite_path,
                        char **temp_dir);
void np_remove_export(char *sqlite_path, char *temp_dir);

#endif
