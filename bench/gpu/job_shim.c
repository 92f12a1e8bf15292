#include "job_shim.h"

#include <stdio.h>

#include "gpuyield.h"

static gy_shm shm;
static gy_job job;

int bench_connect(int priority)
{
    gy_err err;
    if (gy_open(NULL, &shm, &err) || gy_register(&shm, priority, &err)) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return -1;
    }
    return 0;
}

uint64_t bench_job_begin(int priority, int *timed_out)
{
    gy_err err;
    if (gy_begin(&shm, priority, &job, &err)) {
        fprintf(stderr, "bench: %s\n", err.msg);
        *timed_out = 1;
        return 0;
    }
    *timed_out = job.timed_out;
    return job.wait_ns;
}

void bench_job_end(void)
{
    gy_err err;
    if (gy_job_exit(&shm, &job, &err))
        fprintf(stderr, "bench: %s\n", err.msg);
}

uint64_t bench_now_ns(void)
{
    return gy_now_ns();
}
