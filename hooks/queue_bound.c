/* Per-thread stream states for the sync:N and event:N modes. Each state keeps two pooled events
 * (group g reuses the event of group g-2, already waited for), created once with
 * CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC. */
#include <pthread.h>
#include <stdlib.h>

#include "driver.h"
#include "queue_bound.h"
#include "trace_ranges.h"

#define TABLE_SIZE 16 /* streams per thread; more evict (their bound restarts) */

struct stream_state {
    gy_cu_stream stream; /* NULL: free entry */
    uint64_t units;      /* launched on this stream by this thread */
    gy_cu_event events[2];
    bool recorded[2];           /* events[g % 2] holds group g's end, not yet waited for */
    uint64_t checked_captures;  /* captures_begun when `capturing` was last checked */
    bool capturing;
};

struct thread_table {
    uint64_t generation;
    struct stream_state states[TABLE_SIZE];
};

static __thread struct thread_table *table __attribute__((tls_model("initial-exec")));
static pthread_key_t table_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void destroy_events(struct stream_state *st)
{
    gy_pfn_event_destroy destroy = (gy_pfn_event_destroy)gy_real(GY_FN_EVENT_DESTROY);
    for (int i = 0; i < 2; i++)
        if (st->events[i] && destroy)
            destroy(st->events[i]);
}

static void free_table(void *p)
{
    struct thread_table *t = p;
    if (t->generation == atomic_load(&gy_client.generation))
        for (int i = 0; i < TABLE_SIZE; i++)
            destroy_events(&t->states[i]);
    free(t);
}

static void create_key(void) { pthread_key_create(&table_key, free_table); }

static struct stream_state *state_for(gy_cu_stream stream)
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
    unsigned home = (unsigned)(((uintptr_t)stream >> 4) ^ (uintptr_t)stream) % TABLE_SIZE;
    for (unsigned i = 0; i < TABLE_SIZE; i++) {
        struct stream_state *st = &table->states[(home + i) % TABLE_SIZE];
        if (st->stream == stream)
            return st;
        if (!st->stream) {
            st->stream = stream;
            return st;
        }
    }
    struct stream_state *victim = &table->states[home];
    destroy_events(victim);
    *victim = (struct stream_state){.stream = stream};
    return victim;
}

/* At a group boundary: is the stream being captured? Re-asked only when a capture began in
 * this process since the last answer, or the stream's capture had not ended then. */
static bool capturing(struct stream_state *st)
{
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

void gy_bound_before_slow(gy_cu_stream stream)
{
    struct stream_state *st = state_for(stream);
    uint64_t n = gy_client.group;
    if (!st || st->units % n != 0)
        return;
    uint64_t group = st->units / n; /* the group this launch starts */
    int slot = (int)(group % 2);    /* group - 2's event */
    if (group < 2 || !st->recorded[slot] || capturing(st))
        return;
    gy_pfn_event_synchronize sync = (gy_pfn_event_synchronize)gy_real(GY_FN_EVENT_SYNCHRONIZE);
    gy_range_push("sync");
    sync(st->events[slot]);
    gy_range_pop();
    st->recorded[slot] = false;
    count_sync_point();
}

static void record_group_end(struct stream_state *st, uint64_t group)
{
    int slot = (int)(group % 2);
    st->recorded[slot] = false;
    if (!st->events[slot]) {
        gy_pfn_event_create create = (gy_pfn_event_create)gy_real(GY_FN_EVENT_CREATE);
        if (!create || create(&st->events[slot], GY_CU_EVENT_DISABLE_TIMING | GY_CU_EVENT_BLOCKING_SYNC) !=
                           GY_CUDA_SUCCESS) {
            st->events[slot] = NULL;
            return;
        }
    }
    gy_pfn_event_record record = (gy_pfn_event_record)gy_real(GY_FN_EVENT_RECORD);
    st->recorded[slot] = record && record(st->events[slot], st->stream) == GY_CUDA_SUCCESS;
}

void gy_bound_after_slow(gy_cu_stream stream)
{
    struct stream_state *st = state_for(stream);
    if (!st)
        return;
    uint64_t n = gy_client.group;
    st->units++;
    if (st->units % n != 0)
        return;
    if (capturing(st)) {
        st->recorded[(st->units / n - 1) % 2] = false;
        return;
    }
    if (gy_client.mode == GY_MODE_EVENT) {
        record_group_end(st, st->units / n - 1);
        return;
    }
    gy_pfn_stream_synchronize sync = (gy_pfn_stream_synchronize)gy_real(GY_FN_STREAM_SYNCHRONIZE);
    gy_range_push("sync");
    sync(stream);
    gy_range_pop();
    count_sync_point();
}
