/* A checked snapshot of the segment for readers (expcontroller status, pyext status()). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "errors.h"
#include "proc_identity.h"
#include "guarded.h"
#include "registry.h"
#include "shared_wait.h"
#include "status_text.h"

#define MAX_SANE_JOBS 1000000u

static const char *state_name(uint32_t state)
{
    switch (state) {
    case GY_PROC_RUNNING: return "running";
    case GY_PROC_BLOCKED: return "blocked";
    case GY_PROC_DRAINING: return "draining";
    default: return "free";
    }
}

static const char *partition_name(uint32_t state)
{
    switch (state) {
    case GY_PARTITION_ACTIVE: return "active";
    case GY_PARTITION_NO_MPS: return "fallback: no MPS (drain)";
    case GY_PARTITION_NO_SYMBOLS: return "fallback: the driver has no green contexts (corun)";
    case GY_PARTITION_CREATE_FAILED: return "fallback: cannot create a green context (corun)";
    default: return "-";
    }
}

int gy_status_read(gy_shm *shm, struct gy_status *out, gy_err *err)
{
    struct gy_segment *seg = shm->seg;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", shm->name);
    /* A reader must not hang on a wedged segment: a mutex of another kind (corrupted: glibc
     * aborts on some) is never locked, and a held one only within the lock's bound; the fields
     * kept atomically are read without it then, and the holder is named. */
    bool locked = gy_lock(seg) >= 0;
    out->lock_timeouts = atomic_load(&seg->lock_timeouts);
    if (!locked) {
        if (gy_mutex_sane(seg))
            gy_describe_holder(seg, out->mutex_holder, sizeof out->mutex_holder);
        else
            snprintf(out->mutex_holder, sizeof out->mutex_holder, "nobody: the mutex is corrupted (kind %d)",
                     seg->mutex.__data.__kind);
    }
    /* Ends owed (an end() that could not lock): applied by us when we hold the mutex, else
     * counted out here, so the counts are the truth whether or not the lock was had. */
    uint32_t owed_on_device[GY_MAX_DEVICES][GY_LEVELS];
    uint32_t owed[GY_LEVELS] = {0};
    memset(owed_on_device, 0, sizeof owed_on_device);
    if (locked)
        gy_apply_owed_ends_locked(seg);
    else
        for (int i = 0; i < GY_MAX_PROCS; i++)
            if (atomic_load_explicit(&seg->procs[i].state, memory_order_acquire) != GY_PROC_FREE)
                gy_owed_ends_of(&seg->procs[i], owed, owed_on_device);
    int bad_slot = -1;
    for (int level = 0; level < GY_LEVELS; level++) {
        out->jobs[level] = seg->jobs[level] >= owed[level] ? seg->jobs[level] - owed[level] : 0;
        if (out->jobs[level] > MAX_SANE_JOBS)
            bad_slot = -2 - level;
    }
    out->policy = gy_get_policy(shm);
    out->mps = gy_get_mps(shm);
    out->job_epoch = atomic_load(&seg->job_epoch);
    out->total_drain_timeouts = atomic_load(&seg->total_drain_timeouts);
    out->reaped = atomic_load(&seg->reaped);
    out->guarded = out->policy == GY_POLICY_GUARDED;
    if (out->guarded)
        memcpy(&out->guard, &seg->guard, sizeof out->guard);
    for (int d = 0; d < GY_MAX_DEVICES && bad_slot == -1; d++) {
        const struct gy_device_slot *dev = &seg->devices[d];
        if (!atomic_load_explicit(&dev->claimed, memory_order_acquire))
            continue;
        struct gy_status_device *o = &out->devices[out->ndevices++];
        o->slot = d;
        gy_format_uuid(dev->uuid, o->uuid);
        for (int level = 0; level < GY_LEVELS; level++) {
            o->jobs[level] = dev->jobs[level] >= owed_on_device[d][level] ? dev->jobs[level] - owed_on_device[d][level] : 0;
            if (o->jobs[level] > out->jobs[level])
                bad_slot = -2 - level;
        }
    }
    for (int i = 0; i < GY_MAX_PROCS && bad_slot == -1; i++) {
        const struct gy_proc_slot *slot = &seg->procs[i];
        uint32_t state = atomic_load_explicit(&slot->state, memory_order_acquire);
        if (state == GY_PROC_FREE)
            continue;
        if (!gy_slot_sane(slot)) {
            bad_slot = i;
            break;
        }
        struct gy_status_proc *p = &out->procs[out->nprocs++];
        p->pid = slot->pid;
        p->priority = slot->priority;
        p->state = state_name(state);
        p->inflight = atomic_load(&slot->inflight) != 0;
#define COPY_COUNTER(name, what) p->name = atomic_load(&slot->counters.name);
        GY_PROC_COUNTERS(COPY_COUNTER)
#undef COPY_COUNTER
        p->partition = partition_name(atomic_load(&slot->partition_state));
        p->launched_devices = atomic_load(&slot->launched_devices);
    }
    if (locked)
        gy_unlock(seg);
    clock_gettime(CLOCK_REALTIME, &out->taken);
    for (int i = 0; i < out->nprocs && bad_slot == -1; i++) /* /proc reads outside the mutex */
        gy_proc_name(out->procs[i].pid, out->procs[i].name, sizeof out->procs[i].name);
    if (bad_slot >= 0) {
        const struct gy_proc_slot *slot = &seg->procs[bad_slot];
        return gy_fail(err, EPROTO,
                       "segment %s is corrupt: process slot %d has state %u, pid %d, priority %d (expected "
                       "state 0..3, pid > 0, priority 0..7); stop its users and `expcontroller remove --name %s`",
                       shm->name, bad_slot, (unsigned)atomic_load(&slot->state), slot->pid, slot->priority,
                       shm->name);
    }
    if (bad_slot < -1)
        return gy_fail(err, EPROTO,
                       "segment %s is corrupt: level %d counts %u jobs in progress; stop its users and "
                       "`expcontroller remove --name %s`",
                       shm->name, -2 - bad_slot, out->jobs[-2 - bad_slot], shm->name);
    return 0;
}

/* A JSON string body: quotes, backslashes and control characters escaped. */
static void json_escape(const char *in, char *out, size_t len)
{
    size_t o = 0;
    for (; *in && o + 7 < len; in++) {
        unsigned char c = (unsigned char)*in;
        if (c == '"' || c == '\\')
            o += (size_t)snprintf(out + o, len - o, "\\%c", c);
        else if (c < 0x20)
            o += (size_t)snprintf(out + o, len - o, "\\u%04x", c);
        else
            out[o++] = (char)c;
    }
    out[o] = '\0';
}

/* RFC 3339 UTC with milliseconds: 2026-11-23T16:55:01.123Z */
void gy_rfc3339(const struct timespec *when, char *out, size_t len)
{
    struct tm tm;
    gmtime_r(&when->tv_sec, &tm);
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, len, "%s.%03ldZ", day, when->tv_nsec / 1000000L);
}

void gy_devices_text(uint32_t launched, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int d = 0; d < GY_MAX_DEVICES; d++)
        if (launched & (1u << d))
            used += (size_t)snprintf(out + used, used < len ? len - used : 0, "%s%d", used ? "," : "", d);
    if (launched & GY_LAUNCHED_UNKNOWN)
        used += (size_t)snprintf(out + used, used < len ? len - used : 0, "%s?", used ? "," : "");
    if (!used)
        snprintf(out, len, "-");
}

int gy_status_json(const struct gy_status *st, char *buf, size_t len)
{
    size_t used = 0;
    char stamp[48], name[sizeof st->procs[0].name * 6 + 8];
    gy_rfc3339(&st->taken, stamp, sizeof stamp);
#define EMIT(...)                                                                                        \
    do {                                                                                                 \
        int n_ = snprintf(used < len ? buf + used : NULL, used < len ? len - used : 0, __VA_ARGS__);     \
        used += n_ > 0 ? (size_t)n_ : 0;                                                                 \
    } while (0)
    EMIT("{\"segment\": \"%s\", \"timestamp\": \"%s\", \"policy\": \"%s\", \"mps\": %s, \"jobs\": [", st->name, stamp,
         gy_policy_name(st->policy), st->mps ? "true" : "false");
    for (int level = 0; level < GY_LEVELS; level++)
        EMIT("%s%u", level ? ", " : "", st->jobs[level]);
    EMIT("], \"job_epoch\": %llu, \"drain_timeouts\": %llu, \"reaped\": %llu, \"lock_timeouts\": %llu, "
         "\"mutex_holder\": ",
         (unsigned long long)st->job_epoch, (unsigned long long)st->total_drain_timeouts,
         (unsigned long long)st->reaped, (unsigned long long)st->lock_timeouts);
    EMIT(st->mutex_holder[0] ? "\"%s\", \"devices\": [" : "null%s, \"devices\": [", st->mutex_holder);
    for (int i = 0; i < st->ndevices; i++) {
        const struct gy_status_device *d = &st->devices[i];
        EMIT("%s{\"slot\": %d, \"uuid\": \"%s\", \"jobs\": [", i ? ", " : "", d->slot, d->uuid);
        for (int level = 0; level < GY_LEVELS; level++)
            EMIT("%s%u", level ? ", " : "", d->jobs[level]);
        EMIT("]}");
    }
    EMIT("], ");
    if (st->guarded) { /* only under guarded: the other policies' JSON stays as it was */
        EMIT("\"guarded\": ");
        used += (size_t)gy_guarded_json(&st->guard, used < len ? buf + used : NULL, used < len ? len - used : 0);
        EMIT(", ");
    }
    EMIT("\"processes\": [");
    for (int i = 0; i < st->nprocs; i++) {
        const struct gy_status_proc *p = &st->procs[i];
        json_escape(p->name, name, sizeof name);
        EMIT("%s{\"pid\": %d, \"name\": \"%s\", \"priority\": %d, \"state\": \"%s\", \"inflight\": %s", i ? ", " : "", p->pid, name,
             p->priority, p->state, p->inflight ? "true" : "false");
#define EMIT_COUNTER(name, what) EMIT(", \"" #name "\": %llu", (unsigned long long)p->name);
        GY_PROC_COUNTERS(EMIT_COUNTER)
#undef EMIT_COUNTER
        EMIT(", \"partition\": \"%s\", \"devices\": [", p->partition);
        /* device slots launched on; -1 (GY_DEVICE_ALL) for launches on no known device */
        bool first = true;
        for (int d = 0; d < GY_MAX_DEVICES; d++)
            if (p->launched_devices & (1u << d)) {
                EMIT("%s%d", first ? "" : ", ", d);
                first = false;
            }
        if (p->launched_devices & GY_LAUNCHED_UNKNOWN)
            EMIT("%s%d", first ? "" : ", ", GY_DEVICE_ALL);
        EMIT("]}");
    }
    EMIT("]}");
#undef EMIT
    return (int)used;
}
