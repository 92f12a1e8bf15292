#include "results.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protocol.h"
#include "provenance.h"

struct model_stats {
    long rows, partial_rows;
    double throughput;  /* jobs per second over the jobs' span */
    double jct_p50, jct_p90, jct_p99, jct_mean;   /* ms */
    long marked;        /* rows of jobs marked at a priority */
    double drain_p50, drain_p99; /* ms, over marked jobs */
    long drain_timeouts;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double percentile(const double *v, long n, double p)
{
    if (n == 0)
        return NAN;
    long rank = (long)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    return v[rank - 1];
}

static void read_stats(const char *csv, struct model_stats *s)
{
    memset(s, 0, sizeof *s);
    s->jct_p50 = s->jct_p90 = s->jct_p99 = s->jct_mean = s->drain_p50 = s->drain_p99 = NAN;
    FILE *f = fopen(csv, "r");
    if (!f)
        return;
    long cap = 1024;
    double *jct = malloc((size_t)cap * sizeof *jct), *drain = malloc((size_t)cap * sizeof *drain);
    char *line = NULL;
    size_t line_cap = 0;
    uint64_t first_start = UINT64_MAX, last_end = 0;
    bool header = true;
    double sum = 0;
    while (jct && drain && getline(&line, &line_cap, f) >= 0) {
        if (header) {
            header = false;
            if (strncmp(line, "job,", 4) == 0)
                continue;
        }
        struct job_row r;
        size_t len = strlen(line);
        if (len == 0 || line[len - 1] != '\n' || job_row_parse(line, &r) != 0) {
            s->partial_rows++;
            continue;
        }
        if (s->rows == cap) {
            cap *= 2;
            double *j2 = realloc(jct, (size_t)cap * sizeof *jct);
            if (!j2)
                break;
            jct = j2;
            double *d2 = realloc(drain, (size_t)cap * sizeof *drain);
            if (!d2)
                break;
            drain = d2;
        }
        jct[s->rows++] = (double)(r.end_ns - r.start_ns) / 1e6;
        sum += (double)(r.end_ns - r.start_ns) / 1e6;
        first_start = r.start_ns < first_start ? r.start_ns : first_start;
        last_end = r.end_ns > last_end ? r.end_ns : last_end;
        if (r.drained != JOB_NOT_MARKED) {
            drain[s->marked++] = (double)r.drain_wait_ns / 1e6;
            if (r.drained == JOB_DRAIN_TIMED_OUT)
                s->drain_timeouts++;
        }
    }
    free(line);
    fclose(f);
    if (jct && drain && s->rows > 0) {
        qsort(jct, (size_t)s->rows, sizeof *jct, cmp_double);
        s->jct_p50 = percentile(jct, s->rows, 50);
        s->jct_p90 = percentile(jct, s->rows, 90);
        s->jct_p99 = percentile(jct, s->rows, 99);
        s->jct_mean = sum / (double)s->rows;
        double span = (double)(last_end - first_start) / 1e9;
        s->throughput = span > 0 ? (double)s->rows / span : NAN;
    }
    if (jct && drain && s->marked > 0) {
        qsort(drain, (size_t)s->marked, sizeof *drain, cmp_double);
        s->drain_p50 = percentile(drain, s->marked, 50);
        s->drain_p99 = percentile(drain, s->marked, 99);
    }
    free(jct);
    free(drain);
}

static json_t *num_or_null(double x) { return isnan(x) ? json_null() : json_real(round(x * 1000.0) / 1000.0); }

static const char *outcome_name(enum run_outcome o)
{
    switch (o) {
    case RUN_OK: return "completed";
    case RUN_WORKER_FAILED: return "worker_failed";
    case RUN_INTERRUPTED: return "interrupted";
    case RUN_START_FAILED: return "start_failed";
    }
    return "?";
}

static void exit_text(const struct worker_result *r, char *buf, size_t len)
{
    if (!r->started)
        snprintf(buf, len, "not started");
    else if (!r->exited)
        snprintf(buf, len, "still running");
    else if (WIFEXITED(r->wait_status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(r->wait_status));
    else if (WIFSIGNALED(r->wait_status))
        snprintf(buf, len, "killed by signal %d", WTERMSIG(r->wait_status));
    else
        snprintf(buf, len, "wait status 0x%x", r->wait_status);
}

/* Write to a temporary name and rename: a reader never sees half a file. */
static int dump_json(json_t *doc, const char *dir, const char *name)
{
    char path[PATH_MAX + 64], tmp[PATH_MAX + 80];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    /* The temporary name is made anew (O_EXCL, no link followed); rename replaces a link at the
     * final name rather than writing through it. Ten significant digits: 32.534, not
     * 32.533999999999999 (values are rounded to 3 decimals). */
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    bool ok = f && json_dumpf(doc, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) == 0;
    if (f)
        ok = fclose(f) == 0 && ok;
    else if (fd >= 0)
        close(fd);
    if (!ok || rename(tmp, path) != 0) {
        fprintf(stderr, "run_exp: error: cannot write %s: %s; check the directory's space and permissions\n", path,
                strerror(errno));
        if (fd >= 0)
            unlink(tmp);
        return -1;
    }
    return 0;
}

static void fmt_ms(char *buf, size_t len, double x)
{
    if (isnan(x))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f", x);
}

static void print_table(const struct exp_config *cfg, const struct worker_result *res, const struct model_stats *st,
                        const struct run_info *info)
{
    printf("\n%s%s\n", info->simulated ? "SIMULATED figures (fake GPU driver, stand-in worker; not a real GPU): " : "",
           cfg->path);
    printf("%-16s %4s %-9s %6s %7s %8s %8s %8s %9s %9s %9s\n", "model", "prio", "mode", "jobs", "jobs/s",
           "JCT p50", "p90", "p99 ms", "preempted", "drain p50", "p99 ms");
    for (int i = 0; i < cfg->nmodels; i++) {
        const struct exp_model *m = &cfg->models[i];
        const struct model_stats *s = &st[i];
        char tput[16], p50[16], p90[16], p99[16], d50[16], d99[16], pre[24];
        if (isnan(s->throughput) || s->rows == 0)
            snprintf(tput, sizeof tput, "-");
        else
            snprintf(tput, sizeof tput, "%.2f", s->throughput);
        fmt_ms(p50, sizeof p50, s->jct_p50);
        fmt_ms(p90, sizeof p90, s->jct_p90);
        fmt_ms(p99, sizeof p99, s->jct_p99);
        fmt_ms(d50, sizeof d50, s->drain_p50);
        fmt_ms(d99, sizeof d99, s->drain_p99);
        if (m->control)
            snprintf(pre, sizeof pre, "%llu", (unsigned long long)res[i].waits);
        else
            snprintf(pre, sizeof pre, "-");
        printf("%-16.16s %4d %-9s %6ld %7s %8s %8s %8s %9s %9s %9s\n", m->output_file_name, m->priority,
               m->control ? m->mode : "off", s->rows, tput, p50, p90, p99, pre, d50, d99);
    }
    printf("preempted: launches of that process blocked behind a higher-priority job; drain: the wait of its own "
           "marked jobs for lower ones to drain\n");
    for (int i = 0; i < cfg->nmodels; i++) {
        if (st[i].partial_rows)
            printf("run_exp: warning: %s has %ld incomplete row%s (ignored)\n", cfg->models[i].csv_path,
                   st[i].partial_rows, st[i].partial_rows == 1 ? "" : "s");
        if (st[i].drain_timeouts)
            printf("run_exp: warning: %ld job%s of '%s' timed out waiting for the drain\n", st[i].drain_timeouts,
                   st[i].drain_timeouts == 1 ? "" : "s", cfg->models[i].output_file_name);
    }
}

int results_write(const struct exp_config *cfg, const struct worker_result *res, const struct run_info *info)
{
    struct model_stats st[EXP_MAX_MODELS];
    json_t *pids = json_array(), *models = json_array();
    for (int i = 0; i < cfg->nmodels; i++) {
        const struct exp_model *m = &cfg->models[i];
        read_stats(m->csv_path, &st[i]);
        if (res[i].started)
            json_array_append_new(pids, json_pack("[s,I]", m->pid_name, (json_int_t)res[i].pid));
        char exit_buf[64];
        exit_text(&res[i], exit_buf, sizeof exit_buf);
        json_t *jm = json_pack("{s:s,s:s,s:i,s:s,s:b,s:I,s:I,s:s,s:s,s:s}", "name", m->output_file_name,
                               "model_name", m->model_name, "priority", m->priority, "mode", m->mode, "control",
                               m->control, "pid", (json_int_t)res[i].pid, "jobs", (json_int_t)st[i].rows, "exit",
                               exit_buf, "csv", m->csv_path, "log", m->log_path);
        json_object_set_new(jm, "failed", json_boolean(res[i].failed));
        json_object_set_new(jm, "throughput_jobs_per_s", num_or_null(st[i].throughput));
        json_object_set_new(jm, "jct_ms", json_pack("{s:o,s:o,s:o,s:o}", "p50", num_or_null(st[i].jct_p50), "p90",
                                                    num_or_null(st[i].jct_p90), "p99", num_or_null(st[i].jct_p99),
                                                    "mean", num_or_null(st[i].jct_mean)));
        json_object_set_new(jm, "marked_jobs", json_integer(st[i].marked));
        json_object_set_new(jm, "drain_wait_ms",
                            json_pack("{s:o,s:o}", "p50", num_or_null(st[i].drain_p50), "p99",
                                      num_or_null(st[i].drain_p99)));
        json_object_set_new(jm, "drain_timeouts", json_integer(st[i].drain_timeouts));
        json_object_set_new(jm, "preempted_launches", json_integer((json_int_t)res[i].waits));
        json_object_set_new(jm, "blocked_ms", num_or_null((double)res[i].blocked_ns / 1e6));
        json_object_set_new(jm, "drains_acknowledged", json_integer((json_int_t)res[i].drains));
        json_object_set_new(jm, "partial_rows", json_integer(st[i].partial_rows));
        json_array_append_new(models, jm);
    }
    json_t *summary = json_pack("{s:s,s:b,s:s,s:s,s:f,s:i,s:o}", "config", cfg->path, "simulated", info->simulated,
                                "outcome", outcome_name(info->outcome), "segment", info->segment ? info->segment : "",
                                "exp_dur_s", cfg->exp_dur, "device_id", cfg->device_id, "models", models);
    json_object_set_new(summary, "policy", json_string(info->policy ? info->policy : "drain"));
    json_object_set_new(summary, "mps", json_boolean(info->mps));
    json_object_set_new(summary, "provenance", provenance_json(cfg->path, cfg->device_id, info->simulated));
    if (info->simulated) {
        json_object_set_new(summary, "note", json_string("simulated: a stand-in worker on the fake GPU driver; the "
                                                         "figures show the pipeline, not a GPU's behaviour"));
        if (info->fake_log)
            json_object_set_new(summary, "simulated_kernel_log", json_string(info->fake_log));
    }
    int rc = 0;
    for (int i = 0; i < cfg->nmodels; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen = seen || strcmp(cfg->models[j].out_dir, cfg->models[i].out_dir) == 0;
        if (seen)
            continue;
        if (dump_json(pids, cfg->models[i].out_dir, "models_pid.json") != 0 ||
            dump_json(summary, cfg->models[i].out_dir, "summary.json") != 0)
            rc = -1;
        else
            printf("run_exp: wrote %s/summary.json and models_pid.json\n", cfg->models[i].out_dir);
    }
    print_table(cfg, res, st, info);
    json_decref(pids);
    json_decref(summary);
    return rc;
}
