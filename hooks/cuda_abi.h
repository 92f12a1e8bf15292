/* The slice of the CUDA driver ABI the hooks need, declared here so that the library builds
 * without cuda.h. Names carry a gy_ prefix so that cuda_abi_check.c can include both this and
 * cuda.h and assert that they agree (sizes, offsets, enum values). */
#ifndef GY_CUDA_ABI_H
#define GY_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int gy_cu_result; /* CUresult */
typedef struct gy_cu_ctx *gy_cu_context;
typedef struct gy_cu_func *gy_cu_function;
typedef struct gy_cu_stream *gy_cu_stream;
typedef unsigned long long gy_cu_deviceptr; /* CUdeviceptr on 64-bit hosts */
typedef struct gy_cu_event *gy_cu_event;
typedef struct gy_cu_graph *gy_cu_graph;
typedef struct gy_cu_graph_exec *gy_cu_graph_exec;
typedef struct gy_cu_graph_node *gy_cu_graph_node;
/* CUgraphEdgeData: a port on each side and a type (programmatic edges); read only to be complete. */
typedef struct gy_cu_graph_edge_data {
    unsigned char from_port, to_port, type, reserved[5];
} gy_cu_graph_edge_data;
typedef int gy_cu_device;
typedef struct { char bytes[16]; } gy_cu_uuid; /* CUuuid */
typedef struct gy_cu_green_ctx *gy_cu_green_ctx;
typedef struct gy_cu_dev_resource_desc *gy_cu_dev_resource_desc;
typedef void (*gy_cu_host_fn)(void *);
typedef void (*gy_cu_stream_callback)(gy_cu_stream, gy_cu_result, void *);

/* CUdevResource (ABI version 1): a type, then padding, then a 48-byte union whose SM member
 * starts with smCount. Only smCount is read; the rest is the driver's. */
typedef struct {
    int type;
    unsigned char internal_padding[92];
    union {
        unsigned int sm_count;
        unsigned char oversize[48];
    } u;
} gy_cu_dev_resource;
#define GY_CU_DEV_RESOURCE_TYPE_SM 1
#define GY_CU_GREEN_CTX_DEFAULT_STREAM 0x1
#define GY_CU_STREAM_NON_BLOCKING 0x1

#define GY_CUDA_SUCCESS 0
#define GY_CUDA_ERROR_NOT_INITIALIZED 3 /* what a hook returns when no libcuda is loaded to call */
#define GY_CUDA_ERROR_NOT_FOUND 500
#define GY_CUDA_ERROR_NOT_READY 600
#define GY_CU_STREAM_LEGACY ((gy_cu_stream)0x1)
#define GY_CU_STREAM_PER_THREAD ((gy_cu_stream)0x2)
#define GY_CU_EVENT_BLOCKING_SYNC 0x1
#define GY_CU_EVENT_DISABLE_TIMING 0x2
#define GY_CU_STREAM_CAPTURE_STATUS_NONE 0
#define GY_CU_GET_PROC_ADDRESS_SUCCESS 0

/* Graphs (graph_split.c): the node types a graph may be cut between, and the flag of a graph
 * that is launched from the device (never cut). */
#define GY_CU_GRAPH_NODE_TYPE_KERNEL 0
#define GY_CU_GRAPH_NODE_TYPE_MEMCPY 1
#define GY_CU_GRAPH_NODE_TYPE_MEMSET 2
#define GY_CU_GRAPH_NODE_TYPE_GRAPH 4
#define GY_CU_GRAPH_NODE_TYPE_BATCH_MEM_OP 12
#define GY_CU_GRAPH_NODE_TYPE_MEM_ALLOC 10
#define GY_CU_GRAPH_NODE_TYPE_MEM_FREE 11
#define GY_CU_GRAPH_NODE_TYPE_CONDITIONAL 13
#define GY_CU_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH 1
#define GY_CU_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH 4
#define GY_CU_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY 8

/* CUDA_KERNEL_NODE_PARAMS_v2: a kernel node's launch, read and written back whole by
 * graph_twin.c, which changes only func, kern and ctx (the node's context). */
typedef struct gy_cu_kernel *gy_cu_kernel;
typedef struct {
    gy_cu_function func;
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    void **kernelParams;
    void **extra;
    gy_cu_kernel kern;
    gy_cu_context ctx;
} gy_cu_kernel_node_params;

/* CUDA_GRAPH_INSTANTIATE_PARAMS: only flags is read. */
typedef struct {
    uint64_t flags;
    gy_cu_stream upload_stream;
    gy_cu_graph_node error_node;
    int result;
} gy_cu_graph_instantiate_params;

/* cuLaunchKernelEx's configuration: we only read hStream, but the layout must match. */
typedef struct {
    int id;
    char pad[8 - sizeof(int)];
    union {
        char raw[64];
    } value;
} gy_cu_launch_attribute;

typedef struct {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    gy_cu_stream hStream;
    gy_cu_launch_attribute *attrs;
    unsigned int numAttrs;
} gy_cu_launch_config;

/* Entry points, as function pointer types. */
typedef gy_cu_result (*gy_pfn_launch_kernel)(gy_cu_function, unsigned, unsigned, unsigned, unsigned, unsigned,
                                             unsigned, unsigned, gy_cu_stream, void **, void **);
typedef gy_cu_result (*gy_pfn_launch_kernel_ex)(const gy_cu_launch_config *, gy_cu_function, void **, void **);
typedef gy_cu_result (*gy_pfn_launch_cooperative)(gy_cu_function, unsigned, unsigned, unsigned, unsigned,
                                                  unsigned, unsigned, unsigned, gy_cu_stream, void **);
typedef gy_cu_result (*gy_pfn_graph_launch)(gy_cu_graph_exec, gy_cu_stream);
typedef gy_cu_result (*gy_pfn_get_proc_address)(const char *, void **, int, uint64_t);
typedef gy_cu_result (*gy_pfn_get_proc_address_v2)(const char *, void **, int, uint64_t, int *);
typedef gy_cu_result (*gy_pfn_begin_capture)(gy_cu_stream);
typedef gy_cu_result (*gy_pfn_begin_capture_v2)(gy_cu_stream, int);
typedef gy_cu_result (*gy_pfn_begin_capture_to_graph)(gy_cu_stream, gy_cu_graph, const gy_cu_graph_node *,
                                                      const gy_cu_graph_edge_data *, size_t, int);
typedef gy_cu_result (*gy_pfn_end_capture)(gy_cu_stream, gy_cu_graph *);
typedef gy_cu_result (*gy_pfn_memcpy_async)(gy_cu_deviceptr, gy_cu_deviceptr, size_t, gy_cu_stream);
typedef gy_cu_result (*gy_pfn_memcpy_htod_async)(gy_cu_deviceptr, const void *, size_t, gy_cu_stream);
typedef gy_cu_result (*gy_pfn_memcpy_dtoh_async)(void *, gy_cu_deviceptr, size_t, gy_cu_stream);
typedef gy_cu_result (*gy_pfn_memset_d8_async)(gy_cu_deviceptr, unsigned char, size_t, gy_cu_stream);
typedef gy_cu_result (*gy_pfn_memset_d16_async)(gy_cu_deviceptr, unsigned short, size_t, gy_cu_stream);
typedef gy_cu_result (*gy_pfn_memset_d32_async)(gy_cu_deviceptr, unsigned int, size_t, gy_cu_stream);
typedef gy_cu_result (*gy_pfn_is_capturing)(gy_cu_stream, int *);
typedef gy_cu_result (*gy_pfn_stream_synchronize)(gy_cu_stream);
typedef gy_cu_result (*gy_pfn_ctx_get_current)(gy_cu_context *);
typedef gy_cu_result (*gy_pfn_ctx_push_current)(gy_cu_context);
typedef gy_cu_result (*gy_pfn_ctx_pop_current)(gy_cu_context *);
typedef gy_cu_result (*gy_pfn_ctx_synchronize)(void);
typedef gy_cu_result (*gy_pfn_ctx_synchronize_v2)(gy_cu_context);
typedef gy_cu_result (*gy_pfn_event_create)(gy_cu_event *, unsigned);
typedef gy_cu_result (*gy_pfn_event_record)(gy_cu_event, gy_cu_stream);
typedef gy_cu_result (*gy_pfn_event_synchronize)(gy_cu_event);
typedef gy_cu_result (*gy_pfn_event_destroy)(gy_cu_event);
typedef gy_cu_result (*gy_pfn_event_query)(gy_cu_event);
typedef gy_cu_result (*gy_pfn_event_elapsed)(float *, gy_cu_event, gy_cu_event);
typedef gy_cu_result (*gy_pfn_event_record_with_flags)(gy_cu_event, gy_cu_stream, unsigned);
typedef gy_cu_result (*gy_pfn_stream_query)(gy_cu_stream);
typedef gy_cu_result (*gy_pfn_stream_wait_event)(gy_cu_stream, gy_cu_event, unsigned);
typedef gy_cu_result (*gy_pfn_launch_host_func)(gy_cu_stream, gy_cu_host_fn, void *);
typedef gy_cu_result (*gy_pfn_stream_add_callback)(gy_cu_stream, gy_cu_stream_callback, void *, unsigned);
typedef gy_cu_result (*gy_pfn_stream_destroy)(gy_cu_stream);
typedef gy_cu_result (*gy_pfn_mem_free)(gy_cu_deviceptr);
typedef gy_cu_result (*gy_pfn_mem_free_async)(gy_cu_deviceptr, gy_cu_stream);
typedef gy_cu_result (*gy_pfn_memcpy_sync)(gy_cu_deviceptr, gy_cu_deviceptr, size_t);
typedef gy_cu_result (*gy_pfn_memcpy_htod_sync)(gy_cu_deviceptr, const void *, size_t);
typedef gy_cu_result (*gy_pfn_memcpy_dtoh_sync)(void *, gy_cu_deviceptr, size_t);
typedef gy_cu_result (*gy_pfn_memset_d8_sync)(gy_cu_deviceptr, unsigned char, size_t);
typedef gy_cu_result (*gy_pfn_memset_d16_sync)(gy_cu_deviceptr, unsigned short, size_t);
typedef gy_cu_result (*gy_pfn_memset_d32_sync)(gy_cu_deviceptr, unsigned int, size_t);
typedef gy_cu_result (*gy_pfn_ctx_get_device)(gy_cu_device *);
typedef gy_cu_result (*gy_pfn_device_get_uuid)(gy_cu_uuid *, gy_cu_device);
typedef gy_cu_result (*gy_pfn_device_get_dev_resource)(gy_cu_device, gy_cu_dev_resource *, int);
typedef gy_cu_result (*gy_pfn_dev_sm_resource_split_by_count)(gy_cu_dev_resource *, unsigned *,
                                                              const gy_cu_dev_resource *, gy_cu_dev_resource *,
                                                              unsigned, unsigned);
typedef gy_cu_result (*gy_pfn_dev_resource_generate_desc)(gy_cu_dev_resource_desc *, gy_cu_dev_resource *, unsigned);
typedef gy_cu_result (*gy_pfn_green_ctx_create)(gy_cu_green_ctx *, gy_cu_dev_resource_desc, gy_cu_device, unsigned);
typedef gy_cu_result (*gy_pfn_green_ctx_stream_create)(gy_cu_stream *, gy_cu_green_ctx, unsigned, int);
typedef gy_cu_result (*gy_pfn_green_ctx_destroy)(gy_cu_green_ctx);
typedef gy_cu_result (*gy_pfn_graph_instantiate_with_flags)(gy_cu_graph_exec *, gy_cu_graph, unsigned long long);
typedef gy_cu_result (*gy_pfn_graph_instantiate_with_params)(gy_cu_graph_exec *, gy_cu_graph,
                                                             gy_cu_graph_instantiate_params *);
typedef gy_cu_result (*gy_pfn_graph_exec_destroy)(gy_cu_graph_exec);
typedef gy_cu_result (*gy_pfn_graph_destroy)(gy_cu_graph);
typedef gy_cu_result (*gy_pfn_graph_clone)(gy_cu_graph *, gy_cu_graph);
typedef gy_cu_result (*gy_pfn_graph_get_nodes)(gy_cu_graph, gy_cu_graph_node *, size_t *);
typedef gy_cu_result (*gy_pfn_graph_get_edges)(gy_cu_graph, gy_cu_graph_node *, gy_cu_graph_node *, size_t *);
typedef gy_cu_result (*gy_pfn_graph_get_edges_v2)(gy_cu_graph, gy_cu_graph_node *, gy_cu_graph_node *,
                                                  gy_cu_graph_edge_data *, size_t *);
typedef gy_cu_result (*gy_pfn_graph_node_get_type)(gy_cu_graph_node, int *);
typedef gy_cu_result (*gy_pfn_graph_node_find_in_clone)(gy_cu_graph_node *, gy_cu_graph_node, gy_cu_graph);
typedef gy_cu_result (*gy_pfn_graph_destroy_node)(gy_cu_graph_node);
typedef gy_cu_result (*gy_pfn_kernel_node_params)(gy_cu_graph_node, gy_cu_kernel_node_params *);
typedef gy_cu_result (*gy_pfn_kernel_node_set_params)(gy_cu_graph_node, const gy_cu_kernel_node_params *);
typedef gy_cu_result (*gy_pfn_ctx_from_green_ctx)(gy_cu_context *, gy_cu_green_ctx);
/* Calls that change an instantiated graph in place (graph_split.c stops cutting such a graph). */
typedef gy_cu_result (*gy_pfn_exec_update_v2)(gy_cu_graph_exec, gy_cu_graph, void *);
typedef gy_cu_result (*gy_pfn_exec_update_v1)(gy_cu_graph_exec, gy_cu_graph, gy_cu_graph_node *, int *);
typedef gy_cu_result (*gy_pfn_exec_node_params)(gy_cu_graph_exec, gy_cu_graph_node, const void *);
typedef gy_cu_result (*gy_pfn_exec_node_params_ctx)(gy_cu_graph_exec, gy_cu_graph_node, const void *, gy_cu_context);
typedef gy_cu_result (*gy_pfn_exec_node_event)(gy_cu_graph_exec, gy_cu_graph_node, gy_cu_event);
typedef gy_cu_result (*gy_pfn_exec_node_graph)(gy_cu_graph_exec, gy_cu_graph_node, gy_cu_graph);
typedef gy_cu_result (*gy_pfn_exec_node_enabled)(gy_cu_graph_exec, gy_cu_graph_node, unsigned);

#endif
