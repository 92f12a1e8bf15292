#include "launch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol.h"

extern char **environ;

int install_locate(struct install *in)
{
    char exe[PATH_MAX - 64]; /* room for the suffixes below */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "run_exp: error: cannot read /proc/self/exe to find the build directory\n");
        return -1;
    }
    exe[n] = '\0';
    /* exe = <build>/bin/run_exp */
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash || slash == exe) {
            fprintf(stderr, "run_exp: error: run_exp lies at %s, not in <build>/bin/: run it from its build "
                            "directory\n", exe);
            return -1;
        }
        *slash = '\0';
    }
    /* GPUYIELD_BUILD points the workers at another build's files (e.g. a sanitizer build of
     * run_exp driving the plain hooks and Python package). */
    const char *override = getenv("GPUYIELD_BUILD");
    if (override && *override) {
        if (strlen(override) >= sizeof exe) {
            fprintf(stderr, "run_exp: error: GPUYIELD_BUILD is too long\n");
            return -1;
        }
        snprintf(exe, sizeof exe, "%s", override);
    }
    snprintf(in->build, sizeof in->build, "%s", exe);
    snprintf(in->hooks_lib, sizeof in->hooks_lib, "%s/lib/libgpuyield.so", exe);
    snprintf(in->python_dir, sizeof in->python_dir, "%s/python", exe);
    if (access(in->python_dir, F_OK) != 0) {
        char installed[sizeof in->python_dir];
        /* Installed by make install: PREFIX/lib/gpuyield/python instead of a build's python/. */
        if (snprintf(installed, sizeof installed, "%s/lib/gpuyield/python", exe) < (int)sizeof installed &&
            access(installed, F_OK) == 0)
            memcpy(in->python_dir, installed, sizeof installed);
        /* Installed by pip: run_exp is the package's gpuyield/bin/run_exp, so exe is the package
         * itself and its parent (site-packages) the directory that imports it. */
        else if (snprintf(installed, sizeof installed, "%s/__init__.py", exe) < (int)sizeof installed &&
                 access(installed, F_OK) == 0) {
            snprintf(installed, sizeof installed, "%s", exe);
            char *slash = strrchr(installed, '/');
            if (slash)
                slash[slash == installed] = '\0'; /* the parent; "/" stays "/" */
            memcpy(in->python_dir, installed, sizeof installed);
        }
    }
    snprintf(in->standin, sizeof in->standin, "%s/bin/gpuyield-standin", exe);
    /* A build's fakecuda/ (pip's package has one too); make install puts it in PREFIX/lib/gpuyield. */
    snprintf(in->fakecuda_dir, sizeof in->fakecuda_dir, "%s/fakecuda", exe);
    if (access(in->fakecuda_dir, F_OK) != 0) {
        char installed[sizeof in->fakecuda_dir];
        if (snprintf(installed, sizeof installed, "%s/lib/gpuyield/fakecuda", exe) < (int)sizeof installed &&
            access(installed, F_OK) == 0)
            memcpy(in->fakecuda_dir, installed, sizeof installed);
    }
    return 0;
}

static void add_arg(struct launch *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Never cut: a path argument cut short would have the worker write a file of another name. */
static void add_arg(struct launch *l, const char *fmt, ...)
{
    char *arg;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&arg, fmt, ap);
    va_end(ap);
    if (n < 0)
        l->failed = true;
    else if (l->nargs < LAUNCH_MAX_ARGS - 1)
        l->argv[l->nargs++] = arg;
    else
        free(arg), l->failed = true;
}

static void add_env(struct launch *l, const char *name, const char *value)
{
    if (l->nenv >= LAUNCH_MAX_ENV) {
        l->failed = true;
        return;
    }
    size_t len = strlen(name) + strlen(value) + 2;
    char *kv = malloc(len);
    if (!kv) {
        l->failed = true;
        return;
    }
    snprintf(kv, len, "%s=%s", name, value);
    l->env[l->nenv++] = kv;
}

/* value, then ':' and the current value of name when there is one. */
static void add_env_prepend(struct launch *l, const char *name, const char *value)
{
    const char *old = getenv(name);
    if (!old || !*old) {
        add_env(l, name, value);
        return;
    }
    char *both;
    if (asprintf(&both, "%s:%s", value, old) < 0) {
        l->failed = true;
        return;
    }
    add_env(l, name, both);
    free(both);
}

int launch_simulated_device(const struct exp_config *cfg, int device_id, int *count)
{
    int rank = 0, distinct = 0;
    for (int i = 0; i < cfg->nmodels; i++) {
        int id = cfg->models[i].device_id;
        bool first = true;
        for (int j = 0; j < i; j++)
            first = first && cfg->models[j].device_id != id;
        distinct += first;
        rank += first && id < device_id;
    }
    if (count)
        *count = distinct;
    return rank;
}

int launch_build(const struct exp_config *cfg, const struct exp_model *m, const struct install *in,
                 const struct launch_settings *s, struct launch *out)
{
    memset(out, 0, sizeof *out);
    if (s->simulate) {
        add_arg(out, "%s", in->standin);
    } else {
        add_arg(out, "%s", s->python);
        add_arg(out, "-m");
        add_arg(out, "gpuyield.worker");
    }
    add_arg(out, "--name");
    add_arg(out, "%s", m->output_file_name);
    add_arg(out, "--model");
    add_arg(out, "%s", m->model_name);
    if (m->model_weight && m->model_weight[0]) {
        add_arg(out, "--weights");
        add_arg(out, "%s", m->model_weight);
    }
    add_arg(out, "--input");
    add_arg(out, "%s", m->input_file_path);
    if (m->resize) {
        add_arg(out, "--resize");
        add_arg(out, "%dx%d", m->resize_h, m->resize_w);
    }
    add_arg(out, "--batch-size");
    add_arg(out, "%d", m->batch_size);
    add_arg(out, "--sleep-time");
    add_arg(out, "%g", m->sleep_time);
    add_arg(out, "--priority");
    add_arg(out, "%d", m->priority);
    add_arg(out, "--device-id");
    int fake_gpus = 1;
    add_arg(out, "%d", s->simulate ? launch_simulated_device(cfg, m->device_id, &fake_gpus) : m->device_id);
    add_arg(out, "--csv");
    add_arg(out, "%s", m->csv_path);
    out->argv[out->nargs] = NULL;

    char num[32];
    /* Without control the worker runs as in the reference's uncontrolled runs: no hooks, and no
     * segment, so it neither gates nor marks its jobs. */
    if (m->control) {
        add_env_prepend(out, "LD_PRELOAD", in->hooks_lib);
        add_env(out, "GPUYIELD_SHM", s->segment);
    }
    snprintf(num, sizeof num, "%d", m->priority);
    add_env(out, "GPUYIELD_PRIORITY", num);
    add_env(out, "GPUYIELD_MODEL", m->pid_name); /* status and metrics name the process after it */
    add_env(out, "GPUYIELD_MODE", m->mode);
    if (m->control && m->auto_jobs) /* the hook opens the jobs; the worker marks none */
        add_env(out, "GPUYIELD_JOBS", "auto");
    add_env_prepend(out, "PYTHONPATH", in->python_dir);
    snprintf(num, sizeof num, "%d", PROTO_STATUS_FD);
    add_env(out, PROTO_STATUS_FD_ENV, num);
    snprintf(num, sizeof num, "%d", PROTO_CONTROL_FD);
    add_env(out, PROTO_CONTROL_FD_ENV, num);
    if (s->simulate) {
        add_env_prepend(out, "LD_LIBRARY_PATH", in->fakecuda_dir);
        add_env(out, "FAKECUDA_DEVICE_FILE", s->fake_device_file);
        snprintf(num, sizeof num, "%d", fake_gpus); /* one fake GPU per device_id the models use */
        add_env(out, "FAKECUDA_DEVICES", num);
        if (s->fake_log)
            add_env(out, "FAKECUDA_LOG", s->fake_log);
    }
    if (s->mps_pipe_dir) {
        add_env(out, "CUDA_MPS_PIPE_DIRECTORY", s->mps_pipe_dir);
        if (s->mps_log_dir) /* none when joining a running daemon (--mps-pipe) */
            add_env(out, "CUDA_MPS_LOG_DIRECTORY", s->mps_log_dir);
        /* Under MPS the hardware schedules both processes' blocks at once: the lower ones' leftover
         * kernels must yield SMs to the job's. A user's own setting wins. */
        if (s->mps_top_priority >= 0 && m->priority < s->mps_top_priority && !getenv("CUDA_MPS_CLIENT_PRIORITY"))
            add_env(out, "CUDA_MPS_CLIENT_PRIORITY", "1");
    }
    if (!m->control)
        out->mode_desc = "uncontrolled: no hooks, jobs not marked";
    else if (m->priority > 0 && m->auto_jobs)
        out->mode_desc = "hooks on, jobs opened by the hook at its priority (GPUYIELD_JOBS=auto)";
    else if (m->priority > 0)
        out->mode_desc = "hooks on, each job marked at its priority";
    else
        out->mode_desc = "hooks on, gated by higher-priority jobs";
    return out->failed ? -1 : 0;
}

char **launch_envp(const struct launch *l)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = calloc(n + (size_t)l->nenv + 1, sizeof *envp);
    if (!envp)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t name_len = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        bool replaced = false;
        for (int j = 0; j < l->nenv; j++)
            replaced = replaced || (strncmp(l->env[j], environ[i], name_len) == 0 && l->env[j][name_len] == '=');
        if (!replaced)
            envp[k++] = strdup(environ[i]);
    }
    for (int j = 0; j < l->nenv; j++)
        envp[k++] = strdup(l->env[j]);
    envp[k] = NULL;
    return envp;
}

void launch_free_envp(char **envp)
{
    if (!envp)
        return;
    for (char **e = envp; *e; e++)
        free(*e);
    free(envp);
}

void launch_free(struct launch *l)
{
    for (int i = 0; i < l->nargs; i++)
        free(l->argv[i]);
    for (int i = 0; i < l->nenv; i++)
        free(l->env[i]);
    memset(l, 0, sizeof *l);
}

/* Single quotes around anything but plain characters, so the line can be pasted into a shell. */
static void quote(const char *s, char *out, size_t len)
{
    bool plain = *s != '\0';
    for (const char *p = s; *p; p++)
        plain = plain && (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@%", *p));
    if (plain) {
        snprintf(out, len, "%s", s);
        return;
    }
    size_t k = 0;
    if (k + 1 < len)
        out[k++] = '\'';
    for (const char *p = s; *p && k + 5 < len; p++) {
        if (*p == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
        } else {
            out[k++] = *p;
        }
    }
    if (k + 1 < len)
        out[k++] = '\'';
    out[k] = '\0';
}

void launch_format_command(const struct launch *l, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < l->nargs && used < len; i++) {
        char q[PATH_MAX + 128];
        quote(l->argv[i], q, sizeof q);
        int n = snprintf(buf + used, len - used, "%s%s", i ? " " : "", q);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}
