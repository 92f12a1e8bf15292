/* The controller library's public interface, installed with it (make install, pkg-config):
 * segment lifecycle, registration, the launch gate, jobs and the drain handshake, status.
 * Declarations only gpuyield's own rooms use live beside the code (proc_identity.h,
 * compat_tag.h, status_text.h, registry.h, shared_wait.h, errors.h, ...), never installed. */
#ifndef GPUYIELD_H
#define GPUYIELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "policies.h"
#include "segment_layout.h"

/* ---- version (version.c) -------------------------------------------------------------------- */

/* "MAJOR.MINOR.PATCH", from the top-level VERSION file. */
const char *gy_version(void);

/* ---- errors ---------------------------------------------------------------------------- */

/* Every failing call fills one of these: errno-style code plus a sentence that says what went
 * wrong, where, and how to fix it. */
typedef struct gy_err {
    int code; /* an errno value */
    char msg[320];
} gy_err;

/* ---- segment lifecycle (segment.c) --------------------------------------------------------- */

typedef struct gy_shm {
    struct gy_segment *seg;
    char name[GY_NAME_MAX];
    int slot; /* our registered slot, -1 when not registered */
} gy_shm;

/* Default tag when neither an option nor GPUYIELD_SHM gives one. */
#define GY_DEFAULT_TAG "default"
#define GY_DEFAULT_DRAIN_TIMEOUT_NS 2000000000ull
#define GY_MAX_DRAIN_TIMEOUT_NS 86400000000000ull /* a day: more is a corrupted segment */

/* "/gpuyield-<uid>-<tag>" from a tag, or a full name given back checked. A tag is 1..40 of
 * [A-Za-z0-9._-]. Returns 0, or -1 with err filled. */
int gy_segment_name(const char *tag_or_name, char out[GY_NAME_MAX], gy_err *err);
/* The tag/name to use when the caller gives none: $GPUYIELD_SHM, else GY_DEFAULT_TAG. */
const char *gy_default_tag(void);

/* Create with O_EXCL and mode 0600; drain_timeout_ns 0 means the default. */
int gy_create(const char *tag_or_name, uint64_t drain_timeout_ns, gy_shm *out, gy_err *err);
/* Open an existing segment, checking owner uid, magic, layout stamp (the build) and size. */
int gy_open(const char *tag_or_name, gy_shm *out, gy_err *err);
/* Unregister (if registered) and unmap. The segment itself stays. */
void gy_close(gy_shm *shm);
/* Unlink the segment by name. A segment of ours that opens cleanly is first marked removed
 * (GY_REMOVED_BIT): every process still attached finds it on its next launch's slow path. */
int gy_remove(const char *tag_or_name, gy_err *err);
/* Mark an open segment removed (GY_REMOVED_BIT in every gate word, waiters woken), as gy_remove
 * does before it unlinks: for a holder that finds the name gone or leading to another file (a
 * raw `rm /dev/shm/...`), so that the processes still attached stop rather than run ungated. */
void gy_mark_removed(gy_shm *shm);
/* True once the segment was removed (see gy_remove); read on slow paths only. */
static inline bool gy_segment_removed(const gy_shm *shm)
{
    return atomic_load_explicit(&shm->seg->active_levels, memory_order_acquire) & GY_REMOVED_BIT;
}

/* Which file the full segment name leads to now, so that a holder can tell its segment removed
 * (0: gone) or removed and created anew (1 with another dev/ino). -1 when it cannot tell: callers
 * count that as present, never inventing a removal. */
int gy_segment_identity(const char *name, dev_t *dev, ino_t *ino);

/* ---- policy (policies.c, from the table of policies.h; stored by segment.c) ------------------- */
const char *gy_policy_name(enum gy_policy policy);
/* A policy's name (a row of policies.h) -> *out; -1 on anything else, NULL included. */
int gy_policy_parse(const char *text, enum gy_policy *out);
/* What a job does under it (the table's description). */
const char *gy_policy_what(enum gy_policy policy);
/* Whether it is meant for MPS (its lower processes run at MPS client priority below normal). */
bool gy_policy_wants_mps(enum gy_policy policy);
/* The default rule, written once: guarded under MPS, else drain (GY_POLICY_DEFAULT_TEXT). */
enum gy_policy gy_policy_default(bool mps);
/* The names joined for a message: "drain|corun" with ("|", "|"), "drain or corun" with
 * (", ", " or "). Returns buf. */
const char *gy_policy_choices(char *buf, size_t len, const char *sep, const char *last_sep);
/* The creator sets these before workers start; readers see them at once. */
void gy_set_policy(gy_shm *shm, enum gy_policy policy, bool mps);
enum gy_policy gy_get_policy(const gy_shm *shm);
bool gy_get_mps(const gy_shm *shm);

/* ---- the clock of jobs and waits (proc_identity.c) ------------------------------------------ */

uint64_t gy_now_ns(void); /* CLOCK_MONOTONIC, as gy_job's times */

/* ---- registration and reaping (registry.c) --------------------------------------------------- */

/* Claim a slot for this process at priority 0..7. Fails with ENOSPC when the table is full. */
int gy_register(gy_shm *shm, int priority, gy_err *err);
/* A process's priority as $GPUYIELD_PRIORITY gives it (priority_env.c): NULL (unset) is 0, else
 * exactly a decimal 0..GY_LEVELS-1; anything else, the empty string included, is -1. The one rule
 * of the hooks library and the Python extension. */
int gy_priority_parse(const char *text, int *out);
void gy_unregister(gy_shm *shm);
/* At a normal exit (atexit): free this process's slot at once, counting out its jobs and its
 * in-flight mark, so nobody waits for a reap or a drain timeout. Leaves the handle itself alone:
 * other threads of the exiting process may still read it. Only our own slot (same pid) goes. */
void gy_release_at_exit(gy_shm *shm);
/* Count out dead processes: their jobs, their slots. Returns how many were reaped. Safe to call
 * from anyone, at any time. */
int gy_reap(gy_shm *shm);

static inline struct gy_proc_slot *gy_my_slot(const gy_shm *shm)
{
    return shm->slot >= 0 ? &shm->seg->procs[shm->slot] : NULL;
}

/* ---- the launch gate (gate.c) ---------------------------------------------------------------- */

/* The gate word of launches on device slot `device` (GY_DEVICE_ALL: on no known device, gated
 * by a job on any device). */
static inline _Atomic uint32_t *gy_gate_word(const gy_shm *shm, int device)
{
    return device >= 0 && device < GY_MAX_DEVICES ? &shm->seg->devices[device].active_levels
                                                  : &shm->seg->active_levels;
}

/* The fast path: one atomic load. A process of priority p may launch while no job above p is
 * in progress on the word's device(s). */
static inline bool gy_word_allows(_Atomic uint32_t *word, int priority)
{
    return (atomic_load_explicit(word, memory_order_seq_cst) >> (priority + 1)) == 0;
}
static inline bool gy_launch_allowed_on(const gy_shm *shm, int device, int priority)
{
    return gy_word_allows(gy_gate_word(shm, device), priority);
}
/* On any device: no job above `priority` anywhere. */
static inline bool gy_launch_allowed(const gy_shm *shm, int priority)
{
    return gy_launch_allowed_on(shm, GY_DEVICE_ALL, priority);
}

/* The slow path: block until a launch at our effective priority is allowed: the registered one,
 * or the level of the highest job this process holds if that is higher (it never waits for its
 * own job, nor for peers at that level), or until the segment is removed (gy_segment_removed:
 * then the launch must not go ahead on it). Counts a wait and the time blocked in our slot, stores
 * the effective priority in *allowed_at (may be NULL) and returns the ns spent blocked. The _on
 * form waits for `device`'s gate word only (GY_DEVICE_ALL: for every device). */
uint64_t gy_wait_until_allowed(gy_shm *shm, int *allowed_at);
uint64_t gy_wait_until_allowed_on(gy_shm *shm, int device, int *allowed_at);
/* Whether a launch on `device` is allowed now at our effective priority (see above), without
 * waiting. */
bool gy_allowed_now_on(gy_shm *shm, int device);

/* ---- devices (registry.c) ------------------------------------------------------------------- */

/* The device slot of the GPU with this UUID, claimed under the mutex on first use. -1 with err
 * filled (ENOSPC) when GY_MAX_DEVICES others hold every slot: the caller then uses GY_DEVICE_ALL. */
int gy_device_slot(gy_shm *shm, const uint8_t uuid[GY_UUID_BYTES], gy_err *err);
/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi -L writes it. */
#define GY_UUID_TEXT 41
void gy_format_uuid(const uint8_t uuid[GY_UUID_BYTES], char out[GY_UUID_TEXT]);
/* Record that this process launches on `device` (GY_DEVICE_ALL: on no known device). Must
 * precede the gate check of the first such launch; cheap once recorded. */
void gy_note_launch_device(gy_shm *shm, int device);

/* Mark that this process may now have GPU work in flight (called on each launch, cheap when
 * already marked). Must precede the gate check of the launch it covers. */
static inline void gy_mark_inflight(gy_shm *shm)
{
    struct gy_proc_slot *slot = gy_my_slot(shm);
    if (slot && !atomic_load_explicit(&slot->inflight, memory_order_relaxed))
        atomic_store_explicit(&slot->inflight, 1, memory_order_seq_cst);
}

/* ---- jobs (gate.c) -------------------------------------------------------------------------- */

enum gy_wait_result {
    GY_WAIT_DRAINED = 0,  /* every lower process drained or had nothing in flight */
    GY_WAIT_TIMEDOUT = 1, /* the drain timeout passed first (counted) */
    GY_WAIT_PENDING = 2,  /* the slice passed; call again */
    GY_WAIT_CORUN = 3,    /* the segment co-runs: a begin does not wait (drained stays false) */
};

typedef struct gy_job {
    int priority;
    int device;          /* the device slot it gates, or GY_DEVICE_ALL */
    uint64_t epoch;      /* the epoch lower processes must acknowledge */
    uint64_t entered_ns; /* when the job was counted in */
    uint64_t deadline_ns;
    uint64_t wait_ns;    /* how long the drain wait took */
    uint64_t next_reap_ns; /* when this job's wait reaps next: kept across slices, so a caller that
                            * waits in short slices still reaps on schedule */
    bool drained;
    bool timed_out;
    bool corun;          /* the begin did not wait: the policy is corun, or partition under MPS */
    bool active;         /* counted in and not yet out */
    int guard_arm;       /* policy guarded: the arm it got (enum gy_guard_arm), else -1 */
    uint32_t guard_depth_us; /* ... and the queue depth of the gap before it (0: the lower ones' own) */
    uint64_t guard_lp_work; /* policy guarded: the lower processes' progress at its begin */
    uint64_t guard_lower_launches; /* ... and all their kernel and graph launches then (what the rule's
                                    * cycles count: the cycle before it ends at its begin) */
} gy_job;

/* Count a job in at priority 0..7: lower launches stop from here on. timeout_ns 0 uses the
 * segment's drain timeout. Requires a registered process. The job gates every device; the _on
 * form gates lower launches on one device slot only (GY_DEVICE_ALL: every device), and waits
 * only for lower processes that have launched on it (or on no known device). */
int gy_job_enter(gy_shm *shm, int priority, uint64_t timeout_ns, gy_job *job, gy_err *err);
int gy_job_enter_on(gy_shm *shm, int priority, int device, uint64_t timeout_ns, gy_job *job, gy_err *err);
/* Wait for the drain, at most slice_ns this call (0: until drained or timed out). */
enum gy_wait_result gy_job_wait_drained(gy_shm *shm, gy_job *job, uint64_t slice_ns);
/* Count the job out; lower launches resume once no job above them remains. */
int gy_job_exit(gy_shm *shm, gy_job *job, gy_err *err);
/* The same, for a caller that ends the job some time after its work completed (the hook's auto
 * jobs close idle_us after their last launch): guarded records the job's duration up to
 * work_end_ns (gy_now_ns's clock; 0, or past now: now; before the job's begin: its begin). */
int gy_job_exit_at(gy_shm *shm, gy_job *job, uint64_t work_end_ns, gy_err *err);
/* enter + wait to the end: the usual way to begin a job. */
int gy_begin(gy_shm *shm, int priority, gy_job *job, gy_err *err);
int gy_begin_on(gy_shm *shm, int priority, int device, gy_job *job, gy_err *err);

/* ---- the drain side, run by a helper thread of a gated process (gate.c) ---------------------- */

/* Wait up to timeout_ns for a drain request addressed to this process: a job above our
 * priority in progress, our inflight flag set and its epoch not yet acknowledged. Returns true
 * with *epoch set when one is pending. */
bool gy_drain_wait_request(gy_shm *shm, uint64_t timeout_ns, uint64_t *epoch);
/* Acknowledge that all work launched before the request has finished. still_inflight: whether
 * launches happened during the drain (then the flag stays set). */
void gy_drain_ack(gy_shm *shm, uint64_t epoch, bool still_inflight);

/* ---- status (status.c) ---------------------------------------------------------------------- */

struct gy_status_proc {
    int pid;
    int priority;
    const char *state; /* "running", "blocked", "draining" */
    char name[64];     /* gy_proc_name(): the model or command name, "" if unknown */
    bool inflight;
#define GY_STATUS_COUNTER(name, what) uint64_t name;
    GY_PROC_COUNTERS(GY_STATUS_COUNTER) /* segment_layout.h */
#undef GY_STATUS_COUNTER
    const char *partition; /* "-" (not decided), "active", or "fallback: <why>" */
    uint32_t launched_devices; /* bit d: launched on device slot d; GY_LAUNCHED_UNKNOWN: on no known device */
};

struct gy_status_device {
    int slot;
    char uuid[GY_UUID_TEXT];
    uint32_t jobs[GY_LEVELS]; /* jobs in progress on this device alone (jobs on every device: not counted) */
};

struct gy_status {
    char name[GY_NAME_MAX];
    struct timespec taken; /* CLOCK_REALTIME when the snapshot was read */
    enum gy_policy policy;
    bool mps;
    uint32_t jobs[GY_LEVELS];
    uint64_t job_epoch, total_drain_timeouts, reaped;
    uint64_t lock_timeouts; /* lock attempts on the segment's mutex that gave up after their bound */
    /* Empty when the snapshot took the mutex; else who held it past the bound (pid, thread,
     * registered priority, STOPPED) or that it is corrupted. Plain text, no quotes. */
    char mutex_holder[160];
    int ndevices; /* claimed device slots, in slot order */
    struct gy_status_device devices[GY_MAX_DEVICES];
    int nprocs;
    struct gy_status_proc procs[GY_MAX_PROCS];
    bool guarded;          /* policy guarded: guard holds its state (controller/guarded.h) */
    struct gy_guard guard;
};

/* A consistent snapshot; every field read from the segment is range-checked (a corrupt segment
 * gives -1 and an error, never a crash). */
int gy_status_read(gy_shm *shm, struct gy_status *out, gy_err *err);
/* One JSON object, as `expcontroller status --json` prints it. Returns bytes written (or that
 * would be written, snprintf-style). */
int gy_status_json(const struct gy_status *st, char *buf, size_t len);

#endif
