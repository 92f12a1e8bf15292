/* The partition policy's slow path: green contexts per context, a partition stream and an event
 * per user stream, fork and join (see partition.h). Everything runs under one lock; the hooks
 * come here only while a higher job runs or some stream owes a join. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "config.h"
#include "driver.h"
#include "graph_twin.h"
#include "guarded.h"
#include "partition.h"

#define MAX_GREENS 32   /* green contexts: one per context and size */
#define MAX_ENTRIES 512 /* user streams with a partition stream; more block as before */

struct green {
    gy_cu_context ctx;
    unsigned asked;         /* the SMs asked for: 0 under partition (the configured size), else an arm's */
    bool complement;        /* the rest of that split: the HP's side of a disjoint arm */
    gy_cu_green_ctx handle; /* NULL: creation failed for this context */
    unsigned sms, total;
};

/* Under guarded a user stream has a partition stream per arm (index: enum gy_guard_arm; index 0,
 * stop's, is the partition policy's one size), each created at its first need. */
#define SIZES GY_GUARD_ARM_COUNT

struct gy_partition_entry {
    bool used;
    gy_cu_context ctx;     /* the context the default-stream handles name a stream of */
    gy_cu_stream stream;   /* the user's stream, normalized (never NULL) */
    pthread_t thread;      /* the per-thread default stream: whose */
    gy_cu_stream green;    /* P(S) of the current episode: one of by_size */
    gy_cu_stream by_size[SIZES]; /* P(S) per size, created at the first fork onto that size */
    unsigned size;         /* by_size index of `green` */
    gy_cu_event event;     /* recorded on one side, waited on by the other (both ways) */
    bool owes;             /* launches went to P since the last join */
};

_Atomic uint64_t gy_partition_owed;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct green greens[MAX_GREENS];
static int ngreens;
static struct gy_partition_entry entries[MAX_ENTRIES];
static int entries_end; /* no entry at or past this index is used: scans stop here */
static pthread_key_t thread_exit_key; /* a thread with a per-thread entry: its exit drops them */
static pthread_once_t thread_exit_once = PTHREAD_ONCE_INIT;
static uint32_t state; /* enum gy_partition_state of this process */
static uint64_t blocked_at_epoch; /* the job epoch at which our own jobs were found not to lift the gate */

void gy_partition_fork_prepare(void) { pthread_mutex_lock(&lock); }
void gy_partition_fork_parent(void) { pthread_mutex_unlock(&lock); }

/* Streams and contexts do not survive fork: the child starts with nothing (no driver calls). */
void gy_partition_fork_child(void)
{
    memset(greens, 0, sizeof greens);
    memset(entries, 0, sizeof entries);
    entries_end = 0;
    ngreens = 0;
    blocked_at_epoch = 0;
    state = GY_PARTITION_UNDECIDED;
    atomic_store(&gy_partition_owed, 0);
    pthread_mutex_unlock(&lock);
}

static void publish_state_locked(uint32_t new_state)
{
    state = new_state;
    struct gy_proc_slot *slot = gy_my_slot(&gy_client.shm);
    if (slot)
        atomic_store_explicit(&slot->partition_state, new_state, memory_order_relaxed);
}

static void fall_back_locked(uint32_t why, const char *detail)
{
    publish_state_locked(why);
    if (!gy_config()->verbose)
        return;
    const char *to = why == GY_PARTITION_NO_MPS ? "drain (launches wait for higher jobs, which drain)"
                                                : "corun (launches wait for higher jobs, which start at once)";
    fprintf(stderr, "gpuyield: pid %d: policy partition unavailable (%s): falls back to %s\n", (int)getpid(), detail,
            to);
}

static bool has(enum gy_fn id) { return gy_real(id) != NULL; }

/* MPS and the driver's symbols: known before any job. */
static void decide_static_locked(void)
{
    if (state != GY_PARTITION_UNDECIDED)
        return;
    if (!gy_get_mps(&gy_client.shm))
        fall_back_locked(GY_PARTITION_NO_MPS, "the segment says no MPS: without it the processes time-slice");
    else if (!has(GY_FN_CTX_GET_DEVICE) || !has(GY_FN_DEVICE_GET_DEV_RESOURCE) ||
             !has(GY_FN_DEV_SM_RESOURCE_SPLIT_BY_COUNT) || !has(GY_FN_DEV_RESOURCE_GENERATE_DESC) ||
             !has(GY_FN_GREEN_CTX_CREATE) || !has(GY_FN_GREEN_CTX_STREAM_CREATE) || !has(GY_FN_EVENT_CREATE) ||
             !has(GY_FN_EVENT_RECORD) || !has(GY_FN_STREAM_WAIT_EVENT) || !has(GY_FN_CTX_PUSH_CURRENT) ||
             !has(GY_FN_CTX_POP_CURRENT) || !has(GY_FN_CTX_GET_CURRENT))
        fall_back_locked(GY_PARTITION_NO_SYMBOLS, "the driver has no green contexts (cuGreenCtxCreate and its "
                                                  "helpers need CUDA 12.4 or newer)");
}

/* Partition, or guarded whose arms include partitions: the same machinery. */
static bool partitioning_policy(void)
{
    enum gy_policy policy = gy_get_policy(&gy_client.shm);
    return policy == GY_POLICY_PARTITION || policy == GY_POLICY_GUARDED;
}

void gy_partition_check_static(void)
{
    if (!partitioning_policy())
        return;
    pthread_mutex_lock(&lock);
    decide_static_locked();
    pthread_mutex_unlock(&lock);
}

/* asked: an arm's SMs, or 0 for the partition policy's configured size. An arm leaves the HP at
 * least 8 SMs of its own (partition:120 on a 108-SM device is 100). */
static unsigned wanted_sms(unsigned total, unsigned asked)
{
    if (asked)
        return asked + 8 <= total ? asked : total > 8 ? total - 8 : total;
    const struct gy_hooks_config *config = gy_config();
    double share = config->partition_share * total;
    unsigned want = config->partition_sms ? config->partition_sms : (unsigned)share;
    if (!config->partition_sms && want < share)
        want++; /* rounded up; the split rounds up again to the device's granularity */
    return want < 1 ? 1 : want > total ? total : want;
}

/* The green context of ctx (current on this thread) of `asked` SMs (0: the configured size), or
 * with `complement` of the rest of that same split, created at its first need. The split is the
 * driver's, made alike in every process: the lower processes' K and the HP's rest are disjoint
 * (proven by occupancy on the H100: bench/gpu/disjoint_proof.sh). */
static struct green *green_for_locked(gy_cu_context ctx, unsigned asked, bool complement)
{
    for (int i = 0; i < ngreens; i++)
        if (greens[i].ctx == ctx && greens[i].asked == asked && greens[i].complement == complement)
            return greens[i].handle ? &greens[i] : NULL;
    if (ngreens == MAX_GREENS)
        return NULL;
    struct green *g = &greens[ngreens++];
    *g = (struct green){.ctx = ctx, .asked = asked, .complement = complement};
    gy_cu_device dev = 0;
    gy_cu_dev_resource all, part, rest;
    memset(&all, 0, sizeof all), memset(&part, 0, sizeof part), memset(&rest, 0, sizeof rest);
    gy_cu_dev_resource_desc desc = NULL;
    unsigned groups = 1;
    const char *failed = NULL;
    if (((gy_pfn_ctx_get_device)gy_real(GY_FN_CTX_GET_DEVICE))(&dev) != GY_CUDA_SUCCESS)
        failed = "cuCtxGetDevice";
    else if (((gy_pfn_device_get_dev_resource)gy_real(GY_FN_DEVICE_GET_DEV_RESOURCE))(
                 dev, &all, GY_CU_DEV_RESOURCE_TYPE_SM) != GY_CUDA_SUCCESS)
        failed = "cuDeviceGetDevResource";
    unsigned total = all.u.sm_count, want = failed ? 0 : wanted_sms(total, asked);
    gy_cu_dev_resource *use = &all;
    if (!failed && want < total) {
        use = complement ? &rest : &part;
        if (((gy_pfn_dev_sm_resource_split_by_count)gy_real(GY_FN_DEV_SM_RESOURCE_SPLIT_BY_COUNT))(
                &part, &groups, &all, &rest, 0, want) != GY_CUDA_SUCCESS ||
            groups < 1 || (complement && rest.u.sm_count == 0))
            failed = "cuDevSmResourceSplitByCount";
    } else if (!failed && complement) {
        failed = "cuDevSmResourceSplitByCount (nothing left beside the lower processes' SMs)";
    }
    if (!failed && ((gy_pfn_dev_resource_generate_desc)gy_real(GY_FN_DEV_RESOURCE_GENERATE_DESC))(&desc, use, 1) !=
                       GY_CUDA_SUCCESS)
        failed = "cuDevResourceGenerateDesc";
    if (!failed && ((gy_pfn_green_ctx_create)gy_real(GY_FN_GREEN_CTX_CREATE))(
                       &g->handle, desc, dev, GY_CU_GREEN_CTX_DEFAULT_STREAM) != GY_CUDA_SUCCESS) {
        g->handle = NULL;
        failed = "cuGreenCtxCreate";
    }
    if (failed) {
        char detail[160];
        snprintf(detail, sizeof detail, "%s failed for %u SMs of device %d", failed, want, dev);
        fall_back_locked(GY_PARTITION_CREATE_FAILED, detail);
        return NULL;
    }
    g->sms = use->u.sm_count;
    g->total = total;
    if (complement && gy_config()->verbose)
        fprintf(stderr, "gpuyield: pid %d: policy guarded: during its jobs of arm disjoint:%u its launches run on a "
                        "green context of %u of the device's %u SMs (the rest of the lower processes' %u)\n",
                (int)getpid(), asked, g->sms, total, want);
    else if (asked && gy_config()->verbose) /* guarded: one line per size, as each is first used */
        fprintf(stderr, "gpuyield: pid %d: policy guarded: during higher jobs of arm partition:%u its launches run "
                        "on a green context of %u of the device's %u SMs\n",
                (int)getpid(), asked, g->sms, total);
    if (state != GY_PARTITION_ACTIVE) {
        publish_state_locked(GY_PARTITION_ACTIVE);
        if (!asked && gy_config()->verbose)
            fprintf(stderr, "gpuyield: pid %d: policy partition: during higher jobs its launches run on a green "
                            "context of %u of the device's %u SMs\n",
                    (int)getpid(), g->sms, total);
    }
    return g;
}

static void join_locked(struct gy_partition_entry *e);

/* A thread that used its per-thread default stream exits: join what it owes while it still can
 * name it, and free its entries (that stream is gone with the thread). */
static void thread_exits(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&lock);
    pthread_t self = pthread_self();
    for (int i = 0; i < entries_end; i++)
        if (entries[i].used && entries[i].stream == GY_CU_STREAM_PER_THREAD && pthread_equal(entries[i].thread, self)) {
            join_locked(&entries[i]);
            if (entries[i].event)
                ((gy_pfn_event_destroy)gy_real(GY_FN_EVENT_DESTROY))(entries[i].event);
            for (int size = 0; size < SIZES; size++)
                if (entries[i].by_size[size])
                    ((gy_pfn_stream_destroy)gy_real(GY_FN_STREAM_DESTROY))(entries[i].by_size[size]);
            entries[i] = (struct gy_partition_entry){0};
        }
    pthread_mutex_unlock(&lock);
}

static void create_thread_exit_key(void) { pthread_key_create(&thread_exit_key, thread_exits); }

static bool same_key(const struct gy_partition_entry *e, gy_cu_context ctx, gy_cu_stream stream, pthread_t self)
{
    if (!e->used || e->stream != stream)
        return false;
    if (stream == GY_CU_STREAM_LEGACY)
        return e->ctx == ctx;
    if (stream == GY_CU_STREAM_PER_THREAD)
        return e->ctx == ctx && pthread_equal(e->thread, self);
    return true; /* a created stream's handle names it in every context */
}

static struct gy_partition_entry *find_locked(gy_cu_context ctx, gy_cu_stream stream, bool add)
{
    pthread_t self = pthread_self();
    struct gy_partition_entry *free_entry = NULL;
    for (int i = 0; i < entries_end; i++) {
        if (same_key(&entries[i], ctx, stream, self))
            return &entries[i];
        if (!entries[i].used && !free_entry)
            free_entry = &entries[i];
    }
    if (!add)
        return NULL;
    if (!free_entry && entries_end < MAX_ENTRIES)
        free_entry = &entries[entries_end++];
    if (!free_entry)
        return NULL;
    *free_entry = (struct gy_partition_entry){.used = true, .ctx = ctx, .stream = stream, .thread = self};
    if (stream == GY_CU_STREAM_PER_THREAD) { /* its thread's exit must not leave a join owed forever */
        pthread_once(&thread_exit_once, create_thread_exit_key);
        pthread_setspecific(thread_exit_key, (void *)1);
    }
    return free_entry;
}

/* Only the owning thread can name its per-thread default stream. */
static bool joinable(const struct gy_partition_entry *e)
{
    return e->stream != GY_CU_STREAM_PER_THREAD || pthread_equal(e->thread, pthread_self());
}

static gy_cu_context current_context(void)
{
    gy_cu_context ctx = NULL;
    gy_pfn_ctx_get_current get = (gy_pfn_ctx_get_current)gy_real(GY_FN_CTX_GET_CURRENT);
    if (!get || get(&ctx) != GY_CUDA_SUCCESS)
        ctx = NULL;
    return ctx;
}

/* S waits on P's latest work: record on P, wait on S (S's context current for the default-stream
 * handles). If that fails, wait for P on the host: slower, never wrong. */
static void join_locked(struct gy_partition_entry *e)
{
    if (!e->owes || !joinable(e))
        return;
    gy_cu_context current = current_context();
    bool pushed = e->ctx && e->ctx != current &&
                  ((gy_pfn_ctx_push_current)gy_real(GY_FN_CTX_PUSH_CURRENT))(e->ctx) == GY_CUDA_SUCCESS;
    bool ordered = ((gy_pfn_event_record)gy_real(GY_FN_EVENT_RECORD))(e->event, e->green) == GY_CUDA_SUCCESS &&
                   ((gy_pfn_stream_wait_event)gy_real(GY_FN_STREAM_WAIT_EVENT))(e->stream, e->event, 0) ==
                       GY_CUDA_SUCCESS;
    if (!ordered)
        ((gy_pfn_stream_synchronize)gy_real(GY_FN_STREAM_SYNCHRONIZE))(e->green);
    if (pushed) {
        gy_cu_context popped;
        ((gy_pfn_ctx_pop_current)gy_real(GY_FN_CTX_POP_CURRENT))(&popped);
    }
    e->owes = false;
    atomic_fetch_sub_explicit(&gy_partition_owed, 1, memory_order_relaxed);
}

/* What a use of `stream` in ctx must see first, besides its own partition: the legacy stream
 * orders (and is ordered by) every blocking stream of its context; taken as every stream. */
static void join_ordered_with_locked(gy_cu_context ctx, gy_cu_stream stream)
{
    for (int i = 0; i < entries_end; i++) {
        struct gy_partition_entry *e = &entries[i];
        if (!e->used || !e->owes || e->ctx != ctx || e->stream == stream)
            continue;
        if (stream == GY_CU_STREAM_LEGACY || e->stream == GY_CU_STREAM_LEGACY)
            join_locked(e);
    }
}

static void join_all_locked(gy_cu_context ctx, bool every_context)
{
    for (int i = 0; i < entries_end; i++)
        if (entries[i].used && entries[i].owes && (every_context || entries[i].ctx == ctx))
            join_locked(&entries[i]);
}

static bool stream_capturing(gy_cu_stream stream)
{
    if (atomic_load_explicit(&gy_client.captures_in_progress, memory_order_acquire) == 0)
        return false;
    gy_pfn_is_capturing is_capturing = (gy_pfn_is_capturing)gy_real(GY_FN_IS_CAPTURING);
    int status = GY_CU_STREAM_CAPTURE_STATUS_NONE;
    return !is_capturing || is_capturing(stream, &status) != GY_CUDA_SUCCESS ||
           status != GY_CU_STREAM_CAPTURE_STATUS_NONE;
}

/* P waits on S's work so far: the episode begins, on the partition stream of `size`. */
static bool fork_locked(struct gy_partition_entry *e, struct green *g, unsigned size)
{
    if (!e->event && ((gy_pfn_event_create)gy_real(GY_FN_EVENT_CREATE))(&e->event, GY_CU_EVENT_DISABLE_TIMING) !=
                         GY_CUDA_SUCCESS) {
        e->event = NULL;
        return false;
    }
    if (!e->by_size[size] && ((gy_pfn_green_ctx_stream_create)gy_real(GY_FN_GREEN_CTX_STREAM_CREATE))(
                                 &e->by_size[size], g->handle, GY_CU_STREAM_NON_BLOCKING, 0) != GY_CUDA_SUCCESS) {
        e->by_size[size] = NULL;
        return false;
    }
    e->green = e->by_size[size];
    e->size = size;
    if (((gy_pfn_event_record)gy_real(GY_FN_EVENT_RECORD))(e->event, e->stream) != GY_CUDA_SUCCESS ||
        ((gy_pfn_stream_wait_event)gy_real(GY_FN_STREAM_WAIT_EVENT))(e->green, e->event, 0) != GY_CUDA_SUCCESS)
        return false;
    e->owes = true;
    atomic_fetch_add_explicit(&gy_partition_owed, 1, memory_order_relaxed);
    return true;
}

/* Under the lock: `stream`'s launch goes to its partition stream of slot `slot` on the green
 * context of (asked, complement), forked from the stream (and joined from another slot's first).
 * False: no green context or entry (the caller blocks, or launches unconfined). */
static bool route_locked(gy_cu_context ctx, gy_cu_stream stream, unsigned asked, bool complement, unsigned slot,
                         struct gy_partition_route *route)
{
    struct green *g = ctx ? green_for_locked(ctx, asked, complement) : NULL;
    struct gy_partition_entry *e = g ? find_locked(ctx, stream, true) : NULL;
    if (!e)
        return false;
    join_ordered_with_locked(ctx, stream);
    if (e->owes && e->size != slot)
        join_locked(e); /* the arm changed since S's last join: the new size's stream follows the old one */
    if (!e->owes && !fork_locked(e, g, slot))
        return false;
    route->green = e->green;
    route->entry = e;
    return true;
}

bool gy_partition_route(gy_cu_stream stream, gy_cu_graph_exec graph, struct gy_partition_route *route)
{
    *route = (struct gy_partition_route){0};
    if (!partitioning_policy())
        return false;
    /* Guarded: the arm the open jobs give (one load, slow path only); stop waits as under corun. */
    unsigned size = 0;
    if (gy_get_policy(&gy_client.shm) == GY_POLICY_GUARDED && (size = gy_guarded_current(&gy_client.shm)) == GY_ARM_STOP) {
        route->stopped = true; /* a graph too: it may have a twin for the partition the arm turns to */
        return false;
    }
    pthread_mutex_lock(&lock);
    decide_static_locked();
    if (state != GY_PARTITION_UNDECIDED && state != GY_PARTITION_ACTIVE)
        goto block;
    if (stream_capturing(stream)) { /* it records, runs nothing: no wait, no event into it */
        route->pass = true;
        pthread_mutex_unlock(&lock);
        return true;
    }
    /* A job this process holds lifts the gate for its launches (gate.c): they run as usual. Only a
     * begin (a new epoch) can change that answer from no to yes. */
    uint64_t epoch = atomic_load_explicit(&gy_client.shm.seg->job_epoch, memory_order_acquire);
    if (epoch != blocked_at_epoch) {
        if (gy_allowed_now_on(&gy_client.shm, gy_thread_device))
            goto block; /* gy_client_block() returns at once and counts no wait */
        blocked_at_epoch = epoch;
    }
    /* a disjoint arm's lower side is its partition twin's: the same K SMs and partition stream */
    unsigned slot = gy_guard_arm_lower_twin((enum gy_guard_arm)size);
    unsigned sms = gy_guard_arm_sms((enum gy_guard_arm)slot);
    /* A graph is not confined by a green stream: on the H100 and the H200 (driver 580) a graph
     * instantiated in the primary context and launched on a 16-SM green stream ran on all 132 SMs
     * (bench/results/2026-11-23-partition/, 2026-11-29-h200-graph-green/). Its twin, whose kernel
     * nodes name the green context, goes there instead; a graph without one waits for the job. */
    if (graph) {
        struct green *g = gy_thread_context ? green_for_locked(gy_thread_context, sms, false) : NULL;
        if (!g || !(route->twin = gy_graph_twin_for(graph, g->handle)))
            goto block;
    }
    if (route_locked(gy_thread_context, stream, sms, false, slot, route))
        return true; /* the lock stays held until the launch is in */
block:
    pthread_mutex_unlock(&lock);
    return false;
}

bool gy_partition_confine(enum gy_guard_arm arm, gy_cu_stream stream, gy_cu_graph_exec graph,
                          struct gy_partition_route *route)
{
    *route = (struct gy_partition_route){0};
    pthread_mutex_lock(&lock);
    decide_static_locked();
    if (state != GY_PARTITION_UNDECIDED && state != GY_PARTITION_ACTIVE)
        goto unconfined;
    if (stream_capturing(stream)) { /* it records, runs nothing: no event into it */
        route->pass = true;
        goto unconfined;
    }
    /* A graph is not confined by a green stream (see above): it runs on its own stream, which
     * joins first (the caller's before-use). */
    if (!graph && route_locked(gy_thread_context, stream, gy_guard_arm_sms(arm), true, arm, route))
        return true;
unconfined:
    pthread_mutex_unlock(&lock);
    return route->pass;
}

void gy_partition_launched(struct gy_partition_route *route, bool ok, bool copy)
{
    struct gy_proc_slot *slot = gy_my_slot(&gy_client.shm);
    if (ok && slot)
        atomic_fetch_add_explicit(copy ? &slot->counters.partition_copies : &slot->counters.partition_launches, 1,
                                  memory_order_relaxed);
    route->entry = NULL;
    pthread_mutex_unlock(&lock);
}

void gy_partition_before_use(gy_cu_stream stream)
{
    gy_cu_context ctx = current_context();
    pthread_mutex_lock(&lock);
    if (gy_client.shm.seg && gy_launch_allowed_on(&gy_client.shm, gy_thread_device, gy_client.priority)) {
        join_all_locked(ctx, true); /* no job above us: settle everything, the fast path returns */
    } else {
        join_ordered_with_locked(ctx, stream);
        struct gy_partition_entry *e = find_locked(ctx, stream, false);
        if (e)
            join_locked(e);
    }
    pthread_mutex_unlock(&lock);
}

void gy_partition_before_context(gy_cu_context ctx)
{
    if (!ctx)
        ctx = current_context();
    pthread_mutex_lock(&lock);
    join_all_locked(ctx, false);
    pthread_mutex_unlock(&lock);
}

void gy_partition_before_all(bool every_context)
{
    gy_cu_context ctx = current_context();
    pthread_mutex_lock(&lock);
    join_all_locked(ctx, every_context);
    pthread_mutex_unlock(&lock);
}
