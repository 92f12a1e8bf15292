/* Built only when CUDA_HOME is set: proves that cuda_abi.h matches the real cuda.h. Compiling
 * this file is the test; it has no code. */
#include <cuda.h>

#include "cuda_abi.h"

#define SAME_OFFSET(ours, theirs, field) \
    _Static_assert(offsetof(ours, field) == offsetof(theirs, field), #field " moved in " #theirs)

_Static_assert(sizeof(gy_cu_result) == sizeof(CUresult), "CUresult size");
_Static_assert(sizeof(gy_cu_stream) == sizeof(CUstream), "CUstream size");
_Static_assert(sizeof(gy_cu_deviceptr) == sizeof(CUdeviceptr), "CUdeviceptr size");
_Static_assert(GY_CUDA_ERROR_NOT_READY == CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY");
_Static_assert(GY_CUDA_ERROR_NOT_INITIALIZED == CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED");
_Static_assert(GY_CUDA_SUCCESS == CUDA_SUCCESS, "CUDA_SUCCESS");
_Static_assert(GY_CUDA_ERROR_NOT_FOUND == CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND");
_Static_assert(GY_CU_EVENT_BLOCKING_SYNC == CU_EVENT_BLOCKING_SYNC, "CU_EVENT_BLOCKING_SYNC");
_Static_assert(GY_CU_EVENT_DISABLE_TIMING == CU_EVENT_DISABLE_TIMING, "CU_EVENT_DISABLE_TIMING");
_Static_assert(GY_CU_STREAM_CAPTURE_STATUS_NONE == CU_STREAM_CAPTURE_STATUS_NONE, "capture status");
_Static_assert(GY_CU_GET_PROC_ADDRESS_SUCCESS == CU_GET_PROC_ADDRESS_SUCCESS, "proc address status");
_Static_assert(sizeof(CUstreamCaptureStatus) == sizeof(int), "capture status is an int-sized enum");
_Static_assert(sizeof(CUdriverProcAddressQueryResult) == sizeof(int), "query result is an int-sized enum");
_Static_assert(sizeof(CUstreamCaptureMode) == sizeof(int), "capture mode is an int-sized enum");

_Static_assert(sizeof(gy_cu_uuid) == sizeof(CUuuid), "CUuuid size");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuCtxGetDevice), CUresult (*)(CUdevice *)),
               "cuCtxGetDevice signature");
_Static_assert(sizeof(gy_cu_device) == sizeof(CUdevice), "CUdevice size");
_Static_assert(sizeof(gy_cu_launch_attribute) == sizeof(CUlaunchAttribute), "CUlaunchAttribute size");
_Static_assert(sizeof(gy_cu_launch_config) == sizeof(CUlaunchConfig), "CUlaunchConfig size");
SAME_OFFSET(gy_cu_launch_config, CUlaunchConfig, gridDimX);
SAME_OFFSET(gy_cu_launch_config, CUlaunchConfig, sharedMemBytes);
SAME_OFFSET(gy_cu_launch_config, CUlaunchConfig, hStream);
SAME_OFFSET(gy_cu_launch_config, CUlaunchConfig, attrs);
SAME_OFFSET(gy_cu_launch_config, CUlaunchConfig, numAttrs);
SAME_OFFSET(gy_cu_launch_attribute, CUlaunchAttribute, value);

/* The pointer types name the same signatures as the driver's own declarations. */
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuLaunchKernel),
                                            CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                                         unsigned, unsigned, unsigned, CUstream, void **,
                                                         void **)),
               "cuLaunchKernel signature");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGraphLaunch), CUresult (*)(CUgraphExec, CUstream)),
               "cuGraphLaunch signature");

/* A kernel node's parameters, read and written back by graph_twin.c. */
_Static_assert(sizeof(gy_cu_kernel_node_params) == sizeof(CUDA_KERNEL_NODE_PARAMS_v2), "kernel node params size");
SAME_OFFSET(gy_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, sharedMemBytes);
SAME_OFFSET(gy_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, kernelParams);
SAME_OFFSET(gy_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, kern);
SAME_OFFSET(gy_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, ctx);
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGraphKernelNodeSetParams_v2),
                                            CUresult (*)(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v2 *)),
               "cuGraphKernelNodeSetParams_v2 signature");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuCtxFromGreenCtx), CUresult (*)(CUcontext *, CUgreenCtx)),
               "cuCtxFromGreenCtx signature");

/* Green contexts (partition.c). */
_Static_assert(sizeof(gy_cu_dev_resource) == sizeof(CUdevResource), "CUdevResource size");
_Static_assert(offsetof(gy_cu_dev_resource, u.sm_count) == offsetof(CUdevResource, sm.smCount), "smCount moved");
_Static_assert(GY_CU_DEV_RESOURCE_TYPE_SM == CU_DEV_RESOURCE_TYPE_SM, "CU_DEV_RESOURCE_TYPE_SM");
_Static_assert(GY_CU_GREEN_CTX_DEFAULT_STREAM == CU_GREEN_CTX_DEFAULT_STREAM, "CU_GREEN_CTX_DEFAULT_STREAM");
_Static_assert(GY_CU_STREAM_NON_BLOCKING == CU_STREAM_NON_BLOCKING, "CU_STREAM_NON_BLOCKING");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuDevSmResourceSplitByCount),
                                            CUresult (*)(CUdevResource *, unsigned *, const CUdevResource *,
                                                         CUdevResource *, unsigned, unsigned)),
               "cuDevSmResourceSplitByCount signature");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGreenCtxStreamCreate),
                                            CUresult (*)(CUstream *, CUgreenCtx, unsigned, int)),
               "cuGreenCtxStreamCreate signature");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuCtxSynchronize_v2), CUresult (*)(CUcontext)),
               "cuCtxSynchronize_v2 signature");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuStreamWaitEvent), CUresult (*)(CUstream, CUevent, unsigned)),
               "cuStreamWaitEvent signature");

/* Graphs (graph_split.c). */
_Static_assert(GY_CU_GRAPH_NODE_TYPE_KERNEL == CU_GRAPH_NODE_TYPE_KERNEL, "kernel node");
_Static_assert(GY_CU_GRAPH_NODE_TYPE_MEMCPY == CU_GRAPH_NODE_TYPE_MEMCPY, "memcpy node");
_Static_assert(GY_CU_GRAPH_NODE_TYPE_MEMSET == CU_GRAPH_NODE_TYPE_MEMSET, "memset node");
_Static_assert(GY_CU_GRAPH_NODE_TYPE_GRAPH == CU_GRAPH_NODE_TYPE_GRAPH, "child graph node");
_Static_assert(GY_CU_GRAPH_NODE_TYPE_BATCH_MEM_OP == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, "batch mem op node");
_Static_assert(GY_CU_GRAPH_NODE_TYPE_MEM_ALLOC == CU_GRAPH_NODE_TYPE_MEM_ALLOC, "mem alloc node");
_Static_assert(GY_CU_GRAPH_NODE_TYPE_MEM_FREE == CU_GRAPH_NODE_TYPE_MEM_FREE, "mem free node");
_Static_assert(GY_CU_GRAPH_NODE_TYPE_CONDITIONAL == CU_GRAPH_NODE_TYPE_CONDITIONAL, "conditional node");
_Static_assert(GY_CU_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH == CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH, "device launch");
_Static_assert(GY_CU_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH == CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
               "auto free on launch");
_Static_assert(GY_CU_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY == CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY,
               "use node priority");
_Static_assert(sizeof(CUgraphNodeType) == sizeof(int), "node type is an int-sized enum");
_Static_assert(sizeof(gy_cu_graph_instantiate_params) == sizeof(CUDA_GRAPH_INSTANTIATE_PARAMS), "instantiate params");
SAME_OFFSET(gy_cu_graph_instantiate_params, CUDA_GRAPH_INSTANTIATE_PARAMS, flags);
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGraphInstantiateWithFlags),
                                            CUresult (*)(CUgraphExec *, CUgraph, unsigned long long)),
               "cuGraphInstantiateWithFlags signature");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGraphGetEdges_v2),
                                            CUresult (*)(CUgraph, CUgraphNode *, CUgraphNode *, CUgraphEdgeData *,
                                                         size_t *)),
               "cuGraphGetEdges_v2 signature");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGraphNodeFindInClone),
                                            CUresult (*)(CUgraphNode *, CUgraphNode, CUgraph)),
               "cuGraphNodeFindInClone signature");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGraphExecUpdate_v2),
                                            CUresult (*)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *)),
               "cuGraphExecUpdate_v2 signature");
_Static_assert(sizeof(gy_cu_graph_edge_data) == sizeof(CUgraphEdgeData), "CUgraphEdgeData size");
SAME_OFFSET(gy_cu_graph_edge_data, CUgraphEdgeData, type);
