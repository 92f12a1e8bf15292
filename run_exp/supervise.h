/* Starting the workers and keeping them honest: spawn with the handshake pipes, hold them until
 * every model is loaded, release them together, run exp_dur seconds (each worker at least
 * min_jobs jobs), stop them, and stop everything on SIGINT/SIGTERM or a dead worker. */
#ifndef RUN_EXP_SUPERVISE_H
#define RUN_EXP_SUPERVISE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "launch.h"
#include "gpuyield.h"

struct supervise_options {
    double ready_timeout_s;    /* loading + warm-up bound */
    double min_jobs_timeout_s; /* how long after exp_dur to wait for min_jobs */
    double stop_timeout_s;     /* from "stop" to exit, before SIGTERM */
    int min_jobs;
    gy_shm *shm;               /* for counters; NULL when not readable */
};

/* Per worker, what the run left. Counters come from the last segment snapshot (slots vanish
 * when a process ends), summed over the slots of its pid. */
struct worker_result {
    pid_t pid;
    long jobs;                  /* as reported over the status pipe */
    bool started;               /* forked and exec'd */
    bool ready;
    bool exited;
    int wait_status;            /* from waitpid */
    bool failed;                /* died before being told to stop, or exited non-zero */
    bool killed_by_us;          /* needed SIGTERM/SIGKILL to end */
    double run_s;               /* from "go" to the stop request (throughput's denominator) */
    uint64_t waits, blocked_ns, drains, drain_timeouts, launches;
};

enum run_outcome { RUN_OK = 0, RUN_WORKER_FAILED, RUN_INTERRUPTED, RUN_START_FAILED };

/* Turns SIGINT, SIGTERM and SIGHUP into a flag; call before anything needs cleaning up. */
void supervise_install_signals(void);
/* True once SIGINT, SIGTERM or SIGHUP arrived. */
bool supervise_interrupted(void);
/* The exit status of a run stopped by a signal: 128 + the first signal that came (130 for SIGINT,
 * 143 for SIGTERM, as a shell reports a process that signal ended); 0 when none came. */
int supervise_signal_status(void);

enum run_outcome supervise_run(const struct exp_config *cfg, struct launch *launches,
                               const struct supervise_options *opt, struct worker_result *results);

#endif
