/* The gate of one launch or async copy, entered and left in pairs around the driver call by the
 * entry points (launch_hooks.c, copy_hooks.c). Above the rooms it uses: the segment's gate word
 * and blocking (client.h), the partition policy's route (partition.h). */
#ifndef GY_GATE_H
#define GY_GATE_H

#include "auto_jobs.h"
#include "client.h"
#include "guarded.h"
#include "partition.h"

/* The gate for a launch or an async copy on `stream` (normalized; graph: the exec of a graph
 * launch, else NULL), on the device of the thread's
 * context (gy_client_note_context first): its auto job opened if due (auto_jobs.h), then open, or
 * a partition stream to send it to (route->green), or wait for the job's end. Open to a process
 * above priority 0 while the open jobs' guarded arm is disjoint: the HP's launch goes to its
 * stream's stream on the rest of the lower processes' split (one more load, the arm word, in such
 * processes only; lower ones, at 0, never load it). A stream that owes a join is joined before work that
 * runs on it. seq_cst on `entered` pairs with the job's seq_cst store of the gate word: either the
 * helper sees this launch in `entered`, or this launch sees the gate closed. */
static inline void gy_gate_enter(gy_cu_stream stream, gy_cu_graph_exec graph, struct gy_partition_route *route)
{
    route->green = NULL; /* twin is read only with green, which the route functions set after zeroing it */
    route->pass = false;
    atomic_fetch_add_explicit(&gy_client.entered, 1, memory_order_seq_cst);
    gy_mark_inflight(&gy_client.shm);
    gy_auto_enter(); /* GPUYIELD_JOBS=auto: one more load while its job is open */
    if (!gy_word_allows(gy_thread_gate, gy_client.priority)) {
        if (!gy_partition_route(stream, graph, route))
            gy_partition_gate_closed(stream, graph, route);
    } else if (gy_client.priority > 0) {
        enum gy_guard_arm arm = gy_guarded_current(&gy_client.shm);
        if (gy_guard_arm_disjoint(arm))
            gy_partition_confine(arm, stream, graph, route);
    }
    if (!route->green && !route->pass && gy_partition_owes())
        gy_partition_before_use(stream);
}

/* Past the driver call: left++ (the drain helper waits for entered == left), and the launch
 * counted (counted: a kernel or graph launch the driver took). */
static inline void gy_gate_leave(bool counted, bool graph)
{
    atomic_fetch_add_explicit(&gy_client.left, 1, memory_order_release);
    struct gy_proc_slot *slot = gy_my_slot(&gy_client.shm);
    if (counted && slot)
        atomic_fetch_add_explicit(graph ? &slot->counters.graph_launches : &slot->counters.launches, 1,
                                  memory_order_relaxed);
}

#endif
