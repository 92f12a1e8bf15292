/* Binding to the real driver. Real entry points are looked up by exact name on libcuda's own
 * handle, so a _ptsz hook always calls the real _ptsz function and a lookup never finds our
 * preloaded exports. Binding happens once, the first time a lookup hands out a libcuda pointer
 * (or a hook runs in a process linked to libcuda): a dladdr, a no-load dlopen, a few dlsyms. */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "driver.h"
#include "hook_functions.h"
#include "real_dlsym.h"

struct fn_name {
    const char *name;
    void *hook; /* NULL for functions we only call */
};

#define HOOKED(fn) {#fn, (void *)(fn)}
static const struct fn_name fn_names[GY_FN_COUNT] = {
    [GY_FN_LAUNCH_KERNEL] = HOOKED(cuLaunchKernel),
    [GY_FN_LAUNCH_KERNEL_PTSZ] = HOOKED(cuLaunchKernel_ptsz),
    [GY_FN_LAUNCH_KERNEL_EX] = HOOKED(cuLaunchKernelEx),
    [GY_FN_LAUNCH_KERNEL_EX_PTSZ] = HOOKED(cuLaunchKernelEx_ptsz),
    [GY_FN_LAUNCH_COOPERATIVE] = HOOKED(cuLaunchCooperativeKernel),
    [GY_FN_LAUNCH_COOPERATIVE_PTSZ] = HOOKED(cuLaunchCooperativeKernel_ptsz),
    [GY_FN_GRAPH_LAUNCH] = HOOKED(cuGraphLaunch),
    [GY_FN_GRAPH_LAUNCH_PTSZ] = HOOKED(cuGraphLaunch_ptsz),
    [GY_FN_GET_PROC_ADDRESS] = HOOKED(cuGetProcAddress),
    [GY_FN_GET_PROC_ADDRESS_V2] = HOOKED(cuGetProcAddress_v2),
    [GY_FN_BEGIN_CAPTURE] = HOOKED(cuStreamBeginCapture),
    [GY_FN_BEGIN_CAPTURE_PTSZ] = HOOKED(cuStreamBeginCapture_ptsz),
    [GY_FN_BEGIN_CAPTURE_V2] = HOOKED(cuStreamBeginCapture_v2),
    [GY_FN_BEGIN_CAPTURE_V2_PTSZ] = HOOKED(cuStreamBeginCapture_v2_ptsz),
    [GY_FN_BEGIN_CAPTURE_TO_GRAPH] = HOOKED(cuStreamBeginCaptureToGraph),
    [GY_FN_BEGIN_CAPTURE_TO_GRAPH_PTSZ] = HOOKED(cuStreamBeginCaptureToGraph_ptsz),
    [GY_FN_END_CAPTURE] = HOOKED(cuStreamEndCapture),
    [GY_FN_END_CAPTURE_PTSZ] = HOOKED(cuStreamEndCapture_ptsz),
    [GY_FN_MEMCPY_ASYNC] = HOOKED(cuMemcpyAsync),
    [GY_FN_MEMCPY_ASYNC_PTSZ] = HOOKED(cuMemcpyAsync_ptsz),
    [GY_FN_MEMCPY_HTOD_ASYNC] = HOOKED(cuMemcpyHtoDAsync_v2),
    [GY_FN_MEMCPY_HTOD_ASYNC_PTSZ] = HOOKED(cuMemcpyHtoDAsync_v2_ptsz),
    [GY_FN_MEMCPY_DTOH_ASYNC] = HOOKED(cuMemcpyDtoHAsync_v2),
    [GY_FN_MEMCPY_DTOH_ASYNC_PTSZ] = HOOKED(cuMemcpyDtoHAsync_v2_ptsz),
    [GY_FN_MEMCPY_DTOD_ASYNC] = HOOKED(cuMemcpyDtoDAsync_v2),
    [GY_FN_MEMCPY_DTOD_ASYNC_PTSZ] = HOOKED(cuMemcpyDtoDAsync_v2_ptsz),
    [GY_FN_MEMSET_D8_ASYNC] = HOOKED(cuMemsetD8Async),
    [GY_FN_MEMSET_D8_ASYNC_PTSZ] = HOOKED(cuMemsetD8Async_ptsz),
    [GY_FN_MEMSET_D16_ASYNC] = HOOKED(cuMemsetD16Async),
    [GY_FN_MEMSET_D16_ASYNC_PTSZ] = HOOKED(cuMemsetD16Async_ptsz),
    [GY_FN_MEMSET_D32_ASYNC] = HOOKED(cuMemsetD32Async),
    [GY_FN_MEMSET_D32_ASYNC_PTSZ] = HOOKED(cuMemsetD32Async_ptsz),
    [GY_FN_EVENT_RECORD] = HOOKED(cuEventRecord),
    [GY_FN_EVENT_RECORD_PTSZ] = HOOKED(cuEventRecord_ptsz),
    [GY_FN_EVENT_RECORD_WITH_FLAGS] = HOOKED(cuEventRecordWithFlags),
    [GY_FN_EVENT_RECORD_WITH_FLAGS_PTSZ] = HOOKED(cuEventRecordWithFlags_ptsz),
    [GY_FN_STREAM_SYNCHRONIZE] = HOOKED(cuStreamSynchronize),
    [GY_FN_STREAM_SYNCHRONIZE_PTSZ] = HOOKED(cuStreamSynchronize_ptsz),
    [GY_FN_STREAM_QUERY] = HOOKED(cuStreamQuery),
    [GY_FN_STREAM_QUERY_PTSZ] = HOOKED(cuStreamQuery_ptsz),
    [GY_FN_STREAM_WAIT_EVENT] = HOOKED(cuStreamWaitEvent),
    [GY_FN_STREAM_WAIT_EVENT_PTSZ] = HOOKED(cuStreamWaitEvent_ptsz),
    [GY_FN_LAUNCH_HOST_FUNC] = HOOKED(cuLaunchHostFunc),
    [GY_FN_LAUNCH_HOST_FUNC_PTSZ] = HOOKED(cuLaunchHostFunc_ptsz),
    [GY_FN_STREAM_ADD_CALLBACK] = HOOKED(cuStreamAddCallback),
    [GY_FN_STREAM_ADD_CALLBACK_PTSZ] = HOOKED(cuStreamAddCallback_ptsz),
    [GY_FN_STREAM_DESTROY] = HOOKED(cuStreamDestroy_v2),
    [GY_FN_STREAM_DESTROY_V1] = HOOKED(cuStreamDestroy),
    [GY_FN_CTX_SYNCHRONIZE] = HOOKED(cuCtxSynchronize),
    [GY_FN_CTX_SYNCHRONIZE_V2] = HOOKED(cuCtxSynchronize_v2),
    [GY_FN_MEM_FREE] = HOOKED(cuMemFree_v2),
    [GY_FN_MEM_FREE_ASYNC] = HOOKED(cuMemFreeAsync),
    [GY_FN_MEM_FREE_ASYNC_PTSZ] = HOOKED(cuMemFreeAsync_ptsz),
    [GY_FN_MEMCPY] = HOOKED(cuMemcpy),
    [GY_FN_MEMCPY_PTDS] = HOOKED(cuMemcpy_ptds),
    [GY_FN_MEMCPY_HTOD] = HOOKED(cuMemcpyHtoD_v2),
    [GY_FN_MEMCPY_HTOD_PTDS] = HOOKED(cuMemcpyHtoD_v2_ptds),
    [GY_FN_MEMCPY_DTOH] = HOOKED(cuMemcpyDtoH_v2),
    [GY_FN_MEMCPY_DTOH_PTDS] = HOOKED(cuMemcpyDtoH_v2_ptds),
    [GY_FN_MEMCPY_DTOD] = HOOKED(cuMemcpyDtoD_v2),
    [GY_FN_MEMCPY_DTOD_PTDS] = HOOKED(cuMemcpyDtoD_v2_ptds),
    [GY_FN_MEMSET_D8] = HOOKED(cuMemsetD8_v2),
    [GY_FN_MEMSET_D8_PTDS] = HOOKED(cuMemsetD8_v2_ptds),
    [GY_FN_MEMSET_D16] = HOOKED(cuMemsetD16_v2),
    [GY_FN_MEMSET_D16_PTDS] = HOOKED(cuMemsetD16_v2_ptds),
    [GY_FN_MEMSET_D32] = HOOKED(cuMemsetD32_v2),
    [GY_FN_MEMSET_D32_PTDS] = HOOKED(cuMemsetD32_v2_ptds),
    [GY_FN_IS_CAPTURING] = {"cuStreamIsCapturing", NULL},
    [GY_FN_CTX_GET_CURRENT] = {"cuCtxGetCurrent", NULL},
    [GY_FN_CTX_PUSH_CURRENT] = {"cuCtxPushCurrent_v2", NULL},
    [GY_FN_CTX_POP_CURRENT] = {"cuCtxPopCurrent_v2", NULL},
    [GY_FN_EVENT_CREATE] = {"cuEventCreate", NULL},
    [GY_FN_EVENT_SYNCHRONIZE] = {"cuEventSynchronize", NULL},
    [GY_FN_EVENT_DESTROY] = {"cuEventDestroy_v2", NULL},
    [GY_FN_EVENT_QUERY] = {"cuEventQuery", NULL},
    [GY_FN_EVENT_ELAPSED] = {"cuEventElapsedTime_v2", NULL},
    [GY_FN_EVENT_ELAPSED_V1] = {"cuEventElapsedTime", NULL},
    [GY_FN_CTX_GET_DEVICE] = {"cuCtxGetDevice", NULL},
    [GY_FN_DEVICE_GET_DEV_RESOURCE] = {"cuDeviceGetDevResource", NULL},
    [GY_FN_DEV_SM_RESOURCE_SPLIT_BY_COUNT] = {"cuDevSmResourceSplitByCount", NULL},
    [GY_FN_DEV_RESOURCE_GENERATE_DESC] = {"cuDevResourceGenerateDesc", NULL},
    [GY_FN_GREEN_CTX_CREATE] = {"cuGreenCtxCreate", NULL},
    [GY_FN_GREEN_CTX_STREAM_CREATE] = {"cuGreenCtxStreamCreate", NULL},
    [GY_FN_GREEN_CTX_DESTROY] = {"cuGreenCtxDestroy", NULL},
};

void *gy_real_fns[GY_FN_COUNT];
_Atomic int gy_driver_bound;
static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;

static bool is_libcuda_path(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "libcuda.so", strlen("libcuda.so")) == 0;
}

static bool bind_handle_locked(void *handle)
{
    gy_dlsym_fn real_dlsym = gy_real_dlsym();
    for (int i = 0; i < GY_FN_COUNT; i++)
        gy_real_fns[i] = real_dlsym(handle, fn_names[i].name);
    atomic_store_explicit(&gy_driver_bound, 1, memory_order_release);
    return true;
}

bool gy_driver_bind_from(void *known)
{
    if (atomic_load_explicit(&gy_driver_bound, memory_order_acquire))
        return true;
    Dl_info info;
    if (!known || !dladdr(known, &info) || !info.dli_fname || !is_libcuda_path(info.dli_fname))
        return false;
    pthread_mutex_lock(&bind_lock);
    bool bound = atomic_load_explicit(&gy_driver_bound, memory_order_acquire);
    if (!bound) {
        void *handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        bound = handle && bind_handle_locked(handle);
    }
    pthread_mutex_unlock(&bind_lock);
    return bound;
}

bool gy_driver_bind_loaded(void)
{
    pthread_mutex_lock(&bind_lock);
    bool bound = atomic_load_explicit(&gy_driver_bound, memory_order_acquire);
    if (!bound) {
        void *handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        bound = handle && bind_handle_locked(handle);
    }
    pthread_mutex_unlock(&bind_lock);
    return bound;
}

void *gy_hook_by_name(const char *name)
{
    if (name[0] != 'c' || name[1] != 'u')
        return NULL;
    for (int i = 0; i < GY_FN_HOOKED_COUNT; i++)
        if (strcmp(fn_names[i].name, name) == 0)
            return fn_names[i].hook;
    return NULL;
}

void *gy_hook_if_real(const char *name, void *fn)
{
    if (!fn || name[0] != 'c' || name[1] != 'u')
        return NULL;
    for (int i = 0; i < GY_FN_HOOKED_COUNT; i++)
        if (strcmp(fn_names[i].name, name) == 0)
            return gy_real_fns[i] == fn ? fn_names[i].hook : NULL;
    return NULL;
}

void *gy_hook_for_real(void *fn)
{
    if (!fn)
        return NULL;
    for (int i = 0; i < GY_FN_HOOKED_COUNT; i++)
        if (gy_real_fns[i] == fn)
            return fn_names[i].hook;
    return NULL;
}

bool gy_hooked_base_name(const char *name)
{
    for (int i = 0; i < GY_FN_HOOKED_COUNT; i++) {
        size_t len = strlen(name);
        if (strncmp(fn_names[i].name, name, len) == 0 &&
            (fn_names[i].name[len] == '\0' || fn_names[i].name[len] == '_'))
            return true;
    }
    return false;
}
