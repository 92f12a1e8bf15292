/* The shared segment: the one place that defines its layout.
 *
 * Every process of an experiment maps the same segment, so this layout is a wire format. Its
 * stamp is computed from it (layout_stamp.h): a new field needs its row there, which the build
 * checks; nothing is bumped by hand. */
#ifndef GY_SEGMENT_LAYOUT_H
#define GY_SEGMENT_LAYOUT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "guarded_layout.h"

#define GY_MAGIC 0x444c454959555047ull /* "GPUYIELD" read as little-endian bytes */
#define GY_LEVELS 8     /* priorities 0..7, higher wins */
#define GY_MAX_PROCS 128 /* registered processes per experiment */
#define GY_NAME_MAX 64  /* "/gpuyield-<uid>-<tag>" including the NUL */
#define GY_MAX_DEVICES 16 /* GPUs per experiment, each with its own gate word */
#define GY_UUID_BYTES 16  /* a GPU's UUID as the driver gives it (cuDeviceGetUuid) */
/* A job or launch whose device is not known (no CUDA context, or the device table is full):
 * it is gated by, and gates, every device. */
#define GY_DEVICE_ALL (-1)
/* Bit of a slot's launched_devices for launches on no known device (GY_DEVICE_ALL). */
#define GY_LAUNCHED_UNKNOWN (1u << 31)
/* A slot's table of ends owed (gy_proc_slot.ends_owed): an entry is GY_OWED_USED | (device + 1)
 * << 3 | level in its low 16 bits and a count in its high 16; 0 is a free entry. */
#define GY_OWED_ENDS 8
#define GY_OWED_USED (1u << 15)

/* A slot's life: FREE -> (claimed under the mutex) -> RUNNING <-> BLOCKED / DRAINING -> FREE. */
enum gy_proc_state {
    GY_PROC_FREE = 0,
    GY_PROC_RUNNING = 1,  /* registered, launching freely */
    GY_PROC_BLOCKED = 2,  /* a launch waits for a higher job to end */
    GY_PROC_DRAINING = 3, /* its helper waits for its in-flight GPU work to finish */
};

/* Counters kept per process: the one list of them. The segment's slots, struct gy_status_proc,
 * `expcontroller status --json` and the Python status dict all expand it, in this order. Adding a
 * counter is one row here plus the line that increments it (the layout stamp follows by itself).
 * Each is written by its own process only (relaxed atomics) and read by status readers; the
 * launch counters sit on the launching thread's hot path.
 * X(name, what it counts) */
#define GY_PROC_COUNTERS(X)                                                                            \
    X(launches, "kernel launches, graph launches excluded")                                            \
    X(graph_launches, "cuGraphLaunch calls, one unit each")                                            \
    X(sync_points, "sync points / event waits inserted by the queue bound")                            \
    X(waits, "launches that had to block behind a higher job")                                         \
    X(blocked_ns, "total time those launches were blocked")                                            \
    X(drains, "drain requests this process acknowledged")                                              \
    X(drain_timeouts, "jobs begun here whose drain hit the timeout")                                   \
    X(partition_launches, "launches sent to the partition (policy partition)")                         \
    X(partition_copies, "async copies and memsets sent to the partition (policy partition)")               \
    X(auto_jobs, "jobs the hook opened on its own (GPUYIELD_JOBS=auto)")                               \
    X(auto_job_ns, "total time those jobs were open, counted when each closes")

#define GY_COUNTER_FIELD(name, what) _Atomic uint64_t name;
struct gy_proc_counters {
    GY_PROC_COUNTERS(GY_COUNTER_FIELD)
};
#undef GY_COUNTER_FIELD

/* Where a process stands with the partition policy, as its hook decided (status shows it). */
enum gy_partition_state {
    GY_PARTITION_UNDECIDED = 0,  /* not under partition, or no launch has needed it yet */
    GY_PARTITION_ACTIVE = 1,     /* launches during a higher job go to a green context */
    GY_PARTITION_NO_MPS = 2,     /* fallback: the segment says no MPS (drain) */
    GY_PARTITION_NO_SYMBOLS = 3, /* fallback: the driver lacks the green-context calls (corun) */
    GY_PARTITION_CREATE_FAILED = 4, /* fallback: creating the green context failed (corun) */
    GY_PARTITION_STATES = 5,
};

struct gy_proc_slot {
    _Atomic uint32_t state;       /* enum gy_proc_state */
    int32_t pid;
    uint64_t start_time;          /* /proc/<pid>/stat starttime: tells a reused pid apart */
    int32_t priority;             /* 0..GY_LEVELS-1 */
    uint16_t held_jobs[GY_LEVELS]; /* jobs this process has in progress, so a reaper can count them out */
    /* Bit d: this process has launched on device slot d (GY_LAUNCHED_UNKNOWN: on no known
     * device). Set before the launch's gate check, never cleared: a drain for a job on device d
     * is owed by a lower process with in-flight work that has ever launched on d (or unknown). */
    _Atomic uint32_t launched_devices;
    /* Drain handshake. inflight: 1 while the process may have GPU work queued or running (set
     * by its launches, cleared by its helper after a drain). drained_epoch: the last job epoch
     * whose drain this process has acknowledged. */
    _Atomic uint32_t inflight;
    _Atomic uint64_t drained_epoch;
    _Atomic uint32_t partition_state; /* enum gy_partition_state, written by the process's hook */
    /* The program image the process ran when it registered (gy_proc_identity: /proc/<pid>/stat's
     * code, data, stack, argument and environment addresses, hashed; 0: not visible). An exec
     * keeps the pid and start time: a reap that finds another image frees the slot as for a
     * death. In what was padding before the counters (the slot's last 8 bytes stay free). */
    uint32_t exec_id;
    struct gy_proc_counters counters;
    /* Of held_jobs, those begun on one device (the rest gate every device). */
    uint16_t held_device_jobs[GY_MAX_DEVICES][GY_LEVELS];
    /* Ends of this process's jobs that could not take the mutex within its bound (a stopped
     * holder, a loaded machine): written by this process (CAS), taken (exchange to 0) and
     * applied by whoever next holds the mutex, cleared when the slot is reaped. A job's end is
     * never lost; status readers count these out of held_jobs. In what was padding. */
    _Atomic uint32_t ends_owed[GY_OWED_ENDS];
} __attribute__((aligned(64)));

/* One GPU of the experiment: claimed under the mutex by the first process that names its UUID,
 * never released (a segment lives one experiment). Its gate word, alone on its cache line, is
 * what a launch on that device loads: bit L set while a job of level L runs on this device or on
 * every device (GY_DEVICE_ALL), plus GY_REMOVED_BIT once the segment is removed. */
struct gy_device_slot {
    _Atomic uint32_t active_levels;
    _Atomic uint32_t claimed;  /* 1 once uuid is set (written last, under the mutex) */
    uint8_t uuid[GY_UUID_BYTES];
    uint32_t jobs[GY_LEVELS];  /* jobs in progress on this device alone, per level */
} __attribute__((aligned(64)));

struct gy_segment {
    /* Header, written once at creation and checked by every opener. */
    uint64_t magic;
    uint32_t layout_stamp; /* GY_LAYOUT_STAMP of the build that made it (layout_stamp.h) */
    uint32_t segment_size;
    uint32_t owner_uid;
    int32_t creator_pid;
    uint64_t creator_start_time;
    uint64_t drain_timeout_ns; /* default bound on a begin's drain wait */
    /* Set by whoever manages the experiment before its workers start, read by every begin. */
    _Atomic uint32_t policy; /* enum gy_policy: does a begin wait for lower work to drain? */
    _Atomic uint32_t mps;    /* 1: the experiment's processes run under an MPS daemon */
    char name[GY_NAME_MAX];

    /* The hot word of launches on no known device, alone on its cache line: bit L set while a
     * job of level L is in progress on any device. A launch of priority p is allowed iff
     * (active_levels >> (p + 1)) == 0. Each device has its own word (devices[].active_levels). */
    _Atomic uint32_t active_levels __attribute__((aligned(64)));
/* Set in active_levels (above every level) by `remove` before the name is unlinked: the one-load
 * fast path then sees the gate closed for every priority, and the slow path finds the segment
 * removed. It is never cleared: a removed segment stays removed. */
#define GY_REMOVED_BIT (1u << 31)

    /* Slow path state, guarded by mutex. wake_seq is the futex word of the shared condition. */
    pthread_mutex_t mutex __attribute__((aligned(64)));
    _Atomic uint32_t wake_seq;
    /* Processes inside a FUTEX_WAIT on wake_seq. gy_wake_all skips the wake syscall while it is 0:
     * each begin and end wakes, and on the H100 a cold begin() cost 31-39 us against 3 us hot
     * (bench/results/2026-11-24-begin-cost). A stale count (a waiter killed inside its wait) only
     * costs needless wakes. */
    _Atomic uint32_t wake_waiters;
    uint32_t jobs[GY_LEVELS];   /* jobs in progress per level, on any device (devices[].jobs: per device) */
    _Atomic uint64_t job_epoch; /* bumped by each begin; drains acknowledge an epoch */
    _Atomic uint64_t total_drain_timeouts;
    _Atomic uint64_t reaped;     /* dead processes counted out so far */
    uint64_t next_reap_ns;       /* CLOCK_MONOTONIC: the periodic reap is due; one waiter does it */
    /* Lock attempts that gave up after the bound (a holder stopped, or a corrupted mutex). In
     * what was padding before procs: no field moved. */
    _Atomic uint64_t lock_timeouts;
    /* Ends owed in all slots' ends_owed tables (a hint: 0 lets a lock holder skip the scan). */
    _Atomic uint32_t ends_owed;

    struct gy_device_slot devices[GY_MAX_DEVICES];
    struct gy_proc_slot procs[GY_MAX_PROCS];
    /* The guarded policy's arms and statistics (guarded_layout.h); after the slots: none moved. */
    struct gy_guard guard __attribute__((aligned(64)));
};

/* Every process maps it whole: small against any /dev/shm (Docker's default 64 MiB). Under 64 KiB
 * until 2026-12-04, when the guard's histograms doubled their bins (guard_bins.py says why). */
_Static_assert(sizeof(struct gy_segment) < 128 * 1024, "the segment must stay under 128 KiB");
/* tests/lib/leaked_segments.py reads the header without this file: keep its offsets. */
_Static_assert(offsetof(struct gy_segment, layout_stamp) == 8 && offsetof(struct gy_segment, creator_pid) == 20 &&
                   offsetof(struct gy_segment, creator_start_time) == 24,
               "the header moved: update tests/lib/leaked_segments.py");

#endif
