/* Cutting a lower process's CUDA graphs into parts (graph_split.h says what and why).
 *
 * Each instantiated graph of such a process has an entry (a table keyed by the exec handle, under
 * one lock: graph launches are far rarer than kernel launches). Its life: TIMING (its first
 * launches run whole between two timing events, TIMED_LAUNCHES samples, the shortest kept), then
 * CUT (launched as parts) or WHOLE (short enough, not cuttable, or changed in place). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "client.h"
#include "config.h"
#include "graph_split.h"
#include "join.h"

#define BUCKETS 256
#define TIMED_LAUNCHES 3 /* the shortest of 3 whole launches: the first may include lazy loading */
#define MAX_PARTS 256

enum split_state { TIMING, CUT, WHOLE };

struct gy_split_exec {
    gy_cu_graph_exec exec;
    struct gy_split_exec *next;
    gy_cu_graph copy; /* the graph it was instantiated from, until it is cut or given up */
    unsigned long long flags;
    enum split_state state;
    gy_cu_event start, end;
    bool end_pending; /* a timed launch whose end has not been read yet */
    unsigned samples;
    double shortest_ns;
    gy_cu_graph_exec *parts;
    unsigned count;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gy_split_exec *table[BUCKETS];

static unsigned bucket(gy_cu_graph_exec exec) { return (unsigned)(((uintptr_t)exec >> 4) ^ ((uintptr_t)exec >> 12)) % BUCKETS; }

static struct gy_split_exec **find_locked(gy_cu_graph_exec exec)
{
    struct gy_split_exec **at = &table[bucket(exec)];
    while (*at && (*at)->exec != exec)
        at = &(*at)->next;
    return at;
}

bool gy_graph_split_on(void)
{
    return gy_config()->graph_split && gy_client_gated() && gy_client.priority == 0 && gy_client.mode == GY_MODE_TIME;
}

/* Drop what the entry holds: parts, copy, events (the entry itself stays). */
static void release(struct gy_split_exec *e)
{
    gy_pfn_graph_exec_destroy destroy_exec = (gy_pfn_graph_exec_destroy)gy_real(GY_FN_GRAPH_EXEC_DESTROY);
    gy_pfn_graph_destroy destroy_graph = (gy_pfn_graph_destroy)gy_real(GY_FN_GRAPH_DESTROY);
    gy_pfn_event_destroy destroy_event = (gy_pfn_event_destroy)gy_real(GY_FN_EVENT_DESTROY);
    for (unsigned i = 0; i < e->count && destroy_exec; i++)
        destroy_exec(e->parts[i]);
    free(e->parts);
    e->parts = NULL;
    e->count = 0;
    if (e->copy && destroy_graph)
        destroy_graph(e->copy);
    e->copy = NULL;
    if (e->start && destroy_event)
        destroy_event(e->start);
    if (e->end && destroy_event)
        destroy_event(e->end);
    e->start = e->end = NULL;
}

/* Launched whole from now on (lock held). */
static void give_up(struct gy_split_exec *e)
{
    release(e);
    e->state = WHOLE;
}

void gy_graph_split_instantiated(gy_cu_graph_exec exec, gy_cu_graph graph, unsigned long long flags)
{
    if (!exec || !graph || (flags & GY_CU_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) || !gy_graph_split_on())
        return;
    gy_pfn_graph_clone clone = (gy_pfn_graph_clone)gy_real(GY_FN_GRAPH_CLONE);
    struct gy_split_exec *e = calloc(1, sizeof *e);
    gy_cu_result rc = clone && e ? clone(&e->copy, graph) : GY_CUDA_ERROR_NOT_INITIALIZED;
    if (rc != GY_CUDA_SUCCESS) {
        free(e);
        if (gy_config()->verbose)
            fprintf(stderr, "gpuyield: pid %d: a CUDA graph could not be copied (cuGraphClone: %d): it runs whole\n",
                    (int)getpid(), rc);
        return; /* launched whole, as without the entry */
    }
    e->exec = exec;
    /* What a part may be instantiated with (cuGraphInstantiateWithFlags refuses the upload flag). */
    e->flags = flags & (GY_CU_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | GY_CU_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY);
    pthread_mutex_lock(&lock);
    struct gy_split_exec **at = find_locked(exec);
    if (*at) { /* a handle reused after a destroy we did not see: the new graph replaces it */
        release(*at);
        e->next = (*at)->next;
        free(*at);
    }
    *at = e;
    pthread_mutex_unlock(&lock);
}

void gy_graph_split_destroyed(gy_cu_graph_exec exec)
{
    pthread_mutex_lock(&lock);
    struct gy_split_exec **at = find_locked(exec), *e = *at;
    if (e) {
        *at = e->next;
        release(e);
        free(e);
    }
    pthread_mutex_unlock(&lock);
}

void gy_graph_split_changed(gy_cu_graph_exec exec)
{
    pthread_mutex_lock(&lock);
    struct gy_split_exec *e = *find_locked(exec);
    if (e && e->state != WHOLE)
        give_up(e);
    pthread_mutex_unlock(&lock);
}

/* Does a node of this type do work on the GPU (a cut counts them)? Can the graph be cut at all? */
static bool does_work(int type)
{
    return type == GY_CU_GRAPH_NODE_TYPE_KERNEL || type == GY_CU_GRAPH_NODE_TYPE_MEMCPY ||
           type == GY_CU_GRAPH_NODE_TYPE_MEMSET || type == GY_CU_GRAPH_NODE_TYPE_GRAPH ||
           type == GY_CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
}

static bool cuttable(int type)
{
    return type >= 0 && type < GY_CU_GRAPH_NODE_TYPE_CONDITIONAL && type != GY_CU_GRAPH_NODE_TYPE_MEM_ALLOC &&
           type != GY_CU_GRAPH_NODE_TYPE_MEM_FREE;
}

struct handle_index {
    gy_cu_graph_node node; /* first: sorted by handle */
    size_t i;
};

static int by_handle(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct handle_index *)a)->node;
    uintptr_t y = (uintptr_t)((const struct handle_index *)b)->node;
    return x < y ? -1 : x > y;
}

/* The index of node among the graph's nodes (sorted: by handle), or -1. */
static long index_of(const struct handle_index *sorted, size_t n, gy_cu_graph_node node)
{
    struct handle_index key = {node, 0};
    const struct handle_index *hit = bsearch(&key, sorted, n, sizeof *sorted, by_handle);
    return hit ? (long)hit->i : -1;
}

/* The edges, with their data where the driver has it: a query without the data fails (LOSSY_QUERY)
 * when an edge is programmatic (cuBLAS captures them on Hopper). The data is not used: a cut turns
 * every edge across it into stream order, a full dependency. */
static gy_cu_result get_edges(gy_cu_graph g, gy_cu_graph_node *from, gy_cu_graph_node *to,
                              gy_cu_graph_edge_data *data, size_t *count)
{
    gy_pfn_graph_get_edges_v2 v2 = (gy_pfn_graph_get_edges_v2)gy_real(GY_FN_GRAPH_GET_EDGES_V2);
    if (v2)
        return v2(g, from, to, from ? data : NULL, count);
    gy_pfn_graph_get_edges v1 = (gy_pfn_graph_get_edges)gy_real(GY_FN_GRAPH_GET_EDGES);
    return v1 ? v1(g, from, to, count) : GY_CUDA_ERROR_NOT_INITIALIZED;
}

/* A graph read for cutting: its nodes, whether each does work, its edges as indices. */
struct graph_view {
    const char *failed; /* the step that failed, for the VERBOSE line */
    gy_cu_result rc;
    size_t n, m, units;
    gy_cu_graph_node *nodes;
    bool *works;
    size_t *first_out, *out; /* node i's successors: out[first_out[i] .. first_out[i + 1]) */
    size_t *indegree;
};

static void view_free(struct graph_view *v)
{
    free(v->nodes), free(v->works), free(v->first_out), free(v->out), free(v->indegree);
}

static bool read_nodes(gy_cu_graph g, struct graph_view *v)
{
    gy_pfn_graph_get_nodes get_nodes = (gy_pfn_graph_get_nodes)gy_real(GY_FN_GRAPH_GET_NODES);
    gy_pfn_graph_node_get_type get_type = (gy_pfn_graph_node_get_type)gy_real(GY_FN_GRAPH_NODE_GET_TYPE);
    v->failed = "cuGraphGetNodes";
    if (!get_nodes || !get_type || (v->rc = get_nodes(g, NULL, &v->n)) != GY_CUDA_SUCCESS || v->n < 2)
        return false;
    size_t got = v->n;
    v->nodes = calloc(v->n, sizeof *v->nodes);
    v->works = calloc(v->n, sizeof *v->works);
    if (!v->nodes || !v->works || (v->rc = get_nodes(g, v->nodes, &got)) != GY_CUDA_SUCCESS || got != v->n)
        return false;
    for (size_t i = 0; i < v->n; i++) {
        int type = -1;
        v->failed = "cuGraphNodeGetType";
        if ((v->rc = get_type(v->nodes[i], &type)) != GY_CUDA_SUCCESS)
            return false;
        v->failed = "a node that spans the graph (memory allocation or free, conditional)";
        v->rc = type;
        if (!cuttable(type))
            return false;
        v->works[i] = does_work(type);
        v->units += v->works[i];
    }
    return true;
}

static bool read_edges(gy_cu_graph g, struct graph_view *v)
{
    v->failed = "cuGraphGetEdges";
    if ((v->rc = get_edges(g, NULL, NULL, NULL, &v->m)) != GY_CUDA_SUCCESS)
        return false;
    size_t m = v->m, got = m, n = v->n;
    gy_cu_graph_node *from = calloc(m + 1, sizeof *from), *to = calloc(m + 1, sizeof *to);
    gy_cu_graph_edge_data *data = calloc(m + 1, sizeof *data);
    struct handle_index *sorted = calloc(n, sizeof *sorted);
    long *src = calloc(m + 1, sizeof *src), *dst = calloc(m + 1, sizeof *dst);
    size_t *fill = calloc(n, sizeof *fill);
    v->first_out = calloc(n + 1, sizeof *v->first_out);
    v->out = calloc(m + 1, sizeof *v->out);
    v->indegree = calloc(n, sizeof *v->indegree);
    bool ok = from && to && data && sorted && src && dst && fill && v->first_out && v->out && v->indegree &&
              (v->rc = get_edges(g, from, to, data, &got)) == GY_CUDA_SUCCESS && got == m;
    if (ok) {
        for (size_t i = 0; i < n; i++)
            sorted[i] = (struct handle_index){v->nodes[i], i};
        qsort(sorted, n, sizeof *sorted, by_handle);
    }
    for (size_t k = 0; ok && k < m; k++) {
        src[k] = index_of(sorted, n, from[k]);
        dst[k] = index_of(sorted, n, to[k]);
        ok = src[k] >= 0 && dst[k] >= 0;
        if (ok)
            v->first_out[src[k] + 1]++, v->indegree[dst[k]]++;
    }
    for (size_t i = 0; ok && i < n; i++)
        v->first_out[i + 1] += v->first_out[i];
    for (size_t k = 0; ok && k < m; k++)
        v->out[v->first_out[src[k]] + fill[src[k]]++] = (size_t)dst[k];
    free(from), free(to), free(data), free(sorted), free(src), free(dst), free(fill);
    return ok;
}

/* part[i] for each node: consecutive slices of a topological order (Kahn's), `want` of them with
 * about as many working nodes each. Returns the number of parts, 0 when it cannot be cut. */
static unsigned assign_parts(struct graph_view *v, unsigned want, unsigned *part)
{
    if (want > v->units)
        want = (unsigned)v->units;
    size_t *queue = calloc(v->n, sizeof *queue);
    if (!queue || want < 2) {
        free(queue);
        return 0;
    }
    size_t head = 0, tail = 0, seen_units = 0;
    for (size_t i = 0; i < v->n; i++)
        if (!v->indegree[i])
            queue[tail++] = i;
    while (head < tail) {
        size_t i = queue[head++];
        size_t at = seen_units < v->units ? seen_units : v->units - 1; /* nodes after the last unit: its part */
        part[i] = (unsigned)(at * want / v->units);
        seen_units += v->works[i];
        for (size_t k = v->first_out[i]; k < v->first_out[i + 1]; k++)
            if (--v->indegree[v->out[k]] == 0)
                queue[tail++] = v->out[k];
    }
    free(queue);
    return tail == v->n ? want : 0; /* every node ordered: no cycle */
}

/* Instantiate part p of e->copy: a clone without the nodes of other parts. */
static bool make_part(struct gy_split_exec *e, struct graph_view *v, const unsigned *part, unsigned p,
                      gy_cu_graph_exec *exec)
{
    const gy_cu_graph_node *nodes = v->nodes;
    size_t n = v->n;
    gy_pfn_graph_clone clone = (gy_pfn_graph_clone)gy_real(GY_FN_GRAPH_CLONE);
    gy_pfn_graph_node_find_in_clone find = (gy_pfn_graph_node_find_in_clone)gy_real(GY_FN_GRAPH_NODE_FIND_IN_CLONE);
    gy_pfn_graph_destroy_node destroy_node = (gy_pfn_graph_destroy_node)gy_real(GY_FN_GRAPH_DESTROY_NODE);
    gy_pfn_graph_destroy destroy = (gy_pfn_graph_destroy)gy_real(GY_FN_GRAPH_DESTROY);
    gy_pfn_graph_instantiate_with_flags instantiate =
        (gy_pfn_graph_instantiate_with_flags)gy_real(GY_FN_GRAPH_INSTANTIATE_WITH_FLAGS);
    gy_cu_graph g = NULL;
    v->failed = "cuGraphClone";
    if (!clone || !find || !destroy_node || !destroy || !instantiate || (v->rc = clone(&g, e->copy)) != GY_CUDA_SUCCESS)
        return false;
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        gy_cu_graph_node there = NULL;
        v->failed = "cuGraphNodeFindInClone";
        if (part[i] != p && (v->rc = find(&there, nodes[i], g)) == GY_CUDA_SUCCESS) {
            v->failed = "cuGraphDestroyNode";
            v->rc = destroy_node(there);
        }
        ok = v->rc == GY_CUDA_SUCCESS;
    }
    v->failed = "cuGraphInstantiateWithFlags (a part)";
    ok = ok && (v->rc = instantiate(exec, g, e->flags)) == GY_CUDA_SUCCESS;
    destroy(g);
    return ok;
}

/* Cut e into `want` parts (lock held); false leaves it whole, *why (and *rc) saying what failed. */
static bool cut(struct gy_split_exec *e, unsigned want, const char **why, gy_cu_result *rc)
{
    struct graph_view v = {0};
    unsigned *part = NULL, parts = 0;
    if (read_nodes(e->copy, &v) && read_edges(e->copy, &v) && (part = calloc(v.n, sizeof *part))) {
        v.failed = "a topological order (fewer than 2 working nodes, or a cycle)";
        v.rc = 0;
        parts = assign_parts(&v, want, part);
    }
    e->parts = parts ? calloc(parts, sizeof *e->parts) : NULL;
    bool ok = e->parts != NULL;
    for (unsigned p = 0; ok && p < parts; p++) {
        ok = make_part(e, &v, part, p, &e->parts[p]);
        e->count = ok ? p + 1 : p;
    }
    *why = v.failed ? v.failed : "out of memory";
    *rc = v.rc;
    view_free(&v);
    free(part);
    return ok;
}

/* After the timed launches (lock held): cut into parts of about US/2 each, or leave it whole. */
static void decide(struct gy_split_exec *e)
{
    double half_ns = (double)gy_client.group * 500.0;
    double want = half_ns > 0 ? e->shortest_ns / half_ns : 0;
    unsigned parts = want > MAX_PARTS ? MAX_PARTS : (unsigned)want + (want > (unsigned)want);
    const char *why = NULL;
    gy_cu_result rc = 0;
    if (parts >= 2 && cut(e, parts, &why, &rc)) {
        e->state = CUT;
        gy_pfn_graph_destroy destroy = (gy_pfn_graph_destroy)gy_real(GY_FN_GRAPH_DESTROY);
        if (destroy)
            destroy(e->copy);
        e->copy = NULL;
        if (gy_config()->verbose)
            fprintf(stderr, "gpuyield: pid %d: a CUDA graph of %.0f us a launch runs in %u parts of about %.0f us "
                    "(time:%lu; GPUYIELD_GRAPH_SPLIT=off launches it whole)\n",
                    (int)getpid(), e->shortest_ns / 1000, e->count, e->shortest_ns / 1000 / e->count, gy_client.group);
        return;
    }
    if (parts >= 2 && gy_config()->verbose)
        fprintf(stderr, "gpuyield: pid %d: a CUDA graph of %.0f us a launch runs whole, beyond time:%lu: cutting it "
                "failed at %s (%d)\n",
                (int)getpid(), e->shortest_ns / 1000, gy_client.group, why, rc);
    else if (gy_config()->verbose)
        fprintf(stderr, "gpuyield: pid %d: a CUDA graph of %.0f us a launch runs whole (within time:%lu / 2)\n",
                (int)getpid(), e->shortest_ns / 1000, gy_client.group);
    give_up(e);
}

/* The end of the last timed launch, if the GPU has reached it (lock held). */
static void read_timing(struct gy_split_exec *e)
{
    gy_pfn_event_query query = (gy_pfn_event_query)gy_real(GY_FN_EVENT_QUERY);
    gy_pfn_event_elapsed elapsed = (gy_pfn_event_elapsed)gy_real(GY_FN_EVENT_ELAPSED);
    if (!elapsed)
        elapsed = (gy_pfn_event_elapsed)gy_real(GY_FN_EVENT_ELAPSED_V1);
    gy_cu_result state = query ? query(e->end) : GY_CUDA_ERROR_NOT_INITIALIZED;
    if (state == GY_CUDA_ERROR_NOT_READY)
        return;
    float ms = -1;
    e->end_pending = false;
    if (state != GY_CUDA_SUCCESS || !elapsed || elapsed(&ms, e->start, e->end) != GY_CUDA_SUCCESS || ms < 0) {
        give_up(e); /* cannot time it: whole, as before */
        return;
    }
    double ns = (double)ms * 1e6;
    e->shortest_ns = e->samples++ ? (ns < e->shortest_ns ? ns : e->shortest_ns) : ns;
}

void gy_graph_split_plan(gy_cu_graph_exec exec, struct gy_graph_plan *plan)
{
    *plan = (struct gy_graph_plan){0};
    if (atomic_load_explicit(&gy_client.captures_in_progress, memory_order_acquire) > 0)
        return; /* it may be launched into a capture: whole, and no event recorded there */
    pthread_mutex_lock(&lock);
    struct gy_split_exec *e = *find_locked(exec);
    if (e && e->state == TIMING && e->end_pending)
        read_timing(e);
    if (e && e->state == TIMING && !e->end_pending && e->samples >= TIMED_LAUNCHES)
        decide(e);
    if (e && e->state == CUT) {
        plan->parts = e->parts;
        plan->count = e->count;
    } else if (e && e->state == TIMING && !e->end_pending) {
        plan->timing = e;
    }
    pthread_mutex_unlock(&lock);
}

static bool record(gy_cu_event *event, gy_cu_stream stream)
{
    gy_pfn_event_create create = (gy_pfn_event_create)gy_real(GY_FN_EVENT_CREATE);
    gy_pfn_event_record rec = (gy_pfn_event_record)gy_real(GY_FN_EVENT_RECORD);
    if (!*event && (!create || create(event, 0) != GY_CUDA_SUCCESS)) {
        *event = NULL;
        return false;
    }
    return rec && rec(*event, stream) == GY_CUDA_SUCCESS;
}

void gy_graph_split_time_start(struct gy_graph_plan *plan, gy_cu_stream stream)
{
    pthread_mutex_lock(&lock);
    struct gy_split_exec *e = plan->timing;
    if (e->state == TIMING && !e->end_pending && !record(&e->start, stream))
        give_up(e);
    pthread_mutex_unlock(&lock);
}

void gy_graph_split_time_end(struct gy_graph_plan *plan, gy_cu_stream stream, bool launched)
{
    pthread_mutex_lock(&lock);
    struct gy_split_exec *e = plan->timing;
    if (e->state == TIMING && !e->end_pending && launched) {
        e->end_pending = record(&e->end, stream);
        if (!e->end_pending)
            give_up(e);
    }
    pthread_mutex_unlock(&lock);
}
