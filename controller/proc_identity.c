/* Telling a live process from a dead one, and a reused pid from the original. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gpuyield.h"
#include "proc_identity.h"

enum proc_read { PROC_GONE, PROC_FOUND, PROC_UNKNOWN };

long gy_proc_read(int pid, const char *file, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", pid, file);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = len ? fread(buf, 1, len - 1, f) : 0;
    fclose(f);
    if (len)
        buf[n] = '\0';
    return (long)n;
}

/* Reads the start time from /proc/<pid>/stat. A zombie counts as gone: its work is over even if
 * nobody reaped it. A /proc we cannot read (out of file descriptors, say) tells nothing. */
static enum proc_read read_start_time(int pid, uint64_t *start_time)
{
    char buf[1024];
    long n = gy_proc_read(pid, "stat", buf, sizeof buf);
    if (n < 0)
        return errno == ENOENT || errno == ESRCH ? PROC_GONE : PROC_UNKNOWN;
    /* The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'. */
    char *p = strrchr(buf, ')');
    char state = 0;
    unsigned long long start = 0;
    /* after ')': state(3) then fields 4..21 skipped, starttime is field 22 */
    if (!p || sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
                     &state, &start) != 2)
        return n == 0 ? PROC_GONE : PROC_UNKNOWN; /* an empty read: it exited while we opened it */
    if (state == 'Z' || state == 'X')
        return PROC_GONE;
    *start_time = start ? (uint64_t)start : 1; /* 0 is reserved for "absent" */
    return PROC_FOUND;
}

uint64_t gy_proc_start_time(int pid)
{
    uint64_t start = 0;
    if (pid <= 0 || read_start_time(pid, &start) != PROC_FOUND)
        return 0;
    return start;
}

/* Only a pid that is gone, a zombie or another process (start time differs) counts as dead:
 * reaping a live process would count its job out in the middle and open the gate. */
bool gy_proc_alive(int pid, uint64_t start_time)
{
    if (pid <= 0)
        return false;
    uint64_t now = 0;
    switch (read_start_time(pid, &now)) {
    case PROC_FOUND:
        return now == start_time;
    case PROC_GONE:
        return false;
    case PROC_UNKNOWN:
        break;
    }
    return kill(pid, 0) == 0 || errno != ESRCH;
}

uint64_t gy_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
