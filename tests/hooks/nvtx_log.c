/* An NVTX injection library for the hooks' tests (what Nsight Systems is to a real run): loaded by
 * NVTX through NVTX_INJECTION64_PATH at a process's first NVTX call, it writes each process range
 * (nvtxRangeStartA / nvtxRangeEnd) to stderr, one line each, with CLOCK_MONOTONIC (gy_now_ns's
 * clock) and the calling thread:
 *   NVTXSTART <id> <ns> <tid> <message>
 *   NVTXEND <id> <ns> <tid>
 * Built only when the CUDA toolkit's NVTX headers are there (hooks/build.mk), as the hook's ranges. */
#include <nvtx3/nvToolsExt.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic uint64_t next_id = 1;

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static nvtxRangeId_t range_start(const char *message)
{
    uint64_t id = atomic_fetch_add(&next_id, 1);
    fprintf(stderr, "NVTXSTART %llu %llu %ld %s\n", (unsigned long long)id, now_ns(), (long)syscall(SYS_gettid),
            message);
    return id;
}

static void range_end(nvtxRangeId_t id)
{
    fprintf(stderr, "NVTXEND %llu %llu %ld\n", (unsigned long long)id, now_ns(), (long)syscall(SYS_gettid));
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
    const NvtxExportTableCallbacks *callbacks = (const NvtxExportTableCallbacks *)get_table(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table;
    unsigned int size;
    if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) ||
        size <= NVTX_CBID_CORE_RangeEnd)
        return 0;
    *table[NVTX_CBID_CORE_RangeStartA] = (NvtxFunctionPointer)range_start;
    *table[NVTX_CBID_CORE_RangeEnd] = (NvtxFunctionPointer)range_end;
    return 1;
}
