/* Environment parsing. Strict: a value that is not exactly one of the documented forms stops
 * the process before its first kernel launch, so a typo never silently disables gating. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "gpuyield.h"
#include "stderr_line.h"

#define die gy_die

static struct gy_hooks_config config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/* A decimal in [lo, hi] and nothing else. */
static bool parse_ulong(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static void parse_mode(const char *value)
{
    config.mode = GY_MODE_NONE;
    config.group = 0;
    if (!value || strcmp(value, "none") == 0)
        return;
    const char *colon = strchr(value, ':');
    size_t head = colon ? (size_t)(colon - value) : strlen(value);
    if (colon && head == 4 && strncmp(value, "sync", 4) == 0)
        config.mode = GY_MODE_SYNC;
    else if (colon && head == 5 && strncmp(value, "event", 5) == 0)
        config.mode = GY_MODE_EVENT;
    else if (colon && head == 4 && strncmp(value, "time", 4) == 0)
        config.mode = GY_MODE_TIME;
    if (config.mode == GY_MODE_NONE || !parse_ulong(colon + 1, 1, 1000000, &config.group))
        die("gpuyield: GPUYIELD_MODE=\"%s\" is invalid (pid %d): use none, sync:N or event:N with N in "
            "1..1000000, or time:US (microseconds of GPU work in flight, 1..1000000)",
            value, (int)getpid());
}

/* A count of SMs ("16"), a fraction ("0.125") or a percentage ("12.5%"). */
static void parse_partition_sms(const char *value)
{
    config.partition_sms = GY_DEFAULT_PARTITION_SMS;
    config.partition_share = 0;
    if (!value)
        return;
    unsigned long count;
    if (parse_ulong(value, 1, GY_MAX_PARTITION_SMS, &count)) {
        config.partition_sms = (unsigned)count;
        return;
    }
    char *end = NULL;
    errno = 0;
    double share = value[0] >= '0' && value[0] <= '9' ? strtod(value, &end) : -1;
    bool percent = end && *end == '%' && end[1] == '\0';
    if (percent)
        share /= 100;
    if (errno || !end || (*end && !percent) || !(share > 0 && share <= 1) || (!percent && !strchr(value, '.')))
        die("gpuyield: GPUYIELD_PARTITION_SMS=\"%s\" is invalid (pid %d): use a count of SMs 1..%u (e.g. 16), a "
            "fraction of the device's SMs in (0, 1] (e.g. 0.125) or a percentage (e.g. 12.5%%)",
            value, (int)getpid(), GY_MAX_PARTITION_SMS);
    config.partition_sms = 0;
    config.partition_share = share;
}

/* GPUYIELD_JOBS and GPUYIELD_IDLE_US (the latter checked even when jobs are explicit: a typo
 * must not wait until someone switches auto on). */
static void parse_jobs(const char *jobs, const char *idle)
{
    config.auto_jobs = jobs && strcmp(jobs, "auto") == 0;
    if (jobs && !config.auto_jobs && strcmp(jobs, "explicit") != 0)
        die("gpuyield: GPUYIELD_JOBS=\"%s\" is invalid (pid %d): use explicit (the default: jobs are what the "
            "process marks) or auto (the hook opens a job at GPUYIELD_PRIORITY on the first launch after idle)",
            jobs, (int)getpid());
    config.idle_us = GY_DEFAULT_IDLE_US;
    if (idle && !parse_ulong(idle, 1, GY_MAX_IDLE_US, &config.idle_us))
        die("gpuyield: GPUYIELD_IDLE_US=\"%s\" is invalid (pid %d): use microseconds 1..%lu without a unit (how "
            "long an auto job stays open with no launch and its work completed; default %lu)",
            idle, (int)getpid(), GY_MAX_IDLE_US, GY_DEFAULT_IDLE_US);
    if (config.auto_jobs && config.priority == 0)
        die("gpuyield: GPUYIELD_JOBS=auto needs GPUYIELD_PRIORITY 1..7 (pid %d): a job at priority 0 stops "
            "nothing; set the process's priority, or leave GPUYIELD_JOBS unset",
            (int)getpid());
}

static void load(void)
{
    const char *shm = getenv("GPUYIELD_SHM");
    const char *priority = getenv("GPUYIELD_PRIORITY");
    const char *mode = getenv("GPUYIELD_MODE");
    gy_compat_env(&shm, &priority, &mode); /* loaded as libcuinterpose*.so: the original's variables */
    if (shm && !*shm)
        die("gpuyield: GPUYIELD_SHM is set but empty (pid %d): set it to the experiment's tag or segment "
            "name, or unset it to run without gating",
            (int)getpid());
    config.shm = shm;
    int p;
    if (gy_priority_parse(priority, &p))
        die("gpuyield: GPUYIELD_PRIORITY=\"%s\" is invalid (pid %d): use an integer 0..7 (higher wins)",
            priority, (int)getpid());
    config.priority = p;
    parse_mode(mode);
    const char *verbose = getenv("GPUYIELD_VERBOSE");
    if (verbose && strcmp(verbose, "0") != 0 && strcmp(verbose, "1") != 0)
        die("gpuyield: GPUYIELD_VERBOSE=\"%s\" is invalid (pid %d): use 1 (one line at start) or 0", verbose,
            (int)getpid());
    config.verbose = verbose && strcmp(verbose, "1") == 0;
    parse_partition_sms(getenv("GPUYIELD_PARTITION_SMS"));
    parse_jobs(getenv("GPUYIELD_JOBS"), getenv("GPUYIELD_IDLE_US"));
    const char *spin = getenv("GPUYIELD_SPIN_US");
    config.spin_us = GY_DEFAULT_SPIN_US;
    if (spin && !parse_ulong(spin, 0, GY_MAX_SPIN_US, &config.spin_us))
        die("gpuyield: GPUYIELD_SPIN_US=\"%s\" is invalid (pid %d): use microseconds 0..%lu without a unit (how "
            "long a queue-bound wait polls before it blocks; 0: block at once; default %lu)",
            spin, (int)getpid(), GY_MAX_SPIN_US, GY_DEFAULT_SPIN_US);
    const char *split = getenv("GPUYIELD_GRAPH_SPLIT");
    config.graph_split = !split || strcmp(split, "auto") == 0;
    if (split && !config.graph_split && strcmp(split, "off") != 0)
        die("gpuyield: GPUYIELD_GRAPH_SPLIT=\"%s\" is invalid (pid %d): use auto (the default: a process at "
            "priority 0 under time:US launches a CUDA graph longer than US/2 in parts of about US/2) or off "
            "(every graph whole)",
            split, (int)getpid());
    const char *green = getenv("GPUYIELD_PARTITION_US");
    config.partition_us = 0;
    if (green && !parse_ulong(green, 1, 1000000, &config.partition_us))
        die("gpuyield: GPUYIELD_PARTITION_US=\"%s\" is invalid (pid %d): use microseconds 1..1000000 without a "
            "unit (the GPU work a lower process may queue on a partition's green stream), or unset it for "
            "GPUYIELD_MODE's own time:US",
            green, (int)getpid());
    if (green && (config.mode == GY_MODE_SYNC || config.mode == GY_MODE_EVENT))
        die("gpuyield: GPUYIELD_PARTITION_US is set but GPUYIELD_MODE is %s (pid %d): the green stream's bound "
            "is GPU time, which only time mode measures; set GPUYIELD_MODE=time:US or unset "
            "GPUYIELD_PARTITION_US (under none nothing is bounded and it is ignored)",
            config.mode == GY_MODE_SYNC ? "sync:N" : "event:N", (int)getpid());
}

const struct gy_hooks_config *gy_config(void)
{
    pthread_once(&config_once, load);
    return &config;
}
