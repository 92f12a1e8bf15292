/* The launch hooks: every kernel launch entry point and its _ptsz twin, and graph launches
 * (one unit each). Each calls the real function of its own exact name. The path:
 *   note the thread's context -> queue bound (event:N waits for group g-2) ->
 *   gate (one atomic load when nothing above us runs) -> driver -> left++, counters ->
 *   queue bound (sync:N waits / event:N records). */
#include "client.h"
#include "hook_functions.h"
#include "queue_bound.h"


static inline void launch_epilogue(gy_cu_stream stream, struct gy_stream_state *bound, gy_cu_result rc, bool graph)
{
    gy_gate_leave(rc == GY_CUDA_SUCCESS, graph);
    if (rc == GY_CUDA_SUCCESS)
        gy_bound_after(stream, bound);
}

/* NULL is the legacy stream for the plain entry points, the per-thread one for _ptsz. */
static inline gy_cu_stream plain_stream(gy_cu_stream s) { return s ? s : GY_CU_STREAM_LEGACY; }
static inline gy_cu_stream ptsz_stream(gy_cu_stream s) { return s ? s : GY_CU_STREAM_PER_THREAD; }

#define GATED_CALL(stream_for_bound, graph, call)                                                    \
    do {                                                                                             \
        if (!real)                                                                                   \
            return GY_CUDA_ERROR_NOT_INITIALIZED;                                                    \
        if (!gy_client_gated())                                                                      \
            return call;                                                                             \
        gy_cu_stream bound_stream = stream_for_bound;                                                \
        gy_client_note_context(); /* first: the queue bound keys default streams by context */      \
        struct gy_stream_state *bound = gy_bound_before(bound_stream);                               \
        gy_gate_enter();                                                                             \
        gy_cu_result rc = call;                                                                      \
        launch_epilogue(bound_stream, bound, rc, graph);                                             \
        return rc;                                                                                   \
    } while (0)

GY_EXPORT gy_cu_result cuLaunchKernel(GY_LAUNCH_ARGS, void **params, void **extra)
{
    gy_pfn_launch_kernel real = (gy_pfn_launch_kernel)gy_real(GY_FN_LAUNCH_KERNEL);
    GATED_CALL(plain_stream(stream), false, real(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra));
}

GY_EXPORT gy_cu_result cuLaunchKernel_ptsz(GY_LAUNCH_ARGS, void **params, void **extra)
{
    gy_pfn_launch_kernel real = (gy_pfn_launch_kernel)gy_real(GY_FN_LAUNCH_KERNEL_PTSZ);
    GATED_CALL(ptsz_stream(stream), false, real(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra));
}

GY_EXPORT gy_cu_result cuLaunchKernelEx(const gy_cu_launch_config *config, gy_cu_function f, void **params,
                                        void **extra)
{
    gy_pfn_launch_kernel_ex real = (gy_pfn_launch_kernel_ex)gy_real(GY_FN_LAUNCH_KERNEL_EX);
    if (!config && real)
        return real(config, f, params, extra); /* the driver reports the bad argument */
    GATED_CALL(plain_stream(config->hStream), false, real(config, f, params, extra));
}

GY_EXPORT gy_cu_result cuLaunchKernelEx_ptsz(const gy_cu_launch_config *config, gy_cu_function f, void **params,
                                             void **extra)
{
    gy_pfn_launch_kernel_ex real = (gy_pfn_launch_kernel_ex)gy_real(GY_FN_LAUNCH_KERNEL_EX_PTSZ);
    if (!config && real)
        return real(config, f, params, extra);
    GATED_CALL(ptsz_stream(config->hStream), false, real(config, f, params, extra));
}

GY_EXPORT gy_cu_result cuLaunchCooperativeKernel(GY_LAUNCH_ARGS, void **params)
{
    gy_pfn_launch_cooperative real = (gy_pfn_launch_cooperative)gy_real(GY_FN_LAUNCH_COOPERATIVE);
    GATED_CALL(plain_stream(stream), false, real(f, gx, gy, gz, bx, by, bz, shmem, stream, params));
}

GY_EXPORT gy_cu_result cuLaunchCooperativeKernel_ptsz(GY_LAUNCH_ARGS, void **params)
{
    gy_pfn_launch_cooperative real = (gy_pfn_launch_cooperative)gy_real(GY_FN_LAUNCH_COOPERATIVE_PTSZ);
    GATED_CALL(ptsz_stream(stream), false, real(f, gx, gy, gz, bx, by, bz, shmem, stream, params));
}

GY_EXPORT gy_cu_result cuGraphLaunch(gy_cu_graph_exec exec, gy_cu_stream stream)
{
    gy_pfn_graph_launch real = (gy_pfn_graph_launch)gy_real(GY_FN_GRAPH_LAUNCH);
    GATED_CALL(plain_stream(stream), true, real(exec, stream));
}

GY_EXPORT gy_cu_result cuGraphLaunch_ptsz(gy_cu_graph_exec exec, gy_cu_stream stream)
{
    gy_pfn_graph_launch real = (gy_pfn_graph_launch)gy_real(GY_FN_GRAPH_LAUNCH_PTSZ);
    GATED_CALL(ptsz_stream(stream), true, real(exec, stream));
}
