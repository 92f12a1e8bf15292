#include "shared_wait.h"

#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* libtsan records a lock taken by pthread_mutex_timedlock only when it returns 0, not when it
 * returns EOWNERDEAD (the mutex is ours then too): without this note, the next unlock of a mutex
 * recovered that way is reported as "unlock of an unlocked mutex". The annotation is a pair: a
 * post_lock alone ends an ignore that no pre_lock began, and TSan's runtime aborts (CHECK
 * ignore_sync > 0; test a_holder_killed_during_a_timed_lock_hands_the_mutex_over). Only the
 * TSan build has it. */
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
static void note_recovered_by_timedlock(pthread_mutex_t *m)
{
    __tsan_mutex_pre_lock(m, __tsan_mutex_try_lock);
    __tsan_mutex_post_lock(m, __tsan_mutex_try_lock, 0);
}
#else
static void note_recovered_by_timedlock(pthread_mutex_t *m) { (void)m; }
#endif

int gy_mutex_init(struct gy_segment *seg)
{
    pthread_mutexattr_t attr;
    int rc = pthread_mutexattr_init(&attr);
    if (!rc)
        rc = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    if (!rc)
        rc = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    if (!rc)
        rc = pthread_mutex_init(&seg->mutex, &attr);
    pthread_mutexattr_destroy(&attr);
    return rc;
}

/* The kernel marks a robust mutex whose owner died (FUTEX_OWNER_DIED) from the owner's robust
 * list. A futex word naming a thread that does not exist (a corrupted segment) gets no such
 * mark and would block every locker forever: mark it the same way ourselves. */
static void recover_if_owner_missing(struct gy_segment *seg)
{
    _Atomic uint32_t *word = (_Atomic uint32_t *)(void *)&seg->mutex; /* glibc: the futex word comes first */
    uint32_t seen = atomic_load(word);
    pid_t owner = (pid_t)(seen & FUTEX_TID_MASK);
    if (owner == 0 || (seen & FUTEX_OWNER_DIED) || kill(owner, 0) == 0 || errno != ESRCH)
        return;
    uint32_t dead = (seen & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
    if (atomic_compare_exchange_strong(word, &seen, dead))
        syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* The kind glibc stores in a mutex made by gy_mutex_init. Anything else is a corrupted segment:
 * some kinds (robust priority-inheritance) abort inside glibc when the owner is missing. */
static int expected_kind(void)
{
    static _Atomic int kind = -1;
    int k = atomic_load(&kind);
    if (k < 0) {
        struct gy_segment probe;
        gy_mutex_init(&probe);
        k = probe.mutex.__data.__kind;
        pthread_mutex_destroy(&probe.mutex);
        atomic_store(&kind, k);
    }
    return k;
}

bool gy_mutex_sane(const struct gy_segment *seg)
{
    return seg->mutex.__data.__kind == expected_kind();
}

uint64_t gy_lock_bound_ns(const struct gy_segment *seg)
{
    uint64_t bound = seg->drain_timeout_ns;
    if (bound < GY_LOCK_BOUND_MIN_NS)
        return GY_LOCK_BOUND_MIN_NS;
    return bound > GY_LOCK_BOUND_MAX_NS ? GY_LOCK_BOUND_MAX_NS : bound;
}

int gy_lock(struct gy_segment *seg)
{
    if (!gy_mutex_sane(seg)) {
        atomic_fetch_add_explicit(&seg->lock_timeouts, 1, memory_order_relaxed);
        return -1;
    }
    /* trylock first so that a word naming a missing owner is noticed before blocking on it; both
     * calls report a dead owner (EOWNERDEAD) the same way, and sanitizers know both. The wait is
     * bounded: a holder that is stopped (SIGSTOP, a debugger) or a word naming a live thread
     * that never unlocks must not hold everyone else for ever. */
    int rc = pthread_mutex_trylock(&seg->mutex);
    if (rc == EBUSY) {
        recover_if_owner_missing(seg);
        uint64_t bound = gy_lock_bound_ns(seg);
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += (time_t)(bound / 1000000000ull);
        deadline.tv_nsec += (long)(bound % 1000000000ull);
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
        rc = pthread_mutex_timedlock(&seg->mutex, &deadline);
        if (rc == EOWNERDEAD)
            note_recovered_by_timedlock(&seg->mutex);
    }
    if (rc == EOWNERDEAD) {
        pthread_mutex_consistent(&seg->mutex);
        return 1;
    }
    if (rc != 0) { /* ETIMEDOUT; or ENOTRECOVERABLE, EDEADLK from a corrupted word */
        atomic_fetch_add_explicit(&seg->lock_timeouts, 1, memory_order_relaxed);
        return -1;
    }
    return 0;
}

int gy_mutex_holder(const struct gy_segment *seg, int *tid)
{
    const _Atomic uint32_t *word = (const _Atomic uint32_t *)(const void *)&seg->mutex;
    *tid = (int)(atomic_load(word) & FUTEX_TID_MASK);
    if (!*tid)
        return 0;
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/%d/status", *tid);
    FILE *f = fopen(path, "re");
    int pid = 0;
    if (f) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "Tgid: %d", &pid) == 1)
                break;
        fclose(f);
    }
    return pid;
}

void gy_unlock(struct gy_segment *seg)
{
    pthread_mutex_unlock(&seg->mutex);
}

/* FUTEX_WAIT (not _PRIVATE): the word lives in shared memory. Its relative timeout is measured on
 * CLOCK_MONOTONIC. EAGAIN means the sequence already moved. Counted in wake_waiters around it. */
static void futex_wait_counted(struct gy_segment *seg, uint32_t seq, uint64_t timeout_ns)
{
    struct timespec rel = {(time_t)(timeout_ns / 1000000000ull), (long)(timeout_ns % 1000000000ull)};
    atomic_fetch_add_explicit(&seg->wake_waiters, 1, memory_order_seq_cst);
    syscall(SYS_futex, &seg->wake_seq, FUTEX_WAIT, seq, &rel, NULL, 0);
    atomic_fetch_sub_explicit(&seg->wake_waiters, 1, memory_order_seq_cst);
}

uint32_t gy_wake_seq(struct gy_segment *seg)
{
    return atomic_load_explicit(&seg->wake_seq, memory_order_seq_cst);
}

int gy_wait_locked(struct gy_segment *seg, uint32_t seq, uint64_t timeout_ns)
{
    gy_unlock(seg);
    futex_wait_counted(seg, seq, timeout_ns);
    return gy_lock(seg);
}

void gy_wait_unlocked(struct gy_segment *seg, uint32_t seq, uint64_t timeout_ns)
{
    futex_wait_counted(seg, seq, timeout_ns);
}

/* Why skipping the wake is safe: a waiter read seq before it counted itself in, and the kernel
 * compares seq at FUTEX_WAIT. If the waker's load saw no waiter, the count-in comes after it in
 * the seq_cst order, so after the waker's increment too: the wait then finds seq moved and returns. */
void gy_wake_all(struct gy_segment *seg)
{
    atomic_fetch_add_explicit(&seg->wake_seq, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&seg->wake_waiters, memory_order_seq_cst) != 0)
        syscall(SYS_futex, &seg->wake_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
