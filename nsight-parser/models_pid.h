/* models_pid.json, as run_exp (and the reference's run_exp.py) writes it: [[name, pid], ...]. */
#ifndef NP_MODELS_PID_H
#define NP_MODELS_PID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct np_model_name {
    char *name;
    uint32_t pid;
};

struct np_models_pid {
    struct np_model_name *models;
    size_t count;
};

/* Returns false after printing what is wrong (file, line:column, what is expected). */
bool np_models_pid_load(const char *path, struct np_models_pid *out);
void np_models_pid_free(struct np_models_pid *m);
/* The position of pid in the file, or -1. */
long np_models_pid_find(const struct np_models_pid *m, uint32_t pid);

#endif
