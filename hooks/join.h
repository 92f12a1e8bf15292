/* Joining the segment, lazily at the first gated call (never in a constructor): open it,
 * register, start the drain helper, let the partition decide what it can early. Above the client,
 * the drain helper and the partition, which it calls; below the entry points, which ask it
 * whether this process is gated. Also the fork handlers (every room's locks, in order) and the
 * slot's release at exit. */
#ifndef GY_JOIN_H
#define GY_JOIN_H

#include <stdbool.h>

#include "client.h"

/* First use, or first use after fork: read the configuration, join and register, start the
 * drain helper. Exits the process (status 2, one line) if that fails. True when gated. */
bool gy_client_join_slow(void);

static inline bool gy_client_gated(void)
{
    int phase = atomic_load_explicit(&gy_client.phase, memory_order_acquire);
    if (phase == GY_PHASE_READY)
        return true;
    if (phase == GY_PHASE_PASS_THROUGH)
        return false;
    return gy_client_join_slow();
}

#endif
