/* NVTX ranges ("preemption" while a launch is blocked, "sync" while a sync point waits, and each
 * auto job from its drained begin to its end), so that an Nsight Systems timeline shows them.
 * Without the CUDA toolkit at build time they do nothing. */
#ifndef GY_TRACE_RANGES_H
#define GY_TRACE_RANGES_H

#include <stdint.h>

/* Once, at the join (NVTX's own first-call setup is not thread-safe). */
void gy_ranges_init(void);
/* A thread's nested range: pushed and popped by the same thread. */
void gy_range_push(const char *name);
void gy_range_pop(void);
/* A process range, which another thread may end (an auto job: opened by a launching thread,
 * ended by the closer). Returns its id for gy_range_end (0 without NVTX). */
uint64_t gy_range_start(const char *name);
void gy_range_end(uint64_t id);

#endif
