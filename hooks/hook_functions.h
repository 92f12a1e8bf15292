/* Every exported hook, declared with the ABI types of cuda_abi.h. The exported dynamic symbol
 * list of the library is exactly these plus dlsym (see exports.map). */
#ifndef GY_HOOK_FUNCTIONS_H
#define GY_HOOK_FUNCTIONS_H

#include "cuda_abi.h"
#include "driver.h"

#define GY_LAUNCH_ARGS                                                                                 \
    gy_cu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,    \
        unsigned shmem, gy_cu_stream stream
GY_EXPORT gy_cu_result cuLaunchKernel(GY_LAUNCH_ARGS, void **params, void **extra);
GY_EXPORT gy_cu_result cuLaunchKernel_ptsz(GY_LAUNCH_ARGS, void **params, void **extra);
GY_EXPORT gy_cu_result cuLaunchKernelEx(const gy_cu_launch_config *config, gy_cu_function f, void **params,
                                        void **extra);
GY_EXPORT gy_cu_result cuLaunchKernelEx_ptsz(const gy_cu_launch_config *config, gy_cu_function f, void **params,
                                             void **extra);
GY_EXPORT gy_cu_result cuLaunchCooperativeKernel(GY_LAUNCH_ARGS, void **params);
GY_EXPORT gy_cu_result cuLaunchCooperativeKernel_ptsz(GY_LAUNCH_ARGS, void **params);
GY_EXPORT gy_cu_result cuGraphLaunch(gy_cu_graph_exec exec, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuGraphLaunch_ptsz(gy_cu_graph_exec exec, gy_cu_stream stream);

GY_EXPORT gy_cu_result cuGetProcAddress(const char *symbol, void **pfn, int cuda_version, uint64_t flags);
GY_EXPORT gy_cu_result cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, uint64_t flags,
                                           int *status);

GY_EXPORT gy_cu_result cuStreamBeginCapture(gy_cu_stream stream);
GY_EXPORT gy_cu_result cuStreamBeginCapture_ptsz(gy_cu_stream stream);
GY_EXPORT gy_cu_result cuStreamBeginCapture_v2(gy_cu_stream stream, int mode);
GY_EXPORT gy_cu_result cuStreamBeginCapture_v2_ptsz(gy_cu_stream stream, int mode);
GY_EXPORT gy_cu_result cuStreamBeginCaptureToGraph(gy_cu_stream stream, gy_cu_graph graph,
                                                   const gy_cu_graph_node *deps,
                                                   const gy_cu_graph_edge_data *edge_data, size_t ndeps, int mode);
GY_EXPORT gy_cu_result cuStreamBeginCaptureToGraph_ptsz(gy_cu_stream stream, gy_cu_graph graph,
                                                        const gy_cu_graph_node *deps,
                                                        const gy_cu_graph_edge_data *edge_data, size_t ndeps,
                                                        int mode);
GY_EXPORT gy_cu_result cuStreamEndCapture(gy_cu_stream stream, gy_cu_graph *graph);
GY_EXPORT gy_cu_result cuStreamEndCapture_ptsz(gy_cu_stream stream, gy_cu_graph *graph);

/* Copies and memsets (copy_hooks.c): gated like launches. */
GY_EXPORT gy_cu_result cuMemcpyAsync(gy_cu_deviceptr dst, gy_cu_deviceptr src, size_t bytes, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuMemcpyAsync_ptsz(gy_cu_deviceptr dst, gy_cu_deviceptr src, size_t bytes, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuMemcpyHtoDAsync_v2(gy_cu_deviceptr dst, const void *src, size_t bytes, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuMemcpyHtoDAsync_v2_ptsz(gy_cu_deviceptr dst, const void *src, size_t bytes, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuMemcpyDtoHAsync_v2(void *dst, gy_cu_deviceptr src, size_t bytes, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuMemcpyDtoHAsync_v2_ptsz(void *dst, gy_cu_deviceptr src, size_t bytes, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuMemcpyDtoDAsync_v2(gy_cu_deviceptr dst, gy_cu_deviceptr src, size_t bytes, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuMemcpyDtoDAsync_v2_ptsz(gy_cu_deviceptr dst, gy_cu_deviceptr src, size_t bytes, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuMemsetD8Async(gy_cu_deviceptr dst, unsigned char value, size_t n, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuMemsetD8Async_ptsz(gy_cu_deviceptr dst, unsigned char value, size_t n, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuMemsetD16Async(gy_cu_deviceptr dst, unsigned short value, size_t n, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuMemsetD16Async_ptsz(gy_cu_deviceptr dst, unsigned short value, size_t n, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuMemsetD32Async(gy_cu_deviceptr dst, unsigned int value, size_t n, gy_cu_stream stream);
GY_EXPORT gy_cu_result cuMemsetD32Async_ptsz(gy_cu_deviceptr dst, unsigned int value, size_t n, gy_cu_stream stream);

/* Uses of a stream that first join its partition stream (stream_use_hooks.c). */
#define GY_STREAM_USE_PAIR(name, params) GY_EXPORT gy_cu_result name params; GY_EXPORT gy_cu_result name##_ptsz params;
GY_STREAM_USE_PAIR(cuEventRecord, (gy_cu_event event, gy_cu_stream stream))
GY_STREAM_USE_PAIR(cuEventRecordWithFlags, (gy_cu_event event, gy_cu_stream stream, unsigned flags))
GY_STREAM_USE_PAIR(cuStreamSynchronize, (gy_cu_stream stream))
GY_STREAM_USE_PAIR(cuStreamQuery, (gy_cu_stream stream))
GY_STREAM_USE_PAIR(cuStreamWaitEvent, (gy_cu_stream stream, gy_cu_event event, unsigned flags))
GY_STREAM_USE_PAIR(cuLaunchHostFunc, (gy_cu_stream stream, gy_cu_host_fn fn, void *data))
GY_STREAM_USE_PAIR(cuStreamAddCallback, (gy_cu_stream stream, gy_cu_stream_callback fn, void *data, unsigned flags))
GY_STREAM_USE_PAIR(cuMemFreeAsync, (gy_cu_deviceptr ptr, gy_cu_stream stream))
GY_EXPORT gy_cu_result cuStreamDestroy_v2(gy_cu_stream stream);
GY_EXPORT gy_cu_result cuStreamDestroy(gy_cu_stream stream);
GY_EXPORT gy_cu_result cuCtxSynchronize(void);
GY_EXPORT gy_cu_result cuCtxSynchronize_v2(gy_cu_context ctx);
GY_EXPORT gy_cu_result cuMemFree_v2(gy_cu_deviceptr ptr);
#define GY_SYNC_COPY_PAIR(name, params) GY_EXPORT gy_cu_result name params; GY_EXPORT gy_cu_result name##_ptds params;
GY_SYNC_COPY_PAIR(cuMemcpy, (gy_cu_deviceptr dst, gy_cu_deviceptr src, size_t bytes))
GY_SYNC_COPY_PAIR(cuMemcpyHtoD_v2, (gy_cu_deviceptr dst, const void *src, size_t bytes))
GY_SYNC_COPY_PAIR(cuMemcpyDtoH_v2, (void *dst, gy_cu_deviceptr src, size_t bytes))
GY_SYNC_COPY_PAIR(cuMemcpyDtoD_v2, (gy_cu_deviceptr dst, gy_cu_deviceptr src, size_t bytes))
GY_SYNC_COPY_PAIR(cuMemsetD8_v2, (gy_cu_deviceptr dst, unsigned char value, size_t n))
GY_SYNC_COPY_PAIR(cuMemsetD16_v2, (gy_cu_deviceptr dst, unsigned short value, size_t n))
GY_SYNC_COPY_PAIR(cuMemsetD32_v2, (gy_cu_deviceptr dst, unsigned int value, size_t n))
#undef GY_STREAM_USE_PAIR
#undef GY_SYNC_COPY_PAIR

#endif
