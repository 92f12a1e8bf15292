/* The models of a report: one per process that ran kernels, named after models_pid.json, else
 * after the process name the report gives, else "process". */
#ifndef NP_MODEL_LIST_H
#define NP_MODEL_LIST_H

#include "models_pid.h"
#include "report.h"

struct np_model {
    uint32_t pid;
    char *name;              /* as given */
    char *stem;              /* <name>_<pid>, safe as a file name */
    size_t first_kernel;     /* into the report's kernels, sorted by np_report_sort_kernels */
    size_t kernel_count;
};

struct np_model_list {
    struct np_model *models; /* models_pid.json's order first, then by pid */
    size_t count;
};

/* report's kernels must be sorted. pids may be NULL. Warns about pid-file entries without
 * kernels. Returns false only when out of memory. */
bool np_model_list_build(const struct np_report *report, const struct np_models_pid *pids,
                         struct np_model_list *out);
void np_model_list_free(struct np_model_list *list);

#endif
