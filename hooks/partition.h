/* The partition policy in a lower process: while a higher job runs, a launch on a user stream S
 * does not block but goes to S's partition stream P(S), a stream of a green context holding a
 * few SMs (GPUYIELD_PARTITION_SMS). Program order is kept with events both ways:
 *   fork: the first launch of an episode records an event on S and makes P(S) wait on it;
 *   join: before any other use of S (a launch after the job, a sync, query, event record, wait,
 *         synchronous copy, host function, capture, destroy, free), S waits on an event recorded
 *         on P(S).
 * Async copies and memsets on S during a job go to P(S) like kernels (they use copy engines, not
 * SMs, so a low worker that copies its input every iteration keeps going).
 * The legacy default stream orders every blocking stream of its context, so (conservatively)
 * an owed legacy stream is joined before any use of another stream of that context, and every
 * owed stream of the context before a use of the legacy stream. A stream being captured is left
 * alone. A green stream does not confine a graph's kernels: a graph launch goes to P(S) as its
 * twin, a copy whose kernel nodes name the green context (graph_twin.h), or, without one, waits
 * for the job. Nothing here runs while no stream owes a join: the hooks read one counter.
 * Under the guarded policy the same path serves the arm of the open jobs (guard.current, read
 * only here, on the slow path): stop waits as under corun; partition:K goes to a green context of
 * K SMs (clamped to the device), one per context and size, each made at its first use; a stream
 * that still owes a join to another size's partition stream is joined before it forks anew.
 * disjoint:K gives the lower processes partition:K's stream, and sends the HP's own launches
 * during its job, by the same fork and join, to a green context of the rest of that split. */
#ifndef GY_PARTITION_H
#define GY_PARTITION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cuda_abi.h"
#include "guarded_layout.h"

/* How many streams of this process owe a join (written under the partition lock). */
extern _Atomic uint64_t gy_partition_owed;

struct gy_partition_entry;

struct gy_partition_route {
    gy_cu_stream green;               /* the partition stream the launch goes to; NULL: none */
    gy_cu_graph_exec twin;            /* a graph launch with green: the exec to launch there instead */
    bool pass;                        /* a launch into a capture: passes unchanged, no wait */
    bool stopped;                     /* no route only because the guarded arm is stop now */
    struct gy_partition_entry *entry; /* with green: the partition lock is held until launched */
};

static inline bool gy_partition_owes(void)
{
    return atomic_load_explicit(&gy_partition_owed, memory_order_relaxed) != 0;
}

/* The gate is closed for a launch on `stream` (normalized: never NULL) of a kernel or copy (graph
 * NULL) or of the graph exec `graph`. True when it need not wait: route->green to launch on (lock
 * held: call gy_partition_launched), with route->twin for a graph, or route->pass. False: the
 * policy is not partition, this process falls back, or a graph has no twin (it then blocks). */
bool gy_partition_route(gy_cu_stream stream, gy_cu_graph_exec graph, struct gy_partition_route *route);
/* The gate is closed and the launch was not routed: block until the job ends; under guarded, a
 * launch held by the stop arm is routed as soon as the open jobs' arm turns to a partition
 * (guarded_arm.c). Returns with route filled as gy_partition_route does, or with nothing routed
 * once the launch may go ahead on its own stream. */
void gy_partition_gate_closed(gy_cu_stream stream, gy_cu_graph_exec graph, struct gy_partition_route *route);
/* The gate is open to an HP launch while the open jobs' arm is guarded's disjoint:K (`arm`): true
 * with route->green, the launch's partition stream on the complement of the lower processes' K SMs
 * (lock held: call gy_partition_launched), or with route->pass (a capture). False: a graph (never
 * confined), or no green context: the launch runs where it was sent. */
bool gy_partition_confine(enum gy_guard_arm arm, gy_cu_stream stream, gy_cu_graph_exec graph,
                          struct gy_partition_route *route);
/* The launch (copy: an async copy or memset) went to route->green: count it in partition_launches
 * (copy: partition_copies) when ok, and release the lock. */
void gy_partition_launched(struct gy_partition_route *route, bool ok, bool copy);
/* Before a use of `stream` (normalized) other than a launch sent to its partition: join what it
 * and the streams it is ordered with owe. When no higher job runs, everything joinable is joined
 * (so the fast path comes back). Call only when gy_partition_owes(). */
void gy_partition_before_use(gy_cu_stream stream);
/* Before a call that covers every stream of the current context (cuCtxSynchronize), or of every
 * context (every_context: cuMemFree). Call only when gy_partition_owes(). */
void gy_partition_before_all(bool every_context);
/* Before cuCtxSynchronize_v2(ctx): every stream of ctx (NULL: the current context). */
void gy_partition_before_context(gy_cu_context ctx);
/* At registration: decide what can be decided before any job (MPS, the driver's symbols), so
 * that status and GPUYIELD_VERBOSE say it early. */
void gy_partition_check_static(void);
/* Fork: join.c's fork handlers call these between the join lock and the client's (it says the order). */
void gy_partition_fork_prepare(void);
void gy_partition_fork_parent(void);
void gy_partition_fork_child(void);

#endif
