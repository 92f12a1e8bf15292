/* Per-thread stream states for the sync:N, event:N and time:US modes.
 *
 * event and time work in groups: the end of group g is marked by an event in a ring of four.
 * Before the first unit of group g the thread waits for the end of group g-2, so at most two
 * groups are queued or running. time:US sizes a group to hold US/2 of GPU time, from the GPU
 * time per unit learned on this stream with timing events (per kind: kernels and graph
 * launches), so two groups hold at most US. A unit longer than US/2 makes a group of one that
 * holds more (a long group); a kind not timed yet counts as long. A group that is long, or
 * follows a long one, waits for the group before it instead (depth 1): the stream then holds
 * that one group, and never more than max(US, one unit).
 *
 * Depth 1 only where needed: after its wait the stream is empty until this thread sees the
 * event complete and its next launch reaches the GPU, a gap of idle GPU per group: microseconds
 * where the spin below sees the end, a wake-up (tens of microseconds) where the group outlasts
 * the spin and the wait blocks. Two groups in flight hide that gap; a group of more than US/2
 * makes it a small share of its time. A group of depth 1 is timed from an event recorded just
 * before it (on the idle stream), so the gap is not learned as GPU time.
 *
 * A unit whose GPU time the caller knows (a timed part of a cut graph, graph_split.h) is a group
 * of its own and is not learned from: it waits for the group before it only where the two would
 * hold more than US (the learned average of uneven graph parts let two long ones go ahead of a
 * job; waiting after every long one left the GPU idle between each long part and the short one
 * after it: 10 % of a graph LP's throughput on the H100).
 *
 * Waits spin on cuEventQuery for a short while before blocking (GPUYIELD_SPIN_US, default 1 ms,
 * yielding between polls): a blocking wait costs a wake-up (tens of microseconds) that would leave
 * the GPU idle between small groups. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "driver.h"
#include "guarded.h"
#include "queue_bound.h"
#include "trace_ranges.h"

#define TABLE_SIZE 16      /* streams per thread; more evict (their bound restarts) */
#define RING 4             /* events g-3 .. g: two finished groups to time, one in flight, one filling */
#define UNTIMED_GROUP 8     /* time mode on a driver that cannot time events: groups as event:8 */
#define MAX_GROUP 1024     /* about the depth of a stream's launch queue */

struct gy_stream_state {
    gy_cu_stream stream; /* NULL: free entry */
    gy_cu_context ctx;   /* the default-stream handles name another stream in each context */
    uint64_t units;      /* launched on this stream by this thread */
    uint64_t group;      /* the group being filled (event/time) */
    uint64_t group_left; /* units still to launch in it; 0: the next launch starts a new group */
    gy_cu_event events[RING];
    bool recorded[RING]; /* events[g % RING] marks the end of group g */
    bool complete[RING]; /* ... and was seen complete */
    uint32_t sizes[RING];
    bool graph_group[RING]; /* time mode: group g holds graph launches (else kernels) */
    bool long_group[RING];  /* time mode: group g holds more than US/2, or a kind not timed yet */
    double known_ns[RING];  /* time mode: > 0 when group g is one unit of that time, known beforehand (not learned) */
    gy_cu_event start;      /* time mode: recorded just before group start_group (depth 1) */
    uint64_t start_group;
    bool start_recorded;
    double ns_per_unit;  /* time mode: learned GPU time per kernel, 0 until known */
    double ns_per_graph; /* time mode: learned GPU time per graph launch, 0 until known */
    uint64_t checked_captures; /* captures_begun when `capturing` was last checked */
    bool capturing;
};

struct thread_table {
    uint64_t generation;
    struct gy_stream_state states[TABLE_SIZE];
};

static __thread struct thread_table *table __attribute__((tls_model("initial-exec")));
static pthread_key_t table_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void destroy_event(gy_cu_event *event)
{
    gy_pfn_event_destroy destroy = (gy_pfn_event_destroy)gy_real(GY_FN_EVENT_DESTROY);
    if (*event && destroy)
        destroy(*event);
    *event = NULL;
}

static void destroy_events(struct gy_stream_state *st)
{
    for (int i = 0; i < RING; i++)
        destroy_event(&st->events[i]);
    destroy_event(&st->start);
}

static void free_table(void *p)
{
    struct thread_table *t = p;
    if (t->generation == atomic_load(&gy_client.generation))
        for (int i = 0; i < TABLE_SIZE; i++)
            destroy_events(&t->states[i]);
    free(t);
    /* Another key's destructor may still launch on this exiting thread: it gets a fresh table. */
    if (table == t)
        table = NULL;
}

static void create_key(void) { pthread_key_create(&table_key, free_table); }

static struct gy_stream_state *state_for(gy_cu_stream stream)
{
    uint64_t generation = atomic_load_explicit(&gy_client.generation, memory_order_relaxed);
    if (!table || table->generation != generation) {
        /* First use on this thread, or a child after fork: the parent's events mean nothing here. */
        free(table);
        table = calloc(1, sizeof *table);
        if (!table)
            return NULL;
        table->generation = generation;
        pthread_once(&key_once, create_key);
        pthread_setspecific(table_key, table);
    }
    gy_cu_context ctx = gy_thread_context;
    unsigned home = (unsigned)(((uintptr_t)stream >> 4) ^ (uintptr_t)stream ^ ((uintptr_t)ctx >> 4)) % TABLE_SIZE;
    for (unsigned i = 0; i < TABLE_SIZE; i++) {
        struct gy_stream_state *st = &table->states[(home + i) % TABLE_SIZE];
        if (st->stream == stream && st->ctx == ctx)
            return st;
        if (!st->stream) {
            st->stream = stream;
            st->ctx = ctx;
            return st;
        }
    }
    struct gy_stream_state *victim = &table->states[home];
    destroy_events(victim);
    *victim = (struct gy_stream_state){.stream = stream, .ctx = ctx};
    return victim;
}

/* At a group boundary: is the stream being captured? Re-asked only when a capture began in
 * this process since the last answer, or the stream's capture had not ended then. */
static bool capturing(struct gy_stream_state *st)
{
    /* A query or sync while any thread of the process captures can invalidate that capture (in
     * global mode, or on the same device): skip sync points until it ends. */
    if (atomic_load_explicit(&gy_client.captures_in_progress, memory_order_acquire) > 0)
        return true;
    uint64_t begun = atomic_load_explicit(&gy_client.captures_begun, memory_order_acquire);
    if (st->checked_captures == begun && !st->capturing)
        return false;
    gy_pfn_is_capturing is_capturing = (gy_pfn_is_capturing)gy_real(GY_FN_IS_CAPTURING);
    int status = GY_CU_STREAM_CAPTURE_STATUS_NONE;
    /* If we cannot tell, assume capturing: skipping a sync point is safe, breaking a capture is not. */
    st->capturing = !is_capturing || is_capturing(st->stream, &status) != GY_CUDA_SUCCESS ||
                    status != GY_CU_STREAM_CAPTURE_STATUS_NONE;
    st->checked_captures = begun;
    return st->capturing;
}

static void count_sync_point(void)
{
    struct gy_proc_slot *slot = gy_my_slot(&gy_client.shm);
    if (slot)
        atomic_fetch_add_explicit(&slot->counters.sync_points, 1, memory_order_relaxed);
}

static void wait_event(gy_cu_event event)
{
    gy_pfn_event_query query = (gy_pfn_event_query)gy_real(GY_FN_EVENT_QUERY);
    gy_pfn_event_synchronize sync = (gy_pfn_event_synchronize)gy_real(GY_FN_EVENT_SYNCHRONIZE);
    gy_cu_result state = query ? query(event) : GY_CUDA_ERROR_NOT_READY;
    if (state == GY_CUDA_SUCCESS)
        return; /* the usual case when the GPU keeps up: no sync point at all */
    gy_range_push("sync");
    uint64_t start = gy_now_ns(), spin_ns = gy_config()->spin_us * 1000ull;
    while (query && state == GY_CUDA_ERROR_NOT_READY && gy_now_ns() - start <= spin_ns) {
        sched_yield();
        state = query(event);
    }
    if (state == GY_CUDA_ERROR_NOT_READY)
        sync(event); /* spun long enough (or cannot query): block */
    gy_range_pop();
    count_sync_point();
}

static gy_pfn_event_elapsed elapsed_function(void)
{
    /* cuEventElapsedTime_v2 is newer (CUDA 12.8 drivers); the original has the same signature. */
    gy_pfn_event_elapsed elapsed = (gy_pfn_event_elapsed)gy_real(GY_FN_EVENT_ELAPSED);
    return elapsed ? elapsed : (gy_pfn_event_elapsed)gy_real(GY_FN_EVENT_ELAPSED_V1);
}

/* time mode: learn the GPU time per unit from group k, just seen complete: timed from the event
 * recorded before it (depth 1) or from the end of group k-1. */
static void learn(struct gy_stream_state *st, uint64_t k)
{
    int end = (int)(k % RING), prev = (int)((k + RING - 1) % RING);
    gy_cu_event from = NULL;
    if (st->start_recorded && st->start_group == k)
        from = st->start;
    else if (k >= 1 && st->recorded[prev] && st->complete[prev])
        from = st->events[prev];
    if (!from || !st->sizes[end] || st->known_ns[end] > 0)
        return;
    gy_pfn_event_elapsed elapsed = elapsed_function();
    if (!elapsed) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
            fprintf(stderr, "gpuyield: time mode: this driver has no cuEventElapsedTime: groups stay at %d "
                            "launches; use event:N instead\n",
                    UNTIMED_GROUP);
        return;
    }
    float ms = 0;
    if (elapsed(&ms, from, st->events[end]) != GY_CUDA_SUCCESS || ms < 0)
        return;
    double sample = (double)ms * 1e6 / st->sizes[end];
    if (sample < 1)
        sample = 1; /* 0 would read as "not timed yet" */
    double *learned = st->graph_group[end] ? &st->ns_per_graph : &st->ns_per_unit;
    *learned = *learned > 0 ? 0.75 * *learned + 0.25 * sample : sample;
}

/* time mode: the bound in microseconds for the group starting now: the process's own, raised to
 * the guarded policy's queue depth between HP jobs (guard.queue_us, 0 elsewhere: one load per
 * group, none per launch). Not on the partition's green stream (launched): the depth is what an
 * HP job finds ahead of it on the whole GPU when it begins, and that stream runs beside HP jobs;
 * its bound is GPUYIELD_PARTITION_US where set (work queued there holds only the partition's SMs). */
static double bound_us(bool launched)
{
    double own = (double)gy_client.group;
    if (launched && gy_config()->partition_us)
        return (double)gy_config()->partition_us; /* GPUYIELD_PARTITION_US: the green stream's own */
    if (launched || atomic_load_explicit(&gy_client.phase, memory_order_acquire) < GY_PHASE_JOIN || !gy_client.shm.seg)
        return own;
    uint32_t depth = gy_guarded_queue_us(&gy_client.shm);
    return depth > own ? depth : own;
}

/* time mode: may a unit of this kind hold more than US/2? Yes until it is timed (unless the
 * driver cannot time: then groups are UNTIMED_GROUP launches, two in flight, as before). */
static bool long_unit(const struct gy_stream_state *st, bool graph, double us)
{
    double ns = graph ? st->ns_per_graph : st->ns_per_unit;
    if (ns <= 0)
        return elapsed_function() != NULL;
    return ns > us * 1000.0 / 2;
}

static uint32_t next_group_size(const struct gy_stream_state *st, bool graph, double us)
{
    if (gy_client.mode == GY_MODE_EVENT)
        return (uint32_t)gy_client.group;
    double ns = graph ? st->ns_per_graph : st->ns_per_unit;
    if (ns <= 0)
        return elapsed_function() ? 1 : UNTIMED_GROUP; /* one unit until its time is known */
    double units = us * 1000.0 / 2 / ns;
    return units < 1 ? 1 : units > MAX_GROUP ? MAX_GROUP : (uint32_t)units;
}

/* Record *event on the stream, created on first use (timed in time mode only); false if not. */
static bool record_event(struct gy_stream_state *st, gy_cu_event *event)
{
    if (!*event) {
        unsigned flags = GY_CU_EVENT_BLOCKING_SYNC;
        if (gy_client.mode != GY_MODE_TIME)
            flags |= GY_CU_EVENT_DISABLE_TIMING;
        gy_pfn_event_create create = (gy_pfn_event_create)gy_real(GY_FN_EVENT_CREATE);
        if (!create || create(event, flags) != GY_CUDA_SUCCESS) {
            *event = NULL;
            return false;
        }
    }
    gy_pfn_event_record record = (gy_pfn_event_record)gy_real(GY_FN_EVENT_RECORD);
    if (record && record(*event, st->stream) == GY_CUDA_SUCCESS)
        return true;
    destroy_event(event); /* e.g. an event of another context: make a new one next time */
    return false;
}

static void record_group_end(struct gy_stream_state *st, uint64_t g)
{
    int slot = (int)(g % RING);
    st->recorded[slot] = st->complete[slot] = false;
    if (!capturing(st))
        st->recorded[slot] = record_event(st, &st->events[slot]);
}

/* Wait for the end of group k unless it was seen complete (or not recorded: a capture). */
static void wait_group(struct gy_stream_state *st, uint64_t k)
{
    int slot = (int)(k % RING);
    if (!st->recorded[slot] || st->complete[slot] || capturing(st))
        return;
    wait_event(st->events[slot]);
    st->complete[slot] = true;
    if (gy_client.mode == GY_MODE_TIME)
        learn(st, k);
}

/* launched: the unit was launched already (gy_bound_launched): an event recorded now would
 * follow it, so its group is timed from the end of the group before instead. cost_ns: see
 * gy_bound_before. */
static struct gy_stream_state *bound_before(gy_cu_stream stream, bool graph, bool launched, double cost_ns)
{
    struct gy_stream_state *st = state_for(stream);
    if (!st)
        return st;
    uint64_t g = st->group;
    bool timed = gy_client.mode == GY_MODE_TIME;
    bool known = timed && cost_ns > 0;
    if (st->group_left && timed && (st->graph_group[g % RING] != graph || known)) {
        /* kernels after graphs or graphs after kernels: end the group here, each kind is timed
         * apart; a unit of known time goes in a group of its own */
        st->sizes[g % RING] -= (uint32_t)st->group_left;
        st->group_left = 0;
        if (st->sizes[g % RING]) {
            record_group_end(st, g);
            st->group++;
        }
    }
    if (st->group_left)
        return st;
    /* This launch starts group g: wait for the end of group g-2 ... */
    g = st->group;
    if (g >= 2)
        wait_group(st, g - 2);
    double us = timed ? bound_us(launched) : 0;
    uint32_t size = known ? 1 : next_group_size(st, graph, us);
    bool is_long = timed && (known ? cost_ns > us * 1000.0 / 2 : long_unit(st, graph, us));
    if (known) {
        /* ... and of group g-1 where the two would hold more than US: a unit of known time
         * follows a short one without a gap (350 us behind 10 us under time:500), and a long one
         * only once it is done. An unknown group counts as US/2, or as more where long. */
        int prev = (int)((g + RING - 1) % RING);
        double prev_ns = st->known_ns[prev] > 0 ? st->known_ns[prev] : st->long_group[prev] ? 1e300 : us * 1000.0 / 2;
        if (g >= 1 && prev_ns + cost_ns > us * 1000.0)
            wait_group(st, g - 1);
    } else if (timed && (is_long || (g >= 1 && st->long_group[(g - 1) % RING]))) {
        /* ... or of group g-1 where this group or that one holds more than US/2 (see the top). */
        if (g >= 1)
            wait_group(st, g - 1);
        size = next_group_size(st, graph, us); /* group g-1 may have just been timed */
        is_long = long_unit(st, graph, us);
        st->start_recorded = !launched && !capturing(st) && record_event(st, &st->start);
        st->start_group = g;
    }
    st->group_left = size;
    st->sizes[g % RING] = size;
    st->graph_group[g % RING] = graph;
    st->long_group[g % RING] = is_long;
    st->known_ns[g % RING] = known ? cost_ns : 0;
    return st;
}

struct gy_stream_state *gy_bound_before_slow(gy_cu_stream stream, bool graph, double cost_ns)
{
    return bound_before(stream, graph, false, cost_ns);
}

void gy_bound_after_slow(gy_cu_stream stream, struct gy_stream_state *st)
{
    if (!st)
        st = state_for(stream);
    if (!st)
        return;
    st->units++;
    if (gy_client.mode >= GY_MODE_EVENT) {
        if (st->group_left && --st->group_left == 0) {
            record_group_end(st, st->group);
            st->group++;
        }
        return;
    }
    uint64_t n = gy_client.group;
    if (st->units % n != 0 || capturing(st))
        return;
    gy_pfn_stream_synchronize sync = (gy_pfn_stream_synchronize)gy_real(GY_FN_STREAM_SYNCHRONIZE);
    gy_range_push("sync");
    sync(stream);
    gy_range_pop();
    count_sync_point();
}

void gy_bound_launched_slow(gy_cu_stream stream, bool graph)
{
    gy_bound_after_slow(stream, gy_client.mode >= GY_MODE_EVENT ? bound_before(stream, graph, true, 0) : NULL);
}
