/* The library's configuration, read from the environment once, at the first lookup or call of
 * a hooked function (never in a constructor). */
#ifndef GY_HOOKS_CONFIG_H
#define GY_HOOKS_CONFIG_H

#include <stdbool.h>

enum gy_queue_mode { GY_MODE_NONE, GY_MODE_SYNC, GY_MODE_EVENT, GY_MODE_TIME };

struct gy_hooks_config {
    const char *shm;      /* GPUYIELD_SHM; NULL: pass-through */
    int priority;         /* GPUYIELD_PRIORITY, 0..7 */
    enum gy_queue_mode mode;
    unsigned long group;  /* N of sync:N / event:N; microseconds of time:US */
    bool verbose;         /* GPUYIELD_VERBOSE=1 */
    /* GPUYIELD_PARTITION_SMS: the SMs of a green context under the partition policy, as a count
     * (partition_sms > 0) or as a share of the device's SMs (partition_share in (0, 1]). */
    unsigned partition_sms;
    double partition_share;
    /* GPUYIELD_JOBS=auto: the hook opens a job at `priority` on the first launch after idle and
     * closes it after idle_us of no launch with the work completed (auto_jobs.h). */
    bool auto_jobs;
    unsigned long idle_us; /* GPUYIELD_IDLE_US */
};

/* GPUYIELD_IDLE_US when unset. 2 ms: longer than the host-side gaps between the launches of one
 * request of an eager PyTorch server (tens of us between kernels, a host-side pre- or
 * post-processing step of a batch-1 image model well under a ms), so one request stays one job;
 * short enough that at a request every 20-50 ms the lower process loses at most 4-10 % of its
 * time to the job's idle tail. A guess from those orders of magnitude, not yet a measurement:
 * the H100 run of issue 27 (auto against marked, one run) is to confirm or move it. */
#define GY_DEFAULT_IDLE_US 2000ul
#define GY_MAX_IDLE_US 10000000ul /* 10 s: a longer idle is a job that never ends */

/* GPUYIELD_PARTITION_SMS when unset: 16 SMs (two of the H100's groups of 8). */
#define GY_DEFAULT_PARTITION_SMS 16u
#define GY_MAX_PARTITION_SMS 4096u

/* Parse (once) and return the configuration. An invalid value: one line on stderr naming the
 * variable, the value and what is allowed, then _exit(2). */
const struct gy_hooks_config *gy_config(void);

/* Loaded as libcuinterpose*.so (hooks/compat_env.c): fill each of GPUYIELD_SHM, _PRIORITY, _MODE
 * left NULL (unset) from the original experiment's SUFFIX, ID, SYNC_KERNELS / EVENT_GROUP_SIZE.
 * A bad value of those stops the process like a bad GPUYIELD_* value. */
void gy_compat_env(const char **shm, const char **priority, const char **mode);

#endif
