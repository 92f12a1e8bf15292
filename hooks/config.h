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
    /* GPUYIELD_SPIN_US: how long a queue-bound wait polls (yielding the CPU between polls) before
     * it blocks in the driver; 0 blocks at once. */
    unsigned long spin_us;
    /* GPUYIELD_GRAPH_SPLIT=auto (default) or off: whether a process at priority 0 under time:US
     * launches a CUDA graph longer than US/2 in parts (graph_split.h). */
    bool graph_split;
    /* GPUYIELD_PARTITION_US: the time:US bound of a partition's green stream (microseconds of GPU
     * work queued there); 0 (unset): the process's own US. */
    unsigned long partition_us;
};

/* GPUYIELD_SPIN_US when unset: 1 ms, the spin the queue bound always had (a blocking wait costs a
 * wake-up of tens of microseconds that would leave the GPU idle between small groups). Settable so
 * that a lower process sharing CPUs with a host-bound HP can block at once; on the H100, on CPUs of
 * its own, blocking at once cost the LP 6-13 % more (bench/results/2026-11-25-queue-depth). */
#define GY_DEFAULT_SPIN_US 1000ul
#define GY_MAX_SPIN_US 1000000ul

/* GPUYIELD_IDLE_US when unset. 300 us, measured (bench/results/2026-11-24-auto-jobs-v2): on the H100
 * an unmodified HP under auto at 300 us kept the LP within 0.03 of its throughput beside the same
 * HP marking its jobs in 3 of 4 cells (+0.095 in the fourth), its p50 within 2 % of the marked
 * HP's in all 4; at the former 2000 us the LP lost 0.09-0.10 in 3 of 4 cells to the job's idle
 * tail. 300 us is still longer than the host-side gaps between one request's kernels in the
 * measured servers (the auto jobs it opened: 10-15 % more than at 2000, not one per kernel). */
#define GY_DEFAULT_IDLE_US 300ul
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
