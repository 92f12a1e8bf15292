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
    /* Graphs a lower process may cut into parts (graph_split.c): made, changed in place, destroyed. */ \
    X(cuGraphInstantiateWithFlags, GY_FN_GRAPH_INSTANTIATE_WITH_FLAGS, gy_pfn_graph_instantiate_with_flags) \
    X(cuGraphInstantiateWithParams, GY_FN_GRAPH_INSTANTIATE_WITH_PARAMS, gy_pfn_graph_instantiate_with_params) \
    X(cuGraphInstantiateWithParams_ptsz, GY_FN_GRAPH_INSTANTIATE_WITH_PARAMS_PTSZ, gy_pfn_graph_instantiate_with_params) \
    X(cuGraphExecDestroy, GY_FN_GRAPH_EXEC_DESTROY, gy_pfn_graph_exec_destroy)                         \
    X(cuGraphExecUpdate_v2, GY_FN_GRAPH_EXEC_UPDATE_V2, gy_pfn_exec_update_v2)                         \
    X(cuGraphExecUpdate, GY_FN_GRAPH_EXEC_UPDATE, gy_pfn_exec_update_v1)                               \
    X(cuGraphExecKernelNodeSetParams_v2, GY_FN_EXEC_KERNEL_NODE_SET_PARAMS_V2, gy_pfn_exec_node_params) \
    X(cuGraphExecKernelNodeSetParams, GY_FN_EXEC_KERNEL_NODE_SET_PARAMS, gy_pfn_exec_node_params)      \
    X(cuGraphExecHostNodeSetParams, GY_FN_EXEC_HOST_NODE_SET_PARAMS, gy_pfn_exec_node_params)          \
    X(cuGraphExecExternalSemaphoresSignalNodeSetParams, GY_FN_EXEC_SEM_SIGNAL_NODE_SET_PARAMS, gy_pfn_exec_node_params) \
    X(cuGraphExecExternalSemaphoresWaitNodeSetParams, GY_FN_EXEC_SEM_WAIT_NODE_SET_PARAMS, gy_pfn_exec_node_params) \
    X(cuGraphExecBatchMemOpNodeSetParams, GY_FN_EXEC_BATCH_MEM_OP_NODE_SET_PARAMS, gy_pfn_exec_node_params) \
    X(cuGraphExecNodeSetParams, GY_FN_EXEC_NODE_SET_PARAMS, gy_pfn_exec_node_params)                   \
    X(cuGraphExecMemcpyNodeSetParams, GY_FN_EXEC_MEMCPY_NODE_SET_PARAMS, gy_pfn_exec_node_params_ctx)  \
    X(cuGraphExecMemsetNodeSetParams, GY_FN_EXEC_MEMSET_NODE_SET_PARAMS, gy_pfn_exec_node_params_ctx)  \
    X(cuGraphExecChildGraphNodeSetParams, GY_FN_EXEC_CHILD_GRAPH_NODE_SET_PARAMS, gy_pfn_exec_node_graph) \
    X(cuGraphExecEventRecordNodeSetEvent, GY_FN_EXEC_EVENT_RECORD_NODE_SET_EVENT, gy_pfn_exec_node_event) \
    X(cuGraphExecEventWaitNodeSetEvent, GY_FN_EXEC_EVENT_WAIT_NODE_SET_EVENT, gy_pfn_exec_node_event)  \
    X(cuGraphNodeSetEnabled, GY_FN_GRAPH_NODE_SET_ENABLED, gy_pfn_exec_node_enabled)                   \
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
    X(cuMemsetD32Async_ptsz, GY_FN_MEMSET_D32_ASYNC_PTSZ, gy_pfn_memset_d32_async)                     \
    /* Uses of a stream that first join its partition stream (stream_use_hooks.c). */                \
    X(cuEventRecord, GY_FN_EVENT_RECORD, gy_pfn_event_record)                                          \
    X(cuEventRecord_ptsz, GY_FN_EVENT_RECORD_PTSZ, gy_pfn_event_record)                                \
    X(cuEventRecordWithFlags, GY_FN_EVENT_RECORD_WITH_FLAGS, gy_pfn_event_record_with_flags)           \
    X(cuEventRecordWithFlags_ptsz, GY_FN_EVENT_RECORD_WITH_FLAGS_PTSZ, gy_pfn_event_record_with_flags) \
    X(cuStreamSynchronize, GY_FN_STREAM_SYNCHRONIZE, gy_pfn_stream_synchronize)                        \
    X(cuStreamSynchronize_ptsz, GY_FN_STREAM_SYNCHRONIZE_PTSZ, gy_pfn_stream_synchronize)              \
    X(cuStreamQuery, GY_FN_STREAM_QUERY, gy_pfn_stream_query)                                          \
    X(cuStreamQuery_ptsz, GY_FN_STREAM_QUERY_PTSZ, gy_pfn_stream_query)                                \
    X(cuStreamWaitEvent, GY_FN_STREAM_WAIT_EVENT, gy_pfn_stream_wait_event)                            \
    X(cuStreamWaitEvent_ptsz, GY_FN_STREAM_WAIT_EVENT_PTSZ, gy_pfn_stream_wait_event)                  \
    X(cuLaunchHostFunc, GY_FN_LAUNCH_HOST_FUNC, gy_pfn_launch_host_func)                               \
    X(cuLaunchHostFunc_ptsz, GY_FN_LAUNCH_HOST_FUNC_PTSZ, gy_pfn_launch_host_func)                     \
    X(cuStreamAddCallback, GY_FN_STREAM_ADD_CALLBACK, gy_pfn_stream_add_callback)                      \
    X(cuStreamAddCallback_ptsz, GY_FN_STREAM_ADD_CALLBACK_PTSZ, gy_pfn_stream_add_callback)            \
    X(cuStreamDestroy_v2, GY_FN_STREAM_DESTROY, gy_pfn_stream_destroy)                                 \
    X(cuStreamDestroy, GY_FN_STREAM_DESTROY_V1, gy_pfn_stream_destroy)                                 \
    X(cuCtxSynchronize, GY_FN_CTX_SYNCHRONIZE, gy_pfn_ctx_synchronize)                                 \
    X(cuCtxSynchronize_v2, GY_FN_CTX_SYNCHRONIZE_V2, gy_pfn_ctx_synchronize_v2)                        \
    X(cuMemFree_v2, GY_FN_MEM_FREE, gy_pfn_mem_free)                                                   \
    X(cuMemFreeAsync, GY_FN_MEM_FREE_ASYNC, gy_pfn_mem_free_async)                                     \
    X(cuMemFreeAsync_ptsz, GY_FN_MEM_FREE_ASYNC_PTSZ, gy_pfn_mem_free_async)                           \
    X(cuMemcpy, GY_FN_MEMCPY, gy_pfn_memcpy_sync)                                                      \
    X(cuMemcpy_ptds, GY_FN_MEMCPY_PTDS, gy_pfn_memcpy_sync)                                            \
    X(cuMemcpyHtoD_v2, GY_FN_MEMCPY_HTOD, gy_pfn_memcpy_htod_sync)                                     \
    X(cuMemcpyHtoD_v2_ptds, GY_FN_MEMCPY_HTOD_PTDS, gy_pfn_memcpy_htod_sync)                           \
    X(cuMemcpyDtoH_v2, GY_FN_MEMCPY_DTOH, gy_pfn_memcpy_dtoh_sync)                                     \
    X(cuMemcpyDtoH_v2_ptds, GY_FN_MEMCPY_DTOH_PTDS, gy_pfn_memcpy_dtoh_sync)                           \
    X(cuMemcpyDtoD_v2, GY_FN_MEMCPY_DTOD, gy_pfn_memcpy_sync)                                          \
    X(cuMemcpyDtoD_v2_ptds, GY_FN_MEMCPY_DTOD_PTDS, gy_pfn_memcpy_sync)                                \
    X(cuMemsetD8_v2, GY_FN_MEMSET_D8, gy_pfn_memset_d8_sync)                                           \
    X(cuMemsetD8_v2_ptds, GY_FN_MEMSET_D8_PTDS, gy_pfn_memset_d8_sync)                                 \
    X(cuMemsetD16_v2, GY_FN_MEMSET_D16, gy_pfn_memset_d16_sync)                                        \
    X(cuMemsetD16_v2_ptds, GY_FN_MEMSET_D16_PTDS, gy_pfn_memset_d16_sync)                              \
    X(cuMemsetD32_v2, GY_FN_MEMSET_D32, gy_pfn_memset_d32_sync)                                        \
    X(cuMemsetD32_v2_ptds, GY_FN_MEMSET_D32_PTDS, gy_pfn_memset_d32_sync)

/* Driver functions the library calls but does not hook: looked up by exact name, never exported. */
#define GY_CALLED_FUNCTIONS(X)                                                                         \
    X(cuStreamIsCapturing, GY_FN_IS_CAPTURING, gy_pfn_is_capturing)                                    \
    X(cuCtxGetCurrent, GY_FN_CTX_GET_CURRENT, gy_pfn_ctx_get_current)                                  \
    X(cuCtxPushCurrent_v2, GY_FN_CTX_PUSH_CURRENT, gy_pfn_ctx_push_current)                            \
    X(cuCtxPopCurrent_v2, GY_FN_CTX_POP_CURRENT, gy_pfn_ctx_pop_current)                               \
    X(cuEventCreate, GY_FN_EVENT_CREATE, gy_pfn_event_create)                                          \
    X(cuEventSynchronize, GY_FN_EVENT_SYNCHRONIZE, gy_pfn_event_synchronize)                           \
    X(cuEventDestroy_v2, GY_FN_EVENT_DESTROY, gy_pfn_event_destroy)                                    \
    X(cuEventQuery, GY_FN_EVENT_QUERY, gy_pfn_event_query)                                             \
    X(cuEventElapsedTime_v2, GY_FN_EVENT_ELAPSED, gy_pfn_event_elapsed)                                \
    X(cuEventElapsedTime, GY_FN_EVENT_ELAPSED_V1, gy_pfn_event_elapsed)                                \
    /* A context's GPU, by UUID: the gate word of its launches (client.c). */                         \
    X(cuDeviceGetUuid_v2, GY_FN_DEVICE_GET_UUID_V2, gy_pfn_device_get_uuid)                            \
    X(cuDeviceGetUuid, GY_FN_DEVICE_GET_UUID, gy_pfn_device_get_uuid)                                  \
    /* Green contexts for the partition policy (partition.c); cuCtxGetDevice also for the UUID. */     \
    X(cuCtxGetDevice, GY_FN_CTX_GET_DEVICE, gy_pfn_ctx_get_device)                                     \
    X(cuDeviceGetDevResource, GY_FN_DEVICE_GET_DEV_RESOURCE, gy_pfn_device_get_dev_resource)           \
    X(cuDevSmResourceSplitByCount, GY_FN_DEV_SM_RESOURCE_SPLIT_BY_COUNT, gy_pfn_dev_sm_resource_split_by_count) \
    X(cuDevResourceGenerateDesc, GY_FN_DEV_RESOURCE_GENERATE_DESC, gy_pfn_dev_resource_generate_desc)  \
    X(cuGreenCtxCreate, GY_FN_GREEN_CTX_CREATE, gy_pfn_green_ctx_create)                               \
    X(cuGreenCtxStreamCreate, GY_FN_GREEN_CTX_STREAM_CREATE, gy_pfn_green_ctx_stream_create)           \
    X(cuGreenCtxDestroy, GY_FN_GREEN_CTX_DESTROY, gy_pfn_green_ctx_destroy)                            \
    /* Cutting a graph into parts (graph_split.c). */                                               \
    X(cuGraphClone, GY_FN_GRAPH_CLONE, gy_pfn_graph_clone)                                             \
    X(cuGraphDestroy, GY_FN_GRAPH_DESTROY, gy_pfn_graph_destroy)                                       \
    X(cuGraphGetNodes, GY_FN_GRAPH_GET_NODES, gy_pfn_graph_get_nodes)                                  \
    X(cuGraphGetEdges_v2, GY_FN_GRAPH_GET_EDGES_V2, gy_pfn_graph_get_edges_v2)                         \
    X(cuGraphGetEdges, GY_FN_GRAPH_GET_EDGES, gy_pfn_graph_get_edges)                                  \
    X(cuGraphNodeGetType, GY_FN_GRAPH_NODE_GET_TYPE, gy_pfn_graph_node_get_type)                       \
    X(cuGraphNodeFindInClone, GY_FN_GRAPH_NODE_FIND_IN_CLONE, gy_pfn_graph_node_find_in_clone)         \
    X(cuGraphDestroyNode, GY_FN_GRAPH_DESTROY_NODE, gy_pfn_graph_destroy_node)                          \
    /* A graph's twin inside a partition (graph_twin.c). */                                          \
    X(cuGraphKernelNodeGetParams_v2, GY_FN_KERNEL_NODE_GET_PARAMS, gy_pfn_kernel_node_params)           \
    X(cuGraphKernelNodeSetParams_v2, GY_FN_KERNEL_NODE_SET_PARAMS, gy_pfn_kernel_node_set_params)       \
    X(cuCtxFromGreenCtx, GY_FN_CTX_FROM_GREEN_CTX, gy_pfn_ctx_from_green_ctx)

#endif
