/* Telling a live process from a dead one, and a reused pid from the original. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The image a process runs, from the addresses of /proc/<pid>/stat that exec sets and nothing
 * else changes (only prctl(PR_SET_MM), CRIU's, needs CAP_SYS_RESOURCE): startcode, endcode,
 * startstack (fields 26-28), start_data, end_data (45, 46), arg_start, arg_end, env_start,
 * env_end (48-51). An exec keeps the pid and the start time but changes these: with ASLR (the
 * default) the stack and a PIE's code move at every exec; without it, another program or other
 * arguments or environment still differ. 0 when the reader may not see them (the kernel shows
 * startstack 0 then: another uid, a non-dumpable process) or the kernel has no fields 45-51. */
static uint32_t exec_id_of(const char *fields)
{
    unsigned long long v[64];
    int n = 0;
    for (const char *p = fields; *p && n < 64;) {
        char *end;
        while (*p == ' ')
            p++;
        if (!*p || *p == '\n')
            break;
        v[n++] = strtoull(p, &end, 10); /* a non-number (the state letter) reads as 0 */
        p = end == p ? p + 1 : end;
        while (*p && *p != ' ')
            p++;
    }
    /* v[0] is field 3: field k is v[k - 3] */
    static const int used[] = {26, 27, 28, 45, 46, 48, 49, 50, 51};
    if (n < 51 - 3 + 1 || v[28 - 3] == 0)
        return 0;
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the values */
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
        for (int b = 0; b < 64; b += 8) {
            h ^= (v[used[i] - 3] >> b) & 0xff;
            h *= 1099511628211ull;
        }
    uint32_t folded = (uint32_t)(h ^ (h >> 32));
    return folded ? folded : 1;
}

/* Reads the start time (and the image: exec_id_of) from /proc/<pid>/stat. A zombie counts as
 * gone: its work is over even if nobody reaped it. A /proc we cannot read (out of file
 * descriptors, say) tells nothing. */
static enum proc_read read_identity(int pid, uint64_t *start_time, uint32_t *exec_id)
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
    if (exec_id)
        *exec_id = exec_id_of(p + 1);
    return PROC_FOUND;
}

static enum proc_read read_start_time(int pid, uint64_t *start_time) { return read_identity(pid, start_time, NULL); }

uint64_t gy_proc_identity(int pid, uint32_t *exec_id)
{
    uint64_t start = 0;
    *exec_id = 0;
    if (pid <= 0 || read_identity(pid, &start, exec_id) != PROC_FOUND)
        return 0;
    return start;
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

bool gy_proc_image_alive(int pid, uint64_t start_time, uint32_t exec_id)
{
    if (pid <= 0)
        return false;
    uint64_t now = 0;
    uint32_t image = 0;
    switch (read_identity(pid, &now, &image)) {
    case PROC_FOUND:
        /* An image we cannot see now (0) or did not see at registration never counts as changed. */
        return now == start_time && (exec_id == 0 || image == 0 || image == exec_id);
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
