/* The queue-bounding modes, per (thread, stream), kept in a thread-local table (no lock on the
 * launch path). What one thread has launched on one stream and is still queued or running, the
 * launch being made included, is at most:
 *   sync:N   N units: after every N-th unit, wait for the stream;
 *   event:N  2N units: after every N-th unit record an event; before the first unit of group g
 *            wait for the event of group g-2 (no bubble when N is large enough);
 *   time:US  max(US, one unit) of GPU time: like event:N, but each group holds as many units as
 *            fit in US/2 of GPU time, from the GPU time per unit learned on this stream with
 *            timing events; a unit longer than US/2, or of a kind not timed yet, goes alone and
 *            the next launch waits for it (queue_bound.c). Times are as learned (an average).
 * A unit is a kernel or a whole graph launch. In time mode graph launches and kernels never share
 * a group: a switch between them ends the group, and each kind's GPU time per unit is learned
 * from its own groups (a graph can hold hundreds of kernels). Nothing is inserted on a stream being captured
 * (checked at group boundaries only). `stream` is the launch's stream with NULL already mapped
 * to CU_STREAM_LEGACY (plain entry points) or CU_STREAM_PER_THREAD (_ptsz ones). */
#ifndef GY_QUEUE_BOUND_H
#define GY_QUEUE_BOUND_H

#include "client.h"

struct gy_stream_state; /* one (thread, stream)'s bound */

/* The state found before the launch is handed to the after-part: one table lookup per launch.
 * cost_ns: the unit's GPU time where the caller knows it (a timed graph part, graph_split.h), else
 * 0; in time mode a unit of known time is a group of its own that waits for the group before it
 * where the two would hold more than US, and is not learned from (an average would hide a long
 * one among short ones). */
struct gy_stream_state *gy_bound_before_slow(gy_cu_stream stream, bool graph, double cost_ns);
void gy_bound_after_slow(gy_cu_stream stream, struct gy_stream_state *known);

static inline struct gy_stream_state *gy_bound_before(gy_cu_stream stream, bool graph, double cost_ns)
{
    return gy_client.mode >= GY_MODE_EVENT ? gy_bound_before_slow(stream, graph, cost_ns) : NULL;
}

static inline void gy_bound_after(gy_cu_stream stream, struct gy_stream_state *known)
{
    if (gy_client.mode != GY_MODE_NONE)
        gy_bound_after_slow(stream, known);
}

/* The bound of a launch already made (the partition stream's: no wait under the partition lock):
 * both parts after it. In event and time modes a group's wait then follows its first launch, so
 * that stream holds one unit more than the mode says. */
void gy_bound_launched_slow(gy_cu_stream stream, bool graph);

static inline void gy_bound_launched(gy_cu_stream stream, bool graph)
{
    if (gy_client.mode != GY_MODE_NONE)
        gy_bound_launched_slow(stream, graph);
}

#endif
