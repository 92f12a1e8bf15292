/* What nsight-parser reads out of any input kind: kernels with their launch calls, NVTX range
 * totals and process names, all keyed by pid. The readers fill it; the writers only read it. */
#ifndef NP_REPORT_H
#define NP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "string_table.h"

/* Marks a time that the input does not have (a kernel whose launch call was not traced). */
#define NP_NO_TIME INT64_MIN
/* Marks a stream that the input does not have (the nsys stats CSV names none). */
#define NP_NO_STREAM INT64_MIN

/* Nsight packs the process id into bits 24..47 of globalPid and globalTid. */
static inline uint32_t np_pid_of_global_id(int64_t global_id)
{
    return (uint32_t)(((uint64_t)global_id >> 24) & 0xFFFFFFu);
}

struct np_kernel {
    int64_t issue_start, issue_end; /* the launching API call; NP_NO_TIME when unknown */
    int64_t exec_start, exec_end;   /* on the GPU */
    int64_t stream;
    uint32_t pid;
    uint32_t name; /* index into np_report.names */
};

struct np_nvtx_total {
    uint32_t pid;
    uint32_t name; /* index into np_report.names */
    int64_t count;
    int64_t total_ns;
};

struct np_process {
    uint32_t pid;
    char *name;
};

struct np_report {
    struct np_kernel *kernels;
    size_t kernel_count, kernel_capacity;
    struct np_nvtx_total *nvtx;
    size_t nvtx_count, nvtx_capacity;
    struct np_process *processes; /* names the input gives (PROCESSES table); may be empty */
    size_t process_count, process_capacity;
    struct np_string_table names;
};

void np_report_init(struct np_report *report);
void np_report_free(struct np_report *report);
/* Each returns false (having printed why) when out of memory. */
bool np_report_add_kernel(struct np_report *report, const struct np_kernel *kernel);
bool np_report_add_nvtx(struct np_report *report, uint32_t pid, const char *name, int64_t count,
                        int64_t total_ns);
bool np_report_add_process(struct np_report *report, uint32_t pid, const char *name);
/* The input's name of a process, or NULL. */
const char *np_report_process_name(const struct np_report *report, uint32_t pid);
/* Orders kernels by pid, then execution start: the order of the per-model tables. */
void np_report_sort_kernels(struct np_report *report);

/* Prints "nsight-parser: out of memory (what)" and returns false: for the readers. */
bool np_out_of_memory(const char *what);

#endif
