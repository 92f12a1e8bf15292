/* Joining the segment (join.h), the fork handlers and the release at exit. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "stderr_line.h"
#include "auto_jobs.h"
#include "drain_helper.h"
#include "graph_twin.h"
#include "join.h"
#include "partition.h"
#include "trace_ranges.h"

static pthread_mutex_t join_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

static void __attribute__((noreturn)) die(const char *what, const char *detail)
{
    gy_die("gpuyield: pid %d %s: %s", (int)getpid(), what, detail);
}

/* One set of fork handlers takes every lock of the hooks in the order the code nests them: the
 * join holds join_lock while it takes the partition lock (gy_partition_check_static), and
 * the client's contexts_lock is taken under no other lock. Separate pthread_atfork registrations
 * ran in the reverse order (partition first): a fork racing a join could deadlock (TSan found the
 * cycle). */
static void before_fork(void)
{
    pthread_mutex_lock(&join_lock);
    gy_partition_fork_prepare();
    gy_graph_twin_fork_prepare(); /* taken under the partition lock, never the other way */
    gy_auto_fork_prepare();
    gy_client_fork_prepare();
}

static void after_fork_parent(void)
{
    gy_client_fork_parent();
    gy_auto_fork_parent();
    gy_graph_twin_fork_parent();
    gy_partition_fork_parent();
    pthread_mutex_unlock(&join_lock);
}

/* The child forgets the parent's registration, helper and contexts (gy_client_fork_child) and
 * the partition's streams; it joins again at its first launch. */
static void after_fork_child(void)
{
    gy_client_fork_child();
    gy_auto_fork_child();
    gy_graph_twin_fork_child();
    gy_partition_fork_child();
    pthread_mutex_unlock(&join_lock);
}

/* A normal exit (return from main, exit()) frees our slot at once: otherwise the slot stays with
 * work marked in flight until a reap notices the death, and a job begun meanwhile waits for a
 * drain nobody will acknowledge. Launches made after this (other threads, other atexit handlers)
 * pass straight through: the process is going. A forked child's exit frees only its own slot. */
static void release_at_exit(void)
{
    if (atomic_load_explicit(&gy_client.phase, memory_order_acquire) != GY_PHASE_READY)
        return;
    atomic_store_explicit(&gy_client.phase, GY_PHASE_PASS_THROUGH, memory_order_release);
    gy_release_at_exit(&gy_client.shm);
}

static void install_fork_handlers(void)
{
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    atexit(release_at_exit);
}

static const char *mode_text(char *buf, size_t len)
{
    if (gy_client.mode == GY_MODE_NONE)
        return "none";
    static const char *const names[] = {[GY_MODE_SYNC] = "sync", [GY_MODE_EVENT] = "event", [GY_MODE_TIME] = "time"};
    unsigned long green = gy_client.mode == GY_MODE_TIME ? gy_config()->partition_us : 0;
    if (green) /* GPUYIELD_PARTITION_US: said, as the bound it sets */
        snprintf(buf, len, "%s:%lu (partition streams time:%lu)", names[gy_client.mode], gy_client.group, green);
    else
        snprintf(buf, len, "%s:%lu", names[gy_client.mode], gy_client.group);
    return buf;
}

bool gy_client_join_slow(void)
{
    pthread_mutex_lock(&join_lock);
    int phase = atomic_load_explicit(&gy_client.phase, memory_order_acquire);
    const struct gy_hooks_config *config = gy_config();
    gy_err err;
    if (phase == GY_PHASE_UNCONFIGURED && !config->shm) {
        phase = GY_PHASE_PASS_THROUGH;
        if (config->verbose)
            fprintf(stderr, "gpuyield: pid %d passes kernel launches straight to the driver (GPUYIELD_SHM unset)\n",
                    (int)getpid());
    } else if (phase == GY_PHASE_UNCONFIGURED) {
        if (gy_open(config->shm, &gy_client.shm, &err))
            die("cannot join the segment named by GPUYIELD_SHM", err.msg);
        gy_client.name_identity_known =
            gy_segment_identity(gy_client.shm.name, &gy_client.name_dev, &gy_client.name_ino) == 1;
        gy_client.priority = config->priority;
        gy_client.mode = config->mode;
        gy_client.group = config->group;
        pthread_once(&fork_handlers_once, install_fork_handlers);
        phase = GY_PHASE_JOIN;
    }
    if (phase == GY_PHASE_JOIN) {
        if (gy_register(&gy_client.shm, gy_client.priority, &err))
            die("cannot register in the segment named by GPUYIELD_SHM", err.msg);
        gy_ranges_init();
        gy_drain_helper_start();
        gy_auto_start();
        gy_partition_check_static();
        phase = GY_PHASE_READY;
        if (config->verbose) {
            char mode[80], jobs[96] = "";
            if (config->auto_jobs)
                snprintf(jobs, sizeof jobs, ", auto jobs at priority %d (closed after %lu us idle)",
                         gy_client.priority, config->idle_us);
            fprintf(stderr,
                    "gpuyield: pid %d gates its kernel launches through %s (slot %d) at priority %d, queue mode "
                    "%s%s\n",
                    (int)getpid(), gy_client.shm.name, gy_client.shm.slot, gy_client.priority,
                    mode_text(mode, sizeof mode), jobs);
        }
    }
    atomic_store_explicit(&gy_client.phase, phase, memory_order_release);
    pthread_mutex_unlock(&join_lock);
    return phase == GY_PHASE_READY;
}

