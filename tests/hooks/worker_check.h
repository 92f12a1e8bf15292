/* The checks of the cuda_worker program (cuda_worker.c and partition_scenarios.c): each failed
 * check prints a line "FAIL ..." and is counted; CU(call) fails and exits on a driver error. */
#ifndef GY_TEST_WORKER_CHECK_H
#define GY_TEST_WORKER_CHECK_H

#include <stdlib.h>

/* Failed checks so far in this process (each forked child counts its own). */
extern int failures;
/* Prints "FAIL <message>" and counts it; safe from several threads. */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define CU(call)                                                                                     \
    do {                                                                                             \
        CUresult rc_ = (call);                                                                       \
        if (rc_ != CUDA_SUCCESS) {                                                                   \
            fail("%s returned %d (line %d)", #call, rc_, __LINE__);                                   \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

#endif
