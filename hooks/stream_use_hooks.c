/* Uses of a stream other than kernel launches: event records, syncs, queries, waits, host
 * functions, destroys, frees, synchronous copies and memsets. Each calls the real function of its
 * own exact name; under the partition policy each first joins what its stream owes (partition.h):
 * an event recorded on S, a sync or query of S, and a free must cover the kernels sent to S's
 * partition stream. While nothing is owed they pass straight through (one relaxed load). */
#include "hook_functions.h"
#include "partition.h"

/* NULL is the legacy stream for the plain entry points, the per-thread one for _ptsz/_ptds. */
#define PLAIN(s) ((s) ? (s) : GY_CU_STREAM_LEGACY)
#define PER_THREAD(s) ((s) ? (s) : GY_CU_STREAM_PER_THREAD)

#define JOIN_THEN_CALL(id, pfn_type, join, call)                                                     \
    do {                                                                                             \
        pfn_type real = (pfn_type)gy_real(id);                                                       \
        if (!real)                                                                                   \
            return GY_CUDA_ERROR_NOT_INITIALIZED;                                                    \
        if (gy_partition_owes())                                                                     \
            join;                                                                                    \
        return call;                                                                                 \
    } while (0)

/* A hook on a stream argument, and its _ptsz twin. */
#define STREAM_PAIR(name, id, id_ptsz, type, params, stream, args)                                   \
    GY_EXPORT gy_cu_result name params                                                               \
    {                                                                                                \
        JOIN_THEN_CALL(id, type, gy_partition_before_use(PLAIN(stream)), real args);                 \
    }                                                                                                \
    GY_EXPORT gy_cu_result name##_ptsz params                                                        \
    {                                                                                                \
        JOIN_THEN_CALL(id_ptsz, type, gy_partition_before_use(PER_THREAD(stream)), real args);       \
    }

STREAM_PAIR(cuEventRecord, GY_FN_EVENT_RECORD, GY_FN_EVENT_RECORD_PTSZ, gy_pfn_event_record,
            (gy_cu_event event, gy_cu_stream stream), stream, (event, stream))
STREAM_PAIR(cuEventRecordWithFlags, GY_FN_EVENT_RECORD_WITH_FLAGS, GY_FN_EVENT_RECORD_WITH_FLAGS_PTSZ,
            gy_pfn_event_record_with_flags, (gy_cu_event event, gy_cu_stream stream, unsigned flags), stream,
            (event, stream, flags))
STREAM_PAIR(cuStreamSynchronize, GY_FN_STREAM_SYNCHRONIZE, GY_FN_STREAM_SYNCHRONIZE_PTSZ, gy_pfn_stream_synchronize,
            (gy_cu_stream stream), stream, (stream))
STREAM_PAIR(cuStreamQuery, GY_FN_STREAM_QUERY, GY_FN_STREAM_QUERY_PTSZ, gy_pfn_stream_query, (gy_cu_stream stream),
            stream, (stream))
STREAM_PAIR(cuStreamWaitEvent, GY_FN_STREAM_WAIT_EVENT, GY_FN_STREAM_WAIT_EVENT_PTSZ, gy_pfn_stream_wait_event,
            (gy_cu_stream stream, gy_cu_event event, unsigned flags), stream, (stream, event, flags))
STREAM_PAIR(cuLaunchHostFunc, GY_FN_LAUNCH_HOST_FUNC, GY_FN_LAUNCH_HOST_FUNC_PTSZ, gy_pfn_launch_host_func,
            (gy_cu_stream stream, gy_cu_host_fn fn, void *data), stream, (stream, fn, data))
STREAM_PAIR(cuStreamAddCallback, GY_FN_STREAM_ADD_CALLBACK, GY_FN_STREAM_ADD_CALLBACK_PTSZ,
            gy_pfn_stream_add_callback, (gy_cu_stream stream, gy_cu_stream_callback fn, void *data, unsigned flags),
            stream, (stream, fn, data, flags))
STREAM_PAIR(cuMemFreeAsync, GY_FN_MEM_FREE_ASYNC, GY_FN_MEM_FREE_ASYNC_PTSZ, gy_pfn_mem_free_async,
            (gy_cu_deviceptr ptr, gy_cu_stream stream), stream, (ptr, stream))

/* A destroyed stream's queued work still runs; what it owes must be joined first. */
GY_EXPORT gy_cu_result cuStreamDestroy_v2(gy_cu_stream stream)
{
    JOIN_THEN_CALL(GY_FN_STREAM_DESTROY, gy_pfn_stream_destroy, gy_partition_before_use(PLAIN(stream)), real(stream));
}

GY_EXPORT gy_cu_result cuStreamDestroy(gy_cu_stream stream)
{
    JOIN_THEN_CALL(GY_FN_STREAM_DESTROY_V1, gy_pfn_stream_destroy, gy_partition_before_use(PLAIN(stream)),
                   real(stream));
}

/* Covers every stream of the current context. */
GY_EXPORT gy_cu_result cuCtxSynchronize(void)
{
    JOIN_THEN_CALL(GY_FN_CTX_SYNCHRONIZE, gy_pfn_ctx_synchronize, gy_partition_before_all(false), real());
}

/* CUDA 13's resolver hands this out for "cuCtxSynchronize": covers every stream of ctx. */
GY_EXPORT gy_cu_result cuCtxSynchronize_v2(gy_cu_context ctx)
{
    JOIN_THEN_CALL(GY_FN_CTX_SYNCHRONIZE_V2, gy_pfn_ctx_synchronize_v2, gy_partition_before_context(ctx), real(ctx));
}

/* cuMemFree waits for the work that may use the memory, in whatever context. */
GY_EXPORT gy_cu_result cuMemFree_v2(gy_cu_deviceptr ptr)
{
    JOIN_THEN_CALL(GY_FN_MEM_FREE, gy_pfn_mem_free, gy_partition_before_all(true), real(ptr));
}

/* Synchronous copies and memsets run on the legacy stream (the _ptds twins on the per-thread one),
 * after the work of the context's blocking streams. */
#define SYNC_PAIR(name, id, id_ptds, type, params, args)                                             \
    GY_EXPORT gy_cu_result name params                                                               \
    {                                                                                                \
        JOIN_THEN_CALL(id, type, gy_partition_before_use(GY_CU_STREAM_LEGACY), real args);           \
    }                                                                                                \
    GY_EXPORT gy_cu_result name##_ptds params                                                        \
    {                                                                                                \
        JOIN_THEN_CALL(id_ptds, type,                                                                \
                       (gy_partition_before_use(GY_CU_STREAM_PER_THREAD),                            \
                        gy_partition_before_use(GY_CU_STREAM_LEGACY)),                               \
                       real args);                                                                   \
    }

SYNC_PAIR(cuMemcpy, GY_FN_MEMCPY, GY_FN_MEMCPY_PTDS, gy_pfn_memcpy_sync,
          (gy_cu_deviceptr dst, gy_cu_deviceptr src, size_t bytes), (dst, src, bytes))
SYNC_PAIR(cuMemcpyHtoD_v2, GY_FN_MEMCPY_HTOD, GY_FN_MEMCPY_HTOD_PTDS, gy_pfn_memcpy_htod_sync,
          (gy_cu_deviceptr dst, const void *src, size_t bytes), (dst, src, bytes))
SYNC_PAIR(cuMemcpyDtoH_v2, GY_FN_MEMCPY_DTOH, GY_FN_MEMCPY_DTOH_PTDS, gy_pfn_memcpy_dtoh_sync,
          (void *dst, gy_cu_deviceptr src, size_t bytes), (dst, src, bytes))
SYNC_PAIR(cuMemcpyDtoD_v2, GY_FN_MEMCPY_DTOD, GY_FN_MEMCPY_DTOD_PTDS, gy_pfn_memcpy_sync,
          (gy_cu_deviceptr dst, gy_cu_deviceptr src, size_t bytes), (dst, src, bytes))
SYNC_PAIR(cuMemsetD8_v2, GY_FN_MEMSET_D8, GY_FN_MEMSET_D8_PTDS, gy_pfn_memset_d8_sync,
          (gy_cu_deviceptr dst, unsigned char value, size_t n), (dst, value, n))
SYNC_PAIR(cuMemsetD16_v2, GY_FN_MEMSET_D16, GY_FN_MEMSET_D16_PTDS, gy_pfn_memset_d16_sync,
          (gy_cu_deviceptr dst, unsigned short value, size_t n), (dst, value, n))
SYNC_PAIR(cuMemsetD32_v2, GY_FN_MEMSET_D32, GY_FN_MEMSET_D32_PTDS, gy_pfn_memset_d32_sync,
          (gy_cu_deviceptr dst, unsigned int value, size_t n), (dst, value, n))
