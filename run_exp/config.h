/* The experiment file: the reference JSON format (models[], exp_dur, device_id), loaded and
 * checked in full before anything is started. */
#ifndef RUN_EXP_CONFIG_H
#define RUN_EXP_CONFIG_H

#include <limits.h>
#include <stdbool.h>

#define EXP_MAX_MODELS 32
#define EXP_MODE_MAX 32

struct exp_model {
    /* As written in the file. */
    const char *model_name;
    const char *model_weight;      /* NULL or "" when absent: random weights */
    const char *input_file_path;
    const char *output_file_path;
    const char *output_file_name;
    double sleep_time;             /* seconds between jobs */
    int priority;                  /* 0..7, higher wins */
    bool resize;
    int resize_h, resize_w;        /* 0 when not given */
    int batch_size;                /* 1 when absent */
    bool control, controlsync, controlEvent, controlTime;
    int queue_sync, queue_event_group, queue_time_us;
    int device_id;                 /* "device_id" of the model, else the experiment's: its GPU */
    bool auto_jobs;                /* "jobs": "auto": GPUYIELD_JOBS=auto, the worker marks nothing */

    /* Derived. */
    char mode[EXP_MODE_MAX];       /* GPUYIELD_MODE: none | sync:N | event:N | time:US */
    char pid_name[160];            /* the name models_pid.json gives this worker (reference rule) */
    char out_dir[PATH_MAX];        /* output_file_path, or --out when given */
    char csv_path[PATH_MAX];
    char log_path[PATH_MAX];
    bool weight_is_file;           /* model_weight names a local file to load */
};

struct exp_config {
    const char *path;
    double exp_dur;
    int device_id;
    bool mps;           /* "mps": run the workers under an MPS daemon started for the run */
    const char *policy; /* "policy": a policy's name; NULL: guarded under MPS, else drain */
    /* "guard_p50", "guard_p99": policy guarded's epsilons (fractions 0..1); < 0: not given */
    double guard_p50, guard_p99;
    bool guard_depth; /* "guard_depth": guarded also learns the lower models' queue depth */
    int nmodels;
    struct exp_model models[EXP_MAX_MODELS];
    void *json; /* owns the strings above */
};

/* Parse and check the file's contents (types, ranges, required keys; unknown keys warn). Every
 * problem is printed to stderr as "run_exp: FILE[:LINE:COL]: WHERE: what; how to fix". Returns
 * the number of errors (0: cfg filled). out_dir_override: --out, or NULL. */
int config_load(const char *path, const char *out_dir_override, struct exp_config *cfg);

/* Checks against the machine: input images, output directories, duplicate outputs, local weight
 * files, each device_id against gpu_count (-1: unknown, not checked). Returns the number of errors. */
int config_check_environment(const struct exp_config *cfg, int gpu_count);

/* Create every model's output directory (after all checks passed). Returns 0 or -1 (printed). */
int config_make_output_dirs(const struct exp_config *cfg);

void config_free(struct exp_config *cfg);

#endif
