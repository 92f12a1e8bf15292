/* Process registration and reaping of dead processes. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "errors.h"
#include "proc_identity.h"
#include "registry.h"
#include "self_pid.h"
#include "shared_wait.h"

bool gy_slot_sane(const struct gy_proc_slot *slot)
{
    uint32_t state = atomic_load_explicit(&slot->state, memory_order_acquire);
    if (state == GY_PROC_FREE)
        return true;
    if (state > GY_PROC_DRAINING || slot->pid <= 0 || slot->priority < 0 || slot->priority >= GY_LEVELS)
        return false;
    for (int level = 0; level < GY_LEVELS; level++) {
        uint32_t on_devices = 0;
        for (int d = 0; d < GY_MAX_DEVICES; d++)
            on_devices += slot->held_device_jobs[d][level];
        if (slot->held_jobs[level] > GY_MAX_HELD_JOBS || on_devices > slot->held_jobs[level])
            return false;
    }
    return true;
}

/* Levels with a job on every device: jobs[] counts all jobs, devices[].jobs those on one device. */
static uint32_t all_device_levels(const struct gy_segment *seg)
{
    uint32_t mask = 0;
    for (int level = 0; level < GY_LEVELS; level++) {
        uint64_t on_devices = 0;
        for (int d = 0; d < GY_MAX_DEVICES; d++)
            on_devices += seg->devices[d].jobs[level];
        if (seg->jobs[level] > on_devices)
            mask |= 1u << level;
    }
    return mask;
}

void gy_publish_levels_locked(struct gy_segment *seg)
{
    uint32_t removed = atomic_load_explicit(&seg->active_levels, memory_order_relaxed) & GY_REMOVED_BIT;
    uint32_t mask = removed, everywhere = removed | all_device_levels(seg);
    for (int level = 0; level < GY_LEVELS; level++)
        if (seg->jobs[level])
            mask |= 1u << level;
    for (int d = 0; d < GY_MAX_DEVICES; d++) {
        uint32_t word = everywhere;
        for (int level = 0; level < GY_LEVELS; level++)
            if (seg->devices[d].jobs[level])
                word |= 1u << level;
        atomic_store_explicit(&seg->devices[d].active_levels, word, memory_order_seq_cst);
    }
    atomic_store_explicit(&seg->active_levels, mask, memory_order_seq_cst);
}

/* An entry's device (-1: every device) and level; false for an entry no end() writes (corrupt). */
static bool owed_entry(uint32_t entry, int *device, int *level)
{
    *device = (int)((entry >> 3) & 0x1f) - 1;
    *level = (int)(entry & 7);
    return (entry & GY_OWED_USED) && !(entry & 0x7f00) && *device < GY_MAX_DEVICES;
}

bool gy_owe_end(struct gy_segment *seg, struct gy_proc_slot *slot, int device, int level)
{
    uint32_t key = GY_OWED_USED | (uint32_t)(device + 1) << 3 | (uint32_t)level;
    /* First an entry with our key (its count not full), then a free one. A CAS each: a holder may
     * take the entry (exchange to 0) at any moment, and then ours must go to another. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < GY_OWED_ENDS; i++) {
            uint32_t entry = atomic_load_explicit(&slot->ends_owed[i], memory_order_acquire);
            for (;;) {
                bool fits = pass == 0 ? (entry & 0xffff) == key && entry >> 16 < 0xffff : entry == 0;
                if (!fits)
                    break;
                uint32_t want = pass == 0 ? entry + (1u << 16) : key | 1u << 16;
                if (atomic_compare_exchange_weak_explicit(&slot->ends_owed[i], &entry, want, memory_order_acq_rel,
                                                          memory_order_acquire)) {
                    atomic_fetch_add_explicit(&seg->ends_owed, 1, memory_order_seq_cst);
                    return true;
                }
            }
        }
    return false;
}

void gy_owed_ends_of(const struct gy_proc_slot *slot, uint32_t owed[GY_LEVELS],
                     uint32_t owed_on_device[GY_MAX_DEVICES][GY_LEVELS])
{
    for (int i = 0; i < GY_OWED_ENDS; i++) {
        uint32_t entry = atomic_load_explicit(&slot->ends_owed[i], memory_order_acquire);
        int device, level;
        if (!owed_entry(entry, &device, &level))
            continue;
        owed[level] += entry >> 16;
        if (device >= 0 && owed_on_device)
            owed_on_device[device][level] += entry >> 16;
    }
}

bool gy_apply_owed_ends_locked(struct gy_segment *seg)
{
    if (!atomic_load_explicit(&seg->ends_owed, memory_order_seq_cst))
        return false;
    bool applied = false;
    for (int i = 0; i < GY_MAX_PROCS; i++) {
        struct gy_proc_slot *slot = &seg->procs[i];
        for (int e = 0; e < GY_OWED_ENDS; e++) {
            if (!atomic_load_explicit(&slot->ends_owed[e], memory_order_relaxed))
                continue;
            uint32_t entry = atomic_exchange_explicit(&slot->ends_owed[e], 0, memory_order_acq_rel);
            uint32_t n = entry >> 16;
            atomic_fetch_sub_explicit(&seg->ends_owed, n, memory_order_seq_cst);
            int d, p;
            if (!owed_entry(entry, &d, &p) || atomic_load_explicit(&slot->state, memory_order_acquire) == GY_PROC_FREE)
                continue;
            /* Never below what the slot holds: a reaped slot's jobs were counted out already. */
            if (n > slot->held_jobs[p])
                n = slot->held_jobs[p];
            if (d >= 0 && n > slot->held_device_jobs[d][p])
                n = slot->held_device_jobs[d][p];
            slot->held_jobs[p] = (uint16_t)(slot->held_jobs[p] - n);
            seg->jobs[p] = seg->jobs[p] >= n ? seg->jobs[p] - n : 0;
            if (d >= 0) {
                slot->held_device_jobs[d][p] = (uint16_t)(slot->held_device_jobs[d][p] - n);
                seg->devices[d].jobs[p] = seg->devices[d].jobs[p] >= n ? seg->devices[d].jobs[p] - n : 0;
            }
            applied = applied || n;
        }
    }
    if (applied) {
        gy_publish_levels_locked(seg);
        gy_wake_all(seg);
    }
    return applied;
}

static void free_slot_locked(struct gy_segment *seg, struct gy_proc_slot *slot)
{
    for (int e = 0; e < GY_OWED_ENDS; e++) /* its held jobs go below: what it owed with them */
        atomic_fetch_sub_explicit(&seg->ends_owed, atomic_exchange(&slot->ends_owed[e], 0) >> 16,
                                  memory_order_seq_cst);
    for (int level = 0; level < GY_LEVELS; level++) {
        uint32_t held = slot->held_jobs[level];
        seg->jobs[level] = seg->jobs[level] >= held ? seg->jobs[level] - held : 0;
        slot->held_jobs[level] = 0;
        for (int d = 0; d < GY_MAX_DEVICES; d++) {
            uint32_t *jobs = &seg->devices[d].jobs[level];
            held = slot->held_device_jobs[d][level];
            *jobs = *jobs >= held ? *jobs - held : 0;
            slot->held_device_jobs[d][level] = 0;
        }
    }
    atomic_store_explicit(&slot->inflight, 0, memory_order_seq_cst);
    atomic_store_explicit(&slot->state, GY_PROC_FREE, memory_order_release);
    gy_publish_levels_locked(seg);
}

int gy_reap_locked(struct gy_segment *seg)
{
    int reaped = 0;
    for (int i = 0; i < GY_MAX_PROCS; i++) {
        struct gy_proc_slot *slot = &seg->procs[i];
        uint32_t state = atomic_load_explicit(&slot->state, memory_order_acquire);
        if (state == GY_PROC_FREE)
            continue;
        /* A corrupt slot, or one whose process is gone or was replaced by a reused pid. */
        if (!gy_slot_sane(slot) || !gy_proc_image_alive(slot->pid, slot->start_time, slot->exec_id)) {
            free_slot_locked(seg, slot);
            reaped++;
        }
    }
    if (reaped)
        atomic_fetch_add_explicit(&seg->reaped, (uint64_t)reaped, memory_order_relaxed);
    /* Under the mutex a level counts exactly the jobs its live slots hold. A count no live slot
     * holds (a corrupted segment) would keep lower launches blocked forever: correct it. */
    int corrected = 0;
    for (int level = 0; level < GY_LEVELS; level++) {
        uint32_t held = 0;
        for (int i = 0; i < GY_MAX_PROCS; i++)
            if (atomic_load_explicit(&seg->procs[i].state, memory_order_relaxed) != GY_PROC_FREE)
                held += seg->procs[i].held_jobs[level];
        if (seg->jobs[level] != held) {
            seg->jobs[level] = held;
            corrected++;
        }
        for (int d = 0; d < GY_MAX_DEVICES; d++) {
            held = 0;
            for (int i = 0; i < GY_MAX_PROCS; i++)
                if (atomic_load_explicit(&seg->procs[i].state, memory_order_relaxed) != GY_PROC_FREE)
                    held += seg->procs[i].held_device_jobs[d][level];
            if (seg->devices[d].jobs[level] != held) {
                seg->devices[d].jobs[level] = held;
                corrected++;
            }
        }
    }
    uint32_t published = atomic_load_explicit(&seg->active_levels, memory_order_relaxed);
    gy_publish_levels_locked(seg);
    if (corrected || published != atomic_load_explicit(&seg->active_levels, memory_order_relaxed))
        gy_wake_all(seg); /* rare: the gate opened for someone */
    return reaped;
}

int gy_lock_and_recover(struct gy_segment *seg)
{
    int rc = gy_lock(seg);
    if (rc == 1 && gy_reap_locked(seg))
        gy_wake_all(seg);
    if (rc >= 0)
        gy_apply_owed_ends_locked(seg);
    return rc < 0 ? -1 : 0;
}

/* 'T' (stopped) or 't' (traced) in /proc/<pid>/stat: why a holder does not let go. */
static bool process_stopped(int pid)
{
    char buf[512];
    if (gy_proc_read(pid, "stat", buf, sizeof buf) < 0)
        return false;
    const char *p = strrchr(buf, ')');
    return p && (p[2] == 'T' || p[2] == 't');
}

void gy_describe_holder(const struct gy_segment *seg, char *buf, size_t len)
{
    int tid, pid = gy_mutex_holder(seg, &tid);
    if (!tid) {
        snprintf(buf, len, "nobody now");
        return;
    }
    int priority = -1;
    for (int i = 0; i < GY_MAX_PROCS && pid > 0; i++) {
        const struct gy_proc_slot *s = &seg->procs[i];
        if (atomic_load_explicit(&s->state, memory_order_acquire) != GY_PROC_FREE && s->pid == pid && gy_slot_sane(s))
            priority = s->priority;
    }
    char registered[64] = "not registered in it";
    if (priority >= 0)
        snprintf(registered, sizeof registered, "registered at priority %d", priority);
    if (pid > 0)
        snprintf(buf, len, "pid %d (thread %d, %s%s)", pid, tid, registered, process_stopped(pid) ? ", STOPPED" : "");
    else
        snprintf(buf, len, "thread id %d, which no live process has", tid);
}

int gy_lock_fail(const gy_shm *shm, const char *doing, gy_err *err)
{
    const struct gy_segment *seg = shm->seg;
    if (!gy_mutex_sane(seg))
        return gy_fail(err, EPROTO,
                       "cannot %s: the mutex of segment %s is corrupted (kind %d): stop its users and "
                       "`expcontroller remove --name %s`",
                       doing, shm->name, seg->mutex.__data.__kind, shm->name);
    char holder[160];
    gy_describe_holder(seg, holder, sizeof holder);
    return gy_fail(err, ETIMEDOUT,
                   "cannot %s: the mutex of segment %s stayed held for over %llu ms by %s; a stopped process "
                   "(SIGSTOP, a debugger) must be resumed (kill -CONT) or ended; counted in lock_timeouts",
                   doing, shm->name, (unsigned long long)(gy_lock_bound_ns(seg) / 1000000ull), holder);
}

int gy_reap(gy_shm *shm)
{
    if (gy_lock_and_recover(shm->seg))
        return 0;
    int reaped = gy_reap_locked(shm->seg);
    gy_unlock(shm->seg);
    if (reaped)
        gy_wake_all(shm->seg);
    return reaped;
}

int gy_register(gy_shm *shm, int priority, gy_err *err)
{
    if (priority < 0 || priority >= GY_LEVELS)
        return gy_fail(err, EINVAL, "priority %d is out of range: use 0..%d (higher wins)", priority, GY_LEVELS - 1);
    if (shm->slot >= 0)
        return gy_fail(err, EBUSY, "this handle is already registered in %s (slot %d)", shm->name, shm->slot);
    struct gy_segment *seg = shm->seg;
    int pid = gy_self_pid();
    uint32_t exec_id;
    uint64_t start = gy_proc_identity(pid, &exec_id);
    if (!start) /* without it the slot would look dead to the next reap */
        return gy_fail(err, EMFILE, "cannot read /proc/%d/stat to register in %s (out of file descriptors, or "
                                    "/proc not mounted?): free descriptors or mount /proc, then retry",
                       pid, shm->name);
    if (gy_lock_and_recover(seg))
        return gy_lock_fail(shm, "register", err);
    int found = -1;
    for (int pass = 0; pass < 2 && found < 0; pass++) {
        if (pass == 1 && gy_reap_locked(seg) == 0)
            break; /* full of live processes */
        for (int i = 0; i < GY_MAX_PROCS; i++) {
            if (atomic_load_explicit(&seg->procs[i].state, memory_order_acquire) == GY_PROC_FREE) {
                found = i;
                break;
            }
        }
    }
    if (found < 0) {
        gy_unlock(seg);
        return gy_fail(err, ENOSPC,
                       "the process table of segment %s is full (%d live processes): stop some workers, or "
                       "run them in another experiment (another tag)",
                       shm->name, GY_MAX_PROCS);
    }
    struct gy_proc_slot *slot = &seg->procs[found];
    memset(&slot->counters, 0, sizeof slot->counters);
    memset(slot->held_jobs, 0, sizeof slot->held_jobs);
    memset(slot->held_device_jobs, 0, sizeof slot->held_device_jobs);
    atomic_store_explicit(&slot->launched_devices, 0, memory_order_relaxed);
    slot->pid = pid;
    slot->start_time = start;
    slot->exec_id = exec_id;
    slot->priority = priority;
    atomic_store_explicit(&slot->inflight, 0, memory_order_relaxed);
    atomic_store_explicit(&slot->drained_epoch, 0, memory_order_relaxed);
    atomic_store_explicit(&slot->state, GY_PROC_RUNNING, memory_order_release);
    gy_unlock(seg);
    shm->slot = found;
    return 0;
}

void gy_release_at_exit(gy_shm *shm)
{
    int index = shm->slot;
    if (!shm->seg || index < 0 || index >= GY_MAX_PROCS)
        return;
    struct gy_segment *seg = shm->seg;
    struct gy_proc_slot *slot = &seg->procs[index];
    if (gy_lock_and_recover(seg))
        return; /* the next reap frees it once we are gone */
    if (slot->pid == gy_self_pid() && atomic_load_explicit(&slot->state, memory_order_acquire) != GY_PROC_FREE)
        free_slot_locked(seg, slot);
    gy_unlock(seg);
    gy_wake_all(seg);
}

void gy_unregister(gy_shm *shm)
{
    if (shm->slot < 0)
        return;
    struct gy_segment *seg = shm->seg;
    struct gy_proc_slot *slot = &seg->procs[shm->slot];
    shm->slot = -1;
    if (gy_lock_and_recover(seg))
        return; /* a reap frees the slot once we are gone */
    /* The slot may have been reaped and reused if our pid was misjudged; only free our own. */
    if (slot->pid == gy_self_pid() && atomic_load_explicit(&slot->state, memory_order_acquire) != GY_PROC_FREE)
        free_slot_locked(seg, slot);
    gy_unlock(seg);
    gy_wake_all(seg);
}

int gy_device_slot(gy_shm *shm, const uint8_t uuid[GY_UUID_BYTES], gy_err *err)
{
    struct gy_segment *seg = shm->seg;
    for (int d = 0; d < GY_MAX_DEVICES; d++) /* the common case: claimed before, no lock */
        if (atomic_load_explicit(&seg->devices[d].claimed, memory_order_acquire) &&
            memcmp(seg->devices[d].uuid, uuid, GY_UUID_BYTES) == 0)
            return d;
    if (gy_lock_and_recover(seg))
        return gy_lock_fail(shm, "claim a device slot", err);
    int found = -1;
    for (int d = 0; d < GY_MAX_DEVICES && found < 0; d++) {
        struct gy_device_slot *dev = &seg->devices[d];
        if (!atomic_load_explicit(&dev->claimed, memory_order_relaxed)) {
            memcpy(dev->uuid, uuid, GY_UUID_BYTES);
            atomic_store_explicit(&dev->claimed, 1, memory_order_release);
            found = d;
        } else if (memcmp(dev->uuid, uuid, GY_UUID_BYTES) == 0) {
            found = d;
        }
    }
    gy_unlock(seg);
    if (found < 0)
        return gy_fail(err, ENOSPC,
                       "the device table of segment %s is full (%d GPUs): launches on further GPUs are gated "
                       "by every job; split the GPUs over several experiments (tags)",
                       shm->name, GY_MAX_DEVICES);
    return found;
}

void gy_format_uuid(const uint8_t uuid[GY_UUID_BYTES], char out[GY_UUID_TEXT])
{
    static const int dash_after[] = {3, 5, 7, 9};
    char *p = out + sprintf(out, "GPU-");
    for (int i = 0, k = 0; i < GY_UUID_BYTES; i++) {
        p += sprintf(p, "%02x", uuid[i]);
        if (k < 4 && i == dash_after[k]) {
            *p++ = '-';
            k++;
        }
    }
    *p = '\0';
}

void gy_note_launch_device(gy_shm *shm, int device)
{
    struct gy_proc_slot *slot = gy_my_slot(shm);
    uint32_t bit = device >= 0 && device < GY_MAX_DEVICES ? 1u << device : GY_LAUNCHED_UNKNOWN;
    if (slot && !(atomic_load_explicit(&slot->launched_devices, memory_order_relaxed) & bit))
        atomic_fetch_or_explicit(&slot->launched_devices, bit, memory_order_seq_cst);
}
