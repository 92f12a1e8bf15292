/* See self_pid.h. */
#include "self_pid.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static _Atomic int cached_pid;

static void forget_in_child(void)
{
    atomic_store_explicit(&cached_pid, 0, memory_order_relaxed);
}

/* At load time, before any other fork handler of ours (the hook installs its own at its first
 * launch): child handlers run in the order they were registered, so no child handler of ours
 * can see the parent's pid. */
__attribute__((constructor)) static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, forget_in_child);
}

int gy_self_pid(void)
{
    int pid = atomic_load_explicit(&cached_pid, memory_order_relaxed);
    if (pid > 0)
        return pid;
    pid = (int)getpid();
    atomic_store_explicit(&cached_pid, pid, memory_order_relaxed);
    return pid;
}
