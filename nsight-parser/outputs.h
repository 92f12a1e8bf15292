/* Writes OUTDIR: per model <name>_<pid>.csv, summary.log, summary.json. Every file is written
 * under a temporary name and renamed only once all are complete, so a failure leaves no
 * half-written file (and removes OUTDIR again if this run created it). */
#ifndef NP_OUTPUTS_H
#define NP_OUTPUTS_H

#include <stdbool.h>

#include "model_list.h"
#include "report.h"

/* Fails early, before any parsing, when OUTDIR cannot be created or written. */
bool np_check_outdir(const char *outdir);
bool np_write_outputs(const struct np_report *report, const struct np_model_list *models, const char *outdir,
                      const char *input_path);

#endif
