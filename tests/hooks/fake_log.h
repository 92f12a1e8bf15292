/* Reading the fake driver's FAKECUDA_LOG: one record per executed kernel or graph, and the
 * number of VIOLATION lines (illegal calls, e.g. a synchronize during a capture). */
#ifndef GY_TEST_FAKE_LOG_H
#define GY_TEST_FAKE_LOG_H

#include <stdint.h>

struct fake_kernel {
    int pid;
    uint64_t stream, submit, start, end;
    unsigned outstanding;
    unsigned green_sms; /* its stream's green context's SMs; 0: not a green stream */
    char kind[8];
    char name[32];
};

struct fake_log {
    struct fake_kernel *kernels;
    int n;
    int violations;
    char first_violation[512];
};

/* Returns 0, or -1 if the file cannot be read or a line does not parse (message on stderr). */
int fake_log_read(const char *path, struct fake_log *out);
void fake_log_free(struct fake_log *log);
/* Kernels of one process. */
int fake_log_count_pid(const struct fake_log *log, int pid);

#endif
