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
    /* Launches that passed the gate; the ones that returned from the driver are counted per
     * thread (struct gy_launch_thread). Equal sums: no launch is half-way through, which the
     * drain helper waits for. */
    _Atomic uint64_t entered;
    _Atomic int captures_in_progress; /* cuCtxSynchronize is illegal while one is */
    _Atomic int helper_synchronizing; /* the drain helper is in cuCtxSynchronize: no capture may begin */
    _Atomic uint64_t captures_begun;  /* tells the queue bound that a capture may have started */
    _Atomic uint64_t generation;      /* bumped in a child after fork: thread-local state is stale */
};

/* A launching thread's count of launches that returned from the driver. Only its owner thread
 * writes it, with a plain store: any locked instruction or fence right after the driver call
 * waits until the driver's uncached doorbell write has left the core, which is where the hook's
 * cost hid on the H100 (bench/results/2026-11-23-launch-cost). Records are never freed: a thread
 * that exits gives its record up for the next new thread, its count kept in the sum. */
struct gy_launch_thread {
    _Atomic uint64_t left;
    _Atomic int owned;
    struct gy_launch_thread *next;
};

extern struct gy_client gy_client;
extern __thread struct gy_launch_thread *gy_thread_launches __attribute__((tls_model("initial-exec")));
extern __thread uint64_t gy_thread_generation __attribute__((tls_model("initial-exec")));
/* The context this thread's last gated call ran in (NULL: none yet, or none current). */
extern __thread gy_cu_context gy_thread_context __attribute__((tls_model("initial-exec")));

/* First use, or first use after fork: read the configuration, join and register, start the
 * drain helper. Exits the process (status 2, one line) if that fails. True when gated. */
bool gy_client_join_slow(void);
/* Record ctx, the thread's current context, in the process's list (it changed, or first use). */
void gy_client_note_context_slow(gy_cu_context ctx);
/* Drop a context the driver no longer knows (destroyed) from the list. */
void gy_client_forget_context(gy_cu_context ctx);
/* This thread's record, claimed or made at its first gated call (exits the process if out of memory). */
struct gy_launch_thread *gy_client_launch_thread_slow(void);
/* The sum over every thread of launches that returned from the driver. */
uint64_t gy_client_left(void);
/* A launch found the gate closed: step out, block (NVTX "preemption"), step back in. */
void gy_client_block(void);
/* The contexts this process launched in, for the drain helper. Returns how many (<= max). */
int gy_client_contexts(gy_cu_context *out, int max);

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

/* What a gated call counts in the slot: kernels and graphs apart; copies only gate. */
enum gy_unit { GY_UNIT_COPY, GY_UNIT_KERNEL, GY_UNIT_GRAPH };

/* The gate, all before the driver call. seq_cst on `entered` pairs with the job's seq_cst store
 * of active_levels: either the helper sees this launch in `entered`, or this launch sees the gate
 * closed. The slot counter is bumped here too (taken back if the driver fails): a locked
 * instruction costs little before the driver call and a lot after it (see gy_launch_thread). */
static inline _Atomic uint64_t *gy_gate_enter(enum gy_unit unit)
{
    if (__builtin_expect(!gy_thread_launches, 0))
        gy_client_launch_thread_slow();
    atomic_fetch_add_explicit(&gy_client.entered, 1, memory_order_seq_cst);
    gy_mark_inflight(&gy_client.shm);
    if (!gy_launch_allowed(&gy_client.shm, gy_client.priority))
        gy_client_block();
    struct gy_proc_slot *slot = gy_my_slot(&gy_client.shm);
    if (unit == GY_UNIT_COPY || !slot)
        return NULL;
    _Atomic uint64_t *counter = unit == GY_UNIT_GRAPH ? &slot->counters.graph_launches : &slot->counters.launches;
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
    return counter;
}

/* After the driver call: one plain store on the fast path, no locked instruction. */
static inline void gy_gate_leave(_Atomic uint64_t *counter, bool succeeded)
{
    struct gy_launch_thread *self = gy_thread_launches;
    atomic_store_explicit(&self->left, atomic_load_explicit(&self->left, memory_order_relaxed) + 1,
                          memory_order_release);
    if (__builtin_expect(!succeeded && counter != NULL, 0))
        atomic_fetch_sub_explicit(counter, 1, memory_order_relaxed);
}

#endif
