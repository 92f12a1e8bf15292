/* The segment's robust mutex and its condition variable, both safe when a party is SIGKILLed.
 *
 * Why not pthread_cond_t: glibc's condition variable (2.25 .. 2.40) keeps per-waiter reference
 * counts inside the object; a waiter killed while blocked never drops its reference and a later
 * signal or broadcast can then wait for it forever. Our condition is a sequence word plus futex
 * wait/wake: a dead waiter leaves nothing behind. Timeouts run on CLOCK_MONOTONIC. */
#ifndef GY_SHARED_WAIT_H
#define GY_SHARED_WAIT_H

#include "segment_layout.h"

/* Lock; if the previous owner died holding it, make it consistent and note that a reap is due.
 * Returns 1 when the owner had died, 0 otherwise. */
int gy_lock(struct gy_segment *seg);
void gy_unlock(struct gy_segment *seg);
/* Read the wake sequence: do it (under the mutex) BEFORE checking the condition you wait for. */
uint32_t gy_wake_seq(struct gy_segment *seg);
/* Unlock, sleep until the sequence moves past seq or timeout_ns passes, lock again. Returns 1
 * when the lock came back from a dead owner (reap then), else 0. */
int gy_wait_locked(struct gy_segment *seg, uint32_t seq, uint64_t timeout_ns);
/* Wake every waiter: call after changing the state they wait on. */
void gy_wake_all(struct gy_segment *seg);
/* Initialise the mutex (process-shared, robust) in a new segment. */
int gy_mutex_init(struct gy_segment *seg);

#endif
