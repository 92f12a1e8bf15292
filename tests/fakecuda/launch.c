/* Kernel and graph launches and stream capture of the fake driver. A launch into a capturing
 * stream is recorded as a node (graphs.c), not run; a graph launch runs its nodes as one unit. */
#include <stdio.h>
#include <stdlib.h>

#include "fake_internal.h"

static unsigned outstanding_locked(struct CUstream_st *s, uint64_t now)
{
    while (s->ends_len && s->ends[s->ends_head] <= now) {
        s->ends_head = (s->ends_head + 1) % s->ends_cap;
        s->ends_len--;
    }
    return s->ends_len;
}

static void push_end_locked(struct CUstream_st *s, uint64_t end)
{
    if (s->ends_len == s->ends_cap) {
        unsigned cap = s->ends_cap ? 2 * s->ends_cap : 64;
        uint64_t *grown = malloc(cap * sizeof *grown);
        if (!grown)
            abort();
        for (unsigned i = 0; i < s->ends_len; i++)
            grown[i] = s->ends[(s->ends_head + i) % s->ends_cap];
        free(s->ends);
        s->ends = grown;
        s->ends_cap = cap;
        s->ends_head = 0;
    }
    s->ends[(s->ends_head + s->ends_len) % s->ends_cap] = end;
    s->ends_len++;
}

CUresult fk_submit_locked(struct CUstream_st *s, uint64_t duration_ns, enum fk_kind kind, const char *name)
{
    return fk_submit_in_locked(s, s->green, duration_ns, kind, name);
}

CUresult fk_submit_in_locked(struct CUstream_st *s, const struct CUgreenCtx_st *green, uint64_t duration_ns,
                             enum fk_kind kind, const char *name)
{
    uint64_t now = fk_now_ns();
    unsigned outstanding = outstanding_locked(s, now);
    uint64_t after = fk_ordered_tail_locked(s);
    if (now > after)
        after = now;
    /* A green context's SMs are its own: its streams run beside the rest of the device (and each
     * other), ordered only by their own tails and the events they wait on. */
    uint64_t start = green ? after : fk_device_reserve(after, duration_ns);
    uint64_t end = start + duration_ns;
    s->tail = end;
    push_end_locked(s, end);
    fk_log_kernel(s->id, now, start, end, outstanding, kind, name, green ? green->sms : 0);
    return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, CUstream handle, bool ptsz, enum fk_kind kind)
{
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!fk_current_ctx())
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&fk_lock);
    struct CUstream_st *s = fk_stream_locked(handle, ptsz);
    CUresult rc = CUDA_ERROR_INVALID_HANDLE;
    if (s && s->capturing) {
        fk_capture_node_locked(s->capture, CU_GRAPH_NODE_TYPE_KERNEL, f->duration_ns, 1);
        rc = CUDA_SUCCESS;
    } else if (s) {
        rc = fk_submit_locked(s, f->duration_ns, kind, f->name);
    }
    pthread_mutex_unlock(&fk_lock);
    return rc;
}

#define UNUSED_GEOMETRY (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shmem, (void)params

FK_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                  unsigned bz, unsigned shmem, CUstream stream, void **params, void **extra)
{
    UNUSED_GEOMETRY, (void)extra;
    return launch(f, stream, false, FK_KERNEL);
}

FK_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                       unsigned by, unsigned bz, unsigned shmem, CUstream stream, void **params,
                                       void **extra)
{
    UNUSED_GEOMETRY, (void)extra;
    return launch(f, stream, true, FK_KERNEL);
}

FK_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                             unsigned by, unsigned bz, unsigned shmem, CUstream stream,
                                             void **params)
{
    UNUSED_GEOMETRY;
    return launch(f, stream, false, FK_COOP);
}

FK_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                                  unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                                  CUstream stream, void **params)
{
    UNUSED_GEOMETRY;
    return launch(f, stream, true, FK_COOP);
}

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, bool ptsz)
{
    if (!config || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, config->hStream, ptsz, FK_EX);
}

FK_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
    (void)params, (void)extra;
    return launch_ex(config, f, false);
}

FK_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
    (void)params, (void)extra;
    return launch_ex(config, f, true);
}

static CUresult graph_launch(CUgraphExec exec, CUstream handle, bool ptsz)
{
    if (!exec)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&fk_lock);
    struct CUstream_st *s = fk_stream_locked(handle, ptsz);
    CUresult rc = CUDA_ERROR_INVALID_HANDLE;
    if (s && s->capturing) {
        fk_capture_node_locked(s->capture, CU_GRAPH_NODE_TYPE_GRAPH, exec->total_ns, exec->kernels);
        rc = CUDA_SUCCESS;
    } else if (s) {
        char name[32];
        snprintf(name, sizeof name, "graph:%u", exec->kernels);
        rc = fk_submit_in_locked(s, exec->green, exec->total_ns, FK_GRAPH, name); /* the nodes' context rules */
    }
    pthread_mutex_unlock(&fk_lock);
    return rc;
}

FK_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) { return graph_launch(exec, stream, false); }
FK_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) { return graph_launch(exec, stream, true); }

static CUresult begin_capture(CUstream handle, bool ptsz)
{
    if (handle == CU_STREAM_LEGACY || (!handle && !ptsz))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* as the real driver: not on the legacy stream */
    pthread_mutex_lock(&fk_lock);
    struct CUstream_st *s = fk_stream_locked(handle, ptsz);
    CUresult rc = CUDA_ERROR_INVALID_HANDLE;
    if (s && s->capturing) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (s) {
        s->capture = calloc(1, sizeof *s->capture);
        if (!s->capture)
            abort();
        s->capturing = true;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&fk_lock);
    return rc;
}

FK_EXPORT CUresult cuStreamBeginCapture(CUstream stream) { return begin_capture(stream, false); }
FK_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream stream) { return begin_capture(stream, true); }
FK_EXPORT CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode)
{
    (void)mode;
    return begin_capture(stream, false);
}
FK_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode)
{
    (void)mode;
    return begin_capture(stream, true);
}

static CUresult end_capture(CUstream handle, CUgraph *graph, bool ptsz)
{
    if (!graph)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    struct CUstream_st *s = fk_stream_locked(handle, ptsz);
    CUresult rc = CUDA_ERROR_INVALID_HANDLE;
    if (s && !s->capturing) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (s) {
        *graph = s->capture;
        s->capture = NULL;
        s->capturing = false;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&fk_lock);
    return rc;
}

FK_EXPORT CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph) { return end_capture(stream, graph, false); }
FK_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph *graph) { return end_capture(stream, graph, true); }

static CUresult is_capturing(CUstream handle, CUstreamCaptureStatus *status, bool ptsz)
{
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    struct CUstream_st *s = fk_stream_locked(handle, ptsz);
    if (s)
        *status = s->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    pthread_mutex_unlock(&fk_lock);
    return s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FK_EXPORT CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus *status)
{
    return is_capturing(stream, status, false);
}
FK_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream stream, CUstreamCaptureStatus *status)
{
    return is_capturing(stream, status, true);
}
