/* The gate: blocking lower launches, jobs, and the drain handshake between a job's begin and
 * the lower processes' helpers. Everything here is the slow path; the fast path is the inline
 * gy_launch_allowed() in gpuyield.h. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "errors.h"
#include "guarded.h"
#include "registry.h"
#include "self_pid.h"
#include "shared_wait.h"

/* Waits wake at least this often to reap dead processes, so no wait outlives a crash by more. */
#define REAP_INTERVAL_NS 100000000ull

/* Under the mutex. Every waiter wakes each interval, but only the first to find the shared time
 * due reaps: with a hundred idle helpers, a reap each (a /proc read per slot) would hold the mutex
 * for a large part of every interval. A shared time further ahead than one interval is corrupt. */
static void reap_if_due(struct gy_segment *seg, uint64_t *next_reap)
{
    uint64_t now = gy_now_ns();
    if (now < *next_reap)
        return;
    *next_reap = now + REAP_INTERVAL_NS;
    if (now < seg->next_reap_ns && seg->next_reap_ns - now <= REAP_INTERVAL_NS)
        return;
    seg->next_reap_ns = now + REAP_INTERVAL_NS;
    if (gy_reap_locked(seg))
        gy_wake_all(seg);
}

/* Our registered priority as the segment holds it; a corrupted one counts as the lowest (gated by
 * every job) rather than feed a shift out of range. */
static int slot_priority(const struct gy_proc_slot *slot)
{
    int priority = slot ? slot->priority : 0;
    return priority >= 0 && priority < GY_LEVELS ? priority : 0;
}

/* Under the mutex: the highest level of a job that process `pid` holds (over all its slots: the
 * hook and the Python extension register apart), or -1. */
static int own_top_job_level_locked(const struct gy_segment *seg, int pid)
{
    int top = -1;
    for (int i = 0; i < GY_MAX_PROCS; i++) {
        const struct gy_proc_slot *s = &seg->procs[i];
        if (s->pid != pid || atomic_load_explicit(&s->state, memory_order_acquire) == GY_PROC_FREE)
            continue;
        for (int level = GY_LEVELS - 1; level > top; level--)
            if (s->held_jobs[level]) {
                top = level;
                break;
            }
    }
    return top;
}

int gy_own_jobs_covering(gy_shm *shm, int device, int level)
{
    struct gy_segment *seg = shm->seg;
    if (level < 0 || level >= GY_LEVELS || gy_lock_and_recover(seg))
        return -1;
    int pid = gy_self_pid(), n = 0;
    for (int i = 0; i < GY_MAX_PROCS; i++) {
        const struct gy_proc_slot *s = &seg->procs[i];
        if (s->pid != pid || atomic_load_explicit(&s->state, memory_order_acquire) == GY_PROC_FREE)
            continue;
        for (int l = level; l < GY_LEVELS; l++) {
            int on_one = 0; /* of held_jobs, those begun on one device: the rest gate every device */
            for (int d = 0; d < GY_MAX_DEVICES; d++)
                on_one += s->held_device_jobs[d][l];
            n += s->held_jobs[l] - on_one;
            if (device >= 0 && device < GY_MAX_DEVICES)
                n += s->held_device_jobs[device][l];
        }
    }
    gy_unlock(seg);
    return n;
}

/* Under the mutex: the priority a slot's launches are gated at. A process that began a job above
 * its registered priority runs at that job's level while it lasts: it neither waits for its own
 * job nor for a peer's job at the same level, and owes drains only to jobs above it. */
static int effective_priority_locked(const struct gy_segment *seg, const struct gy_proc_slot *slot)
{
    int registered = slot_priority(slot);
    if (!slot)
        return registered;
    int own = own_top_job_level_locked(seg, slot->pid);
    return own > registered ? own : registered;
}

/* Our helper may be asleep with nothing marked in flight; a launch that marked us in flight and
 * now blocks must wake it, or a begin waits for its next reap tick (100 ms) to see the mark. */
static void wake_helper_if_owed(struct gy_segment *seg, const struct gy_proc_slot *slot)
{
    if (slot && atomic_load_explicit(&slot->inflight, memory_order_seq_cst) &&
        atomic_load_explicit(&slot->drained_epoch, memory_order_acquire) <
            atomic_load_explicit(&seg->job_epoch, memory_order_seq_cst))
        gy_wake_all(seg);
}

/* now + timeout_ns, saturating: a huge timeout from a corrupted segment means "no deadline",
 * never a wrapped one in the past. */
static uint64_t deadline_after(uint64_t now, uint64_t timeout_ns)
{
    return timeout_ns < UINT64_MAX - now ? now + timeout_ns : UINT64_MAX;
}

/* A wait that also recovers the mutex of a process that died holding it. 0 when the mutex is
 * held again, -1 when it could not be taken back within its bound (not held). */
static int wait_and_recover(struct gy_segment *seg, uint32_t seq, uint64_t timeout_ns)
{
    int rc = gy_wait_locked(seg, seq, timeout_ns);
    if (rc == 1 && gy_reap_locked(seg))
        gy_wake_all(seg);
    if (rc >= 0)
        gy_apply_owed_ends_locked(seg);
    return rc < 0 ? -1 : 0;
}

/* Without the mutex (its holder is stopped, or it is corrupted): sleep on the wake word for one
 * interval and say whether the gate lets a launch at `priority` through, from the atomic word. */
static bool wait_unlocked(gy_shm *shm, int device, int priority)
{
    uint32_t seq = gy_wake_seq(shm->seg);
    if (gy_launch_allowed_on(shm, device, priority) || gy_segment_removed(shm))
        return true;
    gy_wait_unlocked(shm->seg, seq, REAP_INTERVAL_NS);
    return gy_launch_allowed_on(shm, device, priority) || gy_segment_removed(shm);
}

/* Under the mutex: is a job above `priority` in progress on a device this process has launched
 * on (any device, for launches on no known device)? Then it owes that job a drain. */
static bool gated_where_launched_locked(const gy_shm *shm, const struct gy_proc_slot *slot, int priority)
{
    uint32_t launched = atomic_load_explicit(&slot->launched_devices, memory_order_seq_cst);
    if (!launched || (launched & GY_LAUNCHED_UNKNOWN))
        return !gy_launch_allowed(shm, priority);
    for (int d = 0; d < GY_MAX_DEVICES; d++)
        if ((launched & (1u << d)) && !gy_launch_allowed_on(shm, d, priority))
            return true;
    return false;
}

uint64_t gy_wait_until_allowed(gy_shm *shm, int *allowed_at)
{
    return gy_wait_until_allowed_on(shm, GY_DEVICE_ALL, allowed_at);
}

/* until_partition: also return (*turned set) once the guarded arm of the open jobs is a
 * partition, the gate still closed: the caller's launch can then go to its partition instead of
 * waiting through the job (guarded.h). */
static uint64_t wait_until_allowed(gy_shm *shm, int device, int *allowed_at, bool until_partition, bool *turned)
{
    struct gy_segment *seg = shm->seg;
    struct gy_proc_slot *slot = gy_my_slot(shm);
    int registered = slot_priority(slot), priority = registered;
    uint64_t start = gy_now_ns(), next_reap = start + REAP_INTERVAL_NS;
    bool waited = false, locked = false;
    for (;;) {
        if (!locked) {
            if (gy_lock_and_recover(seg)) {
                /* Not locked within its bound (counted): the gate word still tells when the
                 * launch may go, at the registered priority (the held jobs need the mutex). */
                waited = true;
                priority = registered;
                if (wait_unlocked(shm, device, registered))
                    break;
                continue;
            }
            locked = true;
            if (slot)
                atomic_store_explicit(&slot->state, GY_PROC_BLOCKED, memory_order_relaxed);
        }
        uint32_t seq = gy_wake_seq(seg);
        priority = effective_priority_locked(seg, slot);
        if (gy_launch_allowed_on(shm, device, priority) || gy_segment_removed(shm))
            break;
        if (until_partition && gy_guarded_current(shm) != GY_ARM_STOP) {
            *turned = true;
            break;
        }
        if (!waited)
            wake_helper_if_owed(seg, slot);
        waited = true;
        if (wait_and_recover(seg, seq, REAP_INTERVAL_NS)) {
            locked = false;
            continue;
        }
        reap_if_due(seg, &next_reap);
    }
    if (slot)
        atomic_store_explicit(&slot->state, GY_PROC_RUNNING, memory_order_relaxed);
    if (locked)
        gy_unlock(seg);
    uint64_t blocked = gy_now_ns() - start;
    bool passed_own_job = !waited && priority > registered && !gy_launch_allowed_on(shm, device, registered);
    bool turned_at_once = until_partition && *turned && !waited; /* to a partition: no wait at all */
    if (slot && !passed_own_job && !turned_at_once) { /* running at our own job's level is not a wait */
        atomic_fetch_add_explicit(&slot->counters.waits, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&slot->counters.blocked_ns, blocked, memory_order_relaxed);
    }
    if (allowed_at)
        *allowed_at = priority;
    return blocked;
}

uint64_t gy_wait_until_allowed_on(gy_shm *shm, int device, int *allowed_at)
{
    return wait_until_allowed(shm, device, allowed_at, false, NULL);
}

uint64_t gy_wait_until_allowed_or_partition_on(gy_shm *shm, int device, int *allowed_at, bool *turned)
{
    *turned = false;
    return wait_until_allowed(shm, device, allowed_at, true, turned);
}

bool gy_allowed_now_on(gy_shm *shm, int device)
{
    gy_lock_and_recover(shm->seg);
    bool allowed = gy_launch_allowed_on(shm, device, effective_priority_locked(shm->seg, gy_my_slot(shm)));
    gy_unlock(shm->seg);
    return allowed;
}

int gy_job_enter(gy_shm *shm, int priority, uint64_t timeout_ns, gy_job *job, gy_err *err)
{
    return gy_job_enter_on(shm, priority, GY_DEVICE_ALL, timeout_ns, job, err);
}

int gy_job_enter_on(gy_shm *shm, int priority, int device, uint64_t timeout_ns, gy_job *job, gy_err *err)
{
    memset(job, 0, sizeof *job);
    if (priority < 0 || priority >= GY_LEVELS)
        return gy_fail(err, EINVAL, "job priority %d is out of range: use 0..%d (higher wins)", priority,
                       GY_LEVELS - 1);
    if (device < GY_DEVICE_ALL || device >= GY_MAX_DEVICES ||
        (device >= 0 && !atomic_load_explicit(&shm->seg->devices[device].claimed, memory_order_acquire)))
        return gy_fail(err, EINVAL,
                       "device slot %d is not a claimed device of %s: use gy_device_slot() on the GPU's UUID, or "
                       "GY_DEVICE_ALL (%d) for every device",
                       device, shm->name, GY_DEVICE_ALL);
    struct gy_proc_slot *slot = gy_my_slot(shm);
    if (!slot)
        return gy_fail(err, EINVAL, "this process is not registered in %s: register before beginning a job",
                       shm->name);
    struct gy_segment *seg = shm->seg;
    if (gy_lock_and_recover(seg))
        return gy_lock_fail(shm, "begin a job", err);
    if (slot->pid != gy_self_pid() || atomic_load_explicit(&slot->state, memory_order_acquire) == GY_PROC_FREE) {
        gy_unlock(seg);
        return gy_fail(err, ESRCH, "our slot in %s was reaped (wrong pid or corrupted): reconnect", shm->name);
    }
    if (slot->held_jobs[priority] >= GY_MAX_HELD_JOBS) {
        gy_unlock(seg);
        return gy_fail(err, EBUSY,
                       "this process already holds %d jobs of priority %d in %s: end() is missing for earlier "
                       "begin()s",
                       GY_MAX_HELD_JOBS, priority, shm->name);
    }
    seg->jobs[priority]++;
    slot->held_jobs[priority]++;
    if (device >= 0) {
        seg->devices[device].jobs[priority]++;
        slot->held_device_jobs[device][priority]++;
    }
    job->priority = priority;
    struct gy_guard_change change;
    gy_guarded_begin_locked(shm, job, &change); /* the arm is published before the gate word */
    gy_publish_levels_locked(seg);
    job->epoch = atomic_fetch_add_explicit(&seg->job_epoch, 1, memory_order_seq_cst) + 1;
    gy_unlock(seg);
    gy_wake_all(seg); /* lower helpers: a drain is requested */
    gy_guarded_tell(shm, &change); /* nothing, unless a shift of the HP's rate ended a trial */
    job->priority = priority;
    job->device = device;
    job->entered_ns = gy_now_ns();
    job->deadline_ns = deadline_after(job->entered_ns, timeout_ns ? timeout_ns : seg->drain_timeout_ns);
    job->next_reap_ns = job->entered_ns + REAP_INTERVAL_NS;
    job->active = true;
    return 0;
}

/* Under the mutex: does some lower process still owe this job a drain? */
static bool drain_pending_locked(const gy_shm *shm, const gy_job *job)
{
    const struct gy_segment *seg = shm->seg;
    int self = gy_self_pid();
    for (int i = 0; i < GY_MAX_PROCS; i++) {
        const struct gy_proc_slot *slot = &seg->procs[i];
        if (atomic_load_explicit(&slot->state, memory_order_acquire) == GY_PROC_FREE || !gy_slot_sane(slot))
            continue;
        if (slot->pid == self || slot->priority >= job->priority)
            continue;
        if (!atomic_load_explicit(&slot->inflight, memory_order_seq_cst))
            continue; /* nothing in flight: it must not delay us */
        uint32_t launched = atomic_load_explicit(&slot->launched_devices, memory_order_seq_cst);
        if (job->device >= 0 && launched && !(launched & (GY_LAUNCHED_UNKNOWN | (1u << job->device))))
            continue; /* its work runs on other GPUs only */
        if (atomic_load_explicit(&slot->drained_epoch, memory_order_acquire) < job->epoch &&
            effective_priority_locked(seg, slot) < job->priority)
            return true;
    }
    return false;
}

/* Whether a begin waits for lower work to drain under the segment's policy. A switch over every
 * row of policies.h with no default, and a missing case an error in every build (make, pip,
 * clang's fuzz build): a new row without its behaviour fails to build instead of acting as drain. */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch-enum"
static bool begin_drains(const gy_shm *shm)
{
    switch (gy_get_policy(shm)) {
    case GY_POLICY_DRAIN:
        return true;
    case GY_POLICY_CORUN:
        return false;
    case GY_POLICY_PARTITION:
    case GY_POLICY_GUARDED:
        return !gy_get_mps(shm); /* without MPS there is no green context: it drains */
    case GY_POLICY_COUNT:
        break; /* not a policy: gy_get_policy never gives it */
    }
    return true;
}
#pragma GCC diagnostic pop

enum gy_wait_result gy_job_wait_drained(gy_shm *shm, gy_job *job, uint64_t slice_ns)
{
    struct gy_segment *seg = shm->seg;
    if (!begin_drains(shm)) {
        /* The gate is closed; what lower processes had queued (and, under partition or a guarded
         * partition arm, what they launch into their green contexts) runs beside the job. */
        job->wait_ns = 0;
        job->drained = job->timed_out = false;
        job->corun = true;
        return GY_WAIT_CORUN;
    }
    uint64_t now = gy_now_ns();
    uint64_t slice_end = slice_ns ? now + slice_ns : UINT64_MAX;
    if (!job->next_reap_ns)
        job->next_reap_ns = now + REAP_INTERVAL_NS;
    enum gy_wait_result result;
    bool locked = gy_lock_and_recover(seg) == 0;
    /* A lock that cannot be had within its bound (a stopped holder) ends the wait as a timeout:
     * the drain was not seen. Counted in lock_timeouts and as a drain timeout. */
    result = GY_WAIT_TIMEDOUT;
    while (locked) {
        uint32_t seq = gy_wake_seq(seg);
        if (!drain_pending_locked(shm, job)) {
            result = GY_WAIT_DRAINED;
            break;
        }
        now = gy_now_ns();
        if (now >= job->deadline_ns) {
            result = GY_WAIT_TIMEDOUT;
            break;
        }
        if (now >= slice_end) {
            gy_unlock(seg);
            return GY_WAIT_PENDING;
        }
        uint64_t until = job->deadline_ns < slice_end ? job->deadline_ns : slice_end;
        if (until > job->next_reap_ns)
            until = job->next_reap_ns;
        if (wait_and_recover(seg, seq, until > now ? until - now : 1)) {
            locked = false;
            break;
        }
        reap_if_due(seg, &job->next_reap_ns);
    }
    if (locked)
        gy_unlock(seg);
    job->wait_ns = gy_now_ns() - job->entered_ns;
    job->drained = result == GY_WAIT_DRAINED;
    job->timed_out = result == GY_WAIT_TIMEDOUT;
    if (job->timed_out) {
        struct gy_proc_slot *slot = gy_my_slot(shm);
        if (slot)
            atomic_fetch_add_explicit(&slot->counters.drain_timeouts, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&seg->total_drain_timeouts, 1, memory_order_relaxed);
    }
    return result;
}

int gy_job_exit(gy_shm *shm, gy_job *job, gy_err *err) { return gy_job_exit_at(shm, job, 0, err); }

int gy_job_exit_at(gy_shm *shm, gy_job *job, uint64_t work_end_ns, gy_err *err)
{
    if (!job->active)
        return gy_fail(err, EINVAL, "job of priority %d is not in progress: end() without a matching begin()",
                       job->priority);
    struct gy_segment *seg = shm->seg;
    struct gy_proc_slot *slot = gy_my_slot(shm);
    int p = job->priority;
    uint64_t ended = gy_now_ns(); /* guarded: the job's own duration, taken before the lock */
    if (work_end_ns && work_end_ns < ended)
        ended = work_end_ns > job->entered_ns ? work_end_ns : job->entered_ns;
    struct gy_guard_change change = {.changed = false};
    int d = job->device;
    if (gy_lock_and_recover(seg)) {
        /* Not locked within its bound (a stopped holder, a loaded machine): the end is owed in our
         * slot, applied by the next holder (a blocked launch's lock within its 100 ms tick, a
         * helper's, the reaper's) and counted out by status readers at once: never lost. The
         * guarded policy misses this one job's duration. Only a corrupted mutex, which nobody
         * will hold again, or a full table, fails as before (still counted in: call end again). */
        if (!slot || slot->pid != gy_self_pid() || !gy_mutex_sane(seg) || p < 0 || p >= GY_LEVELS ||
            d < GY_DEVICE_ALL || d >= GY_MAX_DEVICES || !gy_owe_end(seg, slot, d, p))
            return gy_lock_fail(shm, "end the job", err);
        job->active = false;
        gy_wake_all(seg);
        return 0;
    }
    bool ours = slot && slot->pid == gy_self_pid() && slot->held_jobs[p] > 0 &&
                (d < 0 || (d < GY_MAX_DEVICES && slot->held_device_jobs[d][p] > 0));
    if (ours) {
        slot->held_jobs[p]--;
        if (seg->jobs[p])
            seg->jobs[p]--;
        if (d >= 0) {
            slot->held_device_jobs[d][p]--;
            if (seg->devices[d].jobs[p])
                seg->devices[d].jobs[p]--;
        }
        gy_guarded_end_locked(shm, job, ended, &change);
        gy_publish_levels_locked(seg);
    }
    gy_unlock(seg);
    job->active = false;
    gy_wake_all(seg);
    gy_guarded_tell(shm, &change);
    if (!ours)
        return gy_fail(err, ESRCH, "job of priority %d was already counted out of %s (our slot was reaped)", p,
                       shm->name);
    return 0;
}

int gy_begin(gy_shm *shm, int priority, gy_job *job, gy_err *err)
{
    return gy_begin_on(shm, priority, GY_DEVICE_ALL, job, err);
}

int gy_begin_on(gy_shm *shm, int priority, int device, gy_job *job, gy_err *err)
{
    if (gy_job_enter_on(shm, priority, device, 0, job, err))
        return -1;
    gy_job_wait_drained(shm, job, 0);
    return 0;
}

bool gy_drain_wait_request(gy_shm *shm, uint64_t timeout_ns, uint64_t *epoch)
{
    struct gy_segment *seg = shm->seg;
    struct gy_proc_slot *slot = gy_my_slot(shm);
    if (!slot)
        return false;
    uint64_t now = gy_now_ns(), deadline = deadline_after(now, timeout_ns), next_reap = now + REAP_INTERVAL_NS;
    bool requested = false;
    if (gy_lock_and_recover(seg)) { /* a corrupted mutex fails at once: never spin on it */
        gy_wait_unlocked(seg, gy_wake_seq(seg), deadline - now < REAP_INTERVAL_NS ? deadline - now : REAP_INTERVAL_NS);
        return false;
    }
    for (;;) {
        uint32_t seq = gy_wake_seq(seg);
        uint64_t current = atomic_load_explicit(&seg->job_epoch, memory_order_seq_cst);
        if (gated_where_launched_locked(shm, slot, effective_priority_locked(seg, slot)) &&
            atomic_load_explicit(&slot->inflight, memory_order_seq_cst) &&
            atomic_load_explicit(&slot->drained_epoch, memory_order_acquire) < current) {
            *epoch = current;
            /* A process whose launch is blocked stays shown blocked while its helper drains. */
            uint32_t running = GY_PROC_RUNNING;
            atomic_compare_exchange_strong(&slot->state, &running, GY_PROC_DRAINING);
            requested = true;
            break;
        }
        now = gy_now_ns();
        if (now >= deadline)
            break;
        uint64_t until = deadline < next_reap ? deadline : next_reap;
        if (wait_and_recover(seg, seq, until - now))
            return false;
        reap_if_due(seg, &next_reap);
    }
    gy_unlock(seg);
    return requested;
}

void gy_drain_ack(gy_shm *shm, uint64_t epoch, bool still_inflight)
{
    struct gy_proc_slot *slot = gy_my_slot(shm);
    if (!slot)
        return;
    /* Counted before the epoch is published: a begin that sees the drain sees it counted. */
    atomic_fetch_add_explicit(&slot->counters.drains, 1, memory_order_relaxed);
    if (!still_inflight)
        atomic_store_explicit(&slot->inflight, 0, memory_order_seq_cst);
    atomic_store_explicit(&slot->drained_epoch, epoch, memory_order_seq_cst);
    uint32_t draining = GY_PROC_DRAINING;
    atomic_compare_exchange_strong(&slot->state, &draining, GY_PROC_RUNNING);
    gy_wake_all(shm->seg);
}
