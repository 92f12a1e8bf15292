/* The real driver: its entry points looked up by exact name in the loaded libcuda, and the map
 * between them and our hooks (which hook stands for which real function). */
#ifndef GY_DRIVER_H
#define GY_DRIVER_H

#include <stdatomic.h>
#include <stdbool.h>

#include "cuda_abi.h"

#define GY_EXPORT __attribute__((visibility("default")))

/* Driver functions we call, by exact exported name. The hooked ones come first. */
enum gy_fn {
    GY_FN_LAUNCH_KERNEL,
    GY_FN_LAUNCH_KERNEL_PTSZ,
    GY_FN_LAUNCH_KERNEL_EX,
    GY_FN_LAUNCH_KERNEL_EX_PTSZ,
    GY_FN_LAUNCH_COOPERATIVE,
    GY_FN_LAUNCH_COOPERATIVE_PTSZ,
    GY_FN_GRAPH_LAUNCH,
    GY_FN_GRAPH_LAUNCH_PTSZ,
    GY_FN_GET_PROC_ADDRESS,
    GY_FN_GET_PROC_ADDRESS_V2,
    GY_FN_BEGIN_CAPTURE,
    GY_FN_BEGIN_CAPTURE_PTSZ,
    GY_FN_BEGIN_CAPTURE_V2,
    GY_FN_BEGIN_CAPTURE_V2_PTSZ,
    GY_FN_BEGIN_CAPTURE_TO_GRAPH,
    GY_FN_BEGIN_CAPTURE_TO_GRAPH_PTSZ,
    GY_FN_END_CAPTURE,
    GY_FN_END_CAPTURE_PTSZ,
    GY_FN_MEMCPY_ASYNC,
    GY_FN_MEMCPY_ASYNC_PTSZ,
    GY_FN_MEMCPY_HTOD_ASYNC,
    GY_FN_MEMCPY_HTOD_ASYNC_PTSZ,
    GY_FN_MEMCPY_DTOH_ASYNC,
    GY_FN_MEMCPY_DTOH_ASYNC_PTSZ,
    GY_FN_MEMCPY_DTOD_ASYNC,
    GY_FN_MEMCPY_DTOD_ASYNC_PTSZ,
    GY_FN_MEMSET_D8_ASYNC,
    GY_FN_MEMSET_D8_ASYNC_PTSZ,
    GY_FN_MEMSET_D16_ASYNC,
    GY_FN_MEMSET_D16_ASYNC_PTSZ,
    GY_FN_MEMSET_D32_ASYNC,
    GY_FN_MEMSET_D32_ASYNC_PTSZ,
    /* Uses of a stream that must first join its partition stream (stream_use_hooks.c). */
    GY_FN_EVENT_RECORD,
    GY_FN_EVENT_RECORD_PTSZ,
    GY_FN_EVENT_RECORD_WITH_FLAGS,
    GY_FN_EVENT_RECORD_WITH_FLAGS_PTSZ,
    GY_FN_STREAM_SYNCHRONIZE,
    GY_FN_STREAM_SYNCHRONIZE_PTSZ,
    GY_FN_STREAM_QUERY,
    GY_FN_STREAM_QUERY_PTSZ,
    GY_FN_STREAM_WAIT_EVENT,
    GY_FN_STREAM_WAIT_EVENT_PTSZ,
    GY_FN_LAUNCH_HOST_FUNC,
    GY_FN_LAUNCH_HOST_FUNC_PTSZ,
    GY_FN_STREAM_ADD_CALLBACK,
    GY_FN_STREAM_ADD_CALLBACK_PTSZ,
    GY_FN_STREAM_DESTROY,
    GY_FN_STREAM_DESTROY_V1,
    GY_FN_CTX_SYNCHRONIZE,
    GY_FN_CTX_SYNCHRONIZE_V2,
    GY_FN_MEM_FREE,
    GY_FN_MEM_FREE_ASYNC,
    GY_FN_MEM_FREE_ASYNC_PTSZ,
    GY_FN_MEMCPY,
    GY_FN_MEMCPY_PTDS,
    GY_FN_MEMCPY_HTOD,
    GY_FN_MEMCPY_HTOD_PTDS,
    GY_FN_MEMCPY_DTOH,
    GY_FN_MEMCPY_DTOH_PTDS,
    GY_FN_MEMCPY_DTOD,
    GY_FN_MEMCPY_DTOD_PTDS,
    GY_FN_MEMSET_D8,
    GY_FN_MEMSET_D8_PTDS,
    GY_FN_MEMSET_D16,
    GY_FN_MEMSET_D16_PTDS,
    GY_FN_MEMSET_D32,
    GY_FN_MEMSET_D32_PTDS,
    GY_FN_HOOKED_COUNT, /* the rest are only called */
    GY_FN_IS_CAPTURING = GY_FN_HOOKED_COUNT,
    GY_FN_CTX_GET_CURRENT,
    GY_FN_CTX_PUSH_CURRENT,
    GY_FN_CTX_POP_CURRENT,
    GY_FN_EVENT_CREATE,
    GY_FN_EVENT_SYNCHRONIZE,
    GY_FN_EVENT_DESTROY,
    GY_FN_EVENT_QUERY,
    GY_FN_EVENT_ELAPSED,
    GY_FN_EVENT_ELAPSED_V1,
    GY_FN_CTX_GET_DEVICE,
    GY_FN_DEVICE_GET_DEV_RESOURCE,
    GY_FN_DEV_SM_RESOURCE_SPLIT_BY_COUNT,
    GY_FN_DEV_RESOURCE_GENERATE_DESC,
    GY_FN_GREEN_CTX_CREATE,
    GY_FN_GREEN_CTX_STREAM_CREATE,
    GY_FN_GREEN_CTX_DESTROY,
    GY_FN_COUNT,
};

extern void *gy_real_fns[GY_FN_COUNT];
extern _Atomic int gy_driver_bound;

/* Bind to the driver library that contains `known` (a pointer a lookup just returned), if that
 * library is libcuda. Returns true once bound (now or before). */
bool gy_driver_bind_from(void *known);
/* Bind to an already loaded libcuda.so.1 if not bound yet (for callers linked to libcuda). */
bool gy_driver_bind_loaded(void);

/* The real function `id` (NULL when the driver lacks it). */
static inline void *gy_real(enum gy_fn id)
{
    if (!atomic_load_explicit(&gy_driver_bound, memory_order_acquire))
        gy_driver_bind_loaded();
    return gy_real_fns[id];
}

/* Our hook for the hooked name `name`, or NULL. */
void *gy_hook_by_name(const char *name);
/* Our hook for `name` if `fn` is the driver's function of exactly that name, else NULL. */
void *gy_hook_if_real(const char *name, void *fn);
/* Our hook standing for the real function pointer `fn`, or NULL when we do not hook it. */
void *gy_hook_for_real(void *fn);
/* Whether `name` is a base name we hook (cuLaunchKernel, cuGraphLaunch, ...), in any variant. */
bool gy_hooked_base_name(const char *name);

#endif
