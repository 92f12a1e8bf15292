/* This process as a client of the controller: its segment and priority, the gate word of each
 * thread's context, blocking, the contexts it launched in, the captures it has in progress, what a
 * forked child forgets. Joining is join.h's, the gate of one launch gate.h's (rooms above). */
#ifndef GY_CLIENT_H
#define GY_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "cuda_abi.h"
#include "driver.h"
#include "gpuyield.h"

enum gy_phase {
    GY_PHASE_UNCONFIGURED = 0,
    GY_PHASE_PASS_THROUGH, /* GPUYIELD_SHM unset: call the driver, nothing else */
    GY_PHASE_JOIN,         /* segment mapped, not registered (a fresh child after fork) */
    GY_PHASE_READY,        /* registered, helper running: every launch is gated */
};

struct gy_client {
    _Atomic int phase;
    gy_shm shm;
    int priority;
    enum gy_queue_mode mode;
    unsigned long group;
    /* Launches that passed the gate (entered) and returned from the driver (left): equal when
     * no launch is half-way through, which the drain helper waits for. */
    _Atomic uint64_t entered, left;
    /* Launches stepped out of `entered` while they wait (a higher job, an auto job's opening):
     * counted before they step out, so that the auto-job closer never takes them for idleness. */
    _Atomic uint64_t stepped_out;
    _Atomic int captures_in_progress; /* cuCtxSynchronize is illegal while one is */
    _Atomic int helper_synchronizing; /* helpers (drain, auto jobs) in cuCtxSynchronize: no capture may begin */
    _Atomic uint64_t captures_begun;  /* tells the queue bound that a capture may have started */
    _Atomic uint64_t generation;      /* bumped in a child after fork: thread-local state is stale */
    /* What the segment's name led to when we opened it (gy_segment_identity), set before the
     * drain helper starts: the helper checks the name once a second (drain_helper.c). */
    bool name_identity_known;
    dev_t name_dev;
    ino_t name_ino;
};

extern struct gy_client gy_client;
extern __thread uint64_t gy_thread_generation __attribute__((tls_model("initial-exec")));
/* The context this thread's last gated call ran in (NULL: none yet, or none current). */
extern __thread gy_cu_context gy_thread_context __attribute__((tls_model("initial-exec")));
/* The gate word of that context's device (the segment's word for no known device), set with
 * gy_thread_context: a launch loads it and nothing else. */
extern __thread _Atomic uint32_t *gy_thread_gate __attribute__((tls_model("initial-exec")));
extern __thread int gy_thread_device __attribute__((tls_model("initial-exec")));
/* GPUYIELD_JOBS=auto: the auto-job state of that device (auto_jobs.h); NULL otherwise. */
extern __thread _Atomic int *gy_thread_auto __attribute__((tls_model("initial-exec")));

/* Record ctx, the thread's current context, in the process's list (it changed, or first use),
 * and find its device's gate word (the UUID's slot, claimed on first use). */
void gy_client_note_context_slow(gy_cu_context ctx);
/* Drop a context the driver no longer knows (destroyed) from the list. */
void gy_client_forget_context(gy_cu_context ctx);
/* A launch that waits steps out of `entered` (the drain helper never waits for it) and back in;
 * stepped_out covers the gap for the auto-job closer (auto_jobs.c). */
static inline void gy_client_step_out(void)
{
    atomic_fetch_add_explicit(&gy_client.stepped_out, 1, memory_order_seq_cst);
    atomic_fetch_sub_explicit(&gy_client.entered, 1, memory_order_seq_cst);
}
static inline void gy_client_step_in(void)
{
    atomic_fetch_add_explicit(&gy_client.entered, 1, memory_order_seq_cst);
    atomic_fetch_sub_explicit(&gy_client.stepped_out, 1, memory_order_seq_cst);
}

/* A launch found the gate closed: step out, block (NVTX "preemption"), step back in. */
void gy_client_block(void);
/* The contexts this process launched in (at most GY_MAX_CONTEXTS are remembered), and each one's
 * device slot (GY_DEVICE_ALL: unknown), for the drain helper. Returns how many (<= max). */
#define GY_MAX_CONTEXTS 32
int gy_client_contexts(gy_cu_context *out, int *devices, int max);

/* On every gated call: a thread may switch contexts (cudaSetDevice, cuCtxPushCurrent) after its
 * first launch, and the drain must synchronize every context launched in. cuCtxGetCurrent reads
 * the driver's thread-local current context; the list is touched only when it changed. */
static inline void gy_client_note_context(void)
{
    gy_pfn_ctx_get_current get_current = (gy_pfn_ctx_get_current)gy_real(GY_FN_CTX_GET_CURRENT);
    gy_cu_context ctx = NULL;
    if (get_current && get_current(&ctx) != GY_CUDA_SUCCESS)
        ctx = NULL;
    if (ctx != gy_thread_context ||
        gy_thread_generation != atomic_load_explicit(&gy_client.generation, memory_order_relaxed))
        gy_client_note_context_slow(ctx);
}

/* Fork, called by join.c's handlers in its lock order: contexts_lock, and the child's reset. */
void gy_client_fork_prepare(void);
void gy_client_fork_parent(void);
void gy_client_fork_child(void);

#endif
