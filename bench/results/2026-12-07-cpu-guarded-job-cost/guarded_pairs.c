/* The profile harness of this record: begin/end pairs of a level-1 job on a guarded segment under
 * MPS with stop pinned (a level-0 process registered), back to back, or each after 2 ms asleep
 * (any argument). Built against the controller's library:
 *   gcc -std=c11 -O2 -g -Icontroller -o /tmp/guarded_pairs guarded_pairs.c BUILD/lib/libgycontrol.a -lpthread -lrt -lm
 *   perf record -o warm.data /tmp/guarded_pairs; perf record -o cold.data /tmp/guarded_pairs cold */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <unistd.h>

#include "gpuyield.h"
#include "guarded.h"

int main(int argc, char **argv)
{
    (void)argv;
    int cold = argc > 1;
    char tag[64];
    snprintf(tag, sizeof tag, "guarded-pairs-%d", getpid());
    gy_shm shm, lower;
    gy_err err;
    if (gy_create(tag, 0, &shm, &err) || gy_register(&shm, 1, &err) || gy_open(tag, &lower, &err) ||
        gy_register(&lower, 0, &err)) {
        fprintf(stderr, "guarded_pairs: %s\n", err.msg);
        gy_remove(tag, NULL);
        return 1;
    }
    gy_set_policy(&shm, GY_POLICY_GUARDED, true);
    if (gy_guarded_force(&shm, GY_ARM_STOP, &err)) {
        fprintf(stderr, "guarded_pairs: %s\n", err.msg);
        gy_remove(tag, NULL);
        return 1;
    }
    for (long i = 0; i < (cold ? 3000 : 2000000); i++) {
        if (cold)
            usleep(2000);
        gy_job job;
        gy_begin(&shm, 1, &job, &err);
        gy_job_exit(&shm, &job, &err);
    }
    gy_close(&lower);
    gy_close(&shm);
    gy_remove(tag, NULL);
    return 0;
}
