/* A lower process's CUDA graph run inside a partition (the partition policy, guarded's partition
 * arms), where until now every graph launch waited for the higher job's end.
 *
 * A graph instantiated in the primary context runs on every SM even when launched on a green
 * context's stream; a clone of it whose kernel nodes name the green context runs inside that
 * context's SMs (H200, driver 580, without MPS and under it: bench/results/2026-11-29-h200-graph-green/).
 * So a lower process under such a policy keeps a copy of each graph it instantiates, and at the
 * graph's first launch into a partition of a given green context makes its twin: the copy cloned,
 * each kernel node pointed at the green context (its CUkernel kept, its CUfunction dropped: a
 * CUfunction belongs to one context), instantiated once. The twin runs on the partition stream in
 * the graph's place; the graph itself still runs on its own stream outside higher jobs.
 *
 * No twin (the launch waits for the job, as before) for a graph with a child graph, memory
 * allocation or free, or conditional node, a kernel node without a CUkernel, one whose twin failed
 * to instantiate, a device-launchable graph, or one changed in place after instantiation (cuGraphExec*SetParams,
 * cuGraphExecUpdate, cuGraphNodeSetEnabled: its twin would replay the old parameters). */
#ifndef GY_GRAPH_TWIN_H
#define GY_GRAPH_TWIN_H

#include <stdbool.h>

#include "cuda_abi.h"

/* Does this process keep copies for twins? (joined, priority 0, policy partition or guarded) */
bool gy_graph_twin_on(void);

/* exec was instantiated from graph with flags (the application's, or a part graph_split.c made). */
void gy_graph_twin_instantiated(gy_cu_graph_exec exec, gy_cu_graph graph, unsigned long long flags);
/* exec is destroyed: its twins too. */
void gy_graph_twin_destroyed(gy_cu_graph_exec exec);
/* exec was changed in place: no twin from now on (those made are destroyed). */
void gy_graph_twin_changed(gy_cu_graph_exec exec);

/* The twin of exec inside `green` (made at its first need), or NULL: exec has none, it waits. */
gy_cu_graph_exec gy_graph_twin_for(gy_cu_graph_exec exec, gy_cu_green_ctx green);

/* Fork: the child starts with no table (handles do not survive fork). */
void gy_graph_twin_fork_prepare(void);
void gy_graph_twin_fork_parent(void);
void gy_graph_twin_fork_child(void);

#endif
