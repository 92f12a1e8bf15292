/* The segment's robust mutex and its condition variable, both safe when a party is SIGKILLed.
 *
 * Why not pthread_cond_t: glibc's condition variable (2.25 .. 2.40) keeps per-waiter reference
 * counts inside the object; a waiter killed while blocked never drops its reference and a later
 * signal or broadcast can then wait for it forever. Our condition is a sequence word plus futex
 * wait/wake: a dead waiter leaves nothing behind. Timeouts run on CLOCK_MONOTONIC. */
#ifndef GY_SHARED_WAIT_H
#define GY_SHARED_WAIT_H

#include <stdbool.h>

#include "segment_layout.h"

/* Lock; if the previous owner died holding it, make it consistent and note that a reap is due.
 * Returns 1 when the owner had died, 0 when locked, -1 when NOT locked: the mutex is corrupted
 * (gy_mutex_sane) or the bound (gy_lock_bound_ns) passed while someone else held it; counted in
 * the segment's lock_timeouts. Every caller must handle -1. */
int gy_lock(struct gy_segment *seg);
/* How long a lock waits: the segment's drain timeout, within [GY_LOCK_BOUND_MIN_NS, _MAX_NS]. */
/* At least 1 s: the mutex is held for microseconds, but on a loaded machine (many runnable
 * processes per CPU) a holder can be off the CPU for several scheduling periods; at 100 ms,
 * 3 CPU hogs and 32 processes on 2 CPUs made 282 begin/end calls fail in 60 s (issue 29). */
#define GY_LOCK_BOUND_MIN_NS 1000000000ull   /* 1 s */
#define GY_LOCK_BOUND_MAX_NS 10000000000ull  /* 10 s */
uint64_t gy_lock_bound_ns(const struct gy_segment *seg);
/* The mutex is of the kind gy_mutex_init makes (checked before every lock). */
bool gy_mutex_sane(const struct gy_segment *seg);
/* Who holds the mutex now: returns the holder's process id (0 if none or unknown) and sets *tid
 * to the thread id its word names (0 when unlocked). */
int gy_mutex_holder(const struct gy_segment *seg, int *tid);
void gy_unlock(struct gy_segment *seg);
/* Read the wake sequence: do it (under the mutex) BEFORE checking the condition you wait for. */
uint32_t gy_wake_seq(struct gy_segment *seg);
/* Unlock, sleep until the sequence moves past seq or timeout_ns passes, lock again. Returns what
 * gy_lock returns: 1 from a dead owner (reap then), 0, or -1 when not locked again. */
int gy_wait_locked(struct gy_segment *seg, uint32_t seq, uint64_t timeout_ns);
/* The same sleep without the mutex (when it cannot be had). */
void gy_wait_unlocked(struct gy_segment *seg, uint32_t seq, uint64_t timeout_ns);
/* Wake every waiter: call after changing the state they wait on. */
void gy_wake_all(struct gy_segment *seg);
/* Initialise the mutex (process-shared, robust) in a new segment. */
int gy_mutex_init(struct gy_segment *seg);

#endif
