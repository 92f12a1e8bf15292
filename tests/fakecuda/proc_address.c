/* cuGetProcAddress of the fake driver, mapping names like the real one: the entry chosen is the
 * newest whose version is <= cudaVersion; flags PER_THREAD_DEFAULT_STREAM picks the _ptsz twin
 * where one exists. Unknown names: the legacy resolver fails with CUDA_ERROR_NOT_FOUND; the _v2
 * one returns CUDA_SUCCESS with a NULL pointer and a status (the real driver does both). */
#include <string.h>

#include "fake_internal.h"

struct entry {
    const char *name;
    int since; /* first cudaVersion that gets this entry */
    void *plain, *ptsz;
};

#define E(name, since, plain, ptsz) {name, since, (void *)(plain), (void *)(ptsz)}
static const struct entry entries[] = {
    E("cuGetProcAddress", 11030, cuGetProcAddress, NULL),
    E("cuGetProcAddress", 12000, cuGetProcAddress_v2, NULL),
    E("cuInit", 2000, cuInit, NULL),
    E("cuDriverGetVersion", 2020, cuDriverGetVersion, NULL),
    E("cuDeviceGet", 2000, cuDeviceGet, NULL),
    E("cuDeviceGetCount", 2000, cuDeviceGetCount, NULL),
    E("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain, NULL),
    E("cuCtxGetCurrent", 4000, cuCtxGetCurrent, NULL),
    E("cuCtxSetCurrent", 4000, cuCtxSetCurrent, NULL),
    E("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2, NULL),
    E("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2, NULL),
    E("cuCtxSynchronize", 2000, cuCtxSynchronize, NULL),
    E("cuCtxSynchronize", 13000, cuCtxSynchronize_v2, NULL),
    E("cuStreamCreate", 2000, cuStreamCreate, NULL),
    E("cuStreamSynchronize", 2000, cuStreamSynchronize, cuStreamSynchronize_ptsz),
    E("cuStreamQuery", 2000, cuStreamQuery, cuStreamQuery_ptsz),
    E("cuEventCreate", 2000, cuEventCreate, NULL),
    E("cuEventRecord", 2000, cuEventRecord, cuEventRecord_ptsz),
    E("cuEventSynchronize", 2000, cuEventSynchronize, NULL),
    E("cuEventQuery", 2000, cuEventQuery, NULL),
    E("cuEventDestroy", 4000, cuEventDestroy_v2, NULL),
    E("cuModuleLoadData", 2000, cuModuleLoadData, NULL),
    E("cuModuleGetFunction", 2000, cuModuleGetFunction, NULL),
    E("cuLaunchKernel", 4000, cuLaunchKernel, cuLaunchKernel_ptsz),
    E("cuLaunchKernelEx", 11060, cuLaunchKernelEx, cuLaunchKernelEx_ptsz),
    E("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz),
    E("cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz),
    E("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags, NULL),
    E("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags, NULL),
    E("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams, NULL),
    E("cuGraphExecDestroy", 10000, cuGraphExecDestroy, NULL),
    E("cuGraphExecUpdate", 12000, cuGraphExecUpdate_v2, NULL),
    E("cuGraphExecKernelNodeSetParams", 12000, cuGraphExecKernelNodeSetParams_v2, NULL),
    E("cuGraphKernelNodeGetParams", 12000, cuGraphKernelNodeGetParams_v2, NULL),
    E("cuGraphKernelNodeSetParams", 12000, cuGraphKernelNodeSetParams_v2, NULL),
#ifndef FK_OLD_DRIVER /* green contexts are the newer driver's */
    E("cuCtxFromGreenCtx", 12050, cuCtxFromGreenCtx, NULL),
#endif
    E("cuStreamBeginCapture", 10000, cuStreamBeginCapture, cuStreamBeginCapture_ptsz),
    E("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz),
    E("cuStreamEndCapture", 10000, cuStreamEndCapture, cuStreamEndCapture_ptsz),
    E("cuStreamIsCapturing", 10000, cuStreamIsCapturing, cuStreamIsCapturing_ptsz),
};

static CUresult lookup(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    const struct entry *best = NULL;
    bool known = false;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        if (strcmp(entries[i].name, symbol) != 0)
            continue;
        known = true;
        if (entries[i].since <= cuda_version && (!best || entries[i].since > best->since))
            best = &entries[i];
    }
    *pfn = NULL;
    if (!best) {
        *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->ptsz;
    *pfn = per_thread ? best->ptsz : best->plain;
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    if (!symbol || !pfn || flags > 2)
        return CUDA_ERROR_INVALID_VALUE;
    CUdriverProcAddressQueryResult status;
    return lookup(symbol, pfn, cudaVersion, flags, &status);
}

FK_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus)
{
    if (!symbol || !pfn || flags > 2)
        return CUDA_ERROR_INVALID_VALUE;
    CUdriverProcAddressQueryResult status;
    CUresult rc = lookup(symbol, pfn, cudaVersion, flags, &status);
    if (symbolStatus)
        *symbolStatus = status;
    return status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND ? CUDA_SUCCESS : rc;
}
