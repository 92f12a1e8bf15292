/* A lower process's CUDA graph launched in parts (GPUYIELD_GRAPH_SPLIT=auto, the default).
 *
 * The gate and the queue bound act between launches; a graph launch is one unit however long it
 * runs, so a higher job that begins while a 5 ms graph replay is queued waits for all of it (on
 * the H100 a GPU-bound HP beside a graph-replaying LP ran 1.07 of alone where beside the same
 * kernels launched eagerly it ran 1.01). In a process at priority 0 under time:US, a graph is
 * timed on its first launches; one longer than US/2 is then launched as parts of about US/2
 * each: consecutive slices of a topological order of its nodes, each a clone of the graph with
 * the other nodes removed, instantiated once; cut first by node count, then, once each part is
 * timed, again by time (graph_split.c). The parts run in stream order, so every dependency
 * between them holds (concurrency across a cut is lost); each part is a graph launch through the
 * gate and the bound, which is given each timed part's GPU time.
 *
 * Launched whole, always: graphs with memory-allocation, memory-free or conditional nodes (their
 * semantics span the graph), device-launchable graphs, a graph launched while any stream of the
 * process captures, and a graph changed in place after instantiation (cuGraphExec*SetParams,
 * cuGraphExecUpdate, cuGraphNodeSetEnabled): its parts would replay the old parameters. */
#ifndef GY_GRAPH_SPLIT_H
#define GY_GRAPH_SPLIT_H

#include <stdbool.h>

#include "cuda_abi.h"

struct gy_split_exec;

/* What one graph launch does: count > 1, launch parts[0..count) in order, part i with the GPU
 * time part_ns[i] where known (part_ns not NULL: for the queue bound); else the graph whole. With
 * `timing` set, each unit launched (part i, or the whole graph as unit 0) goes between
 * gy_graph_split_time_start and _end. */
struct gy_graph_plan {
    const gy_cu_graph_exec *parts;
    unsigned count;
    const double *part_ns;
    struct gy_split_exec *timing;
};

/* Does this process cut graphs? (joined, priority 0, time mode, GPUYIELD_GRAPH_SPLIT=auto) */
bool gy_graph_split_on(void);

/* exec was instantiated from graph with flags: keep a copy of the graph to cut it later. */
void gy_graph_split_instantiated(gy_cu_graph_exec exec, gy_cu_graph graph, unsigned long long flags);
/* exec is destroyed: its parts and copy too. */
void gy_graph_split_destroyed(gy_cu_graph_exec exec);
/* exec was changed in place: launched whole from now on. */
void gy_graph_split_changed(gy_cu_graph_exec exec);

/* Before a gated launch of exec (gy_graph_split_on() true). */
void gy_graph_split_plan(gy_cu_graph_exec exec, struct gy_graph_plan *plan);
void gy_graph_split_time_start(struct gy_graph_plan *plan, unsigned unit, gy_cu_stream stream);
void gy_graph_split_time_end(struct gy_graph_plan *plan, unsigned unit, gy_cu_stream stream, bool launched);

#endif
