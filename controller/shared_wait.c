#include "shared_wait.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
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

int gy_lock(struct gy_segment *seg)
{
    int rc = pthread_mutex_lock(&seg->mutex);
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

void gy_wait_locked(struct gy_segment *seg, uint32_t seq, uint64_t timeout_ns)
{
    struct timespec rel = {(time_t)(timeout_ns / 1000000000ull), (long)(timeout_ns % 1000000000ull)};
    gy_unlock(seg);
    /* FUTEX_WAIT (not _PRIVATE): the word lives in shared memory. Its relative timeout is
     * measured on CLOCK_MONOTONIC. EAGAIN means the sequence already moved. */
    syscall(SYS_futex, &seg->wake_seq, FUTEX_WAIT, seq, &rel, NULL, 0);
    gy_lock(seg);
}

void gy_wake_all(struct gy_segment *seg)
{
    atomic_fetch_add_explicit(&seg->wake_seq, 1, memory_order_seq_cst);
    syscall(SYS_futex, &seg->wake_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
