/* Graphs of the fake driver: nodes and edges, made by stream capture (a chain), by fkGraphAddNode
 * (tests), or by cloning; instantiated into a unit that lasts the sum of its nodes' durations and
 * is logged as "graph:K" (K: the kernels it runs). Clone, node lookup in a clone, node removal
 * and the edge list are what hooks/graph_split.c uses to cut a graph into parts. */
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "fake_internal.h"

static void *grow(void *array, unsigned *cap, unsigned need, size_t size)
{
    if (need <= *cap)
        return array;
    unsigned cap2 = *cap ? 2 * *cap : 8;
    while (cap2 < need)
        cap2 *= 2;
    void *bigger = realloc(array, cap2 * size);
    if (!bigger)
        abort();
    *cap = cap2;
    return bigger;
}

static struct CUgraphNode_st *add_node(struct CUgraph_st *g, CUgraphNodeType type, uint64_t ns, unsigned kernels)
{
    struct CUgraphNode_st *node = calloc(1, sizeof *node);
    if (!node)
        abort();
    *node = (struct CUgraphNode_st){
        .graph = g, .type = type, .ns = ns, .kernels = kernels, .has_kern = type == CU_GRAPH_NODE_TYPE_KERNEL};
    g->nodes = grow(g->nodes, &g->cap, g->n + 1, sizeof *g->nodes);
    g->nodes[g->n++] = node;
    return node;
}

static void add_edge(struct CUgraph_st *g, struct CUgraphNode_st *from, struct CUgraphNode_st *to, unsigned char type)
{
    g->edges = grow(g->edges, &g->edges_cap, g->n_edges + 1, sizeof *g->edges);
    g->edges[g->n_edges++] = (struct fk_edge){from, to, type};
}

void fk_capture_node_locked(struct CUgraph_st *g, CUgraphNodeType type, uint64_t ns, unsigned kernels)
{
    struct CUgraphNode_st *last = g->n ? g->nodes[g->n - 1] : NULL;
    struct CUgraphNode_st *node = add_node(g, type, ns, kernels);
    if (last)
        add_edge(g, last, node, 0);
}

FK_EXPORT CUresult cuGraphCreate(CUgraph *graph, unsigned flags)
{
    if (!graph || flags)
        return CUDA_ERROR_INVALID_VALUE;
    *graph = calloc(1, sizeof **graph);
    if (!*graph)
        abort();
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult fkGraphAddNode(CUgraphNode *node, CUgraph graph, CUgraphNode after, CUgraphNodeType type,
                                  unsigned long long ns)
{
    if (!node || !graph || (after && after->graph != graph))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    *node = add_node(graph, type, ns, type == CU_GRAPH_NODE_TYPE_KERNEL);
    if (after)
        add_edge(graph, after, *node, 0);
    pthread_mutex_unlock(&fk_lock);
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult fkGraphAddEdge(CUgraph graph, CUgraphNode from, CUgraphNode to, unsigned char type)
{
    if (!graph || !from || !to || from->graph != graph || to->graph != graph)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    add_edge(graph, from, to, type);
    pthread_mutex_unlock(&fk_lock);
    return CUDA_SUCCESS;
}

static void exec_from(struct CUgraphExec_st *e, const struct CUgraph_st *g)
{
    *e = (struct CUgraphExec_st){.nodes = g->n};
    bool all_green = true;
    for (unsigned i = 0; i < g->n; i++) {
        const struct CUgraphNode_st *node = g->nodes[i];
        e->total_ns += node->ns;
        e->kernels += node->kernels;
        if (node->type != CU_GRAPH_NODE_TYPE_KERNEL && !node->kernels)
            continue;
        struct CUgreenCtx_st *green = node->type == CU_GRAPH_NODE_TYPE_KERNEL && node->ctx ? node->ctx->green : NULL;
        all_green = all_green && green && (!e->green || e->green == green);
        e->green = green;
    }
    if (!all_green)
        e->green = NULL;
}

/* FAKECUDA_INSTANTIATE_LIMIT=N: the process's instantiations after the N-th fail (out of memory),
 * as a driver short of memory would fail them. */
static bool instantiation_refused(void)
{
    static atomic_long made;
    const char *limit = getenv("FAKECUDA_INSTANTIATE_LIMIT");
    return limit && atomic_fetch_add(&made, 1) >= atol(limit);
}

FK_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags)
{
    if (!exec || !graph || (flags & ~0xfull))
        return CUDA_ERROR_INVALID_VALUE;
    if (instantiation_refused())
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUgraphExec_st *e = calloc(1, sizeof *e);
    if (!e)
        abort();
    pthread_mutex_lock(&fk_lock);
    exec_from(e, graph);
    pthread_mutex_unlock(&fk_lock);
    *exec = e;
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    if (!params)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = cuGraphInstantiateWithFlags(exec, graph, params->flags & ~2ull); /* 2: upload (nothing to do) */
    params->result_out = rc == CUDA_SUCCESS ? 0 : 1;
    return rc;
}

FK_EXPORT CUresult cuGraphDestroy(CUgraph graph)
{
    if (!graph)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < graph->n; i++)
        free(graph->nodes[i]);
    free(graph->nodes);
    free(graph->edges);
    free(graph);
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec)
{
    free(exec);
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuGraphClone(CUgraph *clone, CUgraph original)
{
    if (!clone || !original)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (!g)
        abort();
    pthread_mutex_lock(&fk_lock);
    for (unsigned i = 0; i < original->n; i++) {
        const struct CUgraphNode_st *o = original->nodes[i];
        struct CUgraphNode_st *copy = add_node(g, o->type, o->ns, o->kernels);
        copy->of = o;
        copy->ctx = o->ctx;
        copy->has_kern = o->has_kern;
    }
    for (unsigned e = 0; e < original->n_edges; e++) {
        unsigned from = 0, to = 0;
        while (original->nodes[from] != original->edges[e].from)
            from++;
        while (original->nodes[to] != original->edges[e].to)
            to++;
        add_edge(g, g->nodes[from], g->nodes[to], original->edges[e].type);
    }
    pthread_mutex_unlock(&fk_lock);
    *clone = g;
    return CUDA_SUCCESS;
}

/* The two-call pattern of the real driver: NULL arrays ask for the count; arrays get at most
 * *count entries, the rest NULL, and *count becomes the number there is. */
FK_EXPORT CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *count)
{
    if (!graph || !count)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    for (size_t i = 0; nodes && i < *count; i++)
        nodes[i] = i < graph->n ? graph->nodes[i] : NULL;
    *count = graph->n;
    pthread_mutex_unlock(&fk_lock);
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuGraphGetEdges_v2(CUgraph graph, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *data,
                                      size_t *count)
{
    if (!graph || !count || (!from) != (!to) || (data && !from))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    bool lossy = false;
    for (size_t i = 0; from && i < *count; i++) {
        const struct fk_edge *e = i < graph->n_edges ? &graph->edges[i] : NULL;
        from[i] = e ? e->from : NULL;
        to[i] = e ? e->to : NULL;
        if (data)
            data[i] = (CUgraphEdgeData){.type = e ? e->type : 0};
        lossy = lossy || (e && e->type && !data);
    }
    *count = graph->n_edges;
    pthread_mutex_unlock(&fk_lock);
    return lossy ? CUDA_ERROR_LOSSY_QUERY : CUDA_SUCCESS;
}

FK_EXPORT CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType *type)
{
    if (!node || !type)
        return CUDA_ERROR_INVALID_VALUE;
    *type = node->type;
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuGraphNodeFindInClone(CUgraphNode *node, CUgraphNode original, CUgraph clone)
{
    if (!node || !original || !clone)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    *node = NULL;
    for (unsigned i = 0; i < clone->n && !*node; i++)
        if (clone->nodes[i]->of == original)
            *node = clone->nodes[i];
    pthread_mutex_unlock(&fk_lock);
    return *node ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FK_EXPORT CUresult cuGraphDestroyNode(CUgraphNode node)
{
    if (!node)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    struct CUgraph_st *g = node->graph;
    unsigned kept = 0;
    for (unsigned e = 0; e < g->n_edges; e++)
        if (g->edges[e].from != node && g->edges[e].to != node)
            g->edges[kept++] = g->edges[e];
    g->n_edges = kept;
    kept = 0;
    for (unsigned i = 0; i < g->n; i++)
        if (g->nodes[i] != node)
            g->nodes[kept++] = g->nodes[i];
    g->n = kept;
    pthread_mutex_unlock(&fk_lock);
    free(node);
    return CUDA_SUCCESS;
}

/* In-place changes of an instantiated graph: an update takes the new graph's work. */
FK_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph graph, void *result_info)
{
    (void)result_info;
    if (!exec || !graph)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    exec_from(exec, graph);
    pthread_mutex_unlock(&fk_lock);
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec exec, CUgraphNode node, const void *params)
{
    return exec && node && params ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A kernel node's launch as CUDA_KERNEL_NODE_PARAMS_v2: a fake CUkernel where the node holds one. */
FK_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS_v2 *params)
{
    if (!node || !params || node->type != CU_GRAPH_NODE_TYPE_KERNEL)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    *params = (CUDA_KERNEL_NODE_PARAMS_v2){.func = (CUfunction)node, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                           .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
                                           .kern = node->has_kern ? (CUkernel)node : NULL, .ctx = node->ctx};
    pthread_mutex_unlock(&fk_lock);
    return CUDA_SUCCESS;
}

/* As the driver: a launch needs a CUfunction or a CUkernel; the context given becomes the node's. */
FK_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v2 *params)
{
    if (!node || !params || node->type != CU_GRAPH_NODE_TYPE_KERNEL || (!params->func && !params->kern))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_lock);
    node->ctx = params->ctx;
    node->has_kern = params->kern != NULL;
    pthread_mutex_unlock(&fk_lock);
    return CUDA_SUCCESS;
}
