/* A graph's twins inside partitions (graph_twin.h says what and why). A table keyed by the exec
 * handle, under one lock (a leaf: taken under the partition's and graph_split's locks, never the
 * other way). Graph instantiations and launches into a partition are far rarer than kernel
 * launches; a twin is made once per exec and green context. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "client.h"
#include "config.h"
#include "graph_twin.h"
#include "join.h"

#define BUCKETS 256
#define MAX_TWINS 8 /* green contexts a graph may run in: one per partition size the arms use */

struct twin {
    gy_cu_green_ctx green;
    gy_cu_graph_exec exec;
};

struct entry {
    gy_cu_graph_exec exec;
    struct entry *next;
    gy_cu_graph copy; /* the graph it was instantiated from; NULL: no twin can be made */
    unsigned long long flags;
    struct twin twins[MAX_TWINS];
    unsigned ntwins;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *table[BUCKETS];

static unsigned bucket(gy_cu_graph_exec exec) { return (unsigned)(((uintptr_t)exec >> 4) ^ ((uintptr_t)exec >> 12)) % BUCKETS; }

static struct entry **find_locked(gy_cu_graph_exec exec)
{
    struct entry **at = &table[bucket(exec)];
    while (*at && (*at)->exec != exec)
        at = &(*at)->next;
    return at;
}

bool gy_graph_twin_on(void)
{
    if (!gy_client_gated() || gy_client.priority != 0)
        return false;
    enum gy_policy policy = gy_get_policy(&gy_client.shm);
    return policy == GY_POLICY_PARTITION || policy == GY_POLICY_GUARDED;
}

/* Drop the copy and the twins (the entry stays, with no copy: no twin from now on). */
static void release(struct entry *e)
{
    gy_pfn_graph_exec_destroy destroy_exec = (gy_pfn_graph_exec_destroy)gy_real(GY_FN_GRAPH_EXEC_DESTROY);
    gy_pfn_graph_destroy destroy_graph = (gy_pfn_graph_destroy)gy_real(GY_FN_GRAPH_DESTROY);
    for (unsigned i = 0; i < e->ntwins; i++)
        if (e->twins[i].exec && destroy_exec)
            destroy_exec(e->twins[i].exec);
    e->ntwins = 0;
    if (e->copy && destroy_graph)
        destroy_graph(e->copy);
    e->copy = NULL;
}

void gy_graph_twin_instantiated(gy_cu_graph_exec exec, gy_cu_graph graph, unsigned long long flags)
{
    if (!exec || !graph || (flags & GY_CU_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) || !gy_graph_twin_on())
        return;
    gy_pfn_graph_clone clone = (gy_pfn_graph_clone)gy_real(GY_FN_GRAPH_CLONE);
    struct entry *e = calloc(1, sizeof *e);
    if (!e || !clone || clone(&e->copy, graph) != GY_CUDA_SUCCESS) {
        free(e);
        return; /* no twin: it waits for higher jobs, as without the entry */
    }
    e->exec = exec;
    /* What a twin may be instantiated with (cuGraphInstantiateWithFlags refuses the upload flag). */
    e->flags = flags & (GY_CU_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | GY_CU_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY);
    pthread_mutex_lock(&lock);
    struct entry **at = find_locked(exec);
    if (*at) { /* a handle reused after a destroy we did not see: the new graph replaces it */
        release(*at);
        e->next = (*at)->next;
        free(*at);
    }
    *at = e;
    pthread_mutex_unlock(&lock);
}

void gy_graph_twin_destroyed(gy_cu_graph_exec exec)
{
    pthread_mutex_lock(&lock);
    struct entry **at = find_locked(exec), *e = *at;
    if (e) {
        *at = e->next;
        release(e);
        free(e);
    }
    pthread_mutex_unlock(&lock);
}

void gy_graph_twin_changed(gy_cu_graph_exec exec)
{
    pthread_mutex_lock(&lock);
    struct entry *e = *find_locked(exec);
    if (e)
        release(e);
    pthread_mutex_unlock(&lock);
}

/* A node kind the twin cannot take: a child graph's or a conditional's body would keep its
 * kernels in the primary context; memory nodes allow one instantiation of their graph at a time. */
static bool refused_node(int type)
{
    return type == GY_CU_GRAPH_NODE_TYPE_GRAPH || type == GY_CU_GRAPH_NODE_TYPE_MEM_ALLOC ||
           type == GY_CU_GRAPH_NODE_TYPE_MEM_FREE || type >= GY_CU_GRAPH_NODE_TYPE_CONDITIONAL || type < 0;
}

/* Point every kernel node of g at ctx. NULL on success, else the step that failed. */
static const char *retarget(gy_cu_graph g, gy_cu_context ctx, gy_cu_result *rc)
{
    gy_pfn_graph_get_nodes get_nodes = (gy_pfn_graph_get_nodes)gy_real(GY_FN_GRAPH_GET_NODES);
    gy_pfn_graph_node_get_type get_type = (gy_pfn_graph_node_get_type)gy_real(GY_FN_GRAPH_NODE_GET_TYPE);
    gy_pfn_kernel_node_params get_params = (gy_pfn_kernel_node_params)gy_real(GY_FN_KERNEL_NODE_GET_PARAMS);
    gy_pfn_kernel_node_set_params set_params = (gy_pfn_kernel_node_set_params)gy_real(GY_FN_KERNEL_NODE_SET_PARAMS);
    size_t n = 0;
    if (!get_nodes || !get_type || !get_params || !set_params)
        return "the driver's kernel node calls (cuGraphKernelNodeGetParams_v2, CUDA 12.0 or newer)";
    if ((*rc = get_nodes(g, NULL, &n)) != GY_CUDA_SUCCESS)
        return "cuGraphGetNodes";
    gy_cu_graph_node *nodes = calloc(n ? n : 1, sizeof *nodes);
    size_t got = n;
    const char *failed = NULL;
    if (!nodes || (*rc = get_nodes(g, nodes, &got)) != GY_CUDA_SUCCESS || got != n)
        failed = "cuGraphGetNodes";
    for (size_t i = 0; !failed && i < n; i++) {
        int type = -1;
        gy_cu_kernel_node_params p;
        if ((*rc = get_type(nodes[i], &type)) != GY_CUDA_SUCCESS)
            failed = "cuGraphNodeGetType";
        else if (refused_node(type))
            failed = "a child graph, memory or conditional node", *rc = type;
        else if (type != GY_CU_GRAPH_NODE_TYPE_KERNEL)
            continue;
        else if ((*rc = get_params(nodes[i], &p)) != GY_CUDA_SUCCESS)
            failed = "cuGraphKernelNodeGetParams_v2";
        else if (!p.kern)
            failed = "a kernel node without a CUkernel", *rc = 0;
        else {
            p.func = NULL; /* the primary context's; the CUkernel runs in the node's context */
            p.ctx = ctx;
            if ((*rc = set_params(nodes[i], &p)) != GY_CUDA_SUCCESS)
                failed = "cuGraphKernelNodeSetParams_v2";
        }
    }
    free(nodes);
    return failed;
}

static gy_cu_graph_exec make_twin(const struct entry *e, gy_cu_green_ctx green)
{
    gy_pfn_ctx_from_green_ctx as_ctx = (gy_pfn_ctx_from_green_ctx)gy_real(GY_FN_CTX_FROM_GREEN_CTX);
    gy_pfn_graph_clone clone = (gy_pfn_graph_clone)gy_real(GY_FN_GRAPH_CLONE);
    gy_pfn_graph_destroy destroy = (gy_pfn_graph_destroy)gy_real(GY_FN_GRAPH_DESTROY);
    gy_pfn_graph_instantiate_with_flags instantiate =
        (gy_pfn_graph_instantiate_with_flags)gy_real(GY_FN_GRAPH_INSTANTIATE_WITH_FLAGS);
    gy_cu_context ctx = NULL;
    gy_cu_graph g = NULL;
    gy_cu_graph_exec twin = NULL;
    gy_cu_result rc = GY_CUDA_ERROR_NOT_INITIALIZED;
    const char *failed = NULL;
    if (!as_ctx || !clone || !destroy || !instantiate)
        failed = "the driver's green context calls (cuCtxFromGreenCtx, CUDA 12.4 or newer)";
    else if ((rc = as_ctx(&ctx, green)) != GY_CUDA_SUCCESS)
        failed = "cuCtxFromGreenCtx";
    else if ((rc = clone(&g, e->copy)) != GY_CUDA_SUCCESS)
        failed = "cuGraphClone";
    else if (!(failed = retarget(g, ctx, &rc)) && (rc = instantiate(&twin, g, e->flags)) != GY_CUDA_SUCCESS)
        failed = "cuGraphInstantiateWithFlags (the twin)", twin = NULL;
    if (g)
        destroy(g);
    /* Once per graph that cannot have one (its copy goes: never tried again), once per process
     * for the first made (a graph cut into 51 parts makes 51 twins per partition size). */
    static bool told_made;
    if (gy_config()->verbose && failed)
        fprintf(stderr, "gpuyield: pid %d: a CUDA graph has no twin inside the partition (%s: %d): it waits for "
                        "higher jobs\n",
                (int)getpid(), failed, rc);
    else if (gy_config()->verbose && !told_made)
        fprintf(stderr, "gpuyield: pid %d: a CUDA graph runs inside the partition as a twin whose kernel nodes "
                        "name its green context (each graph's twin made at its first launch into a partition)\n",
                (int)getpid());
    told_made = told_made || !failed;
    return twin;
}

gy_cu_graph_exec gy_graph_twin_for(gy_cu_graph_exec exec, gy_cu_green_ctx green)
{
    if (!exec || !green)
        return NULL;
    pthread_mutex_lock(&lock);
    struct entry *e = *find_locked(exec);
    gy_cu_graph_exec twin = NULL;
    if (e && e->copy) {
        unsigned i = 0;
        while (i < e->ntwins && e->twins[i].green != green)
            i++;
        if (i < e->ntwins)
            twin = e->twins[i].exec;
        else if (i < MAX_TWINS && (twin = make_twin(e, green)) != NULL)
            e->twins[e->ntwins++] = (struct twin){green, twin};
        else if (i < MAX_TWINS)
            release(e); /* what failed for one green context fails for the others: no twin from now on */
    }
    pthread_mutex_unlock(&lock);
    return twin;
}

void gy_graph_twin_fork_prepare(void) { pthread_mutex_lock(&lock); }
void gy_graph_twin_fork_parent(void) { pthread_mutex_unlock(&lock); }

/* The parent's handles mean nothing in the child: the entries go without driver calls. */
void gy_graph_twin_fork_child(void)
{
    for (unsigned b = 0; b < BUCKETS; b++)
        while (table[b]) {
            struct entry *e = table[b];
            table[b] = e->next;
            free(e);
        }
    pthread_mutex_unlock(&lock);
}
