/* libgeek.so: the original experiment's C interface to its shared memory, on gpuyield segments.
 *
 * Scripts written for the original experiment load it with ctypes by path and call:
 *   create_shared_mem_and_locks(suffix)   create the segment of `suffix` (tag "compat" + suffix)
 *   setMem(1, suffix)                     a high-priority (priority 1) job begins: lower-priority
 *                                         launches stop from here on; nothing is waited for
 *   waitForEmptyGPU()                     wait until lower-priority work has drained, for the job
 *                                         begun by this process's last setMem(1) (bounded by the
 *                                         segment's drain timeout); at once when there is none
 *   setMem(0, suffix)                     that job ends (jobs nest: two setMem(1), two setMem(0))
 *   remove_shared_mem_and_locks(suffix)   remove the segment
 * The same mapping as pyext/gpuyield/compat.py, so Python and C callers share segments. Nothing
 * here crashes on bad input: a NULL or invalid suffix, an unknown segment, setMem(0) without a
 * job print one line on stderr (what, where, how to fix) and return. The original harness forks
 * its workers after loading the library: a forked child never uses its parent's registration or
 * jobs, it registers itself. Only these four functions are exported (compat/libgeek.map). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "compat_tag.h"
#include "gpuyield.h"
#include "stderr_line.h"

#define MAX_SEGMENTS 16
#define MAX_NESTED 16

struct compat_segment {
    bool used;
    char tag[GY_NAME_MAX];
    gy_shm shm;
    int owner_pid;      /* the process that opened it; a forked child re-registers */
    dev_t dev;          /* identity of the segment file when opened: a removed and re-created */
    ino_t ino;          /* segment is reopened */
    int njobs;
    gy_job jobs[MAX_NESTED];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static struct compat_segment segments[MAX_SEGMENTS];
static struct compat_segment *pending_seg; /* the job of the last setMem(1), for waitForEmptyGPU */
static int pending_index = -1;

static void before_fork(void) { pthread_mutex_lock(&lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&lock); }
static void after_fork_child(void) { pthread_mutex_unlock(&lock); }
static void install_fork_handlers(void) { pthread_atfork(before_fork, after_fork_parent, after_fork_child); }

static void enter(void)
{
    pthread_once(&fork_once, install_fork_handlers);
    pthread_mutex_lock(&lock);
}

static void leave(void) { pthread_mutex_unlock(&lock); }

/* "compat" + suffix, checked; prints why not and returns false when it is no valid tag. */
static bool make_tag(const char *call, const char *suffix, char tag[GY_NAME_MAX])
{
    if (!suffix) {
        gy_say("libgeek.so: %s: suffix is NULL: pass the experiment's suffix as bytes (suffix.encode())", call);
        return false;
    }
    gy_err err;
    if (gy_compat_tag(suffix, tag, &err)) {
        gy_say("libgeek.so: %s: %s", call, err.msg);
        return false;
    }
    return true;
}

static struct compat_segment *find(const char *tag)
{
    for (int i = 0; i < MAX_SEGMENTS; i++)
        if (segments[i].used && strcmp(segments[i].tag, tag) == 0)
            return &segments[i];
    return NULL;
}

/* Forget an entry: unregister (counting out its jobs) only when it is this process's own. */
static void drop(struct compat_segment *s)
{
    if (s->owner_pid != getpid())
        s->shm.slot = -1; /* a forked child never unregisters its parent's slot */
    gy_close(&s->shm);
    if (pending_seg == s) {
        pending_seg = NULL;
        pending_index = -1;
    }
    memset(s, 0, sizeof *s);
}

static struct compat_segment *store(const char *tag, gy_shm *shm)
{
    for (int i = 0; i < MAX_SEGMENTS; i++) {
        struct compat_segment *s = &segments[i];
        if (s->used)
            continue;
        memset(s, 0, sizeof *s);
        s->used = true;
        snprintf(s->tag, sizeof s->tag, "%s", tag);
        s->shm = *shm;
        s->owner_pid = getpid();
        gy_segment_identity(s->shm.name, &s->dev, &s->ino);
        return s;
    }
    gy_close(shm);
    return NULL;
}

/* After a fork: the inherited entry is the parent's (its slot, its jobs). */
static void adopt_after_fork(struct compat_segment *s)
{
    if (s->owner_pid == getpid())
        return;
    s->shm.slot = -1;
    s->njobs = 0;
    s->owner_pid = getpid();
    if (pending_seg == s) {
        pending_seg = NULL;
        pending_index = -1;
    }
}

/* The segment of tag, opened (and this process registered) if need be; NULL after a message. */
static struct compat_segment *segment_for(const char *call, const char *tag)
{
    struct compat_segment *s = find(tag);
    if (s)
        adopt_after_fork(s);
    if (s && s->njobs == 0) {
        dev_t dev;
        ino_t ino;
        int present = gy_segment_identity(s->shm.name, &dev, &ino);
        if (present == 0 || (present == 1 && (dev != s->dev || ino != s->ino)))
            drop(s); /* removed (and perhaps created anew) since: reconnect */
        s = find(tag);
    }
    gy_err err;
    if (!s) {
        gy_shm shm;
        if (gy_open(tag, &shm, &err)) {
            gy_say("libgeek.so: %s: %s (libgeek.so's segment for a suffix is gpuyield tag \"compat\" + suffix: "
                "create_shared_mem_and_locks(suffix) first)",
                call, err.msg);
            return NULL;
        }
        s = store(tag, &shm);
        if (!s) {
            gy_say("libgeek.so: %s: this process already uses %d segments: remove_shared_mem_and_locks() the ones "
                "it is done with",
                call, MAX_SEGMENTS);
            return NULL;
        }
    }
    if (s->shm.slot < 0 && gy_register(&s->shm, 0, &err)) {
        gy_say("libgeek.so: %s: %s", call, err.msg);
        return NULL;
    }
    return s;
}

__attribute__((visibility("default"))) void create_shared_mem_and_locks(char *suffix)
{
    char tag[GY_NAME_MAX];
    if (!make_tag("create_shared_mem_and_locks", suffix, tag))
        return;
    enter();
    struct compat_segment *old = find(tag);
    if (old)
        drop(old);
    gy_shm shm;
    gy_err err;
    if (gy_create(tag, 0, &shm, &err))
        gy_say("libgeek.so: create_shared_mem_and_locks(\"%s\"): %s", suffix, err.msg);
    else if (!store(tag, &shm))
        gy_say("libgeek.so: create_shared_mem_and_locks(\"%s\"): created %s, but this process already uses %d "
            "segments: it is not kept open",
            suffix, shm.name, MAX_SEGMENTS);
    leave();
}

__attribute__((visibility("default"))) void remove_shared_mem_and_locks(char *suffix)
{
    char tag[GY_NAME_MAX];
    if (!make_tag("remove_shared_mem_and_locks", suffix, tag))
        return;
    enter();
    struct compat_segment *s = find(tag);
    if (s)
        drop(s);
    gy_err err;
    if (gy_remove(tag, &err))
        gy_say("libgeek.so: remove_shared_mem_and_locks(\"%s\"): %s", suffix, err.msg);
    leave();
}

__attribute__((visibility("default"))) void setMem(int input, char *suffix)
{
    char call[64];
    snprintf(call, sizeof call, "setMem(%d, ...)", input);
    if (input != 0 && input != 1) {
        gy_say("libgeek.so: setMem(%d, ...): the value must be 1 (a high-priority job begins) or 0 (it ends)", input);
        return;
    }
    char tag[GY_NAME_MAX];
    if (!make_tag(call, suffix, tag))
        return;
    enter();
    struct compat_segment *s = segment_for(call, tag);
    gy_err err;
    if (!s) {
    } else if (input == 1) {
        if (s->njobs >= MAX_NESTED)
            gy_say("libgeek.so: setMem(1, \"%s\"): %d jobs already begun and not ended: setMem(0) is missing", suffix,
                s->njobs);
        else if (gy_job_enter(&s->shm, GY_COMPAT_PRIORITY, 0, &s->jobs[s->njobs], &err))
            gy_say("libgeek.so: setMem(1, \"%s\"): %s", suffix, err.msg);
        else {
            pending_seg = s;
            pending_index = s->njobs++;
        }
    } else if (s->njobs == 0) {
        gy_say("libgeek.so: setMem(0, \"%s\"): no job of this process is in progress on %s: setMem(0) ends what "
            "setMem(1) began",
            suffix, s->shm.name);
    } else {
        s->njobs--;
        if (gy_job_exit(&s->shm, &s->jobs[s->njobs], &err))
            gy_say("libgeek.so: setMem(0, \"%s\"): %s", suffix, err.msg);
        if (pending_seg == s && pending_index >= s->njobs) {
            pending_seg = NULL;
            pending_index = -1;
        }
    }
    leave();
}

__attribute__((visibility("default"))) void waitForEmptyGPU(void)
{
    enter();
    struct compat_segment *s = pending_seg;
    if (s && s->owner_pid == getpid() && pending_index >= 0 && pending_index < s->njobs) {
        gy_job *job = &s->jobs[pending_index];
        if (job->active && !job->drained && !job->timed_out)
            gy_job_wait_drained(&s->shm, job, 0); /* bounded by the segment's drain timeout */
    }
    leave();
}
