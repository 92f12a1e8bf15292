/* Telling a live process from a dead one, and a reused pid from the original. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gpuyield.h"

/* Reads /proc/<pid>/stat. A zombie counts as dead: its work is over even if nobody reaped it. */
uint64_t gy_proc_start_time(int pid)
{
    char path[64], buf[1024];
    if (pid <= 0)
        return 0;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    char state = 0;
    unsigned long long start = 0;
    /* after ')': state(3) then fields 4..21 skipped, starttime is field 22 */
    if (sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
               &state, &start) != 2)
        return 0;
    if (state == 'Z' || state == 'X')
        return 0;
    return start ? (uint64_t)start : 1; /* 0 is reserved for "absent" */
}

bool gy_proc_alive(int pid, uint64_t start_time)
{
    uint64_t now = gy_proc_start_time(pid);
    return now != 0 && now == start_time;
}

uint64_t gy_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
