#include "outputs.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stats.h"

struct model_stats {
    struct np_stats kernel_ns;
    struct np_stats queue_ns; /* count 0: no kernel had a known launch call */
};

/* The deepest existing ancestor of path (itself included) must be a writable directory. */
bool np_check_outdir(const char *outdir)
{
    char probe[PATH_MAX];
    if (!*outdir || snprintf(probe, sizeof probe, "%s", outdir) >= (int)sizeof probe) {
        fprintf(stderr, "nsight-parser: -o \"%s\": not a usable directory name\n", outdir);
        return false;
    }
    for (;;) {
        struct stat st;
        if (stat(probe, &st) == 0) {
            if (!S_ISDIR(st.st_mode)) {
                fprintf(stderr, "nsight-parser: -o %s: %s exists and is not a directory: choose another OUTDIR\n",
                        outdir, probe);
                return false;
            }
            if (access(probe, W_OK | X_OK) != 0) {
                fprintf(stderr, "nsight-parser: -o %s: directory %s is not writable: choose a writable OUTDIR\n",
                        outdir, probe);
                return false;
            }
            return true;
        }
        if (errno == ENOTDIR) {
            fprintf(stderr, "nsight-parser: -o %s: part of the path is a file, not a directory: choose "
                            "another OUTDIR\n", outdir);
            return false;
        }
        if (errno != ENOENT) {
            fprintf(stderr, "nsight-parser: -o %s: %s: %s\n", outdir, probe, strerror(errno));
            return false;
        }
        char *slash = strrchr(probe, '/');
        while (slash && slash > probe && slash[1] == '\0') { /* trailing slashes */
            *slash = '\0';
            slash = strrchr(probe, '/');
        }
        if (!slash)
            snprintf(probe, sizeof probe, ".");
        else if (slash == probe)
            probe[1] = '\0';
        else
            *slash = '\0';
    }
}

/* mkdir -p; records the directories it created (deepest last) to remove them on failure. */
static bool make_dirs(const char *outdir, char created[][PATH_MAX], int *created_count, int max_created)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", outdir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(path, 0777) == 0) {
            if (*created_count < max_created)
                snprintf(created[(*created_count)++], PATH_MAX, "%s", path);
        } else if (errno != EEXIST) {
            fprintf(stderr, "nsight-parser: cannot create %s: %s\n", path, strerror(errno));
            return false;
        }
        *p = saved;
        if (saved == '\0')
            return true;
    }
}

static char *append_i64(char *out, int64_t v)
{
    char digits[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *out++ = '-';
    while (n)
        *out++ = digits[--n];
    return out;
}

static bool write_model_csv(FILE *f, const struct np_report *report, const struct np_model *m)
{
    fputs("IssueStart,IssueEnd,ExecutionStart,ExecutionEnd,KernelDur,QueueDelay,Stream,Name\n", f);
    char line[256];
    for (size_t i = 0; i < m->kernel_count; i++) {
        const struct np_kernel *k = &report->kernels[m->first_kernel + i];
        bool issued = k->issue_end != NP_NO_TIME;
        char *p = line;
        if (issued)
            p = append_i64(p, k->issue_start);
        *p++ = ',';
        if (issued)
            p = append_i64(p, k->issue_end);
        *p++ = ',';
        p = append_i64(p, k->exec_start);
        *p++ = ',';
        p = append_i64(p, k->exec_end);
        *p++ = ',';
        p = append_i64(p, k->exec_end - k->exec_start);
        *p++ = ',';
        if (issued)
            p = append_i64(p, k->exec_start - k->issue_end);
        *p++ = ',';
        if (k->stream != NP_NO_STREAM)
            p = append_i64(p, k->stream);
        *p++ = ',';
        *p++ = '"';
        fwrite(line, 1, (size_t)(p - line), f);
        const char *name = np_strings_get(&report->names, k->name);
        for (const char *q; (q = strchr(name, '"')); name = q + 1) { /* CSV: a quote is doubled */
            fwrite(name, 1, (size_t)(q - name) + 1, f);
            fputc('"', f);
        }
        fputs(name, f);
        fputs("\"\n", f);
    }
    return !ferror(f);
}

static bool compute_stats(const struct np_report *report, const struct np_model *m, struct model_stats *s)
{
    int64_t *values = malloc((m->kernel_count ? m->kernel_count : 1) * sizeof *values);
    if (!values)
        return np_out_of_memory("statistics");
    for (size_t i = 0; i < m->kernel_count; i++) {
        const struct np_kernel *k = &report->kernels[m->first_kernel + i];
        values[i] = k->exec_end - k->exec_start;
    }
    s->kernel_ns = np_stats_of(values, m->kernel_count);
    size_t n = 0;
    for (size_t i = 0; i < m->kernel_count; i++) {
        const struct np_kernel *k = &report->kernels[m->first_kernel + i];
        if (k->issue_end != NP_NO_TIME)
            values[n++] = k->exec_start - k->issue_end;
    }
    s->queue_ns = np_stats_of(values, n);
    free(values);
    return true;
}

static void write_summary_log(FILE *f, const struct np_model_list *models, const struct model_stats *stats,
                              const char *input_path)
{
    fprintf(f, "# nsight-parser summary of %s (times in ns)\n", input_path);
    for (size_t i = 0; i < models->count; i++) {
        fprintf(f, "\nModel: %s (pid %u)\n", models->models[i].name, models->models[i].pid);
        fprintf(f, "NumKernels: %zu\n", stats[i].kernel_ns.count);
        fprintf(f, "MedianKernelDur: %.1f\n", stats[i].kernel_ns.median);
        if (stats[i].queue_ns.count)
            fprintf(f, "MedianQueueDelay: %.1f\n", stats[i].queue_ns.median);
    }
}

static json_t *summary_json(const struct np_report *report, const struct np_model_list *models,
                            const struct model_stats *stats)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < models->count; i++) {
        const struct np_model *m = &models->models[i];
        const struct model_stats *s = &stats[i];
        json_t *nvtx = json_object();
        for (size_t r = 0; nvtx && r < report->nvtx_count; r++) {
            const struct np_nvtx_total *t = &report->nvtx[r];
            if (t->pid == m->pid)
                json_object_set_new(nvtx, np_strings_get(&report->names, t->name),
                                    json_pack("{sIsI}", "count", (json_int_t)t->count, "total_ns",
                                              (json_int_t)t->total_ns));
        }
        json_t *queue = s->queue_ns.count
                            ? json_pack("{sfsI}", "median", s->queue_ns.median, "p99", (json_int_t)s->queue_ns.p99)
                            : json_pack("{snsn}", "median", "p99");
        json_t *model = json_pack("{sssIsIs{sfsIsfsI}sOso}", "name", m->name, "pid", (json_int_t)m->pid, "kernels",
                                  (json_int_t)s->kernel_ns.count, "kernel_ns", "median", s->kernel_ns.median, "p99",
                                  (json_int_t)s->kernel_ns.p99, "mean", s->kernel_ns.mean, "total",
                                  (json_int_t)s->kernel_ns.total, "queue_ns", queue, "nvtx", nvtx);
        json_decref(queue);
        if (!model || json_array_append_new(list, model) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    json_t *root = list ? json_pack("{so}", "models", list) : NULL;
    return root;
}

struct pending {
    char temp[PATH_MAX];
    char final[PATH_MAX];
};

static FILE *open_pending(struct pending *p, const char *outdir, const char *file)
{
    if (snprintf(p->final, sizeof p->final, "%s/%s", outdir, file) >= (int)sizeof p->final ||
        snprintf(p->temp, sizeof p->temp, "%s/.%s.tmp%ld", outdir, file, (long)getpid()) >= (int)sizeof p->temp) {
        fprintf(stderr, "nsight-parser: path too long under %s\n", outdir);
        p->temp[0] = '\0';
        return NULL;
    }
    FILE *f = fopen(p->temp, "w");
    if (!f) {
        fprintf(stderr, "nsight-parser: cannot write %s: %s\n", p->temp, strerror(errno));
        p->temp[0] = '\0';
        return NULL;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    return f;
}

static bool close_pending(FILE *f, const struct pending *p)
{
    bool ok = !ferror(f);
    if (fclose(f) != 0)
        ok = false;
    if (!ok)
        fprintf(stderr, "nsight-parser: writing %s failed: %s (disk full?)\n", p->temp, strerror(errno));
    return ok;
}

bool np_write_outputs(const struct np_report *report, const struct np_model_list *models, const char *outdir,
                      const char *input_path)
{
    enum { MAX_CREATED = 64 };
    static char created[MAX_CREATED][PATH_MAX];
    int created_count = 0;
    size_t pending_count = models->count + 2, written = 0;
    struct pending *pending = calloc(pending_count, sizeof *pending);
    struct model_stats *stats = calloc(models->count ? models->count : 1, sizeof *stats);
    bool ok = pending && stats;
    if (!ok)
        np_out_of_memory("outputs");
    if (ok)
        ok = make_dirs(outdir, created, &created_count, MAX_CREATED);
    for (size_t i = 0; ok && i < models->count; i++) {
        char file[PATH_MAX];
        snprintf(file, sizeof file, "%s.csv", models->models[i].stem);
        FILE *f = open_pending(&pending[written], outdir, file);
        if (!f) {
            ok = false;
            break;
        }
        written++;
        ok = write_model_csv(f, report, &models->models[i]);
        ok = close_pending(f, &pending[written - 1]) && ok;
        ok = ok && compute_stats(report, &models->models[i], &stats[i]);
    }
    if (ok) {
        FILE *f = open_pending(&pending[written], outdir, "summary.log");
        ok = f != NULL;
        if (ok) {
            written++;
            write_summary_log(f, models, stats, input_path);
            ok = close_pending(f, &pending[written - 1]);
        }
    }
    if (ok) {
        json_t *root = summary_json(report, models, stats);
        FILE *f = root ? open_pending(&pending[written], outdir, "summary.json") : NULL;
        ok = f != NULL;
        if (!root)
            np_out_of_memory("summary.json");
        if (ok) {
            written++;
            ok = json_dumpf(root, f, JSON_INDENT(2)) == 0 && fputc('\n', f) != EOF;
            ok = close_pending(f, &pending[written - 1]) && ok;
        }
        json_decref(root);
    }
    for (size_t i = 0; ok && i < written; i++) {
        if (rename(pending[i].temp, pending[i].final) != 0) {
            fprintf(stderr, "nsight-parser: cannot rename %s to %s: %s\n", pending[i].temp, pending[i].final,
                    strerror(errno));
            ok = false;
            for (size_t j = 0; j < i; j++) /* undo: no mix of old and new files */
                unlink(pending[j].final);
        }
    }
    if (!ok) {
        for (size_t i = 0; i < written; i++)
            unlink(pending[i].temp);
        for (int i = created_count - 1; i >= 0; i--)
            rmdir(created[i]);
    }
    free(pending);
    free(stats);
    return ok;
}
