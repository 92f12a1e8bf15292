/* NVTX ranges ("preemption" while a launch is blocked, "sync" while a sync point waits), so
 * that an Nsight Systems timeline shows them. Without the CUDA toolkit at build time they do
 * nothing. */
#ifndef GY_TRACE_RANGES_H
#define GY_TRACE_RANGES_H

void gy_range_push(const char *name);
void gy_range_pop(void);

#endif
