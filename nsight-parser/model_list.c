#include "model_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keeps letters, digits, '-', '.', '_'; anything else (a '/' above all) becomes '_'. */
static char *make_stem(const char *name, uint32_t pid)
{
    size_t len = strlen(name) + 16;
    char *stem = malloc(len);
    if (!stem)
        return NULL;
    size_t j = 0;
    for (const char *p = name; *p; p++) {
        char c = *p;
        bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || (c == '.' && j > 0);
        stem[j++] = safe ? c : '_';
    }
    snprintf(stem + j, len - j, "_%u", pid);
    return stem;
}

static long rank_of(const struct np_models_pid *pids, uint32_t pid)
{
    long at = pids ? np_models_pid_find(pids, pid) : -1;
    return at >= 0 ? at : (long)(pids ? pids->count : 0) + 1; /* unnamed ones after the named */
}

static const struct np_models_pid *sort_pids; /* qsort has no context argument */

static int by_rank_then_pid(const void *a, const void *b)
{
    const struct np_model *x = a, *y = b;
    long rx = rank_of(sort_pids, x->pid), ry = rank_of(sort_pids, y->pid);
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

bool np_model_list_build(const struct np_report *report, const struct np_models_pid *pids, struct np_model_list *out)
{
    *out = (struct np_model_list){0};
    size_t groups = 0;
    for (size_t i = 0; i < report->kernel_count; i++)
        if (i == 0 || report->kernels[i].pid != report->kernels[i - 1].pid)
            groups++;
    out->models = calloc(groups ? groups : 1, sizeof *out->models);
    if (!out->models)
        return np_out_of_memory("model list");
    for (size_t i = 0; i < report->kernel_count; i++) {
        uint32_t pid = report->kernels[i].pid;
        if (i > 0 && pid == report->kernels[i - 1].pid) {
            out->models[out->count - 1].kernel_count++;
            continue;
        }
        struct np_model *m = &out->models[out->count++];
        long at = pids ? np_models_pid_find(pids, pid) : -1;
        const char *name = at >= 0 ? pids->models[at].name : np_report_process_name(report, pid);
        m->pid = pid;
        m->name = strdup(name && *name ? name : "process");
        m->stem = m->name ? make_stem(m->name, pid) : NULL;
        m->first_kernel = i;
        m->kernel_count = 1;
        if (!m->name || !m->stem) {
            np_model_list_free(out);
            return np_out_of_memory("model list");
        }
    }
    sort_pids = pids;
    qsort(out->models, out->count, sizeof *out->models, by_rank_then_pid);
    sort_pids = NULL;
    for (size_t i = 0; pids && i < pids->count; i++) {
        bool found = false;
        for (size_t j = 0; j < out->count && !found; j++)
            found = out->models[j].pid == pids->models[i].pid;
        if (!found)
            fprintf(stderr, "nsight-parser: warning: models_pid.json names %s (pid %u), which has no kernels in "
                            "the report: was the pid file written by the same run?\n",
                    pids->models[i].name, pids->models[i].pid);
    }
    return true;
}

void np_model_list_free(struct np_model_list *list)
{
    for (size_t i = 0; i < list->count; i++) {
        free(list->models[i].name);
        free(list->models[i].stem);
    }
    free(list->models);
    *list = (struct np_model_list){0};
}
