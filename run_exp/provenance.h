/* Where a run's figures came from, for summary.json: when, on which host and GPU, with which
 * gpuyield (version, and the git commit of the source tree run_exp was built in, if it is one). */
#ifndef RUN_EXP_PROVENANCE_H
#define RUN_EXP_PROVENANCE_H

#include <jansson.h>
#include <stdbool.h>

/* {"time", "host", "gpu": {"name", "driver"} (nulls when nvidia-smi is absent or simulated),
 *  "gpuyield_version", "git_commit" (null outside a git checkout), "config" (absolute path)}. */
json_t *provenance_json(const char *config_path, int device_id, bool simulated);

#endif
