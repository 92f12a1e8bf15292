/* The fake driver's objects: devices, contexts (a per-thread stack), streams, events, modules,
 * memory; and the synchronizing calls, which sleep until the simulated work ends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_internal.h"

#define MAX_CTX_STACK 16

pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;

static int next_ctx_id = 2;
static uint64_t next_stream_id = 1;
static struct CUstream_st legacy_stream = {.id = 0};
static struct CUstream_st **streams; /* every stream of the process, for cuCtxSynchronize */
static size_t nstreams, streams_cap;
static bool initialized;

static __thread CUcontext ctx_stack[MAX_CTX_STACK];
static __thread int ctx_depth;
static __thread struct CUstream_st *per_thread_stream;

/* fork: the child starts with the lock free (its other threads are gone). */
static void before_fork(void) { pthread_mutex_lock(&fk_lock); }
static void after_fork(void) { pthread_mutex_unlock(&fk_lock); }
__attribute__((constructor)) static void install_fork_handlers(void)
{
    pthread_atfork(before_fork, after_fork, after_fork);
}

static void remember_stream_locked(struct CUstream_st *s)
{
    if (nstreams == streams_cap) {
        streams_cap = streams_cap ? 2 * streams_cap : 16;
        streams = realloc(streams, streams_cap * sizeof *streams);
        if (!streams)
            abort();
    }
    streams[nstreams++] = s;
}

static struct CUstream_st *new_stream_locked(CUcontext ctx)
{
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->id = next_stream_id++;
    s->ctx = ctx;
    remember_stream_locked(s);
    return s;
}

struct CUstream_st *fk_stream_locked(CUstream handle, bool per_thread_default)
{
    if (handle == CU_STREAM_LEGACY || (!handle && !per_thread_default))
        return &legacy_stream;
    if (handle == CU_STREAM_PER_THREAD || !handle) {
        if (!per_thread_stream)
            per_thread_stream = new_stream_locked(NULL);
        return per_thread_stream;
    }
    return handle->destroyed ? NULL : handle;
}

CUcontext fk_current_ctx(void) { return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL; }

bool fk_any_capturing_locked(void)
{
    if (legacy_stream.capturing)
        return true;
    for (size_t i = 0; i < nstreams; i++)
        if (streams[i]->capturing && !streams[i]->destroyed)
            return true;
    return false;
}

FK_EXPORT CUresult cuInit(unsigned int flags)
{
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    initialized = true;
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuDeviceGetCount(int *count)
{
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = fk_device_count();
    return initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

FK_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!device || !fk_device_valid(ordinal))
        return CUDA_ERROR_INVALID_VALUE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx || !fk_device_valid(dev))
        return CUDA_ERROR_INVALID_VALUE;
    *ctx = fk_primary_ctx(dev);
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return fk_device_valid(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

FK_EXPORT CUresult cuCtxCreate_v2(CUcontext *ctx, unsigned int flags, CUdevice dev)
{
    (void)flags;
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx || !fk_device_valid(dev))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    pthread_mutex_lock(&fk_lock);
    c->id = next_ctx_id++;
    c->device = fk_physical_device(dev);
    pthread_mutex_unlock(&fk_lock);
    *ctx = c;
    return cuCtxPushCurrent_v2(c);
}

FK_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    if (!ctx || fk_is_primary(ctx))
        return CUDA_ERROR_INVALID_VALUE;
    if (fk_current_ctx() == ctx)
        ctx_depth--;
    return CUDA_SUCCESS; /* kept allocated: streams may still point at it */
}

FK_EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx)
{
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    *ctx = fk_current_ctx();
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    if (!ctx) {
        if (ctx_depth)
            ctx_depth--;
        return CUDA_SUCCESS;
    }
    if (ctx_depth == 0)
        ctx_depth = 1;
    ctx_stack[ctx_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    if (!ctx || ctx_depth == MAX_CTX_STACK)
        return CUDA_ERROR_INVALID_VALUE;
    ctx_stack[ctx_depth++] = ctx;
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx)
{
    if (!ctx_depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext top = ctx_stack[--ctx_depth];
    if (ctx)
        *ctx = top;
    return CUDA_SUCCESS;
}

/* Streams of the current context plus the legacy/per-thread ones: the latest tail. */
FK_EXPORT CUresult cuCtxSynchronize(void)
{
    CUcontext ctx = fk_current_ctx();
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&fk_lock);
    if (fk_any_capturing_locked()) {
        pthread_mutex_unlock(&fk_lock);
        fk_log_violation("cuCtxSynchronize while a stream of this process is capturing");
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    uint64_t until = legacy_stream.tail;
    for (size_t i = 0; i < nstreams; i++) {
        struct CUstream_st *s = streams[i];
        if ((s->ctx == ctx || !s->ctx) && !s->green && s->tail > until) /* a green stream is another context's */
            until = s->tail;
    }
    pthread_mutex_unlock(&fk_lock);
    fk_sleep_until(until);
    return CUDA_SUCCESS;
}

/* CUDA 13: the context to synchronize named (NULL: the current one). */
FK_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    if (!ctx)
        return cuCtxSynchronize();
    CUresult rc = cuCtxPushCurrent_v2(ctx);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = cuCtxSynchronize();
    cuCtxPopCurrent_v2(NULL);
    return rc;
}

FK_EXPORT CUresult cuStreamCreate(CUstream *stream, unsigned int flags)
{
    if (!stream)
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext ctx = fk_current_ctx();
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&fk_lock);
    *stream = new_stream_locked(ctx);
    (*stream)->non_blocking = flags & CU_STREAM_NON_BLOCKING;
    pthread_mutex_unlock(&fk_lock);
    return CUDA_SUCCESS;
}

uint64_t fk_ordered_tail_locked(struct CUstream_st *s)
{
    uint64_t after = s->tail;
    if (s == &legacy_stream) {
        CUcontext ctx = fk_current_ctx();
        for (size_t i = 0; i < nstreams; i++)
            if (!streams[i]->non_blocking && (streams[i]->ctx == ctx || !streams[i]->ctx) && streams[i]->tail > after)
                after = streams[i]->tail;
    } else if (!s->non_blocking && legacy_stream.tail > after) {
        after = legacy_stream.tail;
    }
    return after;
}

FK_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext ctx = fk_current_ctx();
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = -1; /* the ordinal of its physical device, as this process numbers them */
    for (int i = 0; i < fk_device_count(); i++)
        if (fk_physical_device(i) == ctx->device)
            *device = i;
    if (*device < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    return CUDA_SUCCESS;
}

/* A wait makes the stream's later work start after the event's recorded point. */
static CUresult wait_event(CUstream handle, CUevent event, unsigned flags, bool ptsz)
{
    if (!event || flags > 1)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    struct CUstream_st *s = fk_stream_locked(handle, ptsz);
    if (s && !s->capturing && event->time > s->tail)
        s->tail = event->time;
    pthread_mutex_unlock(&fk_lock);
    return s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FK_EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags)
{
    return wait_event(stream, event, flags, false);
}
FK_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream stream, CUevent event, unsigned int flags)
{
    return wait_event(stream, event, flags, true);
}

#ifndef FK_OLD_DRIVER
struct CUdevResourceDesc_st {
    unsigned sms;
};

FK_EXPORT CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource *resource, int type)
{
    if (!resource || !fk_device_valid(device) || type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_VALUE;
    memset(resource, 0, sizeof *resource);
    resource->type = CU_DEV_RESOURCE_TYPE_SM;
    resource->sm.smCount = FK_DEVICE_SMS;
    return CUDA_SUCCESS;
}

/* One group of at least minCount SMs, rounded up to the granularity, as the driver does. */
FK_EXPORT CUresult cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nbGroups,
                                               const CUdevResource *input, CUdevResource *remaining,
                                               unsigned int useFlags, unsigned int minCount)
{
    if (!result || !nbGroups || *nbGroups < 1 || !input || useFlags || !minCount)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned count = (minCount + FK_SM_GRANULARITY - 1) / FK_SM_GRANULARITY * FK_SM_GRANULARITY;
    if (count >= input->sm.smCount)
        return CUDA_ERROR_INVALID_VALUE;
    *result = *input;
    result->sm.smCount = count;
    if (remaining) {
        *remaining = *input;
        remaining->sm.smCount = input->sm.smCount - count;
    }
    *nbGroups = 1;
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *desc, CUdevResource *resources,
                                             unsigned int nbResources)
{
    if (!desc || !resources || nbResources != 1 || resources->type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUdevResourceDesc_st *d = calloc(1, sizeof *d);
    if (!d)
        abort();
    d->sms = resources->sm.smCount;
    *desc = d;
    return CUDA_SUCCESS;
}

/* FAKECUDA_GREEN_FAIL=1: creation fails, as on a device or setup that refuses green contexts. */
FK_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx *green, CUdevResourceDesc desc, CUdevice dev, unsigned int flags)
{
    if (!green || !desc || !fk_device_valid(dev) || !(flags & CU_GREEN_CTX_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    const char *fail = getenv("FAKECUDA_GREEN_FAIL");
    if (fail && strcmp(fail, "1") == 0)
        return 801; /* CUDA_ERROR_NOT_SUPPORTED */
    struct CUgreenCtx_st *g = calloc(1, sizeof *g);
    if (!g)
        abort();
    g->sms = desc->sms;
    g->as_ctx = (struct CUctx_st){.id = -1, .device = dev, .green = g};
    *green = g;
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuCtxFromGreenCtx(CUcontext *ctx, CUgreenCtx green)
{
    if (!ctx || !green)
        return CUDA_ERROR_INVALID_VALUE;
    *ctx = &green->as_ctx;
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuGreenCtxStreamCreate(CUstream *stream, CUgreenCtx green, unsigned int flags, int priority)
{
    (void)priority;
    if (!stream || !green || !(flags & CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    struct CUstream_st *s = new_stream_locked(fk_current_ctx());
    s->id += FK_GREEN_STREAM_IDS;
    s->non_blocking = true;
    s->green = green;
    pthread_mutex_unlock(&fk_lock);
    *stream = s;
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx green) { return green ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
#endif

FK_EXPORT CUresult cuStreamDestroy_v2(CUstream stream)
{
    if (!stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&fk_lock);
    stream->destroyed = true; /* kept: the driver keeps running its queued work */
    pthread_mutex_unlock(&fk_lock);
    return CUDA_SUCCESS;
}

/* The stream's tail for a wait or a query; waiting on a capturing stream is illegal (logged). */
static CUresult stream_tail(CUstream handle, bool ptsz, const char *call, uint64_t *tail)
{
    pthread_mutex_lock(&fk_lock);
    struct CUstream_st *s = fk_stream_locked(handle, ptsz);
    if (!s) {
        pthread_mutex_unlock(&fk_lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    bool capturing = s->capturing, other_capturing = fk_any_capturing_locked();
    uint64_t id = s->id;
    *tail = s->tail;
    pthread_mutex_unlock(&fk_lock);
    if (capturing) {
        fk_log_violation("%s on stream %llu while it is capturing", call, (unsigned long long)id);
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    /* As in the driver's global capture mode (PyTorch's default): an unsafe call from anywhere
     * in the process invalidates the capture in progress. */
    if (other_capturing) {
        fk_log_violation("%s on stream %llu while another stream of this process is capturing", call,
                         (unsigned long long)id);
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return CUDA_SUCCESS;
}

static CUresult stream_sync(CUstream handle, bool ptsz)
{
    uint64_t until;
    CUresult rc = stream_tail(handle, ptsz, "cuStreamSynchronize", &until);
    if (rc == CUDA_SUCCESS)
        fk_sleep_until(until);
    return rc;
}

FK_EXPORT CUresult cuStreamSynchronize(CUstream stream) { return stream_sync(stream, false); }
FK_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream stream) { return stream_sync(stream, true); }

static CUresult stream_query(CUstream handle, bool ptsz)
{
    uint64_t tail;
    CUresult rc = stream_tail(handle, ptsz, "cuStreamQuery", &tail);
    if (rc != CUDA_SUCCESS)
        return rc;
    return fk_now_ns() >= tail ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

FK_EXPORT CUresult cuStreamQuery(CUstream stream) { return stream_query(stream, false); }
FK_EXPORT CUresult cuStreamQuery_ptsz(CUstream stream) { return stream_query(stream, true); }

FK_EXPORT CUresult cuEventCreate(CUevent *event, unsigned int flags)
{
    if (!event || flags > 0xf)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fk_current_ctx())
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (!e)
        abort();
    e->flags = flags;
    *event = e;
    return CUDA_SUCCESS;
}

static CUresult event_record(CUevent event, CUstream handle, bool ptsz)
{
    if (!event)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&fk_lock);
    struct CUstream_st *s = fk_stream_locked(handle, ptsz);
    if (s) {
        event->captured = s->capturing; /* becomes a node of the graph, not a point in time */
        /* As on a GPU, the event is timed when the stream reaches it: at once on an idle stream,
         * not when its last kernel ended (elapsed times from it would count the idle time). */
        uint64_t tail = fk_ordered_tail_locked(s), now = fk_now_ns();
        event->time = tail > now ? tail : now;
    }
    pthread_mutex_unlock(&fk_lock);
    return s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FK_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) { return event_record(event, stream, false); }
FK_EXPORT CUresult cuEventRecordWithFlags(CUevent event, CUstream stream, unsigned int flags)
{
    return flags ? CUDA_ERROR_INVALID_VALUE : event_record(event, stream, false);
}
FK_EXPORT CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) { return event_record(event, stream, true); }

FK_EXPORT CUresult cuEventSynchronize(CUevent event)
{
    if (!event)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&fk_lock);
    bool captured = event->captured, other_capturing = fk_any_capturing_locked();
    uint64_t until = event->time;
    pthread_mutex_unlock(&fk_lock);
    if (captured) {
        fk_log_violation("cuEventSynchronize on an event recorded during a capture");
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (other_capturing) {
        fk_log_violation("cuEventSynchronize while a stream of this process is capturing");
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    fk_sleep_until(until);
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuEventQuery(CUevent event)
{
    if (!event)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&fk_lock);
    bool captured = event->captured, other_capturing = fk_any_capturing_locked();
    uint64_t time = event->time;
    pthread_mutex_unlock(&fk_lock);
    if (captured) {
        fk_log_violation("cuEventQuery on an event recorded during a capture");
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (other_capturing) {
        fk_log_violation("cuEventQuery while a stream of this process is capturing");
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return fk_now_ns() >= time ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

/* Like the driver: both events recorded and complete, the first one with timing. Drivers before
 * CUDA 12.8 export only the original name; the fake built with FK_OLD_DRIVER is one of those. */
static CUresult elapsed_time(float *ms, CUevent start, CUevent end)
{
    if (!ms || !start || !end)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&fk_lock);
    bool timed = !(start->flags & CU_EVENT_DISABLE_TIMING) && !(end->flags & CU_EVENT_DISABLE_TIMING);
    uint64_t t0 = start->time, t1 = end->time;
    pthread_mutex_unlock(&fk_lock);
    if (!timed)
        return CUDA_ERROR_INVALID_HANDLE;
    if (fk_now_ns() < t0 || fk_now_ns() < t1)
        return CUDA_ERROR_NOT_READY;
    *ms = (float)((double)((int64_t)t1 - (int64_t)t0) / 1e6);
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) { return elapsed_time(ms, start, end); }
#ifndef FK_OLD_DRIVER
FK_EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end) { return elapsed_time(ms, start, end); }
#endif

FK_EXPORT CUresult cuEventDestroy_v2(CUevent event)
{
    if (!event)
        return CUDA_ERROR_INVALID_HANDLE;
    free(event);
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes)
{
    static uint64_t next = 0x700000000000ull;
    if (!ptr || !bytes)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    *ptr = next;
    next += (bytes + 255) & ~255ull;
    pthread_mutex_unlock(&fk_lock);
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr) { return ptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

FK_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    static struct CUmod_st the_module;
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    *module = &the_module;
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule module, const char *name)
{
    if (!f || !module || !name)
        return CUDA_ERROR_INVALID_VALUE;
    const char *prefix = "spin_us:";
    if (strncmp(name, prefix, strlen(prefix)) != 0)
        return CUDA_ERROR_NOT_FOUND;
    char *end;
    unsigned long long us = strtoull(name + strlen(prefix), &end, 10);
    if ((*end && *end != '/') || end == name + strlen(prefix))
        return CUDA_ERROR_NOT_FOUND;
    struct CUfunc_st *fn = calloc(1, sizeof *fn);
    if (!fn)
        abort();
    fn->duration_ns = us * 1000ull;
    snprintf(fn->name, sizeof fn->name, "%s", name);
    *f = fn;
    return CUDA_SUCCESS;
}
