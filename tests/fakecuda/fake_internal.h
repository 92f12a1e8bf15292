/* Internals of the fake driver.
 *
 * A GPU simulated by time, with no threads of its own: a kernel launched at time `now` on a
 * stream starts at max(now, the stream's tail, the device's tail) and ends start + duration (on
 * a green context's stream: max(now, the stream's tail), its SMs being its own);
 * synchronizing sleeps until the relevant tail. The device tail is per process unless
 * FAKECUDA_DEVICE_FILE names a file that several processes map (then they contend as on a real
 * GPU). FAKECUDA_LOG appends one line per executed kernel and one per illegal call. */
#ifndef FAKE_INTERNAL_H
#define FAKE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "fakecuda.h"

#define FK_EXPORT __attribute__((visibility("default")))

struct CUctx_st {
    int id;
    int device; /* physical index (devices.c) */
    struct CUgreenCtx_st *green; /* cuCtxFromGreenCtx's view of a green context, else NULL */
};

struct CUfunc_st {
    uint64_t duration_ns;
    char name[64];
};

struct CUmod_st {
    int unused;
};

/* A graph is nodes and edges (graphs.c); captured work is a chain of nodes. An instantiated graph
 * runs as one unit: the sum of its nodes' durations. */
struct CUgraphNode_st {
    struct CUgraph_st *graph;
    CUgraphNodeType type;
    uint64_t ns;
    unsigned kernels;                /* kernels it runs: 1, a child graph's, 0 for an event node */
    const struct CUgraphNode_st *of; /* the node it was cloned from, or NULL */
    /* A kernel node's launch: its context (NULL: the one it was captured or added in) and whether
     * it holds a CUkernel (captured kernel nodes do, as on the real driver). */
    CUcontext ctx;
    bool has_kern;
};

struct fk_edge {
    struct CUgraphNode_st *from, *to;
    unsigned char type; /* 0: full dependency; else programmatic (non-default edge data) */
};

struct CUgraph_st {
    struct CUgraphNode_st **nodes;
    unsigned n, cap;
    struct fk_edge *edges;
    unsigned n_edges, edges_cap;
};

/* green: every kernel node of the graph named this green context's view: its launch runs inside
 * those SMs on any stream. Otherwise it runs on the whole device even on a green stream (what the
 * H100 and the H200 do with a graph instantiated in the primary context). */
struct CUgraphExec_st {
    uint64_t total_ns;
    unsigned kernels, nodes;
    struct CUgreenCtx_st *green;
};

/* Append a node to a capture, after the node captured before it (fk_lock held). */
void fk_capture_node_locked(struct CUgraph_st *graph, CUgraphNodeType type, uint64_t ns, unsigned kernels);

/* A green context: a share of the SMs; its streams are logged with ids from FK_GREEN_STREAM_IDS. */
struct CUgreenCtx_st {
    unsigned sms;
    struct CUctx_st as_ctx; /* what cuCtxFromGreenCtx gives */
};
#define FK_GREEN_STREAM_IDS 1000000ull
#define FK_DEVICE_SMS 132u
#define FK_SM_GRANULARITY 8u

struct CUstream_st {
    uint64_t id;
    CUcontext ctx;  /* NULL for the legacy and per-thread streams: part of every context */
    bool non_blocking; /* not ordered with the legacy stream (CU_STREAM_NON_BLOCKING, green streams) */
    struct CUgreenCtx_st *green; /* the green context it belongs to, or NULL */
    uint64_t tail;  /* when its last kernel ends */
    /* End times of kernels not yet known to have ended (increasing): a queue that drops ended ones. */
    uint64_t *ends;
    unsigned ends_head, ends_len, ends_cap;
    bool capturing;
    struct CUgraph_st *capture; /* the graph being captured into */
    bool destroyed;
};

struct CUevent_st {
    uint64_t time;       /* when the stream reached it: its tail, or the record's time if idle */
    bool captured;       /* recorded into a capture: not a point in time */
    unsigned flags;
};

enum fk_kind { FK_KERNEL, FK_EX, FK_COOP, FK_GRAPH, FK_COPY };

/* The one lock of the fake driver: guards every stream, event and context list. */
extern pthread_mutex_t fk_lock;

uint64_t fk_now_ns(void);
void fk_sleep_until(uint64_t t_ns);
/* Reserve [start, end) on the device after not_before; returns start. Lock-free across processes. */
uint64_t fk_device_reserve(uint64_t not_before, uint64_t duration_ns);
/* green_sms: the SMs of the stream's green context, 0 for another stream (the line's last field). */
void fk_log_kernel(uint64_t stream_id, uint64_t submit, uint64_t start, uint64_t end, unsigned outstanding,
                   enum fk_kind kind, const char *name, unsigned green_sms);
void fk_log_violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Map a stream handle (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a created stream) to its
 * state; per_thread_default: whether NULL means the per-thread stream (the _ptsz entry points).
 * Call with fk_lock held. */
struct CUstream_st *fk_stream_locked(CUstream handle, bool per_thread_default);
/* The current context of this thread, or NULL. */
CUcontext fk_current_ctx(void);

/* Devices (devices.c). CUdevice is the ordinal, as in the real driver. */
#define FK_MAX_DEVICES 32
int fk_device_count(void);
bool fk_device_valid(CUdevice dev);
int fk_physical_device(CUdevice dev); /* -1 when not valid */
CUcontext fk_primary_ctx(CUdevice dev);
bool fk_is_primary(CUcontext ctx);
/* Is any stream of this process capturing? (fk_lock held) */
bool fk_any_capturing_locked(void);
/* When work put on s now may start at the earliest: its tail, and under the legacy stream's
 * rules the legacy stream's tail (a blocking stream) or every blocking stream's (the legacy one). */
uint64_t fk_ordered_tail_locked(struct CUstream_st *s);
/* Run one unit of work on a stream now (fk_lock held): logs it, returns CUDA_SUCCESS. It runs
 * inside the stream's green context's SMs, if any; fk_submit_in_locked: inside `green`'s (NULL:
 * the whole device), whatever the stream. */
CUresult fk_submit_locked(struct CUstream_st *s, uint64_t duration_ns, enum fk_kind kind, const char *name);
CUresult fk_submit_in_locked(struct CUstream_st *s, const struct CUgreenCtx_st *green, uint64_t duration_ns,
                             enum fk_kind kind, const char *name);

#endif
