/* NVTX v3 is header-only (it finds the tool, e.g. nsys, through NVTX_INJECTION64_PATH at the
 * first call); GY_NVTX is defined by hooks/build.mk when CUDA_HOME has the headers. */
#include "trace_ranges.h"

#ifdef GY_NVTX
#include <nvtx3/nvToolsExt.h>

/* NVTX loads its tool at the first call of any thread, writing its function table unguarded:
 * threads that block for the first time together race there (ThreadSanitizer). So it loads once,
 * at the join, before any other thread of ours can call it. */
void gy_ranges_init(void) { nvtxInitialize(NULL); }
void gy_range_push(const char *name) { nvtxRangePushA(name); }
void gy_range_pop(void) { nvtxRangePop(); }
uint64_t gy_range_start(const char *name) { return nvtxRangeStartA(name); }
void gy_range_end(uint64_t id) { nvtxRangeEnd(id); }
#else
void gy_ranges_init(void) {}
void gy_range_push(const char *name) { (void)name; }
void gy_range_pop(void) {}
uint64_t gy_range_start(const char *name)
{
    (void)name;
    return 0;
}
void gy_range_end(uint64_t id) { (void)id; }
#endif
