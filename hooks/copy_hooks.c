/* The copy and memset hooks. They are not kernels, but they are GPU work: a low-priority
 * process that starts a job with a large host-to-device copy while a high-priority job runs
 * takes copy-engine and memory bandwidth from it (measured on the H100: bench/results). So they
 * pass the same gate as launches (and count as in flight for the drain), without the launch
 * counters or the queue bound. Each calls the real function of its own exact name. */
#include "gate.h"
#include "hook_functions.h"
#include "join.h"
#include "partition.h"


/* Under the partition policy an async copy on S that finds a higher job running goes to S's
 * partition stream like a kernel (partition.h: same fork and join, no wait for the job's end):
 * copies use copy engines, not SMs, and a low worker that copies its input every iteration would
 * otherwise stall at the gate. Otherwise it joins what S owes and passes the gate. `call` copies
 * on `target`: the user's stream, or the partition stream. */
#define GATED_COPY(id, pfn_type, normalized, call)                                                   \
    do {                                                                                             \
        pfn_type real = (pfn_type)gy_real(id);                                                       \
        gy_cu_stream target = stream;                                                                \
        if (!real)                                                                                   \
            return GY_CUDA_ERROR_NOT_INITIALIZED;                                                    \
        if (!gy_client_gated())                                                                      \
            return call;                                                                             \
        gy_client_note_context();                                                                    \
        struct gy_partition_route route;                                                             \
        gy_gate_enter(normalized, NULL, &route);                                                    \
        if (route.green)                                                                             \
            target = route.green;                                                                    \
        gy_cu_result rc = call;                                                                      \
        if (route.green)                                                                             \
            gy_partition_launched(&route, rc == GY_CUDA_SUCCESS, true);                              \
        gy_gate_leave(false, false);                                                                 \
        return rc;                                                                                   \
    } while (0)

#define COPY_PAIR(name, id, id_ptsz, type, params, args)                                             \
    GY_EXPORT gy_cu_result name params                                                               \
    {                                                                                                \
        GATED_COPY(id, type, stream ? stream : GY_CU_STREAM_LEGACY, real args);                      \
    }                                                                                                \
    GY_EXPORT gy_cu_result name##_ptsz params                                                        \
    {                                                                                                \
        GATED_COPY(id_ptsz, type, stream ? stream : GY_CU_STREAM_PER_THREAD, real args);             \
    }

COPY_PAIR(cuMemcpyAsync, GY_FN_MEMCPY_ASYNC, GY_FN_MEMCPY_ASYNC_PTSZ, gy_pfn_memcpy_async,
          (gy_cu_deviceptr dst, gy_cu_deviceptr src, size_t bytes, gy_cu_stream stream), (dst, src, bytes, target))
COPY_PAIR(cuMemcpyHtoDAsync_v2, GY_FN_MEMCPY_HTOD_ASYNC, GY_FN_MEMCPY_HTOD_ASYNC_PTSZ, gy_pfn_memcpy_htod_async,
          (gy_cu_deviceptr dst, const void *src, size_t bytes, gy_cu_stream stream), (dst, src, bytes, target))
COPY_PAIR(cuMemcpyDtoHAsync_v2, GY_FN_MEMCPY_DTOH_ASYNC, GY_FN_MEMCPY_DTOH_ASYNC_PTSZ, gy_pfn_memcpy_dtoh_async,
          (void *dst, gy_cu_deviceptr src, size_t bytes, gy_cu_stream stream), (dst, src, bytes, target))
COPY_PAIR(cuMemcpyDtoDAsync_v2, GY_FN_MEMCPY_DTOD_ASYNC, GY_FN_MEMCPY_DTOD_ASYNC_PTSZ, gy_pfn_memcpy_async,
          (gy_cu_deviceptr dst, gy_cu_deviceptr src, size_t bytes, gy_cu_stream stream), (dst, src, bytes, target))
COPY_PAIR(cuMemsetD8Async, GY_FN_MEMSET_D8_ASYNC, GY_FN_MEMSET_D8_ASYNC_PTSZ, gy_pfn_memset_d8_async,
          (gy_cu_deviceptr dst, unsigned char value, size_t n, gy_cu_stream stream), (dst, value, n, target))
COPY_PAIR(cuMemsetD16Async, GY_FN_MEMSET_D16_ASYNC, GY_FN_MEMSET_D16_ASYNC_PTSZ, gy_pfn_memset_d16_async,
          (gy_cu_deviceptr dst, unsigned short value, size_t n, gy_cu_stream stream), (dst, value, n, target))
COPY_PAIR(cuMemsetD32Async, GY_FN_MEMSET_D32_ASYNC, GY_FN_MEMSET_D32_ASYNC_PTSZ, gy_pfn_memset_d32_async,
          (gy_cu_deviceptr dst, unsigned int value, size_t n, gy_cu_stream stream), (dst, value, n, target))
