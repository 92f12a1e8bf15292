/* GPUYIELD_JOBS=auto: the hook opens a job at the process's priority on the GPU of its first
 * launch or async copy after being idle, and a closer thread ends it once the process has not
 * launched for GPUYIELD_IDLE_US and its work has completed (docs/auto-jobs.md). A launch inside an
 * open auto job costs one more load (its device's state, below); the opening is the slow path.
 * Above the client (client.h), below the gate (gate.h), which calls gy_auto_enter. */
#ifndef GY_AUTO_JOBS_H
#define GY_AUTO_JOBS_H

#include <stdbool.h>

#include "client.h"

/* Per device: CLOSED (the next launch opens), CLOSING (the closer is deciding: a launch that sees
 * it waits for the answer), OPEN (an auto job is held), COVERED (a job the process marked itself
 * covers its launches there: no auto job, so it counts once). A launch passes at >= OPEN. */
enum gy_auto_state { GY_AUTO_CLOSED = 0, GY_AUTO_CLOSING = 1, GY_AUTO_OPEN = 2, GY_AUTO_COVERED = 3 };

/* Index 0: launches on no known device (GY_DEVICE_ALL); 1 + d: device slot d. */
extern _Atomic int gy_auto_states[GY_MAX_DEVICES + 1];
/* Set at the join (before the phase turns READY) when GPUYIELD_JOBS=auto. */
extern bool gy_auto_enabled;

/* The state word a thread's launches on `device` load (gy_thread_auto), NULL without auto jobs. */
static inline _Atomic int *gy_auto_state_of(int device)
{
    if (!gy_auto_enabled)
        return NULL;
    return &gy_auto_states[device >= 0 && device < GY_MAX_DEVICES ? device + 1 : 0];
}

/* The slow path: step out, open (or find covered) the auto job of the thread's device, step in. */
void gy_auto_open_slow(void);

/* After `entered` was incremented (seq_cst): with it, the seq_cst load here pairs with the closer's
 * seq_cst store of CLOSING before it reads `entered` (auto_jobs.c): either the closer sees this
 * launch, or this launch sees the job closing and waits for the answer. */
static inline void gy_auto_enter(void)
{
    _Atomic int *state = gy_thread_auto;
    if (state && atomic_load_explicit(state, memory_order_seq_cst) < GY_AUTO_OPEN)
        gy_auto_open_slow();
}

/* At the join (a fork's child too), after registering: start the closer thread (auto mode only). */
void gy_auto_start(void);

/* Fork, in join.c's lock order (after join_lock): the child holds none of the parent's auto jobs
 * (they are in the parent's slot) and starts with every device closed. */
void gy_auto_fork_prepare(void);
void gy_auto_fork_parent(void);
void gy_auto_fork_child(void);

#endif
