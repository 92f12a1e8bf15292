/* Copies and memsets: work on the stream like kernels, lasting bytes / 10 GB/s (1 us at least),
 * logged with kind "copy" (name: the entry point), so tests can see when they ran. */
#include "fake_internal.h"

static CUresult copy_on(CUstream handle, bool ptsz, size_t bytes, const char *name)
{
    if (!fk_current_ctx())
        return CUDA_ERROR_INVALID_CONTEXT;
    uint64_t duration = bytes / 10 + 1000;
    pthread_mutex_lock(&fk_lock);
    struct CUstream_st *s = fk_stream_locked(handle, ptsz);
    CUresult rc = CUDA_ERROR_INVALID_HANDLE;
    if (s && s->capturing) {
        fk_capture_node_locked(s->capture, CU_GRAPH_NODE_TYPE_MEMCPY, duration, 0);
        rc = CUDA_SUCCESS;
    } else if (s) {
        rc = fk_submit_locked(s, duration, FK_COPY, name);
    }
    pthread_mutex_unlock(&fk_lock);
    return rc;
}

#define FAKE_COPY(name, params, bytes, stream)                                                       \
    FK_EXPORT CUresult name params { return copy_on(stream, false, bytes, #name); }                   \
    FK_EXPORT CUresult name##_ptsz params { return copy_on(stream, true, bytes, #name "_ptsz"); }

FAKE_COPY(cuMemcpyAsync, (CUdeviceptr d __attribute__((unused)), CUdeviceptr s __attribute__((unused)), size_t n, CUstream st), n, st)
FAKE_COPY(cuMemcpyHtoDAsync_v2, (CUdeviceptr d __attribute__((unused)), const void *s __attribute__((unused)), size_t n, CUstream st), n, st)
FAKE_COPY(cuMemcpyDtoHAsync_v2, (void *d __attribute__((unused)), CUdeviceptr s __attribute__((unused)), size_t n, CUstream st), n, st)
FAKE_COPY(cuMemcpyDtoDAsync_v2, (CUdeviceptr d __attribute__((unused)), CUdeviceptr s __attribute__((unused)), size_t n, CUstream st), n, st)
FAKE_COPY(cuMemsetD8Async, (CUdeviceptr d __attribute__((unused)), unsigned char v __attribute__((unused)), size_t n, CUstream st), n, st)
FAKE_COPY(cuMemsetD16Async, (CUdeviceptr d __attribute__((unused)), unsigned short v __attribute__((unused)), size_t n, CUstream st), 2 * n, st)
FAKE_COPY(cuMemsetD32Async, (CUdeviceptr d __attribute__((unused)), unsigned int v __attribute__((unused)), size_t n, CUstream st), 4 * n, st)

/* Synchronous copies: on the legacy stream (or the per-thread one), and the caller waits. */
static CUresult copy_sync(bool ptsz, size_t bytes, const char *name)
{
    CUresult rc = copy_on(NULL, ptsz, bytes, name);
    if (rc == CUDA_SUCCESS)
        rc = ptsz ? cuStreamSynchronize_ptsz(NULL) : cuStreamSynchronize(NULL);
    return rc;
}

FK_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n)
{
    (void)d, (void)s;
    return copy_sync(false, n, "cuMemcpyHtoD_v2");
}

FK_EXPORT CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n)
{
    (void)d, (void)s;
    return copy_sync(false, n, "cuMemcpyDtoH_v2");
}

/* A host function: logged as a 1 us piece of work on the stream (kind copy, its name). */
FK_EXPORT CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *data)
{
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    (void)data;
    return copy_on(stream, false, 0, "cuLaunchHostFunc");
}

FK_EXPORT CUresult cuMemFreeAsync(CUdeviceptr ptr, CUstream stream)
{
    return ptr ? copy_on(stream, false, 0, "cuMemFreeAsync") : CUDA_ERROR_INVALID_VALUE;
}
