/* Per-thread stream states for the sync:N, event:N and time:US modes.
 *
 * event and time work in groups: the end of group g is marked by an event in a ring of four;
 * before the first unit of group g the thread waits for the event of group g-2. In time mode the
 * GPU time of a finished group (elapsed time between the events ending groups g-3 and g-2) over
 * its units gives the GPU time per unit, and the next group gets as many units as fit in half the
 * budget. Waits spin on cuEventQuery for a short while before blocking: a blocking wait costs a
 * wake-up (tens of microseconds) that would leave the GPU idle between small groups. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "driver.h"
#include "queue_bound.h"
#include "trace_ranges.h"

#define TABLE_SIZE 16      /* streams per thread; more evict (their bound restarts) */
#define RING 4             /* events g-3 .. g: two finished groups to time, one in flight, one filling */
#define FIRST_TIMED_GROUP 8 /* time mode: units of a group before anything is learned */
#define MAX_GROUP 1024     /* about the depth of a stream's launch queue */
#define SPIN_NS 1000000ull /* spin up to 1 ms before a blocking wait */

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
    uint64_t start = gy_now_ns();
    while (query && state == GY_CUDA_ERROR_NOT_READY && gy_now_ns() - start <= SPIN_NS) {
        sched_yield();
        state = query(event);
    }
    if (state == GY_CUDA_ERROR_NOT_READY)
        sync(event); /* spun long enough (or cannot query): block */
    gy_range_pop();
    count_sync_point();
}

/* time mode: learn the GPU time per unit from group g-2 (its start is group g-3's end). */
static void learn(struct gy_stream_state *st, uint64_t g)
{
    int end = (int)((g - 2) % RING), start = (int)((g - 3) % RING);
    if (g < 3 || !st->complete[end] || !st->complete[start] || !st->sizes[end])
        return;
    /* cuEventElapsedTime_v2 is newer (CUDA 12.8 drivers); the original has the same signature. */
    gy_pfn_event_elapsed elapsed = (gy_pfn_event_elapsed)gy_real(GY_FN_EVENT_ELAPSED);
    if (!elapsed)
        elapsed = (gy_pfn_event_elapsed)gy_real(GY_FN_EVENT_ELAPSED_V1);
    if (!elapsed) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
            fprintf(stderr, "gpuyield: time mode: this driver has no cuEventElapsedTime: groups stay at %d "
                            "launches; use event:N instead\n",
                    FIRST_TIMED_GROUP);
        return;
    }
    float ms = 0;
    if (!elapsed || elapsed(&ms, st->events[start], st->events[end]) != GY_CUDA_SUCCESS || ms < 0)
        return;
    double sample = (double)ms * 1e6 / st->sizes[end];
    double *learned = st->graph_group[end] ? &st->ns_per_graph : &st->ns_per_unit;
    *learned = *learned > 0 ? 0.75 * *learned + 0.25 * sample : sample;
}

static uint32_t next_group_size(const struct gy_stream_state *st, bool graph)
{
    if (gy_client.mode == GY_MODE_EVENT)
        return (uint32_t)gy_client.group;
    double ns = graph ? st->ns_per_graph : st->ns_per_unit;
    if (ns <= 0)
        return graph ? 1 : FIRST_TIMED_GROUP; /* a graph may hold milliseconds of work: learn it alone */
    double units = (double)gy_client.group * 1000.0 / 2 / ns;
    return units < 1 ? 1 : units > MAX_GROUP ? MAX_GROUP : (uint32_t)units;
}

static void record_group_end(struct gy_stream_state *st, uint64_t g);

struct gy_stream_state *gy_bound_before_slow(gy_cu_stream stream, bool graph)
{
    struct gy_stream_state *st = state_for(stream);
    if (!st)
        return st;
    uint64_t g = st->group;
    if (st->group_left && gy_client.mode == GY_MODE_TIME && st->graph_group[g % RING] != graph) {
        /* kernels after graphs or graphs after kernels: end the group here, each kind is timed apart */
        st->sizes[g % RING] -= (uint32_t)st->group_left;
        st->group_left = 0;
        if (st->sizes[g % RING]) {
            record_group_end(st, g);
            st->group++;
        }
    }
    if (st->group_left)
        return st;
    /* This launch starts group g: wait for the end of group g-2. */
    g = st->group;
    int slot = (int)((g + RING - 2) % RING);
    if (g >= 2 && st->recorded[slot] && !st->complete[slot] && !capturing(st)) {
        wait_event(st->events[slot]);
        st->complete[slot] = true;
    }
    if (gy_client.mode == GY_MODE_TIME)
        learn(st, g);
    st->group_left = next_group_size(st, graph);
    st->sizes[g % RING] = (uint32_t)st->group_left;
    st->graph_group[g % RING] = graph;
    return st;
}

static void record_group_end(struct gy_stream_state *st, uint64_t g)
{
    int slot = (int)(g % RING);
    st->recorded[slot] = st->complete[slot] = false;
    if (capturing(st))
        return;
    if (!st->events[slot]) {
        unsigned flags = GY_CU_EVENT_BLOCKING_SYNC;
        if (gy_client.mode != GY_MODE_TIME)
            flags |= GY_CU_EVENT_DISABLE_TIMING;
        gy_pfn_event_create create = (gy_pfn_event_create)gy_real(GY_FN_EVENT_CREATE);
        if (!create || create(&st->events[slot], flags) != GY_CUDA_SUCCESS) {
            st->events[slot] = NULL;
            return;
        }
    }
    gy_pfn_event_record record = (gy_pfn_event_record)gy_real(GY_FN_EVENT_RECORD);
    st->recorded[slot] = record && record(st->events[slot], st->stream) == GY_CUDA_SUCCESS;
    if (!st->recorded[slot]) /* e.g. an event of another context: make a new one next time */
        destroy_event(&st->events[slot]);
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
