/* The launch hooks: every kernel launch entry point and its _ptsz twin, and graph launches.
 * Each calls the real function of its own exact name. The path:
 *   note the thread's context -> queue bound (event:N waits for group g-2) ->
 *   gate (one atomic load when nothing above us runs, plus one relaxed load of the partition's
 *   owed-joins count) -> driver -> left++, counters -> queue bound (sync:N waits / event:N records).
 * Under the partition policy a launch that finds a higher job running goes to the partition
 * stream of its stream instead of waiting (partition.h). The partition stream has its own queue
 * bound, applied after the launch (no wait under the partition lock): without it a lower process
 * queued hundreds of ms of work on a few SMs during a short job, and after the job every launch of
 * its stream waited for that backlog. A graph launch goes to the partition stream as its twin
 * (graph_twin.h), or waits; a lower process may launch a long graph as parts (graph_split.h). */
#include "gate.h"
#include "graph_split.h"
#include "hook_functions.h"
#include "join.h"
#include "partition.h"
#include "queue_bound.h"


static inline void launch_epilogue(gy_cu_stream stream, struct gy_stream_state *bound, gy_cu_result rc, bool graph)
{
    gy_gate_leave(rc == GY_CUDA_SUCCESS, graph);
    if (rc == GY_CUDA_SUCCESS)
        gy_bound_after(stream, bound);
}

/* Past a launch sent to the partition stream (route->green): counted, the partition lock released,
 * and the partition's queue bounded too (outside the lock). */
static inline gy_cu_result partition_epilogue(struct gy_partition_route *route, gy_cu_result rc, bool graph)
{
    gy_cu_stream green = route->green;
    gy_partition_launched(route, rc == GY_CUDA_SUCCESS, false);
    gy_gate_leave(rc == GY_CUDA_SUCCESS, graph);
    if (rc == GY_CUDA_SUCCESS)
        gy_bound_launched(green, graph);
    return rc;
}

/* NULL is the legacy stream for the plain entry points, the per-thread one for _ptsz. */
static inline gy_cu_stream plain_stream(gy_cu_stream s) { return s ? s : GY_CU_STREAM_LEGACY; }
static inline gy_cu_stream ptsz_stream(gy_cu_stream s) { return s ? s : GY_CU_STREAM_PER_THREAD; }

/* A kernel launch: `call` launches on `target`, the user's stream argument or the partition stream. */
#define GATED_CALL(user_stream, stream_for_bound, call)                                              \
    do {                                                                                             \
        gy_cu_stream target = user_stream;                                                           \
        if (!real)                                                                                   \
            return GY_CUDA_ERROR_NOT_INITIALIZED;                                                    \
        if (!gy_client_gated())                                                                      \
            return call;                                                                             \
        gy_cu_stream bound_stream = stream_for_bound;                                                \
        gy_client_note_context(); /* first: the queue bound keys default streams by context */      \
        struct gy_stream_state *bound = gy_bound_before(bound_stream, false, 0);                     \
        struct gy_partition_route route;                                                             \
        gy_gate_enter(bound_stream, NULL, &route);                                                   \
        if (route.green) {                                                                           \
            target = route.green;                                                                    \
            return partition_epilogue(&route, call, false);                                          \
        }                                                                                            \
        gy_cu_result rc = call;                                                                      \
        launch_epilogue(bound_stream, bound, rc, false);                                             \
        return rc;                                                                                   \
    } while (0)

GY_EXPORT gy_cu_result cuLaunchKernel(GY_LAUNCH_ARGS, void **params, void **extra)
{
    gy_pfn_launch_kernel real = (gy_pfn_launch_kernel)gy_real(GY_FN_LAUNCH_KERNEL);
    GATED_CALL(stream, plain_stream(stream), real(f, gx, gy, gz, bx, by, bz, shmem, target, params, extra));
}

GY_EXPORT gy_cu_result cuLaunchKernel_ptsz(GY_LAUNCH_ARGS, void **params, void **extra)
{
    gy_pfn_launch_kernel real = (gy_pfn_launch_kernel)gy_real(GY_FN_LAUNCH_KERNEL_PTSZ);
    GATED_CALL(stream, ptsz_stream(stream), real(f, gx, gy, gz, bx, by, bz, shmem, target, params, extra));
}

/* cuLaunchKernelEx sent elsewhere: the same configuration with another stream. */
static inline const gy_cu_launch_config *config_on(const gy_cu_launch_config *config, gy_cu_stream target,
                                                   gy_cu_launch_config *copy)
{
    if (target == config->hStream)
        return config;
    *copy = *config;
    copy->hStream = target;
    return copy;
}

GY_EXPORT gy_cu_result cuLaunchKernelEx(const gy_cu_launch_config *config, gy_cu_function f, void **params,
                                        void **extra)
{
    gy_pfn_launch_kernel_ex real = (gy_pfn_launch_kernel_ex)gy_real(GY_FN_LAUNCH_KERNEL_EX);
    if (!config && real)
        return real(config, f, params, extra); /* the driver reports the bad argument */
    gy_cu_launch_config copy;
    GATED_CALL(config->hStream, plain_stream(config->hStream),
               real(config_on(config, target, &copy), f, params, extra));
}

GY_EXPORT gy_cu_result cuLaunchKernelEx_ptsz(const gy_cu_launch_config *config, gy_cu_function f, void **params,
                                             void **extra)
{
    gy_pfn_launch_kernel_ex real = (gy_pfn_launch_kernel_ex)gy_real(GY_FN_LAUNCH_KERNEL_EX_PTSZ);
    if (!config && real)
        return real(config, f, params, extra);
    gy_cu_launch_config copy;
    GATED_CALL(config->hStream, ptsz_stream(config->hStream),
               real(config_on(config, target, &copy), f, params, extra));
}

GY_EXPORT gy_cu_result cuLaunchCooperativeKernel(GY_LAUNCH_ARGS, void **params)
{
    gy_pfn_launch_cooperative real = (gy_pfn_launch_cooperative)gy_real(GY_FN_LAUNCH_COOPERATIVE);
    GATED_CALL(stream, plain_stream(stream), real(f, gx, gy, gz, bx, by, bz, shmem, target, params));
}

GY_EXPORT gy_cu_result cuLaunchCooperativeKernel_ptsz(GY_LAUNCH_ARGS, void **params)
{
    gy_pfn_launch_cooperative real = (gy_pfn_launch_cooperative)gy_real(GY_FN_LAUNCH_COOPERATIVE_PTSZ);
    GATED_CALL(stream, ptsz_stream(stream), real(f, gx, gy, gz, bx, by, bz, shmem, target, params));
}

/* A graph launch (the graph whole, or one part) through the gate and the bound; timed between two
 * events (graph_split.h) when its plan asks. */
static gy_cu_result launch_timed(gy_pfn_graph_launch real, gy_cu_graph_exec exec, gy_cu_stream target,
                                 gy_cu_stream normalized, struct gy_graph_plan *plan, unsigned unit)
{
    if (!plan->timing)
        return real(exec, target);
    gy_graph_split_time_start(plan, unit, normalized); /* events on the stream NULL means for this entry point */
    gy_cu_result rc = real(exec, target);
    gy_graph_split_time_end(plan, unit, normalized, rc == GY_CUDA_SUCCESS);
    return rc;
}

/* GATED_CALL's path for a graph: inside a partition its twin runs in its place, untimed (a timing
 * handed to this launch is given back unsampled: its events would time the user's stream). */
static gy_cu_result gated_graph(gy_pfn_graph_launch real, gy_cu_graph_exec exec, gy_cu_stream stream,
                                gy_cu_stream normalized, struct gy_graph_plan *plan, unsigned unit)
{
    if (!real)
        return GY_CUDA_ERROR_NOT_INITIALIZED;
    if (!gy_client_gated())
        return launch_timed(real, exec, stream, normalized, plan, unit);
    gy_client_note_context();
    struct gy_stream_state *bound = gy_bound_before(normalized, true, plan->part_ns ? plan->part_ns[unit] : 0);
    struct gy_partition_route route;
    gy_gate_enter(normalized, exec, &route);
    if (route.green) {
        if (plan->timing)
            gy_graph_split_time_end(plan, unit, normalized, false);
        return partition_epilogue(&route, real(route.twin, route.green), true);
    }
    gy_cu_result rc = launch_timed(real, exec, stream, normalized, plan, unit);
    launch_epilogue(normalized, bound, rc, true);
    return rc;
}

/* In a process that cuts graphs, a long graph is launched as its parts, each through the gate:
 * a higher job that begins finds at most one part ahead of it, not the whole graph. */
static gy_cu_result graph_launch(gy_pfn_graph_launch real, gy_cu_graph_exec exec, gy_cu_stream stream,
                                 gy_cu_stream normalized)
{
    struct gy_graph_plan plan = {0};
    if (real && exec && gy_graph_split_on())
        gy_graph_split_plan(exec, &plan);
    if (plan.count < 2)
        return gated_graph(real, exec, stream, normalized, &plan, 0);
    for (unsigned i = 0; i < plan.count; i++) {
        gy_cu_result rc = gated_graph(real, plan.parts[i], stream, normalized, &plan, i);
        if (rc != GY_CUDA_SUCCESS)
            return rc;
    }
    return GY_CUDA_SUCCESS;
}

GY_EXPORT gy_cu_result cuGraphLaunch(gy_cu_graph_exec exec, gy_cu_stream stream)
{
    gy_pfn_graph_launch real = (gy_pfn_graph_launch)gy_real(GY_FN_GRAPH_LAUNCH);
    return graph_launch(real, exec, stream, plain_stream(stream));
}

GY_EXPORT gy_cu_result cuGraphLaunch_ptsz(gy_cu_graph_exec exec, gy_cu_stream stream)
{
    gy_pfn_graph_launch real = (gy_pfn_graph_launch)gy_real(GY_FN_GRAPH_LAUNCH_PTSZ);
    return graph_launch(real, exec, stream, ptsz_stream(stream));
}
