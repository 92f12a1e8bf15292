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
        s->capture->total_ns += duration;
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
