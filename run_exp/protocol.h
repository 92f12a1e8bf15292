/* The handshake between run_exp and a worker, and the per-job CSV both kinds of worker write.
 *
 * run_exp gives each worker two pipes, named by fd number in the environment:
 *   GPUYIELD_STATUS_FD  (worker -> run_exp): "ready\n" once loaded and warmed up, then
 *                       "job <n> <jct_ms>\n" after each job's row is written.
 *   GPUYIELD_CONTROL_FD (run_exp -> worker): "go\n" starts the job loop, "stop\n" ends it after
 *                       the current job; end of file (run_exp gone) also means stop.
 * pyext/gpuyield/worker.py speaks the same protocol in Python. */
#ifndef RUN_EXP_PROTOCOL_H
#define RUN_EXP_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_STATUS_FD_ENV "GPUYIELD_STATUS_FD"
#define PROTO_CONTROL_FD_ENV "GPUYIELD_CONTROL_FD"
/* The fds the worker finds them on (run_exp dup2s its pipe ends there). */
#define PROTO_STATUS_FD 3
#define PROTO_CONTROL_FD 4

#define JOB_CSV_HEADER \
    "job,start_ns,end_ns,jct_ms,drain_wait_ns,drained,gpu_mem_peak_bytes,gpu_mem_reserved_peak_bytes\n"

/* The CSV's `drained` column, as both workers (standin_worker.c, pyext/gpuyield/worker.py) write
 * it and results.c reads it. */
enum job_drained {
    JOB_NOT_MARKED = -1,     /* the job was not marked (priority 0, or no control): no begin */
    JOB_DRAIN_TIMED_OUT = 0, /* the begin waited and the drain timeout passed first */
    JOB_DRAINED = 1,         /* the begin waited until lower work had drained (or there was none) */
    JOB_CORUN = 2,           /* the policy co-runs: the begin closed the gate and did not wait */
};

struct job_row {
    long job;
    uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC (Python's time.monotonic_ns()) */
    uint64_t drain_wait_ns;
    int drained;               /* enum job_drained: what the job's begin did about lower work */
    uint64_t mem_peak, mem_reserved_peak;
};

/* One CSV line (with its newline) into buf; returns its length. */
int job_row_format(const struct job_row *r, char *buf, size_t len);
/* Parse one CSV line (no header). Returns 0, or -1 when the line is not a whole row. */
int job_row_parse(const char *line, struct job_row *r);

/* ---- worker side ---- */
struct worker_link {
    int status_fd, control_fd;
};
/* From the environment; -1 with a message on stderr when run outside run_exp. */
int worker_link_open(struct worker_link *link);
int worker_link_send(struct worker_link *link, const char *line);
/* Block until "go" (returns true) or "stop"/EOF (false). */
bool worker_link_wait_go(struct worker_link *link);
/* True once "stop" or EOF arrived; waits up to timeout_ms for it (0: just look). */
bool worker_link_stop_requested(struct worker_link *link, int timeout_ms);

#endif
