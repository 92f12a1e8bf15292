/* This process's client state: the gate word of each thread's context, blocking, the context
 * list, and what a forked child forgets (it starts unregistered, with no helper and no thread
 * state, and registers itself again at its first launch: join.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stderr_line.h"
#include "client.h"
#include "auto_jobs.h"
#include "driver.h"
#include "trace_ranges.h"


struct gy_client gy_client = {.shm = {.slot = -1}, .generation = 1};
__thread uint64_t gy_thread_generation __attribute__((tls_model("initial-exec")));
__thread gy_cu_context gy_thread_context __attribute__((tls_model("initial-exec")));
__thread _Atomic uint32_t *gy_thread_gate __attribute__((tls_model("initial-exec")));
__thread int gy_thread_device __attribute__((tls_model("initial-exec"))) = GY_DEVICE_ALL;
__thread _Atomic int *gy_thread_auto __attribute__((tls_model("initial-exec")));

static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;
static gy_cu_context contexts[GY_MAX_CONTEXTS];
static int context_devices[GY_MAX_CONTEXTS]; /* each one's device slot, or GY_DEVICE_ALL */
static bool contexts_overflow_told;
static int ncontexts;

static void __attribute__((noreturn)) die(const char *what, const char *detail)
{
    gy_die("gpuyield: pid %d %s: %s", (int)getpid(), what, detail);
}

/* Fork (join.c takes the locks of every room in order): the child has the parent's mapping but
 * not its slot, helper or contexts (CUDA contexts do not survive fork): forget them without
 * touching the parent's slot. */
void gy_client_fork_prepare(void) { pthread_mutex_lock(&contexts_lock); }
void gy_client_fork_parent(void) { pthread_mutex_unlock(&contexts_lock); }
void gy_client_fork_child(void)
{
    pthread_mutex_unlock(&contexts_lock);
    if (atomic_load(&gy_client.phase) == GY_PHASE_READY)
        atomic_store(&gy_client.phase, GY_PHASE_JOIN);
    gy_client.shm.slot = -1;
    atomic_store(&gy_client.entered, 0);
    atomic_store(&gy_client.left, 0);
    atomic_store(&gy_client.stepped_out, 0);
    atomic_store(&gy_client.captures_in_progress, 0);
    atomic_store(&gy_client.helper_synchronizing, 0);
    ncontexts = 0;
    atomic_fetch_add(&gy_client.generation, 1);
}

/* The device slot of the current context's GPU, by UUID (CUDA_VISIBLE_DEVICES renumbers
 * ordinals, never UUIDs); GY_DEVICE_ALL when the driver cannot tell or the table is full. */
static int current_device_slot(void)
{
    gy_pfn_ctx_get_device get_device = (gy_pfn_ctx_get_device)gy_real(GY_FN_CTX_GET_DEVICE);
    gy_pfn_device_get_uuid get_uuid = (gy_pfn_device_get_uuid)gy_real(GY_FN_DEVICE_GET_UUID_V2);
    if (!get_uuid)
        get_uuid = (gy_pfn_device_get_uuid)gy_real(GY_FN_DEVICE_GET_UUID);
    gy_cu_device device;
    gy_cu_uuid uuid;
    if (!get_device || !get_uuid || get_device(&device) != GY_CUDA_SUCCESS ||
        get_uuid(&uuid, device) != GY_CUDA_SUCCESS)
        return GY_DEVICE_ALL;
    gy_err err;
    int slot = gy_device_slot(&gy_client.shm, (const uint8_t *)uuid.bytes, &err);
    if (slot < 0) {
        static _Atomic int told;
        if (!atomic_exchange(&told, 1))
            fprintf(stderr, "gpuyield: pid %d: %s\n", (int)getpid(), err.msg);
        return GY_DEVICE_ALL;
    }
    return slot;
}

void gy_client_note_context_slow(gy_cu_context ctx)
{
    gy_thread_generation = atomic_load_explicit(&gy_client.generation, memory_order_relaxed);
    gy_thread_context = ctx;
    /* The context's device: recorded in our slot before its first launch passes the gate, so
     * that a job on that device finds our in-flight work there. */
    gy_thread_device = ctx ? current_device_slot() : GY_DEVICE_ALL;
    gy_note_launch_device(&gy_client.shm, gy_thread_device);
    gy_thread_gate = gy_gate_word(&gy_client.shm, gy_thread_device);
    gy_thread_auto = gy_auto_state_of(gy_thread_device);
    if (!ctx)
        return;
    pthread_mutex_lock(&contexts_lock);
    bool known = false;
    for (int i = 0; i < ncontexts && !known; i++)
        known = contexts[i] == ctx;
    if (!known && ncontexts < GY_MAX_CONTEXTS) {
        context_devices[ncontexts] = gy_thread_device;
        contexts[ncontexts++] = ctx;
    }
    else if (!known && !contexts_overflow_told) {
        contexts_overflow_told = true;
        fprintf(stderr, "gpuyield: pid %d launches in more than %d live CUDA contexts: drains synchronize only "
                        "the first %d\n",
                (int)getpid(), GY_MAX_CONTEXTS, GY_MAX_CONTEXTS);
    }
    pthread_mutex_unlock(&contexts_lock);
}

void gy_client_forget_context(gy_cu_context ctx)
{
    pthread_mutex_lock(&contexts_lock);
    for (int i = 0; i < ncontexts; i++)
        if (contexts[i] == ctx) {
            contexts[i] = contexts[--ncontexts];
            context_devices[i] = context_devices[ncontexts];
            break;
        }
    pthread_mutex_unlock(&contexts_lock);
}

int gy_client_contexts(gy_cu_context *out, int *devices, int max)
{
    pthread_mutex_lock(&contexts_lock);
    int n = ncontexts < max ? ncontexts : max;
    memcpy(out, contexts, (size_t)n * sizeof *out);
    memcpy(devices, context_devices, (size_t)n * sizeof *devices);
    pthread_mutex_unlock(&contexts_lock);
    return n;
}

void gy_client_block(void)
{
    int allowed_at;
    do {
        gy_client_step_out();
        gy_range_push("preemption");
        gy_wait_until_allowed_on(&gy_client.shm, gy_thread_device, &allowed_at);
        gy_range_pop();
        if (gy_segment_removed(&gy_client.shm))
            die("stops: its segment was removed while it ran (expcontroller remove, its file unlinked from "
                "/dev/shm, or its experiment ended)",
                "no launch goes ahead ungated; restart the worker to join the experiment's new segment");
        gy_client_step_in();
        gy_mark_inflight(&gy_client.shm);
        /* allowed_at is above our priority while this process holds a job above it (begun through
         * the Python extension): its launches then run at that job's level. */
    } while (!gy_word_allows(gy_thread_gate, allowed_at));
}
