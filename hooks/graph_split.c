/* Cutting a lower process's CUDA graphs into parts (graph_split.h says what and why).
 *
 * Each instantiated graph of such a process has an entry (a table keyed by the exec handle, under
 * one lock: graph launches are far rarer than kernel launches). Its life: TIMING (its first
 * launches run whole between two timing events, TIMED_LAUNCHES samples, the shortest kept), then
 * CUT (launched as parts) or WHOLE (short enough, not cuttable, or changed in place).
 *
 * A first cut goes by node count: nothing tells a node's time before it ran. Then each part is
 * timed on PART_TIMED_LAUNCHES launches (an event before and after each part, read only once the
 * GPU passed them) and the graph is cut again by those times (parts_by_time: a long part of several
 * nodes split, short neighbours joined), at most MAX_RECUTS times, until a cut repeats. The final
 * parts' times go to the queue bound with each launch (gy_bound_before's cost), which then holds
 * at most US of parts (or one longer part) however uneven they are. By count alone a 0.7 ms graph of two
 * GEMMs and two tanh kernels was cut into 3 parts (a GEMM with its tanh, a GEMM, a tanh) and the
 * bound, taking each for their 235 us average, let two go ahead of a job (on the H100 the HP's
 * service p90 1.077 of alone against 1.043 beside the same kernels launched eagerly). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "config.h"
#include "graph_split.h"
#include "graph_twin.h"
#include "join.h"

#define BUCKETS 256
#define TIMED_LAUNCHES 3      /* the shortest of 3 whole launches: the first may include lazy loading */
#define PART_TIMED_LAUNCHES 2 /* the shortest of 2 launches in parts, per part */
#define MAX_RECUTS 3
#define SPLIT_PIECES 16 /* a long part of many nodes: split into at most this many slices at once */
#define MAX_PARTS 256

enum split_state { TIMING, CUT, WHOLE };

/* One way the graph is launched: parts[0..count) in order, with the GPU time each took. Shapes
 * replaced by a re-cut are kept (older) until the entry goes: a launch in another thread may
 * still be going through one. */
struct shape {
    gy_cu_graph_exec *parts;
    unsigned count;
    unsigned *node_part; /* the part of each node of the copy (its cuGraphGetNodes order) */
    size_t nodes;
    double *ns;   /* the shortest time of each part over `samples` launches */
    unsigned samples;
    bool known;   /* timing done: ns final, handed to the bound with each launch */
    struct shape *older;
};

struct gy_split_exec {
    gy_cu_graph_exec exec;
    struct gy_split_exec *next;
    gy_cu_graph copy; /* the graph it was instantiated from, while it may be cut (again) */
    unsigned long long flags;
    enum split_state state;
    struct shape *shape;  /* CUT: the parts launched now */
    unsigned recuts;
    /* The timing of one launch (whole while TIMING, else the shape's parts): an event before and
     * after each unit. `pending`: handed to a launch, not read yet. */
    gy_cu_event *starts, *ends;
    unsigned events;      /* the size of starts and ends */
    bool pending, timing_failed;
    unsigned ends_recorded;
    unsigned samples;     /* whole launches timed (TIMING) */
    double shortest_ns;
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

static void free_shape(struct shape *s)
{
    gy_pfn_graph_exec_destroy destroy_exec = (gy_pfn_graph_exec_destroy)gy_real(GY_FN_GRAPH_EXEC_DESTROY);
    for (unsigned i = 0; i < s->count && destroy_exec; i++)
        if (s->parts[i]) {
            gy_graph_twin_destroyed(s->parts[i]);
            destroy_exec(s->parts[i]);
        }
    free(s->parts), free(s->node_part), free(s->ns), free(s);
}

/* The timing events (no launch holds them: pending is false, or the entry goes). */
static void free_events(struct gy_split_exec *e)
{
    gy_pfn_event_destroy destroy_event = (gy_pfn_event_destroy)gy_real(GY_FN_EVENT_DESTROY);
    for (unsigned i = 0; i < e->events && destroy_event; i++) {
        if (e->starts[i])
            destroy_event(e->starts[i]);
        if (e->ends[i])
            destroy_event(e->ends[i]);
    }
    free(e->starts), free(e->ends);
    e->starts = e->ends = NULL;
    e->events = 0;
    e->pending = false;
}

static void drop_copy(struct gy_split_exec *e)
{
    gy_pfn_graph_destroy destroy_graph = (gy_pfn_graph_destroy)gy_real(GY_FN_GRAPH_DESTROY);
    if (e->copy && destroy_graph)
        destroy_graph(e->copy);
    e->copy = NULL;
}

/* Drop what the entry holds: shapes, copy, events (the entry itself stays). */
static void release(struct gy_split_exec *e)
{
    while (e->shape) {
        struct shape *older = e->shape->older;
        free_shape(e->shape);
        e->shape = older;
    }
    drop_copy(e);
    free_events(e);
}

/* Launched whole from now on (lock held). */
static void give_up(struct gy_split_exec *e)
{
    release(e);
    e->state = WHOLE;
}

/* Timing events for `units` units (lock held; none pending). */
static bool size_events(struct gy_split_exec *e, unsigned units)
{
    if (e->events == units)
        return true;
    free_events(e);
    e->starts = calloc(units, sizeof *e->starts);
    e->ends = calloc(units, sizeof *e->ends);
    if (!e->starts || !e->ends) {
        free(e->starts), free(e->ends);
        e->starts = e->ends = NULL;
        return false;
    }
    e->events = units;
    return true;
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

/* A topological order of the graph's nodes (Kahn's, from the nodes' own order: the same order for
 * the same copy each time). False on a cycle. */
static bool topological_order(struct graph_view *v, size_t *order)
{
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < v->n; i++)
        if (!v->indegree[i])
            order[tail++] = i;
    while (head < tail) {
        size_t i = order[head++];
        for (size_t k = v->first_out[i]; k < v->first_out[i + 1]; k++)
            if (--v->indegree[v->out[k]] == 0)
                order[tail++] = v->out[k];
    }
    return tail == v->n;
}

/* The first cut: `want` consecutive slices of the order with about as many working nodes each.
 * Returns the number of parts. */
static unsigned parts_by_count(const struct graph_view *v, const size_t *order, unsigned want, unsigned *part)
{
    if (want > v->units)
        want = (unsigned)v->units;
    size_t seen_units = 0;
    for (size_t k = 0; k < v->n; k++) {
        size_t i = order[k];
        size_t at = seen_units < v->units ? seen_units : v->units - 1; /* nodes after the last unit: its part */
        part[i] = (unsigned)(at * want / v->units);
        seen_units += v->works[i];
    }
    return want;
}

/* A cut by time, from the parts of `timed` (consecutive slices of the same order, each timed): a
 * part longer than half_ns with several working nodes is split, each of its working nodes alone
 * (up to SPLIT_PIECES slices by count), its times to be learned on the next launches; consecutive
 * parts of known time are joined while they stay within half_ns. A part may start only at a
 * working node. Returns the number of parts. */
static unsigned parts_by_time(const struct graph_view *v, const size_t *order, const struct shape *timed,
                              double half_ns, unsigned *part)
{
    unsigned *works_in = calloc(timed->count, sizeof *works_in);
    if (!works_in)
        return 0;
    for (size_t i = 0; i < v->n; i++)
        works_in[timed->node_part[i]] += v->works[i];
    unsigned p = 0, q = UINT32_MAX, pieces = 1, piece = 0;
    bool started = false;
    size_t seen = 0;      /* working nodes of old part q seen */
    double in_part = 0;   /* the known time gathered in part p; half_ns: closed (a split's slice) */
    for (size_t k = 0; k < v->n; k++) {
        size_t i = order[k];
        if (timed->node_part[i] != q) { /* the first node of the next old part */
            q = timed->node_part[i];
            seen = 0;
            piece = 0;
            bool split = timed->ns[q] > half_ns && works_in[q] >= 2;
            pieces = split ? (works_in[q] < SPLIT_PIECES ? works_in[q] : SPLIT_PIECES) : 1;
            bool join = !split && started && in_part + timed->ns[q] <= half_ns;
            if (started && !join && p + 1 < MAX_PARTS)
                p++;
            in_part = split ? half_ns : join ? in_part + timed->ns[q] : timed->ns[q];
            started = true;
        }
        if (pieces > 1 && v->works[i]) {
            unsigned want = (unsigned)(seen * pieces / works_in[q]);
            if (want > piece && p + 1 < MAX_PARTS)
                p++;
            piece = want;
        }
        part[i] = p;
        seen += v->works[i];
    }
    free(works_in);
    return p + 1;
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
    if (ok)
        gy_graph_twin_instantiated(*exec, g, e->flags); /* each part may have twins of its own */
    destroy(g);
    return ok;
}

/* A new shape for e (lock held): by count into `want` parts when `timed` is NULL, else by the
 * times of `timed`. NULL when it cannot be cut, or (by time) when the cut is `timed`'s own or one
 * part: *why and *rc say what failed, NULL for no failure. */
static struct shape *cut(struct gy_split_exec *e, unsigned want, const struct shape *timed, double half_ns,
                         const char **why, gy_cu_result *rc)
{
    struct graph_view v = {0};
    struct shape *s = calloc(1, sizeof *s);
    size_t *order = NULL;
    unsigned parts = 0;
    if (s && read_nodes(e->copy, &v) && read_edges(e->copy, &v) && (order = calloc(v.n, sizeof *order)) &&
        (s->node_part = calloc(v.n, sizeof *s->node_part))) {
        v.failed = "a topological order (fewer than 2 working nodes, or a cycle)";
        v.rc = 0;
        s->nodes = v.n;
        if (v.units >= 2 && topological_order(&v, order)) {
            if (!timed)
                parts = parts_by_count(&v, order, want, s->node_part);
            else if (timed->nodes == v.n)
                parts = parts_by_time(&v, order, timed, half_ns, s->node_part);
        }
    }
    bool same = timed && parts == timed->count && !memcmp(s->node_part, timed->node_part, v.n * sizeof *s->node_part);
    if (timed && (parts < 2 || same))
        v.failed = NULL, parts = 0; /* nothing better to cut to: not a failure */
    bool ok = parts >= 2 && (s->parts = calloc(parts, sizeof *s->parts)) && (s->ns = calloc(parts, sizeof *s->ns));
    for (unsigned p = 0; ok && p < parts; p++) {
        ok = make_part(e, &v, s->node_part, p, &s->parts[p]);
        s->count = ok ? p + 1 : p;
    }
    *why = v.failed ? v.failed : parts ? "out of memory" : NULL;
    *rc = v.rc;
    view_free(&v);
    free(order);
    if (!ok && s) {
        free_shape(s);
        s = NULL;
    }
    return s;
}

static double half_bound_ns(void) { return (double)gy_client.group * 500.0; }

static void describe(const struct gy_split_exec *e, const char *what)
{
    const struct shape *s = e->shape;
    double least = s->ns[0], most = s->ns[0];
    for (unsigned i = 1; i < s->count; i++)
        least = s->ns[i] < least ? s->ns[i] : least, most = s->ns[i] > most ? s->ns[i] : most;
    fprintf(stderr, "gpuyield: pid %d: a CUDA graph of %.0f us a launch %s %u parts of %.0f-%.0f us (time:%lu; "
            "GPUYIELD_GRAPH_SPLIT=off launches it whole)\n",
            (int)getpid(), e->shortest_ns / 1000, what, s->count, least / 1000, most / 1000, gy_client.group);
}

/* After the timed whole launches (lock held): cut into parts of about US/2 by count, or leave it whole. */
static void decide(struct gy_split_exec *e)
{
    double half_ns = half_bound_ns();
    double want = half_ns > 0 ? e->shortest_ns / half_ns : 0;
    unsigned parts = want > MAX_PARTS ? MAX_PARTS : (unsigned)want + (want > (unsigned)want);
    const char *why = NULL;
    gy_cu_result rc = 0;
    struct shape *s = parts >= 2 ? cut(e, parts, NULL, half_ns, &why, &rc) : NULL;
    if (s) {
        e->state = CUT;
        e->shape = s;
        if (gy_config()->verbose)
            fprintf(stderr, "gpuyield: pid %d: a CUDA graph of %.0f us a launch is cut into %u parts of about %.0f us "
                    "by node count, to be timed (time:%lu)\n",
                    (int)getpid(), e->shortest_ns / 1000, s->count, e->shortest_ns / 1000 / s->count, gy_client.group);
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

/* The parts of the shape in force are timed (lock held): cut again by those times, or keep them
 * for good, their times known to the bound. */
static void recut_or_settle(struct gy_split_exec *e)
{
    e->shape->known = true;
    const char *why = NULL;
    gy_cu_result rc = 0;
    struct shape *s = e->recuts < MAX_RECUTS ? cut(e, 0, e->shape, half_bound_ns(), &why, &rc) : NULL;
    if (s) {
        e->recuts++;
        s->older = e->shape;
        e->shape = s;
        return; /* timed in turn */
    }
    if (why && gy_config()->verbose)
        fprintf(stderr, "gpuyield: pid %d: a CUDA graph's parts stay as they are: cutting them again by time failed "
                "at %s (%d)\n",
                (int)getpid(), why, rc);
    drop_copy(e);
    free_events(e);
    if (gy_config()->verbose)
        describe(e, "runs in");
}

/* The last timed launch, if the GPU has passed it (lock held). */
static void read_timing(struct gy_split_exec *e)
{
    unsigned units = e->state == CUT ? e->shape->count : 1;
    gy_pfn_event_query query = (gy_pfn_event_query)gy_real(GY_FN_EVENT_QUERY);
    gy_pfn_event_elapsed elapsed = (gy_pfn_event_elapsed)gy_real(GY_FN_EVENT_ELAPSED);
    if (!elapsed)
        elapsed = (gy_pfn_event_elapsed)gy_real(GY_FN_EVENT_ELAPSED_V1);
    if (!e->timing_failed && e->ends_recorded < units)
        return; /* still being launched (by another thread): its events are not all recorded yet */
    bool complete = !e->timing_failed;
    gy_cu_result state = complete && query ? query(e->ends[units - 1]) : GY_CUDA_SUCCESS;
    if (state == GY_CUDA_ERROR_NOT_READY)
        return;
    e->pending = false;
    if (!complete)
        return; /* a launch that stopped early (an error): not a sample */
    bool ok = state == GY_CUDA_SUCCESS && elapsed;
    for (unsigned i = 0; ok && i < units; i++) {
        float ms = -1;
        ok = elapsed(&ms, e->starts[i], e->ends[i]) == GY_CUDA_SUCCESS && ms >= 0;
        double ns = (double)ms * 1e6;
        if (!ok)
            break;
        if (e->state == TIMING)
            e->shortest_ns = e->samples++ ? (ns < e->shortest_ns ? ns : e->shortest_ns) : ns;
        else
            e->shape->ns[i] = e->shape->samples ? (ns < e->shape->ns[i] ? ns : e->shape->ns[i]) : ns;
    }
    if (ok && e->state == CUT)
        e->shape->samples++;
    if (!ok && e->state == TIMING) {
        give_up(e); /* cannot time it: whole, as before */
    } else if (!ok) { /* parts that cannot be timed: kept as they are, their times unknown to the bound */
        drop_copy(e);
        free_events(e);
    }
}

/* Still timing a shape (lock held)? */
static bool timing(const struct gy_split_exec *e) { return e->state == TIMING || (e->state == CUT && e->copy); }

void gy_graph_split_plan(gy_cu_graph_exec exec, struct gy_graph_plan *plan)
{
    *plan = (struct gy_graph_plan){0};
    if (atomic_load_explicit(&gy_client.captures_in_progress, memory_order_acquire) > 0)
        return; /* it may be launched into a capture: whole, and no event recorded there */
    pthread_mutex_lock(&lock);
    struct gy_split_exec *e = *find_locked(exec);
    if (e && e->pending)
        read_timing(e);
    if (e && e->state == TIMING && !e->pending && e->samples >= TIMED_LAUNCHES)
        decide(e);
    if (e && e->state == CUT && e->copy && !e->pending && e->shape->samples >= PART_TIMED_LAUNCHES)
        recut_or_settle(e);
    if (e && e->state == CUT) {
        plan->parts = e->shape->parts;
        plan->count = e->shape->count;
        plan->part_ns = e->shape->known ? e->shape->ns : NULL;
    }
    if (e && timing(e) && !e->pending && size_events(e, e->state == CUT ? e->shape->count : 1)) {
        e->pending = true;
        e->timing_failed = false;
        e->ends_recorded = 0;
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

/* The timing handed to this launch is still wanted: not given up or replaced meanwhile. */
static bool still_timing(const struct gy_split_exec *e, unsigned unit)
{
    return timing(e) && e->pending && !e->timing_failed && unit < e->events;
}

void gy_graph_split_time_start(struct gy_graph_plan *plan, unsigned unit, gy_cu_stream stream)
{
    pthread_mutex_lock(&lock);
    struct gy_split_exec *e = plan->timing;
    if (still_timing(e, unit) && !record(&e->starts[unit], stream))
        e->timing_failed = true;
    pthread_mutex_unlock(&lock);
}

void gy_graph_split_time_end(struct gy_graph_plan *plan, unsigned unit, gy_cu_stream stream, bool launched)
{
    pthread_mutex_lock(&lock);
    struct gy_split_exec *e = plan->timing;
    if (still_timing(e, unit)) {
        if (launched && record(&e->ends[unit], stream))
            e->ends_recorded++;
        else
            e->timing_failed = true;
    }
    pthread_mutex_unlock(&lock);
}
