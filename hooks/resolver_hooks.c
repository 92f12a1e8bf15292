/* cuGetProcAddress and cuGetProcAddress_v2. The real resolver answers first; whatever it
 * returns unsuccessfully is passed back unchanged. A successful pointer is identified by
 * comparing it with the driver's functions looked up by exact name, so the hook handed back is
 * the one of that exact variant (_ptsz for _ptsz; our resolver of the right arity when the
 * resolver is asked for itself). Pointers we do not hook are returned as they are. */
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "config.h"
#include "hook_functions.h"


static atomic_flag warned = ATOMIC_FLAG_INIT;

static void substitute(const char *symbol, void **pfn, int cuda_version, uint64_t flags)
{
    void *hook = gy_hook_for_real(*pfn);
    if (hook) {
        gy_config(); /* a bad environment stops the process here, before any launch */
        *pfn = hook;
        return;
    }
    /* A function we gate came back under a pointer we cannot identify: say so, never silently. */
    if (symbol && gy_hooked_base_name(symbol) && !atomic_flag_test_and_set(&warned))
        fprintf(stderr,
                "gpuyield: pid %d: the driver resolved %s (cudaVersion %d, flags %llu) to an unknown function: "
                "launches through it are not gated; report this with the driver version\n",
                (int)getpid(), symbol, cuda_version, (unsigned long long)flags);
}

GY_EXPORT gy_cu_result cuGetProcAddress(const char *symbol, void **pfn, int cuda_version, uint64_t flags)
{
    gy_pfn_get_proc_address real = (gy_pfn_get_proc_address)gy_real(GY_FN_GET_PROC_ADDRESS);
    if (!real)
        return GY_CUDA_ERROR_NOT_INITIALIZED;
    gy_cu_result rc = real(symbol, pfn, cuda_version, flags);
    if (rc == GY_CUDA_SUCCESS && pfn && *pfn)
        substitute(symbol, pfn, cuda_version, flags);
    return rc;
}

GY_EXPORT gy_cu_result cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, uint64_t flags,
                                           int *status)
{
    gy_pfn_get_proc_address_v2 real = (gy_pfn_get_proc_address_v2)gy_real(GY_FN_GET_PROC_ADDRESS_V2);
    if (!real)
        return GY_CUDA_ERROR_NOT_INITIALIZED;
    gy_cu_result rc = real(symbol, pfn, cuda_version, flags, status);
    if (rc == GY_CUDA_SUCCESS && pfn && *pfn && (!status || *status == GY_CU_GET_PROC_ADDRESS_SUCCESS))
        substitute(symbol, pfn, cuda_version, flags);
    return rc;
}
