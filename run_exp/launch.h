/* What a worker is started with: its program and arguments, and the environment gpuyield adds
 * (hooks, segment, priority, mode, Python path, handshake fds). Shared by --dry-run and the
 * real start so what is printed is exactly what runs. */
#ifndef RUN_EXP_LAUNCH_H
#define RUN_EXP_LAUNCH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* Where run_exp's build output lies: $GPUYIELD_BUILD, else derived from run_exp's own path
 * ($(O)/bin/run_exp, PREFIX/bin/run_exp, or pip's site-packages/gpuyield/bin/run_exp). */
struct install {
    char build[PATH_MAX];
    char hooks_lib[PATH_MAX];  /* $(O)/lib/libgpuyield.so */
    char python_dir[PATH_MAX]; /* $(O)/python; PREFIX/lib/gpuyield/python; pip: site-packages */
    char standin[PATH_MAX];    /* $(O)/bin/gpuyield-standin */
    char fakecuda_dir[PATH_MAX]; /* $(O)/fakecuda (holds libcuda.so.1); PREFIX/lib/gpuyield/fakecuda */
};

int install_locate(struct install *in);

struct launch_settings {
    const char *python;        /* interpreter for the real worker */
    const char *segment;       /* full segment name */
    bool simulate;
    const char *fake_device_file; /* simulate: FAKECUDA_DEVICE_FILE */
    const char *fake_log;      /* simulate: FAKECUDA_LOG */
    const char *mps_pipe_dir;  /* NULL: no MPS; else the daemon's directories for the workers */
    const char *mps_log_dir;
    int mps_top_priority;      /* a policy meant for MPS: workers below it run at MPS client priority below
                                  normal; -1: leave every worker at normal */
};

#define LAUNCH_MAX_ARGS 40
#define LAUNCH_MAX_ENV 20

struct launch {
    char *argv[LAUNCH_MAX_ARGS]; /* NULL-terminated; argv[0] is searched in PATH */
    char *env[LAUNCH_MAX_ENV];   /* "NAME=value" set on top of run_exp's environment */
    int nargs, nenv;
    bool failed;                 /* an argument or variable could not be added (out of memory, too many) */
    const char *mode_desc;       /* one phrase: hooks on/off, jobs marked or not */
};

/* Under --simulate, the fake GPU a model's device_id runs on: its rank among the distinct
 * device_ids of the models (0..count-1); count: how many fake GPUs the run needs. */
int launch_simulated_device(const struct exp_config *cfg, int device_id, int *count);
int launch_build(const struct exp_config *cfg, const struct exp_model *m, const struct install *in,
                 const struct launch_settings *s, struct launch *out);
/* run_exp's environment with out->env applied (replacing the same names); caller frees with
 * launch_free_envp. */
char **launch_envp(const struct launch *l);
void launch_free_envp(char **envp);
void launch_free(struct launch *l);

/* The argv as one shell-quoted line. */
void launch_format_command(const struct launch *l, char *buf, size_t len);

#endif
