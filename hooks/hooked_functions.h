/* The one list of driver entry points the library hooks and of those it only calls. Everything
 * else follows from it: the enum gy_fn (driver.h), the name -> hook map (driver.c), the hooks'
 * declarations (hook_functions.h), the library's exports.map (generated at build time from
 * exports.map.in) and the symbol list tests/suites/30-hooks.sh expects from `nm -D`.
 * Adding an entry point is one row here plus its hook function. A _ptsz twin is a row of its own
 * (its hook calls the real function of its own exact name).
 * This file defines macros only: exports.map.in runs it through the C preprocessor.
 *
 * X(exported name, enum id, pointer type of its signature in cuda_abi.h) */
#ifndef GY_HOOKED_FUNCTIONS_H
#define GY_HOOKED_FUNCTIONS_H

#define GY_HOOKED_FUNCTIONS(X)                                                                         \
    X(cuLaunchKernel, GY_FN_LAUNCH_KERNEL, gy_pfn_launch_kernel)                                       \
    X(cuLaunchKernel_ptsz, GY_FN_LAUNCH_KERNEL_PTSZ, gy_pfn_launch_kernel)                             \
    X(cuLaunchKernelEx, GY_FN_LAUNCH_KERNEL_EX, gy_pfn_launch_kernel_ex)                               \
    X(cuLaunchKernelEx_ptsz, GY_FN_LAUNCH_KERNEL_EX_PTSZ, gy_pfn_launch_kernel_ex)                     \
    X(cuLaunchCooperativeKernel, GY_FN_LAUNCH_COOPERATIVE, gy_pfn_launch_cooperative)                  \
    X(cuLaunchCooperativeKernel_ptsz, GY_FN_LAUNCH_COOPERATIVE_PTSZ, gy_pfn_launch_cooperative)        \
    X(cuGraphLaunch, GY_FN_GRAPH_LAUNCH, gy_pfn_graph_launch)                                          \
    X(cuGraphLaunch_ptsz, GY_FN_GRAPH_LAUNCH_PTSZ, gy_pfn_graph_launch)                                \
    X(cuGetProcAddress, GY_FN_GET_PROC_ADDRESS, gy_pfn_get_proc_address)                               \
    X(cuGetProcAddress_v2, GY_FN_GET_PROC_ADDRESS_V2, gy_pfn_get_proc_address_v2)                      \
    X(cuStreamBeginCapture, GY_FN_BEGIN_CAPTURE, gy_pfn_begin_capture)                                 \
    X(cuStreamBeginCapture_ptsz, GY_FN_BEGIN_CAPTURE_PTSZ, gy_pfn_begin_capture)                       \
    X(cuStreamBeginCapture_v2, GY_FN_BEGIN_CAPTURE_V2, gy_pfn_begin_capture_v2)                        \
    X(cuStreamBeginCapture_v2_ptsz, GY_FN_BEGIN_CAPTURE_V2_PTSZ, gy_pfn_begin_capture_v2)              \
    X(cuStreamBeginCaptureToGraph, GY_FN_BEGIN_CAPTURE_TO_GRAPH, gy_pfn_begin_capture_to_graph)        \
    X(cuStreamBeginCaptureToGraph_ptsz, GY_FN_BEGIN_CAPTURE_TO_GRAPH_PTSZ, gy_pfn_begin_capture_to_graph) \
    X(cuStreamEndCapture, GY_FN_END_CAPTURE, gy_pfn_end_capture)                                       \
    X(cuStreamEndCapture_ptsz, GY_FN_END_CAPTURE_PTSZ, gy_pfn_end_capture)                             \
    X(cuMemcpyAsync, GY_FN_MEMCPY_ASYNC, gy_pfn_memcpy_async)                                          \
    X(cuMemcpyAsync_ptsz, GY_FN_MEMCPY_ASYNC_PTSZ, gy_pfn_memcpy_async)                                \
    X(cuMemcpyHtoDAsync_v2, GY_FN_MEMCPY_HTOD_ASYNC, gy_pfn_memcpy_htod_async)                         \
    X(cuMemcpyHtoDAsync_v2_ptsz, GY_FN_MEMCPY_HTOD_ASYNC_PTSZ, gy_pfn_memcpy_htod_async)               \
    X(cuMemcpyDtoHAsync_v2, GY_FN_MEMCPY_DTOH_ASYNC, gy_pfn_memcpy_dtoh_async)                         \
    X(cuMemcpyDtoHAsync_v2_ptsz, GY_FN_MEMCPY_DTOH_ASYNC_PTSZ, gy_pfn_memcpy_dtoh_async)               \
    X(cuMemcpyDtoDAsync_v2, GY_FN_MEMCPY_DTOD_ASYNC, gy_pfn_memcpy_async)                              \
    X(cuMemcpyDtoDAsync_v2_ptsz, GY_FN_MEMCPY_DTOD_ASYNC_PTSZ, gy_pfn_memcpy_async)                    \
    X(cuMemsetD8Async, GY_FN_MEMSET_D8_ASYNC, gy_pfn_memset_d8_async)                                  \
    X(cuMemsetD8Async_ptsz, GY_FN_MEMSET_D8_ASYNC_PTSZ, gy_pfn_memset_d8_async)                        \
    X(cuMemsetD16Async, GY_FN_MEMSET_D16_ASYNC, gy_pfn_memset_d16_async)                               \
    X(cuMemsetD16Async_ptsz, GY_FN_MEMSET_D16_ASYNC_PTSZ, gy_pfn_memset_d16_async)                     \
    X(cuMemsetD32Async, GY_FN_MEMSET_D32_ASYNC, gy_pfn_memset_d32_async)                               \
    X(cuMemsetD32Async_ptsz, GY_FN_MEMSET_D32_ASYNC_PTSZ, gy_pfn_memset_d32_async)

/* Driver functions the library calls but does not hook: looked up by exact name, never exported. */
#define GY_CALLED_FUNCTIONS(X)                                                                         \
    X(cuStreamIsCapturing, GY_FN_IS_CAPTURING, gy_pfn_is_capturing)                                    \
    X(cuStreamSynchronize, GY_FN_STREAM_SYNCHRONIZE, gy_pfn_stream_synchronize)                        \
    X(cuCtxGetCurrent, GY_FN_CTX_GET_CURRENT, gy_pfn_ctx_get_current)                                  \
    X(cuCtxPushCurrent_v2, GY_FN_CTX_PUSH_CURRENT, gy_pfn_ctx_push_current)                            \
    X(cuCtxPopCurrent_v2, GY_FN_CTX_POP_CURRENT, gy_pfn_ctx_pop_current)                               \
    X(cuCtxSynchronize, GY_FN_CTX_SYNCHRONIZE, gy_pfn_ctx_synchronize)                                 \
    X(cuEventCreate, GY_FN_EVENT_CREATE, gy_pfn_event_create)                                          \
    X(cuEventRecord, GY_FN_EVENT_RECORD, gy_pfn_event_record)                                          \
    X(cuEventSynchronize, GY_FN_EVENT_SYNCHRONIZE, gy_pfn_event_synchronize)                           \
    X(cuEventDestroy_v2, GY_FN_EVENT_DESTROY, gy_pfn_event_destroy)                                    \
    X(cuEventQuery, GY_FN_EVENT_QUERY, gy_pfn_event_query)                                             \
    X(cuEventElapsedTime_v2, GY_FN_EVENT_ELAPSED, gy_pfn_event_elapsed)                                \
    X(cuEventElapsedTime, GY_FN_EVENT_ELAPSED_V1, gy_pfn_event_elapsed)

#endif
