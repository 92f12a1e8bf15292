/* The life of an instantiated graph, as graph_split.c and graph_twin.c need to see it:
 * instantiated (a copy of its graph kept where this process cuts graphs or makes twins), changed
 * in place (launched whole and without a twin from then on), destroyed. Each hook calls the real
 * function of its own exact name first. */
#include "graph_split.h"
#include "graph_twin.h"
#include "hook_functions.h"

static gy_cu_result instantiated(gy_cu_result rc, gy_cu_graph_exec *exec, gy_cu_graph graph, unsigned long long flags)
{
    if (rc == GY_CUDA_SUCCESS && exec) {
        gy_graph_split_instantiated(*exec, graph, flags);
        gy_graph_twin_instantiated(*exec, graph, flags);
    }
    return rc;
}

GY_EXPORT gy_cu_result cuGraphInstantiateWithFlags(gy_cu_graph_exec *exec, gy_cu_graph graph, unsigned long long flags)
{
    gy_pfn_graph_instantiate_with_flags real =
        (gy_pfn_graph_instantiate_with_flags)gy_real(GY_FN_GRAPH_INSTANTIATE_WITH_FLAGS);
    return real ? instantiated(real(exec, graph, flags), exec, graph, flags) : GY_CUDA_ERROR_NOT_INITIALIZED;
}

static gy_cu_result instantiate_with_params(enum gy_fn id, gy_cu_graph_exec *exec, gy_cu_graph graph,
                                            gy_cu_graph_instantiate_params *params)
{
    gy_pfn_graph_instantiate_with_params real = (gy_pfn_graph_instantiate_with_params)gy_real(id);
    if (!real)
        return GY_CUDA_ERROR_NOT_INITIALIZED;
    gy_cu_result rc = real(exec, graph, params);
    return params ? instantiated(rc, exec, graph, params->flags) : rc;
}

GY_EXPORT gy_cu_result cuGraphInstantiateWithParams(gy_cu_graph_exec *exec, gy_cu_graph graph,
                                                    gy_cu_graph_instantiate_params *params)
{
    return instantiate_with_params(GY_FN_GRAPH_INSTANTIATE_WITH_PARAMS, exec, graph, params);
}

GY_EXPORT gy_cu_result cuGraphInstantiateWithParams_ptsz(gy_cu_graph_exec *exec, gy_cu_graph graph,
                                                         gy_cu_graph_instantiate_params *params)
{
    return instantiate_with_params(GY_FN_GRAPH_INSTANTIATE_WITH_PARAMS_PTSZ, exec, graph, params);
}

GY_EXPORT gy_cu_result cuGraphExecDestroy(gy_cu_graph_exec exec)
{
    gy_pfn_graph_exec_destroy real = (gy_pfn_graph_exec_destroy)gy_real(GY_FN_GRAPH_EXEC_DESTROY);
    if (!real)
        return GY_CUDA_ERROR_NOT_INITIALIZED;
    gy_graph_split_destroyed(exec);
    gy_graph_twin_destroyed(exec);
    return real(exec);
}

/* Changed in place: the parts (if any) would replay what it was. Marked before the call, so that a
 * launch after it never runs stale parts. */
#define CHANGED_HOOK(name, id, pfn, params, args)                                                      \
    GY_EXPORT gy_cu_result name params                                                                \
    {                                                                                                  \
        pfn real = (pfn)gy_real(id);                                                                   \
        if (!real)                                                                                     \
            return GY_CUDA_ERROR_NOT_INITIALIZED;                                                      \
        gy_graph_split_changed(exec);                                                                  \
        gy_graph_twin_changed(exec);                                                                   \
        return real args;                                                                              \
    }

#define NODE_PARAMS (gy_cu_graph_exec exec, gy_cu_graph_node node, const void *p)
CHANGED_HOOK(cuGraphExecKernelNodeSetParams_v2, GY_FN_EXEC_KERNEL_NODE_SET_PARAMS_V2, gy_pfn_exec_node_params, NODE_PARAMS, (exec, node, p))
CHANGED_HOOK(cuGraphExecKernelNodeSetParams, GY_FN_EXEC_KERNEL_NODE_SET_PARAMS, gy_pfn_exec_node_params, NODE_PARAMS, (exec, node, p))
CHANGED_HOOK(cuGraphExecHostNodeSetParams, GY_FN_EXEC_HOST_NODE_SET_PARAMS, gy_pfn_exec_node_params, NODE_PARAMS, (exec, node, p))
CHANGED_HOOK(cuGraphExecExternalSemaphoresSignalNodeSetParams, GY_FN_EXEC_SEM_SIGNAL_NODE_SET_PARAMS, gy_pfn_exec_node_params, NODE_PARAMS, (exec, node, p))
CHANGED_HOOK(cuGraphExecExternalSemaphoresWaitNodeSetParams, GY_FN_EXEC_SEM_WAIT_NODE_SET_PARAMS, gy_pfn_exec_node_params, NODE_PARAMS, (exec, node, p))
CHANGED_HOOK(cuGraphExecBatchMemOpNodeSetParams, GY_FN_EXEC_BATCH_MEM_OP_NODE_SET_PARAMS, gy_pfn_exec_node_params, NODE_PARAMS, (exec, node, p))
CHANGED_HOOK(cuGraphExecNodeSetParams, GY_FN_EXEC_NODE_SET_PARAMS, gy_pfn_exec_node_params, NODE_PARAMS, (exec, node, p))
CHANGED_HOOK(cuGraphExecMemcpyNodeSetParams, GY_FN_EXEC_MEMCPY_NODE_SET_PARAMS, gy_pfn_exec_node_params_ctx,
             (gy_cu_graph_exec exec, gy_cu_graph_node node, const void *p, gy_cu_context ctx), (exec, node, p, ctx))
CHANGED_HOOK(cuGraphExecMemsetNodeSetParams, GY_FN_EXEC_MEMSET_NODE_SET_PARAMS, gy_pfn_exec_node_params_ctx,
             (gy_cu_graph_exec exec, gy_cu_graph_node node, const void *p, gy_cu_context ctx), (exec, node, p, ctx))
CHANGED_HOOK(cuGraphExecChildGraphNodeSetParams, GY_FN_EXEC_CHILD_GRAPH_NODE_SET_PARAMS, gy_pfn_exec_node_graph,
             (gy_cu_graph_exec exec, gy_cu_graph_node node, gy_cu_graph child), (exec, node, child))
CHANGED_HOOK(cuGraphExecEventRecordNodeSetEvent, GY_FN_EXEC_EVENT_RECORD_NODE_SET_EVENT, gy_pfn_exec_node_event,
             (gy_cu_graph_exec exec, gy_cu_graph_node node, gy_cu_event event), (exec, node, event))
CHANGED_HOOK(cuGraphExecEventWaitNodeSetEvent, GY_FN_EXEC_EVENT_WAIT_NODE_SET_EVENT, gy_pfn_exec_node_event,
             (gy_cu_graph_exec exec, gy_cu_graph_node node, gy_cu_event event), (exec, node, event))
CHANGED_HOOK(cuGraphNodeSetEnabled, GY_FN_GRAPH_NODE_SET_ENABLED, gy_pfn_exec_node_enabled,
             (gy_cu_graph_exec exec, gy_cu_graph_node node, unsigned enabled), (exec, node, enabled))
CHANGED_HOOK(cuGraphExecUpdate_v2, GY_FN_GRAPH_EXEC_UPDATE_V2, gy_pfn_exec_update_v2,
             (gy_cu_graph_exec exec, gy_cu_graph graph, void *info), (exec, graph, info))
CHANGED_HOOK(cuGraphExecUpdate, GY_FN_GRAPH_EXEC_UPDATE, gy_pfn_exec_update_v1,
             (gy_cu_graph_exec exec, gy_cu_graph graph, gy_cu_graph_node *error_node, int *result),
             (exec, graph, error_node, result))
