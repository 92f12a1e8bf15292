/* Auto jobs (GPUYIELD_JOBS=auto, auto_jobs.h).
 *
 * Opening, in the launching thread (the slow path of its first launch after idle): step out of
 * `entered`, take auto_lock, and unless a job the process marked itself already covers the device
 * (then COVERED: counted once), begin a job at our priority on the launch's device
 * (gy_job_enter_on + gy_job_wait_drained: under drain it waits for the lower processes' drain,
 * under corun and partition it returns at once), publish OPEN, step back in.
 *
 * Closing, in the closer thread, off the launch path: it samples `left` (every gated call that
 * reached the driver adds one), `entered` and `stepped_out` each poll. At the first poll that finds
 * them unmoved it synchronizes the process's contexts (the work it queued has completed): its
 * return is when the job's work ended, to within about a poll: the duration guarded records (not
 * the close, idle_us later: a 300 us idle tail on a 1 ms request would hide a quarter of what an
 * arm costs it); if that synchronize had to wait (work ran past the last launch), the idle time
 * starts from its end. Once they have not moved for idle_us more, under auto_lock: store CLOSING
 * (seq_cst), read the counters again (seq_cst), and end the jobs only if nothing moved, else put
 * them back. A launch increments `entered` before it
 * loads the state (gy_auto_enter): either the closer sees it and keeps the job, or the launch
 * sees CLOSING and waits on auto_lock for the answer. */
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "auto_jobs.h"
#include "driver.h"
#include "registry.h"
#include "stderr_line.h"
#include "trace_ranges.h"

#define SLOTS (GY_MAX_DEVICES + 1)
#define WAIT_FOR_OPEN_NS 200000000ull /* an idle closer rechecks its generation this often */

_Atomic int gy_auto_states[SLOTS];
bool gy_auto_enabled;

static pthread_mutex_t auto_lock = PTHREAD_MUTEX_INITIALIZER;
static gy_job jobs[SLOTS];              /* the auto job of each OPEN slot, under auto_lock */
static uint64_t ranges[SLOTS];          /* its NVTX range ("gpuyield auto-job p1 d0"), under auto_lock */
static _Atomic uint32_t opened;         /* futex word: bumped by each opening, wakes the closer */
static uint64_t idle_ns, poll_ns;

static int device_of(int idx) { return idx == 0 ? GY_DEVICE_ALL : idx - 1; }

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

static struct gy_proc_slot *my_slot(void) { return gy_my_slot(&gy_client.shm); }

/* Under auto_lock: jobs of ours covering slot idx that the process marked itself (the hook's own
 * auto jobs there taken off: its device's, and an every-device one). -1: the mutex is wedged. */
static int marked_covering_locked(int idx)
{
    int n = gy_own_jobs_covering(&gy_client.shm, device_of(idx), gy_client.priority);
    if (n < 0)
        return -1;
    n -= atomic_load(&gy_auto_states[idx]) == GY_AUTO_OPEN;
    if (idx > 0)
        n -= atomic_load(&gy_auto_states[0]) == GY_AUTO_OPEN;
    return n;
}

/* Under auto_lock: end slot idx's auto job, counting how long it was open; its work ended at
 * work_end_ns (0: now). */
static void end_job_locked(int idx, uint64_t work_end_ns)
{
    gy_err err;
    uint64_t open_ns = gy_now_ns() - jobs[idx].entered_ns;
    gy_range_end(ranges[idx]); /* before the exit: the range lies inside the job */
    /* Counted before the exit: whoever sees the job ended (a status read, the process itself)
     * then sees its time too. Seen under TSan on a loaded machine: the worker read the counters
     * between the exit and the add, one job short. Taken back if the exit fails. */
    struct gy_proc_slot *slot = my_slot();
    if (slot)
        atomic_fetch_add_explicit(&slot->counters.auto_job_ns, open_ns, memory_order_relaxed);
    if (gy_job_exit_at(&gy_client.shm, &jobs[idx], work_end_ns, &err) != 0 && slot)
        atomic_fetch_sub_explicit(&slot->counters.auto_job_ns, open_ns, memory_order_relaxed);
}

static void wake_closer(void)
{
    atomic_fetch_add_explicit(&opened, 1, memory_order_release);
    syscall(SYS_futex, &opened, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Under auto_lock, slot idx CLOSED: cover it or open its job. False when neither could be done. */
static bool open_locked(int idx)
{
    int marked = marked_covering_locked(idx);
    if (marked > 0) { /* the closer follows it too: when the marked job ends, the slot reopens */
        atomic_store_explicit(&gy_auto_states[idx], GY_AUTO_COVERED, memory_order_seq_cst);
        wake_closer();
        return true;
    }
    gy_err err;
    if (marked < 0 ||
        gy_job_enter_on(&gy_client.shm, gy_client.priority, device_of(idx), 0, &jobs[idx], &err) != 0) {
        static _Atomic int told;
        if (!atomic_exchange(&told, 1))
            gy_say("gpuyield: pid %d cannot open its auto job (GPUYIELD_JOBS=auto): %s; its launches go ahead "
                   "without one until an opening succeeds",
                   (int)getpid(), marked < 0 ? "the segment's mutex is held past its bound" : err.msg);
        return false;
    }
    if (my_slot())
        atomic_fetch_add_explicit(&my_slot()->counters.auto_jobs, 1, memory_order_relaxed);
    /* Counted in, so lower launches already stop; under drain wait for their queues (corun,
     * partition: returns at once, the launch does not wait). */
    gy_job_wait_drained(&gy_client.shm, &jobs[idx], 0);
    /* The job's NVTX range from here, where the opening launch goes ahead (as a worker's range
     * inside `with seg.job(p)` starts after the drained begin), to just before its exit: Nsight
     * shows the auto jobs, and bench/gpu/gating_proof.py checks that no lower kernel overlaps one.
     * A process range: the closer thread ends it. */
    char name[48];
    snprintf(name, sizeof name, "gpuyield auto-job p%d d%d", gy_client.priority, device_of(idx));
    ranges[idx] = gy_range_start(name);
    atomic_store_explicit(&gy_auto_states[idx], GY_AUTO_OPEN, memory_order_seq_cst);
    wake_closer();
    return true;
}

void gy_auto_open_slow(void)
{
    _Atomic int *state = gy_thread_auto;
    int idx = (int)(state - gy_auto_states);
    bool done;
    do {
        gy_client_step_out(); /* our drain helper never waits for an opening; the closer sees it */
        pthread_mutex_lock(&auto_lock);
        done = atomic_load(state) >= GY_AUTO_OPEN || open_locked(idx);
        pthread_mutex_unlock(&auto_lock);
        gy_client_step_in();
        gy_mark_inflight(&gy_client.shm);
        /* A closer that decided while we were stepped out: open again (see the file comment). */
    } while (done && atomic_load_explicit(state, memory_order_seq_cst) < GY_AUTO_OPEN);
}

/* ---- the closer --------------------------------------------------------------------------- */

struct activity {
    uint64_t left, entered, stepped_out;
};

static struct activity sample(void)
{
    struct activity a;
    a.entered = atomic_load_explicit(&gy_client.entered, memory_order_seq_cst);
    a.left = atomic_load_explicit(&gy_client.left, memory_order_seq_cst);
    a.stepped_out = atomic_load_explicit(&gy_client.stepped_out, memory_order_seq_cst);
    return a;
}

/* Nothing half-way, nothing waiting, and no gated call since `since` (its left). */
static bool quiet_since(struct activity now, uint64_t since)
{
    return now.left == since && now.entered == now.left && now.stepped_out == 0;
}

static bool any_held(void)
{
    for (int i = 0; i < SLOTS; i++)
        if (atomic_load_explicit(&gy_auto_states[i], memory_order_acquire) >= GY_AUTO_OPEN)
            return true;
    return false;
}

/* Has the work the process queued completed? Synchronizes every context it launched in, as the
 * drain helper does (and under the same rule: never while a capture is in progress, when
 * cuCtxSynchronize would be illegal: then false, and the process counts as busy). */
static bool synchronize_all(void)
{
    gy_pfn_ctx_push_current push = (gy_pfn_ctx_push_current)gy_real(GY_FN_CTX_PUSH_CURRENT);
    gy_pfn_ctx_pop_current pop = (gy_pfn_ctx_pop_current)gy_real(GY_FN_CTX_POP_CURRENT);
    gy_pfn_ctx_synchronize sync = (gy_pfn_ctx_synchronize)gy_real(GY_FN_CTX_SYNCHRONIZE);
    if (!push || !pop || !sync)
        return true;
    atomic_fetch_add_explicit(&gy_client.helper_synchronizing, 1, memory_order_seq_cst);
    bool capturing = atomic_load_explicit(&gy_client.captures_in_progress, memory_order_seq_cst) != 0;
    if (!capturing) {
        gy_cu_context contexts[GY_MAX_CONTEXTS];
        int devices[GY_MAX_CONTEXTS];
        int n = gy_client_contexts(contexts, devices, GY_MAX_CONTEXTS);
        for (int i = 0; i < n; i++) {
            if (push(contexts[i]) != GY_CUDA_SUCCESS)
                continue; /* destroyed: nothing of it still runs */
            sync();
            gy_cu_context popped;
            pop(&popped);
        }
    }
    atomic_fetch_sub_explicit(&gy_client.helper_synchronizing, 1, memory_order_seq_cst);
    return !capturing;
}

/* Under auto_lock: a marked job that began inside an open auto job now covers it (end ours: it
 * counts once); one that ended leaves its COVERED slot CLOSED (the next launch opens). */
static void follow_marked_jobs_locked(void)
{
    for (int i = 0; i < SLOTS; i++) {
        int state = atomic_load(&gy_auto_states[i]);
        if (state < GY_AUTO_OPEN)
            continue;
        int marked = marked_covering_locked(i);
        if (state == GY_AUTO_OPEN && marked > 0) {
            end_job_locked(i, 0);
            atomic_store_explicit(&gy_auto_states[i], GY_AUTO_COVERED, memory_order_seq_cst);
        } else if (state == GY_AUTO_COVERED && marked == 0) {
            atomic_store_explicit(&gy_auto_states[i], GY_AUTO_CLOSED, memory_order_seq_cst);
        }
    }
}

/* Close every held slot if the process is still quiet since `since` (its work ended at
 * work_end_ns); else leave them. */
static void try_close(uint64_t since, uint64_t work_end_ns)
{
    int before[SLOTS];
    pthread_mutex_lock(&auto_lock);
    for (int i = 0; i < SLOTS; i++) {
        before[i] = atomic_load(&gy_auto_states[i]);
        if (before[i] >= GY_AUTO_OPEN)
            atomic_store_explicit(&gy_auto_states[i], GY_AUTO_CLOSING, memory_order_seq_cst);
    }
    bool quiet = quiet_since(sample(), since);
    for (int i = 0; i < SLOTS; i++) {
        if (before[i] < GY_AUTO_OPEN)
            continue;
        if (quiet && before[i] == GY_AUTO_OPEN)
            end_job_locked(i, work_end_ns);
        atomic_store_explicit(&gy_auto_states[i], quiet ? GY_AUTO_CLOSED : before[i], memory_order_seq_cst);
    }
    pthread_mutex_unlock(&auto_lock);
}

static void *closer_main(void *arg)
{
    uint64_t generation = (uint64_t)(uintptr_t)arg;
    uint64_t since = 0, active_at = 0, polls = 0, work_end = 0;
    bool synced = false; /* the contexts were synchronized with no launch since `since`, at work_end */
    while (atomic_load(&gy_client.generation) == generation) {
        if (!any_held()) {
            uint32_t seen = atomic_load_explicit(&opened, memory_order_acquire);
            if (!any_held()) {
                struct timespec ts = {0, (long)WAIT_FOR_OPEN_NS};
                syscall(SYS_futex, &opened, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
            }
            /* an opening (or the wait's timeout): the activity counts from here, so the first
             * poll may find a burst already launched, and time its end a poll sooner */
            since = sample().left;
            active_at = gy_now_ns();
            synced = false;
            continue;
        }
        sleep_ns(poll_ns);
        if (++polls % 4 == 0) { /* a marked job's begin or end: every few polls (it takes the mutex) */
            pthread_mutex_lock(&auto_lock);
            follow_marked_jobs_locked();
            pthread_mutex_unlock(&auto_lock);
        }
        struct activity a = sample();
        uint64_t now = gy_now_ns();
        if (!quiet_since(a, since)) {
            since = a.left;
            active_at = now;
            synced = false;
            continue;
        }
        if (!synced) { /* the first quiet poll: when does the work queued so far complete? */
            bool complete = synchronize_all();
            uint64_t done = gy_now_ns();
            if (!complete || !quiet_since(sample(), since)) {
                since = ~0ull;
                continue;
            }
            synced = true;
            work_end = done;
            if (done - now > poll_ns) /* it had to wait: idle counts from the work's completion */
                active_at = done;
        }
        if (gy_now_ns() - active_at < idle_ns)
            continue;
        try_close(since, work_end);
    }
    return NULL;
}

void gy_auto_start(void)
{
    const struct gy_hooks_config *config = gy_config();
    gy_auto_enabled = config->auto_jobs;
    if (!gy_auto_enabled)
        return;
    idle_ns = (uint64_t)config->idle_us * 1000u;
    /* A quarter of the idle time, within 50 us .. 50 ms: the job closes at most that late. */
    poll_ns = idle_ns / 4 < 50000u ? 50000u : idle_ns / 4 > 50000000u ? 50000000u : idle_ns / 4;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay with the application's threads */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    uintptr_t generation = (uintptr_t)atomic_load(&gy_client.generation);
    int rc = pthread_create(&thread, &attr, closer_main, (void *)generation);
    pthread_attr_destroy(&attr);
    if (!rc)
        pthread_setname_np(thread, "gpuyield-auto");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc)
        gy_die("gpuyield: pid %d cannot start its auto-job thread (GPUYIELD_JOBS=auto): %s", (int)getpid(),
               strerror(rc));
}

void gy_auto_fork_prepare(void) { pthread_mutex_lock(&auto_lock); }
void gy_auto_fork_parent(void) { pthread_mutex_unlock(&auto_lock); }
void gy_auto_fork_child(void)
{
    pthread_mutex_unlock(&auto_lock);
    for (int i = 0; i < SLOTS; i++)
        atomic_store(&gy_auto_states[i], GY_AUTO_CLOSED);
    memset(jobs, 0, sizeof jobs);
    memset(ranges, 0, sizeof ranges); /* the parent's ranges are the parent's to end */
}
