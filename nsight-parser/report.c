#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool np_out_of_memory(const char *what)
{
    fprintf(stderr, "nsight-parser: out of memory (%s)\n", what);
    return false;
}

void np_report_init(struct np_report *report)
{
    *report = (struct np_report){0};
    np_strings_init(&report->names);
}

void np_report_free(struct np_report *report)
{
    free(report->kernels);
    free(report->nvtx);
    for (size_t i = 0; i < report->process_count; i++)
        free(report->processes[i].name);
    free(report->processes);
    np_strings_free(&report->names);
    *report = (struct np_report){0};
}

/* Grows *array (of elements of size size) so that one more fits. */
static bool reserve_one(void **array, size_t *capacity, size_t count, size_t size)
{
    if (count < *capacity)
        return true;
    size_t grown = *capacity ? *capacity * 2 : 1024;
    void *p = realloc(*array, grown * size);
    if (!p)
        return false;
    *array = p;
    *capacity = grown;
    return true;
}

bool np_report_add_kernel(struct np_report *report, const struct np_kernel *kernel)
{
    if (!reserve_one((void **)&report->kernels, &report->kernel_capacity, report->kernel_count,
                     sizeof *report->kernels))
        return np_out_of_memory("kernel table");
    report->kernels[report->kernel_count++] = *kernel;
    return true;
}

/* The length of name without a trailing " <number>": ranges numbered per job ("model_A job 17")
 * are summed under one name, so that the summary stays a handful of keys. */
static size_t nvtx_group_length(const char *name)
{
    size_t n = strlen(name), digits = n;
    while (digits > 0 && name[digits - 1] >= '0' && name[digits - 1] <= '9')
        digits--;
    if (digits < n && digits > 1 && name[digits - 1] == ' ')
        return digits - 1;
    return n;
}

bool np_report_add_nvtx(struct np_report *report, uint32_t pid, const char *name, int64_t count,
                        int64_t total_ns)
{
    int64_t index = np_strings_intern(&report->names, name, nvtx_group_length(name));
    if (index < 0)
        return np_out_of_memory("NVTX range names");
    for (size_t i = 0; i < report->nvtx_count; i++) {
        struct np_nvtx_total *t = &report->nvtx[i];
        if (t->pid == pid && t->name == (uint32_t)index) {
            t->count += count;
            t->total_ns += total_ns;
            return true;
        }
    }
    if (!reserve_one((void **)&report->nvtx, &report->nvtx_capacity, report->nvtx_count,
                     sizeof *report->nvtx))
        return np_out_of_memory("NVTX ranges");
    report->nvtx[report->nvtx_count++] =
        (struct np_nvtx_total){.pid = pid, .name = (uint32_t)index, .count = count, .total_ns = total_ns};
    return true;
}

bool np_report_add_process(struct np_report *report, uint32_t pid, const char *name)
{
    if (np_report_process_name(report, pid))
        return true; /* the first name seen wins (a process may exec and be renamed) */
    if (!reserve_one((void **)&report->processes, &report->process_capacity, report->process_count,
                     sizeof *report->processes))
        return np_out_of_memory("process table");
    char *copy = strdup(name);
    if (!copy)
        return np_out_of_memory("process table");
    report->processes[report->process_count++] = (struct np_process){.pid = pid, .name = copy};
    return true;
}

const char *np_report_process_name(const struct np_report *report, uint32_t pid)
{
    for (size_t i = 0; i < report->process_count; i++)
        if (report->processes[i].pid == pid)
            return report->processes[i].name;
    return NULL;
}

static int by_pid_then_start(const void *a, const void *b)
{
    const struct np_kernel *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->exec_start != y->exec_start)
        return x->exec_start < y->exec_start ? -1 : 1;
    if (x->exec_end != y->exec_end)
        return x->exec_end < y->exec_end ? -1 : 1;
    if (x->issue_start != y->issue_start) /* qsort is not stable: make ties deterministic */
        return x->issue_start < y->issue_start ? -1 : 1;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

void np_report_sort_kernels(struct np_report *report)
{
    qsort(report->kernels, report->kernel_count, sizeof *report->kernels, by_pid_then_start);
}
