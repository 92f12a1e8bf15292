/* A C interface to the controller for the CUDA benchmark programs (C++ cannot include the
 * C11 atomics of gpuyield.h). */
#ifndef GY_BENCH_JOB_SHIM_H
#define GY_BENCH_JOB_SHIM_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/* Opens $GPUYIELD_SHM and registers at `priority`; 0 or -1 (message on stderr). */
int bench_connect(int priority);
/* Begins a job and waits for the drain; returns the ns the wait took, sets *timed_out. */
uint64_t bench_job_begin(int priority, int *timed_out);
void bench_job_end(void);
uint64_t bench_now_ns(void);
#ifdef __cplusplus
}
#endif
#endif
