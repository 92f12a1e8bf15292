/* Untrusted contents: segments corrupted on purpose (random bytes in the slot table, states,
 * priorities, pids and counts out of range, huge job counts, a garbage gate word, wake_seq and
 * epochs, a wedged mutex, a bad header). Every reader runs in a child with a deadline: it must
 * give a clear error or skip the bad slot, never crash, never hang.
 *
 * Env EXPCONTROLLER=<path>: also run `expcontroller status`, `status --json` and `clean` on each
 * corrupted segment (they must exit 0 or 1 with a message, never crash or hang). Env
 * GY_CUDA_WORKER, GY_HOOK_LIB, GY_FAKECUDA_DIR: also a CUDA program under the hook (fake driver). */
#define GY_TEST_MAIN
#include "../lib/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuyield.h"
#include "proc_identity.h"

#define MS 1000000ull
/* Seconds-scale: a reader that needs longer than this is hung, not slow. 20 s, not 8: on a build
 * machine of 2 CPUs running other test suites beside this one, `expcontroller clean` on a corrupted
 * mutex (each lock attempt bounded) took over 8 s twice on 2026-11-25 and passed alone. */
#define READER_DEADLINE_MS 20000
/* A lower launch blocked by corrupt counts must resume once the corruption is noticed. */
#define HEAL_BOUND_MS 5000

static char tag[64];
static char name[GY_NAME_MAX];

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A fresh segment with two live registered processes (this one at priority 2 with a job, a
 * sleeping child at priority 5), so that corruption hits a table in use. */
struct scene {
    gy_shm shm;
    pid_t sleeper;
    gy_job job;
};

static int sleeper_main(void)
{
    gy_shm shm;
    gy_err err;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (gy_open(name, &shm, &err) || gy_register(&shm, 5, &err))
        return 1;
    for (;;)
        pause();
}

static bool scene_up(struct scene *s, const char *what)
{
    static int n;
    gy_err err;
    snprintf(tag, sizeof tag, "test-corrupt-%d-%d-%s", getpid(), n++, what);
    if (gy_create(tag, 500 * MS, &s->shm, &err)) {
        fprintf(stderr, "  create: %s\n", err.msg);
        return false;
    }
    snprintf(name, sizeof name, "%s", s->shm.name);
    fflush(NULL);
    if ((s->sleeper = fork()) == 0)
        _exit(sleeper_main());
    uint64_t until = gy_now_ns() + 5000 * MS;
    int live = 0;
    while (gy_now_ns() < until && live < 1) {
        live = 0;
        for (int i = 0; i < GY_MAX_PROCS; i++)
            live += atomic_load(&s->shm.seg->procs[i].state) != GY_PROC_FREE;
        sleep_ms(2);
    }
    if (gy_register(&s->shm, 2, &err) || gy_begin(&s->shm, 2, &s->job, &err)) {
        fprintf(stderr, "  register: %s\n", err.msg);
        return false;
    }
    return live == 1;
}

static void scene_down(struct scene *s)
{
    if (s->sleeper > 0) {
        kill(s->sleeper, SIGKILL);
        waitpid(s->sleeper, NULL, 0);
    }
    /* Our own slot may be garbage now: unmap without touching it. */
    s->shm.slot = -1;
    gy_close(&s->shm);
    gy_remove(name, NULL);
}

/* ---- readers, each run in a child with a deadline -------------------------------------------- */

enum outcome { FINE = 0, CLEAR_ERROR = 1, VAGUE_ERROR = 3, CRASHED = 100, HUNG = 101 };

static const char *outcome_text(int o)
{
    switch (o) {
    case FINE: return "fine";
    case CLEAR_ERROR: return "clear error";
    case VAGUE_ERROR: return "an error that does not name the segment";
    case CRASHED: return "CRASHED";
    case HUNG: return "HUNG";
    default: return "failed";
    }
}

static int clear(const gy_err *err)
{
    return strstr(err->msg, name) ? CLEAR_ERROR : VAGUE_ERROR;
}

static int read_open(void)
{
    gy_shm shm;
    gy_err err;
    if (gy_open(name, &shm, &err))
        return clear(&err);
    gy_close(&shm);
    return FINE;
}

static int read_status(void)
{
    gy_shm shm;
    gy_err err;
    static struct gy_status st;
    static char json[32768];
    if (gy_open(name, &shm, &err))
        return clear(&err);
    int rc = gy_status_read(&shm, &st, &err);
    if (rc == 0)
        gy_status_json(&st, json, sizeof json);
    gy_close(&shm);
    return rc ? clear(&err) : FINE;
}

static int read_reap(void)
{
    gy_shm shm;
    gy_err err;
    if (gy_open(name, &shm, &err))
        return clear(&err);
    int n = gy_reap(&shm);
    gy_close(&shm);
    return n >= 0 ? FINE : 2;
}

static int read_register(void)
{
    gy_shm shm;
    gy_err err;
    if (gy_open(name, &shm, &err))
        return clear(&err);
    int rc = gy_register(&shm, 0, &err);
    gy_close(&shm);
    return rc ? clear(&err) : FINE;
}

/* A top-priority job: begin (drain wait bounded by the segment's timeout) and end. */
static int read_begin_end(void)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    if (gy_open(name, &shm, &err))
        return clear(&err);
    if (gy_register(&shm, GY_LEVELS - 1, &err) || gy_begin(&shm, GY_LEVELS - 1, &job, &err)) {
        gy_close(&shm);
        return clear(&err);
    }
    int rc = gy_job_exit(&shm, &job, &err) ? clear(&err) : FINE;
    gy_close(&shm);
    return rc;
}

/* A launch at priority 6: may block only while a real job above it runs (none does: the scene's
 * jobs are at 2), so corrupt counts must heal within the bound. */
static int read_launch_gate(void)
{
    gy_shm shm;
    gy_err err;
    if (gy_open(name, &shm, &err))
        return clear(&err);
    if (gy_register(&shm, GY_LEVELS - 2, &err)) {
        gy_close(&shm);
        return clear(&err);
    }
    uint64_t t0 = gy_now_ns();
    gy_mark_inflight(&shm);
    if (!gy_launch_allowed(&shm, GY_LEVELS - 2))
        gy_wait_until_allowed(&shm, NULL);
    uint64_t took = gy_now_ns() - t0;
    gy_close(&shm);
    if (took > HEAL_BOUND_MS * MS) {
        fprintf(stderr, "  launch blocked %llu ms by a corrupt count\n", (unsigned long long)(took / MS));
        return 4;
    }
    return FINE;
}

static int read_drain_request(void)
{
    gy_shm shm;
    gy_err err;
    uint64_t epoch;
    if (gy_open(name, &shm, &err))
        return clear(&err);
    if (gy_register(&shm, 0, &err)) {
        gy_close(&shm);
        return clear(&err);
    }
    gy_mark_inflight(&shm);
    if (gy_drain_wait_request(&shm, 200 * MS, &epoch))
        gy_drain_ack(&shm, epoch, false);
    gy_close(&shm);
    return FINE;
}

static int run_expcontroller(const char *command, const char *extra)
{
    const char *exe = getenv("EXPCONTROLLER");
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    if (extra)
        execl(exe, exe, command, "--name", name, extra, (char *)NULL);
    else if (strcmp(command, "clean") == 0) {
        /* The lock of tests/lib/suite.sh: a run beside ours may hold a created segment. Held
         * across exec (the descriptor is inherited). */
        const char *lock = getenv("CLEAN_LOCK");
        int fd = lock ? open(lock, O_WRONLY | O_CREAT | O_APPEND, 0600) : -1;
        if (fd >= 0)
            flock(fd, LOCK_EX);
        execl(exe, exe, command, (char *)NULL);
    }
    else
        execl(exe, exe, command, "--name", name, (char *)NULL);
    return 99;
}
/* A CUDA program under the hook (env GY_CUDA_WORKER, GY_HOOK_LIB, GY_FAKECUDA_DIR): it joins
 * and registers at its first launch. Exit 0 (ran), 1 (its own counter checks saw the corruption)
 * or 2 (the hook's clear error) are fine; a signal or a hang is not. */
static int hooked_worker(void)
{
    const char *worker = getenv("GY_CUDA_WORKER");
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    setenv("LD_PRELOAD", getenv("GY_HOOK_LIB"), 1);
    setenv("LD_LIBRARY_PATH", getenv("GY_FAKECUDA_DIR"), 1);
    setenv("GPUYIELD_SHM", name, 1);
    setenv("GPUYIELD_PRIORITY", "4", 1);
    execl(worker, worker, "plain", "3", (char *)NULL);
    return 99;
}

static int cli_status(void) { return run_expcontroller("status", NULL); }
static int cli_status_json(void) { return run_expcontroller("status", "--json"); }
static int cli_clean(void) { return run_expcontroller("clean", NULL); }

struct reader {
    const char *what;
    int (*fn)(void);
    bool cli; /* exits 0 or 1 (runtime error) */
    bool hooked;
};

static const struct reader readers[] = {
    {"open", read_open, false, false},
    {"status", read_status, false, false},
    {"reap", read_reap, false, false},
    {"register", read_register, false, false},
    {"begin/end", read_begin_end, false, false},
    {"launch gate", read_launch_gate, false, false},
    {"drain request", read_drain_request, false, false},
    {"expcontroller status", cli_status, true, false},
    {"expcontroller status --json", cli_status_json, true, false},
    {"expcontroller clean", cli_clean, true, false},
    {"a hooked CUDA program", hooked_worker, false, true},
};

/* Runs fn in a child; SIGKILLs it at the deadline. */
static int guarded(int (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        _exit(fn());
    }
    uint64_t until = gy_now_ns() + READER_DEADLINE_MS * MS;
    int status;
    for (;;) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid)
            break;
        if (gy_now_ns() > until) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return HUNG;
        }
        sleep_ms(5);
    }
    if (WIFSIGNALED(status))
        return CRASHED;
    return WEXITSTATUS(status);
}

/* Every reader on the corrupted segment of scene s. The CLI exits 0 or 1 (runtime error). */
static void every_reader_survives(struct scene *s, const char *corruption)
{
    (void)s;
    for (size_t i = 0; i < sizeof readers / sizeof *readers; i++) {
        const struct reader *r = &readers[i];
        if ((r->cli && !getenv("EXPCONTROLLER")) || (r->hooked && !getenv("GY_CUDA_WORKER")))
            continue;
        int o = guarded(r->fn);
        bool ok = r->cli ? (o == 0 || o == 1) : r->hooked ? o <= 2 : (o == FINE || o == CLEAR_ERROR);
        CHECK(ok, "%s on a segment with %s: %s (exit %d)", r->what, corruption, outcome_text(o), o);
    }
}

/* ---- corruptions ----------------------------------------------------------------------------- */

static uint64_t rng_state;
static uint64_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

TEST(random_bytes_in_the_slot_table)
{
    for (uint64_t seed = 1; seed <= 6; seed++) {
        struct scene s;
        REQUIRE(scene_up(&s, "randslots"));
        rng_state = 0x9e3779b97f4a7c15ull * seed;
        unsigned char *table = (unsigned char *)s.shm.seg->procs;
        size_t len = sizeof s.shm.seg->procs;
        if (seed % 2) {
            for (size_t i = 0; i < len; i++)
                table[i] = (unsigned char)next_random();
        } else { /* sparse: a few bytes here and there */
            for (int i = 0; i < 200; i++)
                table[next_random() % len] = (unsigned char)next_random();
        }
        char what[64];
        snprintf(what, sizeof what, "random bytes in its slot table (seed %llu)", (unsigned long long)seed);
        every_reader_survives(&s, what);
        scene_down(&s);
    }
}

/* A slot that looks alive (this process's pid and start time) but has one field out of range. */
static void corrupt_live_slot(struct scene *s, const char *what, uint32_t state, int32_t pid, int32_t priority)
{
    struct gy_proc_slot *slot = &s->shm.seg->procs[GY_MAX_PROCS - 1];
    slot->pid = pid;
    slot->start_time = gy_proc_start_time(getpid());
    slot->priority = priority;
    atomic_store(&slot->inflight, 1);
    atomic_store(&slot->state, state);
    every_reader_survives(s, what);
}

TEST(states_pids_and_priorities_out_of_range)
{
    static const struct {
        const char *what;
        uint32_t state;
        int32_t pid, priority;
    } cases[] = {
        {"state 77", 77, 0, 3},
        {"state 0xffffffff", 0xffffffffu, 0, 3},
        {"priority -1", GY_PROC_RUNNING, 0, -1},
        {"priority 8", GY_PROC_BLOCKED, 0, GY_LEVELS},
        {"priority 1000", GY_PROC_RUNNING, 0, 1000},
        {"priority INT32_MIN", GY_PROC_DRAINING, 0, INT32_MIN},
        {"pid 0", GY_PROC_RUNNING, -2, 3},
        {"pid -5", GY_PROC_RUNNING, -5, 3},
        {"pid INT32_MAX", GY_PROC_RUNNING, INT32_MAX, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct scene s;
        REQUIRE(scene_up(&s, "ranges"));
        /* pid 0 in the table means "use our live pid"; -2 means literally 0. */
        int32_t pid = cases[i].pid == 0 ? getpid() : cases[i].pid == -2 ? 0 : cases[i].pid;
        corrupt_live_slot(&s, cases[i].what, cases[i].state, pid, cases[i].priority);
        scene_down(&s);
    }
}

/* Our own registered slot corrupted under us: our launches and jobs must not misbehave (no shift
 * by a garbage priority, no hang). */
TEST(own_slot_priority_corrupted_under_a_live_process)
{
    struct scene s;
    REQUIRE(scene_up(&s, "ownslot"));
    gy_err err;
    gy_job_exit(&s.shm, &s.job, &err);
    struct gy_proc_slot *mine = gy_my_slot(&s.shm);
    static const int32_t bad[] = {-1, GY_LEVELS, 31, 40, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mine->priority = bad[i];
        uint64_t t0 = gy_now_ns();
        gy_wait_until_allowed(&s.shm, NULL); /* no job in progress: returns at once whatever the priority */
        CHECK(gy_now_ns() - t0 < HEAL_BOUND_MS * MS, "priority %d", bad[i]);
        uint64_t epoch;
        gy_drain_wait_request(&s.shm, 20 * MS, &epoch);
    }
    mine->priority = 2;
    scene_down(&s);
}

TEST(job_counts_huge_or_without_holders)
{
    static const struct {
        const char *what;
        int level;
        uint32_t count;
        uint16_t held; /* put in the sleeper's slot (priority 5), 0 = none */
    } cases[] = {
        {"jobs[7] = 0xfffffff0, held by nobody", 7, 0xfffffff0u, 0},
        {"jobs[7] = 1, held by nobody", 7, 1, 0},
        {"jobs[6] = 3, held by nobody", 6, 3, 0},
        {"held_jobs[7] = 65535 in a live slot", 7, 65535, 65535},
        {"jobs[0] = 0xffffffff", 0, 0xffffffffu, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct scene s;
        REQUIRE(scene_up(&s, "jobs"));
        struct gy_segment *seg = s.shm.seg;
        seg->jobs[cases[i].level] = cases[i].count;
        if (cases[i].held)
            for (int j = 0; j < GY_MAX_PROCS; j++)
                if (seg->procs[j].priority == 5 && atomic_load(&seg->procs[j].state) != GY_PROC_FREE)
                    seg->procs[j].held_jobs[cases[i].level] = cases[i].held;
        atomic_fetch_or(&seg->active_levels, 1u << cases[i].level);
        every_reader_survives(&s, cases[i].what);
        scene_down(&s);
    }
}

TEST(gate_word_wake_seq_and_epochs_garbage)
{
    static const char *const whats[] = {"active_levels 0xffffffff", "active_levels 0xffffff00",
                                        "wake_seq 0xffffffff", "job_epoch UINT64_MAX",
                                        "drained_epoch UINT64_MAX everywhere", "counters all ones"};
    for (size_t i = 0; i < sizeof whats / sizeof *whats; i++) {
        struct scene s;
        REQUIRE(scene_up(&s, "words"));
        struct gy_segment *seg = s.shm.seg;
        switch (i) {
        case 0: atomic_store(&seg->active_levels, 0xffffffffu); break;
        case 1: atomic_store(&seg->active_levels, 0xffffff00u); break;
        case 2: atomic_store(&seg->wake_seq, 0xffffffffu); break;
        case 3: atomic_store(&seg->job_epoch, UINT64_MAX); break;
        case 4:
            for (int j = 0; j < GY_MAX_PROCS; j++)
                atomic_store(&seg->procs[j].drained_epoch, UINT64_MAX);
            break;
        case 5:
            for (int j = 0; j < GY_MAX_PROCS; j++)
                memset(&seg->procs[j].counters, 0xff, sizeof seg->procs[j].counters);
            break;
        }
        every_reader_survives(&s, whats[i]);
        scene_down(&s);
    }
}

/* The mutex word says a thread that does not exist holds it (what random bytes there give): a
 * locker must recover as if the owner had died, not wait forever. */
TEST(mutex_held_by_a_thread_that_does_not_exist)
{
    struct scene s;
    REQUIRE(scene_up(&s, "mutex"));
    gy_err err;
    gy_job_exit(&s.shm, &s.job, &err);
    /* glibc keeps the owner's thread id in the first int of the mutex (the futex word). */
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    atomic_store((_Atomic int *)(void *)&s.shm.seg->mutex, gone);
    every_reader_survives(&s, "a mutex held by a dead thread id");
    scene_down(&s);
}

/* issue 19: a mutex word naming a live thread of a process outside the experiment (it never
 * unlocks): every locker gives up after the bound with a clear error, nobody hangs. */
TEST(mutex_held_by_a_live_foreign_thread)
{
    struct scene s;
    REQUIRE(scene_up(&s, "foreign"));
    gy_err err;
    gy_job_exit(&s.shm, &s.job, &err);
    fflush(NULL);
    pid_t foreign = fork();
    if (foreign == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;)
            pause();
    }
    atomic_store((_Atomic int *)(void *)&s.shm.seg->mutex, foreign);
    every_reader_survives(&s, "a mutex held by a live thread of another process");
    CHECK(atomic_load(&s.shm.seg->lock_timeouts) > 0, "no lock timeout counted");
    kill(foreign, SIGKILL);
    waitpid(foreign, NULL, 0);
    scene_down(&s);
}

/* issue 19: a mutex of another kind (robust priority-inheritance, what a flipped bit can give)
 * naming a missing owner made glibc abort in status: it is refused before any lock. */
TEST(mutex_of_a_corrupted_kind)
{
    struct scene s;
    REQUIRE(scene_up(&s, "kind"));
    gy_err err;
    gy_job_exit(&s.shm, &s.job, &err);
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    s.shm.seg->mutex.__data.__kind |= 32 /* PTHREAD_MUTEX_PRIO_INHERIT_NP */;
    atomic_store((_Atomic int *)(void *)&s.shm.seg->mutex, gone);
    every_reader_survives(&s, "a mutex of a corrupted kind");
    scene_down(&s);
}

TEST(header_corruption_is_refused_with_a_clear_error)
{
    static const char *const whats[] = {"bad magic", "another layout stamp", "declared size 12", "owner uid 4242",
                                        "a name without its NUL"};
    for (size_t i = 0; i < sizeof whats / sizeof *whats; i++) {
        struct scene s;
        REQUIRE(scene_up(&s, "header"));
        struct gy_segment *seg = s.shm.seg;
        switch (i) {
        case 0: seg->magic ^= 1; break;
        case 1: seg->layout_stamp ^= 1; break;
        case 2: seg->segment_size = 12; break;
        case 3: seg->owner_uid = 4242; break;
        case 4: memset(seg->name, 'x', sizeof seg->name); break;
        }
        int o = guarded(read_open);
        CHECK(i == 4 ? o == FINE : o == CLEAR_ERROR, "open of a segment with %s: %s", whats[i], outcome_text(o));
        every_reader_survives(&s, whats[i]);
        scene_down(&s);
    }
}

TEST(wrong_sizes_are_refused_with_a_clear_error)
{
    static const off_t sizes[] = {0, 1, 4096, (off_t)sizeof(struct gy_segment) - 1,
                                  (off_t)sizeof(struct gy_segment) + 1, 1 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        struct scene s;
        REQUIRE(scene_up(&s, "size"));
        int fd = shm_open(name, O_RDWR, 0);
        REQUIRE(fd >= 0);
        CHECK(ftruncate(fd, sizes[i]) == 0);
        close(fd);
        int o = guarded(read_open);
        CHECK(o == CLEAR_ERROR, "open of a %lld-byte segment: %s", (long long)sizes[i], outcome_text(o));
        /* The scene's own mapping may now reach past the end of the file: do not touch it. */
        kill(s.sleeper, SIGKILL);
        waitpid(s.sleeper, NULL, 0);
        s.sleeper = 0;
        munmap(s.shm.seg, sizeof *s.shm.seg);
        s.shm.seg = NULL;
        gy_remove(name, NULL);
    }
}
