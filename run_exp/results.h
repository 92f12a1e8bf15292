/* What a run leaves behind besides the workers' own CSV/log files: models_pid.json, summary.json
 * (in every output directory of the experiment) and the table printed at the end. */
#ifndef RUN_EXP_RESULTS_H
#define RUN_EXP_RESULTS_H

#include <stdbool.h>

#include "config.h"
#include "supervise.h"

struct run_info {
    const char *segment;
    bool simulated;
    enum run_outcome outcome;
    const char *fake_log; /* simulate: the simulated kernel log kept with the results, or NULL */
    const char *policy;   /* "drain" or "corun" */
    bool mps;
};

/* Writes models_pid.json and summary.json, prints the table. Returns 0, or -1 when a file could
 * not be written (printed). */
int results_write(const struct exp_config *cfg, const struct worker_result *res, const struct run_info *info);

#endif
