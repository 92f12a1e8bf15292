/* This process as a client of the controller: joining the segment, the launch gate with its
 * entered/left pair, the contexts it launched in, the captures it has in progress, fork. */
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
    _Atomic int captures_in_progress; /* cuCtxSynchronize is illegal while one is */
    _Atomic int helper_synchronizing; /* the drain helper is in cuCtxSynchronize: no capture may begin */
    _Atomic uint64_t captures_begun;  /* tells the queue bound that a capture may have started */
    _Atomic uint64_t generation;      /* bumped in a child after fork: thread-local state is stale */
};

extern struct gy_client gy_client;
extern __thread uint64_t gy_thread_generation __attribute__((tls_model("initial-exec")));
/* The context this thread's last gated call ran in (NULL: none yet, or none current). */
extern __thread gy_cu_context gy_thread_context __attribute__((tls_model("initial-exec")));
/* The gate word of that context's device (the segment's word for no known device), set with
 * gy_thread_context: a launch loads it and nothing else. */
extern __thread _Atomic uint32_t *gy_thread_gate __attribute__((tls_model("initial-exec")));
extern __thread int gy_thread_device __attribute__((tls_model("initial-exec")));

/* First use, or first use after fork: read the configuration, join and register, start the
 * drain helper. Exits the process (status 2, one line) if that fails. True when gated. */
bool gy_client_join_slow(void);
/* Record ctx, the thread's current context, in the process's list (it changed, or first use),
 * and find its device's gate word (the UUID's slot, claimed on first use). */
void gy_client_note_context_slow(gy_cu_context ctx);
/* Drop a context the driver no longer knows (destroyed) from the list. */
void gy_client_forget_context(gy_cu_context ctx);
/* A launch found the gate closed: step out, block (NVTX "preemption"), step back in. */
void gy_client_block(void);
/* The contexts this process launched in (at most GY_MAX_CONTEXTS are remembered), and each one's
 * device slot (GY_DEVICE_ALL: unknown), for the drain helper. Returns how many (<= max). */
#define GY_MAX_CONTEXTS 32
int gy_client_contexts(gy_cu_context *out, int *devices, int max);

static inline bool gy_client_gated(void)
{
    int phase = atomic_load_explicit(&gy_client.phase, memory_order_acquire);
    if (phase == GY_PHASE_READY)
        return true;
    if (phase == GY_PHASE_PASS_THROUGH)
        return false;
    return gy_client_join_slow();
}

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

/* The gate, on the device of the thread's context (gy_client_note_context first). seq_cst on
 * `entered` pairs with the job's seq_cst store of the gate word: either the helper sees this
 * launch in `entered`, or this launch sees the gate closed. */
static inline void gy_gate_enter(void)
{
    atomic_fetch_add_explicit(&gy_client.entered, 1, memory_order_seq_cst);
    gy_mark_inflight(&gy_client.shm);
    if (!gy_word_allows(gy_thread_gate, gy_client.priority))
        gy_client_block();
}

static inline void gy_gate_leave(bool counted, bool graph)
{
    atomic_fetch_add_explicit(&gy_client.left, 1, memory_order_release);
    struct gy_proc_slot *slot = gy_my_slot(&gy_client.shm);
    if (counted && slot)
        atomic_fetch_add_explicit(graph ? &slot->counters.graph_launches : &slot->counters.launches, 1,
                                  memory_order_relaxed);
}

#endif
