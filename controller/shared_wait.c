#include "shared_wait.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

int gy_lock(struct gy_segment *seg)
{
    /* trylock first so that a word naming a missing owner is noticed before blocking on it; both
     * calls report a dead owner (EOWNERDEAD) the same way, and sanitizers know both. */
    int rc = pthread_mutex_trylock(&seg->mutex);
    if (rc == EBUSY) {
        recover_if_owner_missing(seg);
        rc = pthread_mutex_lock(&seg->mutex);
    }
    if (rc == EOWNERDEAD) {
        pthread_mutex_consistent(&seg->mutex);
        return 1;
    }
    return 0;
}

void gy_unlock(struct gy_segment *seg)
{
    pthread_mutex_unlock(&seg->mutex);
}

uint32_t gy_wake_seq(struct gy_segment *seg)
{
    return atomic_load_explicit(&seg->wake_seq, memory_order_seq_cst);
}

int gy_wait_locked(struct gy_segment *seg, uint32_t seq, uint64_t timeout_ns)
{
    struct timespec rel = {(time_t)(timeout_ns / 1000000000ull), (long)(timeout_ns % 1000000000ull)};
    gy_unlock(seg);
    /* FUTEX_WAIT (not _PRIVATE): the word lives in shared memory. Its relative timeout is
     * measured on CLOCK_MONOTONIC. EAGAIN means the sequence already moved. */
    syscall(SYS_futex, &seg->wake_seq, FUTEX_WAIT, seq, &rel, NULL, 0);
    return gy_lock(seg);
}

void gy_wake_all(struct gy_segment *seg)
{
    atomic_fetch_add_explicit(&seg->wake_seq, 1, memory_order_seq_cst);
    syscall(SYS_futex, &seg->wake_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
