/* One drain, when a job above our priority begins:
 *   1. wait until no launch is half-way through (entered == left): from then on every launch
 *      of ours sees the gate closed, so nothing new reaches the driver;
 *   2. if a stream capture is in progress, poll (1 ms) until it ends: cuCtxSynchronize is
 *      illegal during a global-mode capture, and captured launches run nothing anyway; the
 *      job's drain timeout bounds how long its begin waits for us meanwhile. New captures
 *      wait for the end of the synchronize (capture_hooks.c);
 *   3. synchronize every context this process launched in, except those on a GPU whose gate is
 *      open to us (no job above us there: a job on GPU 0 does not wait for our queue on GPU 1);
 *   4. acknowledge, saying whether launches slipped in meanwhile (the job ended during the
 *      drain): then our inflight flag stays set. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stderr_line.h"
#include "client.h"
#include "drain_helper.h"
#include "driver.h"

#define REQUEST_POLL_NS 200000000ull /* also bounds how long a stale helper lingers */

static void sleep_ns(long ns)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = ns};
    nanosleep(&ts, NULL);
}

static uint64_t wait_no_launch_halfway(void)
{
    for (;;) {
        uint64_t entered = atomic_load_explicit(&gy_client.entered, memory_order_seq_cst);
        if (atomic_load_explicit(&gy_client.left, memory_order_acquire) == entered)
            return entered;
        sleep_ns(20000);
    }
}

static void synchronize_contexts(void)
{
    gy_pfn_ctx_push_current push = (gy_pfn_ctx_push_current)gy_real(GY_FN_CTX_PUSH_CURRENT);
    gy_pfn_ctx_pop_current pop = (gy_pfn_ctx_pop_current)gy_real(GY_FN_CTX_POP_CURRENT);
    gy_pfn_ctx_synchronize sync = (gy_pfn_ctx_synchronize)gy_real(GY_FN_CTX_SYNCHRONIZE);
    if (!push || !pop || !sync)
        return;
    gy_cu_context contexts[GY_MAX_CONTEXTS];
    int devices[GY_MAX_CONTEXTS];
    int n = gy_client_contexts(contexts, devices, GY_MAX_CONTEXTS);
    for (int i = 0; i < n; i++) {
        /* A job closes its GPU's word before it publishes the epoch we drain for, so every job
         * this drain answers is seen here; one that began since gets a drain of its own. */
        if (devices[i] != GY_DEVICE_ALL && gy_launch_allowed_on(&gy_client.shm, devices[i], gy_client.priority))
            continue;
        if (push(contexts[i]) != GY_CUDA_SUCCESS) {
            gy_client_forget_context(contexts[i]); /* destroyed: nothing of it can still run */
            continue;
        }
        sync();
        gy_cu_context popped;
        pop(&popped);
    }
}

static void drain(uint64_t epoch)
{
    uint64_t launches = wait_no_launch_halfway();
    for (;;) { /* see capture_hooks.c: no capture begins while we synchronize (a count: the auto-job
                * closer synchronizes too) */
        atomic_fetch_add_explicit(&gy_client.helper_synchronizing, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&gy_client.captures_in_progress, memory_order_seq_cst) == 0)
            break;
        atomic_fetch_sub_explicit(&gy_client.helper_synchronizing, 1, memory_order_seq_cst);
        sleep_ns(1000000);
    }
    synchronize_contexts();
    atomic_fetch_sub_explicit(&gy_client.helper_synchronizing, 1, memory_order_seq_cst);
    bool slipped = gy_launch_allowed(&gy_client.shm, gy_client.priority) ||
                   atomic_load_explicit(&gy_client.entered, memory_order_seq_cst) != launches ||
                   atomic_load_explicit(&gy_client.left, memory_order_acquire) != launches;
    gy_drain_ack(&gy_client.shm, epoch, slipped);
    /* A launch that entered between our check and the ack may have seen the flag still set and
     * skipped setting it: set it again for it. */
    struct gy_proc_slot *slot = gy_my_slot(&gy_client.shm);
    if (!slipped && slot && atomic_load_explicit(&gy_client.entered, memory_order_seq_cst) != launches)
        atomic_store_explicit(&slot->inflight, 1, memory_order_seq_cst);
}

/* A raw `rm /dev/shm/<segment>` (not `expcontroller remove`) leaves our mapping unmarked: we
 * would go on launching ungated beside a new segment of the same name. Once a second (one lstat,
 * off the launch path) we look at the name: gone, or leading to another file, we mark our mapping
 * removed as `remove` does, and the next launch of every process still attached stops (client.c).
 * A name that cannot be looked at (-1) never counts as removed. */
#define NAME_CHECK_NS 1000000000ull

static void check_segment_name(void)
{
    if (!gy_client.name_identity_known || gy_segment_removed(&gy_client.shm))
        return;
    dev_t dev;
    ino_t ino;
    int present = gy_segment_identity(gy_client.shm.name, &dev, &ino);
    if (present == 0 || (present == 1 && (dev != gy_client.name_dev || ino != gy_client.name_ino)))
        gy_mark_removed(&gy_client.shm);
}

static void *helper_main(void *arg)
{
    uint64_t generation = (uint64_t)(uintptr_t)arg;
    uint64_t next_name_check = gy_now_ns() + NAME_CHECK_NS;
    while (atomic_load(&gy_client.generation) == generation) {
        uint64_t epoch;
        if (gy_drain_wait_request(&gy_client.shm, REQUEST_POLL_NS, &epoch))
            drain(epoch);
        uint64_t now = gy_now_ns();
        if (now >= next_name_check) {
            next_name_check = now + NAME_CHECK_NS;
            check_segment_name();
        }
    }
    return NULL;
}

void gy_drain_helper_start(void)
{
    /* The helper takes no signals: they stay with the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    uintptr_t generation = (uintptr_t)atomic_load(&gy_client.generation);
    int rc = pthread_create(&thread, &attr, helper_main, (void *)generation);
    pthread_attr_destroy(&attr);
    if (!rc)
        pthread_setname_np(thread, "gpuyield-drain");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        gy_die("gpuyield: pid %d cannot start its drain helper thread: %s", (int)getpid(), strerror(rc));
    }
}
