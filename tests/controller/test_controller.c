/* The controller library through its API, with real processes (fork) on real segments. */
#define GY_TEST_MAIN
#include "../lib/harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuyield.h"
#include "layout_stamp.h"
#include "metrics.h"
#include "shared_wait.h"

#define MS 1000000ull

static char tag[64];

static void fresh_tag(const char *what)
{
    static int n;
    snprintf(tag, sizeof tag, "test-ctl-%d-%d-%s", getpid(), n++, what);
}

static bool create_fresh(const char *what, uint64_t drain_timeout_ns, gy_shm *shm)
{
    gy_err err;
    fresh_tag(what);
    if (gy_create(tag, drain_timeout_ns, shm, &err)) {
        fprintf(stderr, "  create %s: %s\n", tag, err.msg);
        return false;
    }
    return true;
}

static void destroy(gy_shm *shm)
{
    char name[GY_NAME_MAX];
    snprintf(name, sizeof name, "%s", shm->name);
    gy_close(shm);
    gy_remove(name, NULL);
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A child process: runs fn(name, arg) and exits with its return value. */
static pid_t spawn(int (*fn)(const char *, long), const char *name, long arg)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(fn(name, arg));
    return pid;
}

static int wait_exit(pid_t pid)
{
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Polls cond for up to timeout_ms; true when it held. */
#define WAIT_FOR(cond, timeout_ms)                                                                   \
    ({                                                                                               \
        uint64_t until_ = gy_now_ns() + (uint64_t)(timeout_ms) * MS;                                 \
        while (!(cond) && gy_now_ns() < until_)                                                      \
            sleep_ms(2);                                                                             \
        (cond);                                                                                      \
    })

static int count_state(gy_shm *shm, uint32_t state)
{
    int n = 0;
    for (int i = 0; i < GY_MAX_PROCS; i++)
        n += atomic_load(&shm->seg->procs[i].state) == state;
    return n;
}

/* ---- naming, create, open, remove ------------------------------------------------------------ */

TEST(names_derive_from_uid_and_tag)
{
    char name[GY_NAME_MAX], want[GY_NAME_MAX];
    gy_err err;
    REQUIRE(gy_segment_name("exp1", name, &err) == 0, "%s", err.msg);
    snprintf(want, sizeof want, "/gpuyield-%u-exp1", (unsigned)getuid());
    CHECK(strcmp(name, want) == 0, "got %s", name);
    CHECK(gy_segment_name(want, name, &err) == 0 && strcmp(name, want) == 0);
    CHECK(gy_segment_name("", name, &err) == -1 && err.code == EINVAL);
    CHECK(gy_segment_name("a/b", name, &err) == -1 && strstr(err.msg, "A-Za-z0-9"));
    CHECK(gy_segment_name("..", name, &err) == -1);
    CHECK(gy_segment_name("x12345678901234567890123456789012345678901", name, &err) == -1);
    CHECK(gy_segment_name("/gpuyield-abc-x", name, &err) == -1 && strstr(err.msg, "malformed"));
    setenv("GPUYIELD_SHM", "fromenv", 1);
    CHECK(strcmp(gy_default_tag(), "fromenv") == 0);
    unsetenv("GPUYIELD_SHM");
    CHECK(strcmp(gy_default_tag(), GY_DEFAULT_TAG) == 0);
}

TEST(create_is_exclusive_private_and_removable)
{
    gy_shm shm, again;
    gy_err err;
    REQUIRE(create_fresh("excl", 0, &shm));
    char path[128];
    snprintf(path, sizeof path, "/dev/shm%s", shm.name);
    struct stat st;
    REQUIRE(stat(path, &st) == 0);
    CHECK((st.st_mode & 0777) == 0600, "mode %o", st.st_mode & 0777);
    CHECK(st.st_size == (off_t)sizeof(struct gy_segment));
    CHECK(sizeof(struct gy_segment) < 128 * 1024);
    CHECK(shm.seg->drain_timeout_ns == GY_DEFAULT_DRAIN_TIMEOUT_NS);
    CHECK(gy_create(tag, 0, &again, &err) == -1 && err.code == EEXIST && strstr(err.msg, "already exists"),
          "%s", err.msg);
    destroy(&shm);
    CHECK(stat(path, &st) == -1 && errno == ENOENT, "segment left in /dev/shm");
    CHECK(gy_remove(tag, &err) == -1 && err.code == ENOENT && strstr(err.msg, "no segment"));
    CHECK(gy_open(tag, &again, &err) == -1 && err.code == ENOENT && strstr(err.msg, "start the experiment"));
}

/* Opens the segment's file directly to damage it the way a bad actor or a crash could. */
static int raw_fd(const char *name)
{
    return shm_open(name, O_RDWR, 0);
}

TEST(open_refuses_truncated_segment)
{
    gy_shm shm, other;
    gy_err err;
    REQUIRE(create_fresh("trunc", 0, &shm));
    int fd = raw_fd(shm.name);
    REQUIRE(fd >= 0);
    CHECK(ftruncate(fd, 100) == 0);
    close(fd);
    CHECK(gy_open(shm.name, &other, &err) == -1 && err.code == EPROTO && strstr(err.msg, "truncated"), "%s",
          err.msg);
    munmap(shm.seg, sizeof *shm.seg); /* the mapping is past EOF now: do not touch it */
    shm.seg = NULL;
    gy_remove(shm.name, NULL);
}

TEST(open_refuses_another_layout_stamp_and_bad_magic)
{
    gy_shm shm, other;
    gy_err err;
    REQUIRE(create_fresh("version", 0, &shm));
    CHECK(shm.seg->layout_stamp == GY_LAYOUT_STAMP);
    shm.seg->layout_stamp = GY_LAYOUT_STAMP ^ 0x80000000u; /* what another build's layout gives */
    CHECK(gy_open(shm.name, &other, &err) == -1 && err.code == EPROTO &&
              strstr(err.msg, "made by a different gpuyield build") && strstr(err.msg, shm.name) &&
              strstr(err.msg, "expcontroller remove --name"),
          "%s", err.msg);
    shm.seg->layout_stamp = GY_LAYOUT_STAMP;
    shm.seg->magic = 42;
    CHECK(gy_open(shm.name, &other, &err) == -1 && strstr(err.msg, "not a gpuyield segment"), "%s", err.msg);
    shm.seg->magic = GY_MAGIC;
    uint64_t timeout = shm.seg->drain_timeout_ns;
    shm.seg->drain_timeout_ns = UINT64_MAX; /* a begin would "time out" at once, or never */
    CHECK(gy_open(shm.name, &other, &err) == -1 && strstr(err.msg, "drain timeout"), "%s", err.msg);
    shm.seg->drain_timeout_ns = 0;
    CHECK(gy_open(shm.name, &other, &err) == -1 && strstr(err.msg, "drain timeout"), "%s", err.msg);
    shm.seg->drain_timeout_ns = timeout;
    CHECK(gy_open(shm.name, &other, &err) == 0, "%s", err.msg);
    gy_close(&other);
    destroy(&shm);
}

TEST(open_refuses_another_users_segment)
{
    gy_shm shm, other;
    gy_err err;
    if (geteuid() != 0) {
        printf("  (skipped: changing a segment's owner needs root)\n");
        return;
    }
    REQUIRE(create_fresh("owner", 0, &shm));
    int fd = raw_fd(shm.name);
    REQUIRE(fd >= 0);
    CHECK(fchown(fd, 4242, 4242) == 0);
    close(fd);
    CHECK(gy_open(shm.name, &other, &err) == -1 && err.code == EACCES && strstr(err.msg, "owned by uid 4242"),
          "%s", err.msg);
    destroy(&shm);
}

/* ---- registration ---------------------------------------------------------------------------- */

TEST(register_checks_priority_and_fills_the_table)
{
    gy_shm shm;
    gy_err err;
    REQUIRE(create_fresh("table", 0, &shm));
    CHECK(gy_register(&shm, 8, &err) == -1 && err.code == EINVAL && strstr(err.msg, "0..7"));
    CHECK(gy_register(&shm, -1, &err) == -1);
    static gy_shm handles[GY_MAX_PROCS];
    int opened = 0;
    for (; opened < GY_MAX_PROCS; opened++) {
        if (gy_open(shm.name, &handles[opened], &err) || gy_register(&handles[opened], opened % GY_LEVELS, &err))
            break;
    }
    CHECK(opened == GY_MAX_PROCS, "registered only %d: %s", opened, err.msg);
    CHECK(gy_register(&shm, 0, &err) == -1 && err.code == ENOSPC && strstr(err.msg, "full"), "%s", err.msg);
    for (int i = 0; i < opened; i++)
        gy_close(&handles[i]);
    CHECK(count_state(&shm, GY_PROC_FREE) == GY_MAX_PROCS);
    CHECK(gy_register(&shm, 0, &err) == 0);
    destroy(&shm);
}

/* ---- the gate -------------------------------------------------------------------------------- */

static int lower_waits_for_gate(const char *name, long priority)
{
    gy_shm shm;
    gy_err err;
    if (gy_open(name, &shm, &err) || gy_register(&shm, (int)priority, &err))
        return 10;
    /* Wait until a higher job has closed the gate, then block until it reopens. */
    uint64_t until = gy_now_ns() + 5000 * MS;
    while (gy_launch_allowed(&shm, (int)priority) && gy_now_ns() < until)
        sleep_ms(1);
    if (gy_launch_allowed(&shm, (int)priority))
        return 11;
    gy_wait_until_allowed(&shm, NULL);
    gy_close(&shm);
    return 0;
}

TEST(lower_blocks_while_higher_job_runs_and_resumes_at_end)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    REQUIRE(create_fresh("block", 0, &shm));
    REQUIRE(gy_register(&shm, 1, &err) == 0);
    CHECK(gy_launch_allowed(&shm, 0) && gy_launch_allowed(&shm, 1));
    pid_t child = spawn(lower_waits_for_gate, shm.name, 0);
    CHECK(WAIT_FOR(count_state(&shm, GY_PROC_RUNNING) == 2, 3000));
    REQUIRE(gy_begin(&shm, 1, &job, &err) == 0, "%s", err.msg);
    CHECK(!gy_launch_allowed(&shm, 0) && gy_launch_allowed(&shm, 1) && gy_launch_allowed(&shm, 7));
    CHECK(WAIT_FOR(count_state(&shm, GY_PROC_BLOCKED) == 1, 3000), "the lower process never blocked");
    sleep_ms(100);
    CHECK(count_state(&shm, GY_PROC_BLOCKED) == 1, "the lower process resumed during the job");
    uint64_t ended = gy_now_ns();
    CHECK(gy_job_exit(&shm, &job, &err) == 0);
    CHECK(wait_exit(child) == 0);
    CHECK(gy_now_ns() - ended < 2000 * MS, "resumed %llu ms after the end", (unsigned long long)((gy_now_ns() - ended) / MS));
    CHECK(gy_job_exit(&shm, &job, &err) == -1 && strstr(err.msg, "not in progress"));
    destroy(&shm);
}

/* In a child (with an alarm, so a regression fails instead of hanging the suite): a worker whose
 * launches are gated at priority 0 (its hook's slot) begins a priority-2 job through another
 * handle (its Python extension's slot); its own launches must go on. */
static int launch_inside_own_job(const char *name, long unused)
{
    (void)unused;
    gy_shm launcher, marker;
    gy_err err;
    gy_job job;
    alarm(10);
    if (gy_open(name, &launcher, &err) || gy_register(&launcher, 0, &err) || gy_open(name, &marker, &err) ||
        gy_register(&marker, 2, &err) || gy_begin(&marker, 2, &job, &err))
        return 10;
    if (gy_launch_allowed(&launcher, 0))
        return 11; /* the fast path must still say closed */
    uint64_t t0 = gy_now_ns();
    int allowed_at = -1;
    gy_wait_until_allowed(&launcher, &allowed_at);
    /* Blocked, it would wait for ever (the alarm); 1 s only allows for a crowded machine. */
    if (gy_now_ns() - t0 > 1000 * MS)
        return 12;
    if (atomic_load(&launcher.seg->procs[launcher.slot].counters.waits) != 0)
        return 13; /* not counted as a wait */
    if (allowed_at != 2 || !gy_launch_allowed(&launcher, allowed_at))
        return 14; /* the caller re-checks at the level it was let through at */
    gy_job_exit(&marker, &job, &err);
    gy_close(&marker);
    gy_close(&launcher);
    return 0;
}

static int higher_job_for(const char *name, long ms);

TEST(a_process_never_blocks_behind_its_own_higher_job)
{
    gy_shm shm;
    gy_err err;
    REQUIRE(create_fresh("ownjob", 0, &shm));
    int rc = wait_exit(spawn(launch_inside_own_job, shm.name, 0));
    CHECK(rc == 0, "child ended with %d (128+14: blocked behind its own job until the alarm)", rc);
    /* A higher job of another process still blocks. */
    REQUIRE(gy_register(&shm, 0, &err) == 0);
    pid_t other = spawn(higher_job_for, shm.name, 400);
    CHECK(WAIT_FOR(shm.seg->jobs[2] == 1, 3000));
    uint64_t t0 = gy_now_ns();
    gy_wait_until_allowed(&shm, NULL);
    CHECK(gy_now_ns() - t0 > 100 * MS, "did not wait for the other process's job");
    CHECK(wait_exit(other) == 0);
    destroy(&shm);
}

/* Registered at 0, holding a job at `level` through the same slot; waits for `peer_jobs` jobs
 * to be counted, then must launch (gy_wait_until_allowed) promptly, 20 times, at `level`. */
static int hold_job_and_launch(const char *name, long level_and_peers)
{
    int level = (int)(level_and_peers % 10), peer_jobs = (int)(level_and_peers / 10);
    gy_shm shm;
    gy_err err;
    gy_job job;
    alarm(30);
    if (gy_open(name, &shm, &err) || gy_register(&shm, 0, &err) || gy_job_enter(&shm, level, 0, &job, &err))
        return 10;
    while (shm.seg->jobs[level] < (uint32_t)peer_jobs)
        sleep_ms(1);
    if (gy_job_wait_drained(&shm, &job, 0) != GY_WAIT_DRAINED)
        return 11; /* a peer at the same level owes no drain */
    for (int i = 0; i < 20; i++) {
        int at = -1;
        uint64_t t0 = gy_now_ns();
        gy_wait_until_allowed(&shm, &at);
        /* A deadlock waits for ever (the alarm); 1 s only allows for a crowded machine. */
        if (gy_now_ns() - t0 > 1000 * MS || at != level)
            return 12;
        sleep_ms(5);
    }
    gy_job_exit(&shm, &job, &err);
    gy_close(&shm);
    return 0;
}

TEST(peers_holding_jobs_at_one_level_never_block_each_other)
{
    gy_shm shm;
    REQUIRE(create_fresh("peers", 0, &shm));
    /* Both registered at 0, each holding a level-1 job: they run at level 1 and are peers. */
    pid_t a = spawn(hold_job_and_launch, shm.name, 21), b = spawn(hold_job_and_launch, shm.name, 21);
    int ra = wait_exit(a), rb = wait_exit(b);
    CHECK(ra == 0 && rb == 0, "children ended with %d and %d (142: deadlocked until the alarm)", ra, rb);
    CHECK(shm.seg->jobs[1] == 0 && shm.seg->active_levels == 0);
    destroy(&shm);
}

TEST(a_higher_job_still_blocks_a_process_running_at_its_own_job_level)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    REQUIRE(create_fresh("ownlevel", 0, &shm));
    REQUIRE(gy_register(&shm, 0, &err) == 0);
    REQUIRE(gy_begin(&shm, 1, &job, &err) == 0);
    /* Another process registered at 0 begins a level-2 job: it must not wait for our level-1 job. */
    pid_t other = spawn(hold_job_and_launch, shm.name, 2);
    CHECK(WAIT_FOR(shm.seg->jobs[2] == 1, 3000));
    int at = -1;
    uint64_t t0 = gy_now_ns();
    gy_wait_until_allowed(&shm, &at);
    uint64_t waited = gy_now_ns() - t0;
    CHECK(waited > 50 * MS, "our level-1 launch passed during a level-2 job (%llu ms)",
          (unsigned long long)(waited / MS));
    CHECK(at == 1, "let through at %d", at);
    int rc = wait_exit(other);
    CHECK(rc == 0, "the level-2 job's process ended with %d", rc);
    gy_job_exit(&shm, &job, &err);
    destroy(&shm);
}

/* An idle lower process: its helper thread waits for drain requests; its main thread launches
 * (marks itself in flight) only once a higher job has been counted in, then blocks. */
struct helper_arg {
    gy_shm *shm;
};
static void *drain_helper_thread(void *p)
{
    gy_shm *shm = ((struct helper_arg *)p)->shm;
    uint64_t epoch, until = gy_now_ns() + 5000 * MS;
    while (gy_now_ns() < until)
        if (gy_drain_wait_request(shm, 1000 * MS, &epoch))
            gy_drain_ack(shm, epoch, false); /* nothing was queued: drained at once */
    return NULL;
}
static int idle_lower_launches_late(const char *name, long unused)
{
    (void)unused;
    gy_shm shm;
    gy_err err;
    alarm(8);
    if (gy_open(name, &shm, &err) || gy_register(&shm, 0, &err))
        return 10;
    struct helper_arg arg = {&shm};
    pthread_t helper;
    if (pthread_create(&helper, NULL, drain_helper_thread, &arg))
        return 11;
    while (gy_launch_allowed(&shm, 0))
        sleep_ms(1);
    gy_mark_inflight(&shm);
    gy_wait_until_allowed(&shm, NULL);
    pthread_join(helper, NULL);
    gy_close(&shm);
    return 0;
}

TEST(a_launch_that_blocks_wakes_its_idle_helper_at_once)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    REQUIRE(create_fresh("latewake", 5000 * MS, &shm));
    REQUIRE(gy_register(&shm, 1, &err) == 0);
    pid_t child = spawn(idle_lower_launches_late, shm.name, 0);
    CHECK(WAIT_FOR(count_state(&shm, GY_PROC_RUNNING) == 2, 3000));
    sleep_ms(20); /* the child's helper is asleep in its wait now */
    REQUIRE(gy_job_enter(&shm, 1, 0, &job, &err) == 0);
    int lower = shm.slot == 0 ? 1 : 0;
    CHECK(WAIT_FOR(atomic_load(&shm.seg->procs[lower].inflight) ||
                       atomic_load(&shm.seg->procs[lower].drained_epoch) >= job.epoch,
                   3000));
    uint64_t t0 = gy_now_ns();
    CHECK(gy_job_wait_drained(&shm, &job, 0) == GY_WAIT_DRAINED);
    uint64_t took = gy_now_ns() - t0;
    /* Without the wake the helper sleeps to its next reap tick, up to 100 ms. */
    CHECK(took < 40 * MS, "the drain of an idle process took %llu ms", (unsigned long long)(took / MS));
    gy_job_exit(&shm, &job, &err);
    kill(child, SIGKILL);
    wait_exit(child);
    destroy(&shm);
}

/* Out of file descriptors, /proc cannot be read: that must not make live processes look dead. */
static int reap_without_descriptors(const char *name, long unused)
{
    (void)unused;
    gy_shm shm;
    gy_err err;
    if (gy_open(name, &shm, &err))
        return 10;
    struct rlimit lim = {64, 64};
    if (setrlimit(RLIMIT_NOFILE, &lim))
        return 11;
    while (open("/dev/null", O_RDONLY) >= 0)
        ;
    if (errno != EMFILE)
        return 12;
    int reaped = gy_reap(&shm);
    return reaped == 0 ? 0 : 20 + reaped;
}

TEST(reaping_without_descriptors_keeps_live_processes)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    REQUIRE(create_fresh("emfile", 0, &shm));
    REQUIRE(gy_register(&shm, 2, &err) == 0);
    REQUIRE(gy_begin(&shm, 2, &job, &err) == 0);
    int rc = wait_exit(spawn(reap_without_descriptors, shm.name, 0));
    CHECK(rc == 0, "child ended with %d (2x: reaped that many live slots)", rc);
    CHECK(shm.seg->jobs[2] == 1 && !gy_launch_allowed(&shm, 0), "the live job was counted out");
    CHECK(gy_job_exit(&shm, &job, &err) == 0, "%s", err.msg);
    destroy(&shm);
}

static int higher_job_for(const char *name, long ms)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    if (gy_open(name, &shm, &err) || gy_register(&shm, 2, &err) || gy_begin(&shm, 2, &job, &err))
        return 10;
    sleep_ms((unsigned)ms);
    gy_job_exit(&shm, &job, &err);
    gy_close(&shm);
    return 0;
}

/* Like higher_job_for, but the `ms` count from the moment both jobs are in: the overlap does not
 * depend on how soon the second process starts. */
static int higher_job_overlapping(const char *name, long ms)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    if (gy_open(name, &shm, &err) || gy_register(&shm, 2, &err) || gy_begin(&shm, 2, &job, &err))
        return 10;
    uint64_t until = gy_now_ns() + 30000 * MS;
    while (shm.seg->jobs[2] < 2 && gy_now_ns() < until)
        sleep_ms(1);
    if (shm.seg->jobs[2] < 2)
        return 11;
    sleep_ms((unsigned)ms);
    gy_job_exit(&shm, &job, &err);
    gy_close(&shm);
    return 0;
}

TEST(overlapping_higher_jobs_keep_lower_blocked_until_the_last_ends)
{
    gy_shm shm;
    gy_err err;
    REQUIRE(create_fresh("overlap", 0, &shm));
    REQUIRE(gy_register(&shm, 0, &err) == 0);
    pid_t a = spawn(higher_job_overlapping, shm.name, 200);
    pid_t b = spawn(higher_job_overlapping, shm.name, 2000);
    CHECK(WAIT_FOR(shm.seg->jobs[2] == 2, 30000), "both jobs never overlapped");
    CHECK(wait_exit(a) == 0);
    CHECK(shm.seg->jobs[2] == 1 && !gy_launch_allowed(&shm, 0), "lower allowed while a job remains");
    uint64_t t0 = gy_now_ns();
    gy_wait_until_allowed(&shm, NULL);
    CHECK(gy_now_ns() - t0 > 100 * MS, "did not block behind the remaining job");
    CHECK(wait_exit(b) == 0);
    CHECK(gy_launch_allowed(&shm, 0) && shm.seg->jobs[2] == 0);
    CHECK(atomic_load(&shm.seg->procs[shm.slot].counters.waits) == 1);
    destroy(&shm);
}

TEST(begin_returns_at_once_when_nothing_lower_is_in_flight)
{
    gy_shm shm, lower;
    gy_err err;
    gy_job job;
    REQUIRE(create_fresh("noinflight", 5000 * MS, &shm));
    REQUIRE(gy_register(&shm, 1, &err) == 0);
    REQUIRE(gy_open(shm.name, &lower, &err) == 0);
    REQUIRE(gy_register(&lower, 0, &err) == 0); /* registered, nothing in flight */
    uint64_t t0 = gy_now_ns();
    REQUIRE(gy_begin(&shm, 1, &job, &err) == 0);
    CHECK(job.drained && !job.timed_out);
    CHECK(gy_now_ns() - t0 < 500 * MS, "begin took %llu ms", (unsigned long long)((gy_now_ns() - t0) / MS));
    gy_job_exit(&shm, &job, &err);
    gy_close(&lower);
    destroy(&shm);
}

/* A lower process with work in flight: its helper acknowledges drains after `work_ms`. */
static int lower_with_helper(const char *name, long work_ms)
{
    gy_shm shm;
    gy_err err;
    if (gy_open(name, &shm, &err) || gy_register(&shm, 0, &err))
        return 10;
    gy_mark_inflight(&shm);
    uint64_t epoch;
    uint64_t until = gy_now_ns() + 5000 * MS;
    while (gy_now_ns() < until) {
        if (gy_drain_wait_request(&shm, 100 * MS, &epoch)) {
            sleep_ms((unsigned)work_ms); /* "the GPU finishes what was queued" */
            gy_drain_ack(&shm, epoch, false);
            break;
        }
    }
    sleep_ms(5000); /* stay registered until killed */
    return 0;
}

TEST(begin_waits_for_the_drain_of_lower_work_in_flight)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    REQUIRE(create_fresh("drain", 5000 * MS, &shm));
    REQUIRE(gy_register(&shm, 1, &err) == 0);
    pid_t child = spawn(lower_with_helper, shm.name, 300);
    CHECK(WAIT_FOR(shm.seg->procs[0].inflight || shm.seg->procs[1].inflight, 3000));
    uint64_t t0 = gy_now_ns();
    REQUIRE(gy_begin(&shm, 1, &job, &err) == 0);
    uint64_t took = gy_now_ns() - t0;
    CHECK(job.drained && !job.timed_out);
    CHECK(took >= 250 * MS && took < 3000 * MS, "begin took %llu ms", (unsigned long long)(took / MS));
    CHECK(job.wait_ns >= 250 * MS);
    int lower_slot = shm.slot == 0 ? 1 : 0;
    CHECK(atomic_load(&shm.seg->procs[lower_slot].counters.drains) == 1);
    CHECK(atomic_load(&shm.seg->procs[lower_slot].inflight) == 0);
    gy_job_exit(&shm, &job, &err);
    /* A second job finds nothing in flight: no wait at all. */
    t0 = gy_now_ns();
    REQUIRE(gy_begin(&shm, 1, &job, &err) == 0);
    CHECK(job.drained && gy_now_ns() - t0 < 500 * MS);
    gy_job_exit(&shm, &job, &err);
    kill(child, SIGKILL);
    wait_exit(child);
    destroy(&shm);
}

static int lower_never_acks(const char *name, long unused)
{
    (void)unused;
    gy_shm shm;
    gy_err err;
    if (gy_open(name, &shm, &err) || gy_register(&shm, 0, &err))
        return 10;
    gy_mark_inflight(&shm);
    sleep_ms(10000);
    return 0;
}

TEST(corun_begin_closes_the_gate_and_returns_without_waiting_for_the_drain)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    REQUIRE(create_fresh("corun", 5000 * MS, &shm));
    REQUIRE(gy_register(&shm, 1, &err) == 0);
    CHECK(gy_get_policy(&shm) == GY_POLICY_DRAIN, "a new segment drains by default");
    gy_set_policy(&shm, GY_POLICY_CORUN, true);
    CHECK(gy_get_policy(&shm) == GY_POLICY_CORUN && gy_get_mps(&shm));
    pid_t child = spawn(lower_never_acks, shm.name, 0); /* in flight, and never drains */
    CHECK(WAIT_FOR(shm.seg->procs[0].inflight || shm.seg->procs[1].inflight, 3000));
    uint64_t t0 = gy_now_ns();
    REQUIRE(gy_begin(&shm, 1, &job, &err) == 0);
    uint64_t took = gy_now_ns() - t0;
    /* 1 s: a process under TSan on a crowded machine can wait tens to hundreds of ms for a CPU;
     * a begin that waited for this drain would take the 5 s drain timeout. */
    CHECK(took < 1000 * MS, "a corun begin took %llu ms", (unsigned long long)(took / MS));
    CHECK(job.corun && !job.drained && !job.timed_out && job.wait_ns == 0);
    CHECK(!gy_launch_allowed(&shm, 0), "the gate is closed for lower launches during the job");
    CHECK(atomic_load(&shm.seg->total_drain_timeouts) == 0, "no wait, so no timeout is counted");
    struct gy_status st;
    char json[4096];
    REQUIRE(gy_status_read(&shm, &st, &err) == 0);
    gy_status_json(&st, json, sizeof json);
    CHECK(strstr(json, "\"policy\": \"corun\", \"mps\": true") != NULL, "%s", json);
    gy_job_exit(&shm, &job, &err);
    CHECK(gy_launch_allowed(&shm, 0), "the gate opens at the end");
    /* Back to drain: the same begin now waits for the drain (and times out on this helper). */
    gy_set_policy(&shm, GY_POLICY_DRAIN, false);
    REQUIRE(gy_job_enter(&shm, 1, 200 * MS, &job, &err) == 0);
    CHECK(gy_job_wait_drained(&shm, &job, 0) == GY_WAIT_TIMEDOUT && !job.corun);
    gy_job_exit(&shm, &job, &err);
    /* partition under MPS: a begin returns at once, like corun; without MPS it drains. */
    gy_set_policy(&shm, GY_POLICY_PARTITION, true);
    CHECK(gy_get_policy(&shm) == GY_POLICY_PARTITION);
    t0 = gy_now_ns();
    REQUIRE(gy_begin(&shm, 1, &job, &err) == 0);
    took = gy_now_ns() - t0;
    CHECK(took < 1000 * MS && job.corun && !job.drained, "a partition begin took %llu ms", /* as above */
          (unsigned long long)(took / MS));
    CHECK(!gy_launch_allowed(&shm, 0), "the gate word is closed (the hooks decide what a lower launch does)");
    REQUIRE(gy_status_read(&shm, &st, &err) == 0);
    gy_status_json(&st, json, sizeof json);
    CHECK(strstr(json, "\"policy\": \"partition\", \"mps\": true") != NULL, "%s", json);
    CHECK(strstr(json, "\"partition_launches\": 0, \"partition_copies\": 0, \"auto_jobs\": 0, \"auto_job_ns\": 0, "
                       "\"partition\": \"-\"") != NULL,
          "%s", json);
    gy_job_exit(&shm, &job, &err);
    gy_set_policy(&shm, GY_POLICY_PARTITION, false);
    REQUIRE(gy_job_enter(&shm, 1, 200 * MS, &job, &err) == 0);
    CHECK(gy_job_wait_drained(&shm, &job, 0) == GY_WAIT_TIMEDOUT && !job.corun, "partition without MPS drains");
    gy_job_exit(&shm, &job, &err);
    kill(child, SIGKILL);
    wait_exit(child);
    destroy(&shm);
}

TEST(policy_names_parse_and_out_of_range_policy_is_refused)
{
    enum gy_policy p;
    CHECK(gy_policy_parse("corun", &p) == 0 && p == GY_POLICY_CORUN);
    CHECK(gy_policy_parse("drain", &p) == 0 && p == GY_POLICY_DRAIN);
    CHECK(gy_policy_parse("partition", &p) == 0 && p == GY_POLICY_PARTITION);
    CHECK(strcmp(gy_policy_name(GY_POLICY_PARTITION), "partition") == 0);
    CHECK(gy_policy_parse("Corun", &p) == -1 && gy_policy_parse("", &p) == -1 && gy_policy_parse(NULL, &p) == -1);
    gy_shm shm, other;
    gy_err err;
    REQUIRE(create_fresh("policy", 0, &shm));
    atomic_store(&shm.seg->policy, 7u); /* corrupted */
    CHECK(gy_open(shm.name, &other, &err) == -1 && strstr(err.msg, "policy out of range"), "%s", err.msg);
    destroy(&shm);
}

TEST(drain_timeout_is_bounded_counted_and_reported)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    REQUIRE(create_fresh("timeout", 300 * MS, &shm));
    REQUIRE(gy_register(&shm, 1, &err) == 0);
    pid_t child = spawn(lower_never_acks, shm.name, 0);
    CHECK(WAIT_FOR(count_state(&shm, GY_PROC_RUNNING) == 2 &&
                       (shm.seg->procs[0].inflight || shm.seg->procs[1].inflight),
                   3000));
    uint64_t t0 = gy_now_ns();
    REQUIRE(gy_begin(&shm, 1, &job, &err) == 0);
    uint64_t took = gy_now_ns() - t0;
    CHECK(job.timed_out && !job.drained);
    CHECK(took >= 290 * MS && took < 2000 * MS, "took %llu ms", (unsigned long long)(took / MS));
    CHECK(atomic_load(&shm.seg->procs[shm.slot].counters.drain_timeouts) == 1);
    CHECK(atomic_load(&shm.seg->total_drain_timeouts) == 1);
    gy_job_exit(&shm, &job, &err);
    /* The slice API returns PENDING without giving up the job. */
    REQUIRE(gy_job_enter(&shm, 1, 2000 * MS, &job, &err) == 0);
    CHECK(gy_job_wait_drained(&shm, &job, 20 * MS) == GY_WAIT_PENDING);
    CHECK(job.active && shm.seg->jobs[1] == 1);
    gy_job_exit(&shm, &job, &err);
    kill(child, SIGKILL);
    wait_exit(child);
    destroy(&shm);
}

/* ---- crashes --------------------------------------------------------------------------------- */

static int hold_mutex_forever(const char *name, long unused)
{
    (void)unused;
    gy_shm shm;
    gy_err err;
    if (gy_open(name, &shm, &err))
        return 10;
    gy_lock(shm.seg);
    sleep_ms(30000);
    return 0;
}

TEST(sigkill_while_holding_the_mutex_does_not_hang_others)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    REQUIRE(create_fresh("killmutex", 0, &shm));
    REQUIRE(gy_register(&shm, 1, &err) == 0);
    pid_t child = spawn(hold_mutex_forever, shm.name, 0);
    sleep_ms(200);
    kill(child, SIGKILL);
    wait_exit(child);
    uint64_t t0 = gy_now_ns();
    CHECK(gy_begin(&shm, 1, &job, &err) == 0);
    CHECK(gy_job_exit(&shm, &job, &err) == 0);
    CHECK(gy_now_ns() - t0 < 1000 * MS);
    destroy(&shm);
}

/* issue 19: a process stopped (SIGSTOP) while it holds the mutex. Every call that needs the
 * mutex gives up after the bound (the drain timeout, 300 ms here), counts it, and says who holds
 * it; status reads without it and names the holder. */
TEST(a_stopped_mutex_holder_bounds_every_wait_and_is_named)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    REQUIRE(create_fresh("stopmutex", 300 * MS, &shm));
    REQUIRE(gy_register(&shm, 1, &err) == 0);
    pid_t child = spawn(hold_mutex_forever, shm.name, 0);
    CHECK(WAIT_FOR(atomic_load((_Atomic uint32_t *)(void *)&shm.seg->mutex) != 0, 3000));
    kill(child, SIGSTOP);
    char pid_text[32];
    snprintf(pid_text, sizeof pid_text, "pid %d", (int)child);
    CHECK(gy_job_enter(&shm, 1, 0, &job, &err) == -1 && err.code == ETIMEDOUT, "begin: %s", err.msg);
    CHECK(strstr(err.msg, pid_text) && strstr(err.msg, "STOPPED"), "the holder is not named: %s", err.msg);
    CHECK(gy_reap(&shm) == 0);
    static struct gy_status st;
    CHECK(gy_status_read(&shm, &st, &err) == 0, "%s", err.msg);
    CHECK(strstr(st.mutex_holder, pid_text) && strstr(st.mutex_holder, "STOPPED"), "status: holder '%s'",
          st.mutex_holder);
    CHECK(st.lock_timeouts >= 3, "%llu lock timeouts counted", (unsigned long long)st.lock_timeouts);
    kill(child, SIGKILL);
    wait_exit(child);
    CHECK(gy_begin(&shm, 1, &job, &err) == 0, "%s", err.msg);
    CHECK(gy_job_exit(&shm, &job, &err) == 0, "%s", err.msg);
    destroy(&shm);
}

/* issue 29 item 1: a job's end that cannot take the mutex (its holder stopped) is owed, not
 * lost. end() succeeds; status counts the job out at once; once the holder goes on and lets go,
 * the next holder (here the lower process's blocked launch) applies the end: the counts are 0,
 * the lower launch goes, and the next begin/end work. Before: end() failed with ETIMEDOUT and the
 * job stayed counted until the process exited. */
static int hold_mutex_then_release(const char *name, long hold_ms)
{
    gy_shm shm;
    gy_err err;
    if (gy_open(name, &shm, &err))
        return 10;
    gy_lock(shm.seg);
    sleep_ms(hold_ms); /* time passes while stopped: it unlocks soon after SIGCONT */
    gy_unlock(shm.seg);
    sleep_ms(30000);
    return 0;
}

TEST(an_end_that_cannot_lock_is_owed_and_applied_by_the_next_holder)
{
    gy_shm shm;
    gy_err err;
    gy_job job, dev_job;
    static const uint8_t uuid[GY_UUID_BYTES] = {0x29, 1};
    REQUIRE(create_fresh("owedend", 200 * MS, &shm));
    REQUIRE(gy_register(&shm, 1, &err) == 0);
    int dev = gy_device_slot(&shm, uuid, &err);
    REQUIRE(dev >= 0, "%s", err.msg);
    pid_t lower = spawn(lower_waits_for_gate, shm.name, 0);
    CHECK(WAIT_FOR(count_state(&shm, GY_PROC_RUNNING) == 2, 3000));
    REQUIRE(gy_begin(&shm, 1, &job, &err) == 0, "%s", err.msg);
    REQUIRE(gy_begin_on(&shm, 1, dev, &dev_job, &err) == 0, "%s", err.msg);
    CHECK(WAIT_FOR(count_state(&shm, GY_PROC_BLOCKED) == 1, 3000), "the lower process never blocked");
    pid_t holder = spawn(hold_mutex_then_release, shm.name, 1500);
    REQUIRE(WAIT_FOR(gy_mutex_holder(shm.seg, &(int){0}) == holder, 3000), "the holder never locked");
    kill(holder, SIGSTOP);
    CHECK(gy_job_exit(&shm, &job, &err) == 0, "end with a stopped holder: %s", err.msg);
    CHECK(gy_job_exit(&shm, &dev_job, &err) == 0, "end on a device with a stopped holder: %s", err.msg);
    CHECK(!job.active && !dev_job.active);
    static struct gy_status st;
    CHECK(gy_status_read(&shm, &st, &err) == 0, "%s", err.msg);
    CHECK(st.jobs[1] == 0, "status counts %u jobs at level 1 while the end is owed", st.jobs[1]);
    CHECK(st.ndevices == 1 && st.devices[0].jobs[1] == 0, "the device's job is still counted");
    CHECK(atomic_load(&shm.seg->ends_owed) == 2, "%u ends owed", atomic_load(&shm.seg->ends_owed));
    sleep_ms(1600); /* past the holder's hold: it unlocks as soon as it runs */
    kill(holder, SIGCONT);
    int lower_status = -1;
    bool lower_done = false; /* WAIT_FOR tests its condition once more: reap once */
    CHECK(WAIT_FOR(lower_done || (lower_done = waitpid(lower, &lower_status, WNOHANG) == lower), 2000),
          "the lower launch did not go within 2 s");
    CHECK(lower_status == 0, "the lower process ended with status %d", lower_status);
    if (lower_status == -1) {
        kill(lower, SIGKILL);
        wait_exit(lower);
    }
    CHECK(shm.seg->jobs[1] == 0 && shm.seg->devices[dev].jobs[1] == 0 && atomic_load(&shm.seg->ends_owed) == 0,
          "jobs %u, on the device %u, owed %u", shm.seg->jobs[1], shm.seg->devices[dev].jobs[1],
          atomic_load(&shm.seg->ends_owed));
    CHECK(gy_launch_allowed(&shm, 0) && gy_launch_allowed_on(&shm, dev, 0), "the gate stayed closed");
    CHECK(gy_begin(&shm, 1, &job, &err) == 0, "%s", err.msg);
    CHECK(gy_job_exit(&shm, &job, &err) == 0, "end refused after the owed end: %s", err.msg);
    CHECK(shm.seg->jobs[1] == 0);
    kill(holder, SIGKILL);
    wait_exit(holder);
    destroy(&shm);
}

/* The holder dies while we wait in the bounded (timed) lock: the lock comes back to us as
 * recovered (EOWNERDEAD from pthread_mutex_timedlock, not from the trylock before it), and it
 * unlocks and locks again as usual. Under TSan this path needs its own annotation (shared_wait.c):
 * without one the unlock was "of an unlocked mutex"; with a half one TSan's runtime aborted
 * (CHECK ignore_sync > 0, CI 2026-11-23). */
static pid_t doomed_holder;
static void *kill_holder_later(void *unused)
{
    (void)unused;
    sleep_ms(300);
    kill(doomed_holder, SIGKILL);
    return NULL;
}

TEST(a_holder_killed_during_a_timed_lock_hands_the_mutex_over)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    REQUIRE(create_fresh("timedkill", 5000 * MS, &shm));
    REQUIRE(gy_register(&shm, 1, &err) == 0);
    doomed_holder = spawn(hold_mutex_forever, shm.name, 0);
    REQUIRE(WAIT_FOR(atomic_load((_Atomic uint32_t *)(void *)&shm.seg->mutex) != 0, 3000), "the holder never locked");
    pthread_t killer;
    REQUIRE(pthread_create(&killer, NULL, kill_holder_later, NULL) == 0);
    uint64_t t0 = gy_now_ns();
    int rc = gy_lock(shm.seg); /* trylock: busy; then the timed lock, until the holder dies */
    uint64_t waited_ms = (gy_now_ns() - t0) / MS;
    CHECK(rc == 1, "gy_lock returned %d, not 1 (recovered from a dead holder)", rc);
    CHECK(waited_ms >= 200 && waited_ms < 4000, "waited %llu ms", (unsigned long long)waited_ms);
    if (rc >= 0)
        gy_unlock(shm.seg);
    pthread_join(killer, NULL);
    wait_exit(doomed_holder);
    CHECK(gy_begin(&shm, 1, &job, &err) == 0, "%s", err.msg);
    CHECK(gy_job_exit(&shm, &job, &err) == 0, "%s", err.msg);
    destroy(&shm);
}

static int job_then_hang(const char *name, long priority)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    if (gy_open(name, &shm, &err) || gy_register(&shm, (int)priority, &err) ||
        gy_begin(&shm, (int)priority, &job, &err))
        return 10;
    sleep_ms(30000);
    return 0;
}

TEST(sigkill_inside_a_job_counts_it_out_and_frees_the_lower)
{
    gy_shm shm;
    gy_err err;
    REQUIRE(create_fresh("killjob", 0, &shm));
    REQUIRE(gy_register(&shm, 0, &err) == 0);
    pid_t child = spawn(job_then_hang, shm.name, 3);
    CHECK(WAIT_FOR(shm.seg->jobs[3] == 1, 3000));
    kill(child, SIGKILL);
    uint64_t t0 = gy_now_ns();
    gy_wait_until_allowed(&shm, NULL); /* must not hang: the waiter reaps */
    CHECK(gy_now_ns() - t0 < 2000 * MS, "blocked %llu ms", (unsigned long long)((gy_now_ns() - t0) / MS));
    CHECK(shm.seg->jobs[3] == 0 && atomic_load(&shm.seg->active_levels) == 0);
    CHECK(atomic_load(&shm.seg->reaped) == 1);
    wait_exit(child);
    destroy(&shm);
}

TEST(sigkill_while_blocked_leaves_the_job_owner_unharmed)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    REQUIRE(create_fresh("killblocked", 0, &shm));
    REQUIRE(gy_register(&shm, 1, &err) == 0);
    pid_t child = spawn(lower_waits_for_gate, shm.name, 0);
    CHECK(WAIT_FOR(count_state(&shm, GY_PROC_RUNNING) == 2, 3000));
    REQUIRE(gy_begin(&shm, 1, &job, &err) == 0);
    CHECK(WAIT_FOR(count_state(&shm, GY_PROC_BLOCKED) == 1, 3000));
    kill(child, SIGKILL);
    wait_exit(child);
    uint64_t t0 = gy_now_ns();
    CHECK(gy_job_exit(&shm, &job, &err) == 0);
    CHECK(gy_begin(&shm, 1, &job, &err) == 0 && job.drained);
    CHECK(gy_job_exit(&shm, &job, &err) == 0);
    CHECK(gy_now_ns() - t0 < 1000 * MS);
    CHECK(gy_reap(&shm) == 1 && count_state(&shm, GY_PROC_FREE) == GY_MAX_PROCS - 1);
    destroy(&shm);
}

static int drain_then_die(const char *name, long unused)
{
    (void)unused;
    gy_shm shm;
    gy_err err;
    uint64_t epoch;
    if (gy_open(name, &shm, &err) || gy_register(&shm, 0, &err))
        return 10;
    gy_mark_inflight(&shm);
    while (!gy_drain_wait_request(&shm, 100 * MS, &epoch))
        ;
    raise(SIGKILL); /* dies while draining, before acknowledging */
    return 0;
}

TEST(sigkill_while_draining_releases_the_begin_before_its_timeout)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    REQUIRE(create_fresh("killdrain", 10000 * MS, &shm));
    REQUIRE(gy_register(&shm, 1, &err) == 0);
    pid_t child = spawn(drain_then_die, shm.name, 0);
    CHECK(WAIT_FOR(count_state(&shm, GY_PROC_RUNNING) == 2 &&
                       (shm.seg->procs[0].inflight || shm.seg->procs[1].inflight),
                   3000));
    uint64_t t0 = gy_now_ns();
    REQUIRE(gy_begin(&shm, 1, &job, &err) == 0);
    CHECK(job.drained && !job.timed_out);
    CHECK(gy_now_ns() - t0 < 3000 * MS, "begin took %llu ms", (unsigned long long)((gy_now_ns() - t0) / MS));
    gy_job_exit(&shm, &job, &err);
    wait_exit(child);
    destroy(&shm);
}

TEST(pid_reuse_does_not_confuse_reaping)
{
    gy_shm shm, other;
    gy_err err;
    REQUIRE(create_fresh("pidreuse", 0, &shm));
    REQUIRE(gy_register(&shm, 0, &err) == 0);
    REQUIRE(gy_open(shm.name, &other, &err) == 0);
    REQUIRE(gy_register(&other, 2, &err) == 0);
    gy_job job;
    REQUIRE(gy_begin(&other, 2, &job, &err) == 0);
    CHECK(gy_reap(&shm) == 0, "a live process was reaped");
    /* Same pid, another start time: the original process is gone and the pid was reused. */
    other.seg->procs[other.slot].start_time += 1;
    CHECK(gy_reap(&shm) == 1);
    CHECK(shm.seg->jobs[2] == 0 && gy_launch_allowed(&shm, 0));
    CHECK(atomic_load(&shm.seg->procs[shm.slot].state) == GY_PROC_RUNNING, "the live slot was reaped");
    CHECK(gy_job_exit(&other, &job, &err) == -1 && err.code == ESRCH);
    other.slot = -1;
    gy_close(&other);
    destroy(&shm);
}

/* ---- status ---------------------------------------------------------------------------------- */

TEST(status_reports_processes_jobs_and_refuses_corruption)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    static struct gy_status st;
    static char json[16384];
    REQUIRE(create_fresh("status", 0, &shm));
    REQUIRE(gy_register(&shm, 4, &err) == 0);
    REQUIRE(gy_begin(&shm, 4, &job, &err) == 0);
    atomic_fetch_add(&shm.seg->procs[shm.slot].counters.launches, 7);
    REQUIRE(gy_status_read(&shm, &st, &err) == 0, "%s", err.msg);
    CHECK(st.nprocs == 1 && st.procs[0].pid == getpid() && st.procs[0].priority == 4);
    CHECK(st.procs[0].launches == 7 && st.jobs[4] == 1 && strcmp(st.procs[0].state, "running") == 0);
    int n = gy_status_json(&st, json, sizeof json);
    CHECK(n > 0 && (size_t)n < sizeof json);
    CHECK(strstr(json, "\"jobs\": [0, 0, 0, 0, 1, 0, 0, 0]") && strstr(json, "\"launches\": 7"), "%s", json);
    char small[16];
    CHECK(gy_status_json(&st, small, sizeof small) == n, "snprintf-style length");
    gy_job_exit(&shm, &job, &err);
    atomic_store(&shm.seg->procs[shm.slot].state, 77);
    CHECK(gy_status_read(&shm, &st, &err) == -1 && strstr(err.msg, "corrupt") && strstr(err.msg, "state 77"),
          "%s", err.msg);
    CHECK(gy_reap(&shm) == 1, "a corrupt slot is freed by the reaper");
    shm.seg->jobs[0] = 0xfffffff0u;
    CHECK(gy_status_read(&shm, &st, &err) == -1 && strstr(err.msg, "level 0"), "%s", err.msg);
    shm.slot = -1;
    destroy(&shm);
}

/* ---- per-GPU gating (issue 20) ------------------------------------------------------------- */

static void uuid_n(int n, uint8_t uuid[GY_UUID_BYTES])
{
    memset(uuid, 0xab, GY_UUID_BYTES);
    uuid[0] = (uint8_t)n;
}

/* A lower process with work in flight on one device slot (-1: on no known device) that never
 * drains. */
static int lower_on_device(const char *name, long device)
{
    gy_shm shm;
    gy_err err;
    if (gy_open(name, &shm, &err) || gy_register(&shm, 0, &err))
        return 10;
    gy_note_launch_device(&shm, (int)device);
    gy_mark_inflight(&shm);
    sleep_ms(10000);
    return 0;
}

TEST(device_slots_are_claimed_once_per_uuid_and_bounded)
{
    gy_shm shm;
    gy_err err;
    uint8_t uuid[GY_UUID_BYTES];
    REQUIRE(create_fresh("devslots", 0, &shm));
    for (int n = 0; n < GY_MAX_DEVICES; n++) {
        uuid_n(n, uuid);
        CHECK(gy_device_slot(&shm, uuid, &err) == n, "GPU %d", n);
    }
    uuid_n(3, uuid);
    CHECK(gy_device_slot(&shm, uuid, &err) == 3, "a known UUID keeps its slot");
    uuid_n(GY_MAX_DEVICES, uuid);
    CHECK(gy_device_slot(&shm, uuid, &err) == -1 && err.code == ENOSPC && strstr(err.msg, "device table"), "%s",
          err.msg);
    char text[GY_UUID_TEXT];
    uuid_n(1, uuid);
    gy_format_uuid(uuid, text);
    CHECK(strcmp(text, "GPU-01ababab-abab-abab-abab-abababababab") == 0, "%s", text);
    destroy(&shm);
}

TEST(a_job_on_one_device_gates_and_drains_that_device_only)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    uint8_t uuid[GY_UUID_BYTES];
    REQUIRE(create_fresh("perdevice", 5000 * MS, &shm));
    REQUIRE(gy_register(&shm, 2, &err) == 0);
    uuid_n(0, uuid);
    int gpu0 = gy_device_slot(&shm, uuid, &err);
    uuid_n(1, uuid);
    int gpu1 = gy_device_slot(&shm, uuid, &err);
    REQUIRE(gpu0 == 0 && gpu1 == 1);
    CHECK(gy_job_enter_on(&shm, 2, 5, 0, &job, &err) == -1 && err.code == EINVAL && strstr(err.msg, "device slot 5"),
          "%s", err.msg);
    pid_t child = spawn(lower_on_device, shm.name, gpu1); /* in flight on GPU 1, never drains */
    CHECK(WAIT_FOR(shm.seg->procs[1].inflight, 3000));
    /* A job on GPU 0: lower launches on GPU 0 and on no known device stop, those on GPU 1 go on;
     * the process busy on GPU 1 owes it no drain. */
    REQUIRE(gy_job_enter_on(&shm, 2, gpu0, 300 * MS, &job, &err) == 0, "%s", err.msg);
    CHECK(!gy_launch_allowed_on(&shm, gpu0, 0) && gy_launch_allowed_on(&shm, gpu1, 0) && !gy_launch_allowed(&shm, 0));
    CHECK(gy_launch_allowed_on(&shm, gpu0, 2), "a peer at the job's level is not gated");
    CHECK(gy_job_wait_drained(&shm, &job, 0) == GY_WAIT_DRAINED, "the GPU 1 process delayed a GPU 0 job");
    CHECK(shm.seg->devices[gpu0].jobs[2] == 1 && shm.seg->jobs[2] == 1);
    REQUIRE(gy_job_exit(&shm, &job, &err) == 0);
    CHECK(gy_launch_allowed_on(&shm, gpu0, 0) && gy_launch_allowed(&shm, 0) && shm.seg->devices[gpu0].jobs[2] == 0);
    /* A job on GPU 1 waits for it (and times out: it never drains). */
    REQUIRE(gy_job_enter_on(&shm, 2, gpu1, 300 * MS, &job, &err) == 0);
    CHECK(gy_launch_allowed_on(&shm, gpu0, 0) && !gy_launch_allowed_on(&shm, gpu1, 0));
    CHECK(gy_job_wait_drained(&shm, &job, 0) == GY_WAIT_TIMEDOUT, "the GPU 1 job did not wait for GPU 1's work");
    REQUIRE(gy_job_exit(&shm, &job, &err) == 0);
    /* A job on every device closes every word and waits for it too. */
    REQUIRE(gy_job_enter(&shm, 2, 300 * MS, &job, &err) == 0);
    CHECK(!gy_launch_allowed_on(&shm, gpu0, 0) && !gy_launch_allowed_on(&shm, gpu1, 0) &&
          !gy_launch_allowed_on(&shm, 7, 0) && !gy_launch_allowed(&shm, 0));
    CHECK(gy_job_wait_drained(&shm, &job, 0) == GY_WAIT_TIMEDOUT);
    struct gy_status st;
    static char json[8192];
    REQUIRE(gy_status_read(&shm, &st, &err) == 0);
    gy_status_json(&st, json, sizeof json);
    CHECK(st.ndevices == 2 && st.devices[1].slot == gpu1 &&
              strstr(json, "\"partition\": \"-\", \"devices\": [1]}") != NULL,
          "%s", json);
    REQUIRE(gy_job_exit(&shm, &job, &err) == 0);
    CHECK(gy_launch_allowed_on(&shm, gpu1, 0) && gy_launch_allowed(&shm, 0));
    kill(child, SIGKILL);
    wait_exit(child);
    destroy(&shm);
}

TEST(a_process_on_no_known_device_owes_every_device_job_a_drain)
{
    gy_shm shm;
    gy_err err;
    gy_job job;
    uint8_t uuid[GY_UUID_BYTES];
    REQUIRE(create_fresh("nodevice", 5000 * MS, &shm));
    REQUIRE(gy_register(&shm, 2, &err) == 0);
    uuid_n(0, uuid);
    int gpu0 = gy_device_slot(&shm, uuid, &err);
    pid_t child = spawn(lower_on_device, shm.name, GY_DEVICE_ALL);
    CHECK(WAIT_FOR(shm.seg->procs[1].inflight, 3000));
    REQUIRE(gy_job_enter_on(&shm, 2, gpu0, 300 * MS, &job, &err) == 0);
    CHECK(gy_job_wait_drained(&shm, &job, 0) == GY_WAIT_TIMEDOUT);
    REQUIRE(gy_job_exit(&shm, &job, &err) == 0);
    kill(child, SIGKILL);
    wait_exit(child);
    destroy(&shm);
}

TEST(reap_corrects_device_job_counts_that_no_live_process_holds)
{
    gy_shm shm;
    gy_err err;
    uint8_t uuid[GY_UUID_BYTES];
    REQUIRE(create_fresh("devreap", 0, &shm));
    uuid_n(0, uuid);
    int gpu0 = gy_device_slot(&shm, uuid, &err);
    REQUIRE(gpu0 == 0);
    shm.seg->jobs[3] = 1;
    shm.seg->devices[gpu0].jobs[3] = 1;
    atomic_store(&shm.seg->devices[gpu0].active_levels, 1u << 3);
    CHECK(!gy_launch_allowed_on(&shm, gpu0, 0));
    gy_reap(&shm);
    CHECK(shm.seg->devices[gpu0].jobs[3] == 0 && shm.seg->jobs[3] == 0 && gy_launch_allowed_on(&shm, gpu0, 0));
    destroy(&shm);
}

/* ---- metrics textfile ------------------------------------------------------------------------ */

static bool file_is(const char *path, const char *want)
{
    char buf[256] = {0};
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    return n == strlen(want) && memcmp(buf, want, n) == 0;
}

/* Symbolic links planted at the temporary names the writer may pick (the old fixed
 * "<path>.tmp.<pid>" and the first "<path>.tmp.<pid>.<n>") are never written through: the writer
 * skips taken names and leaves them alone. */
TEST(metrics_textfile_never_writes_through_a_planted_link)
{
    char dir[] = "/tmp/gy-textfile-XXXXXX";
    REQUIRE(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    char path[128], victim[128], link[160];
    snprintf(path, sizeof path, "%s/gy.prom", dir);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    FILE *f = fopen(victim, "w");
    REQUIRE(f);
    fputs("precious\n", f);
    fclose(f);
    enum { PLANTED = 8 };
    snprintf(link, sizeof link, "%s.tmp.%d", path, (int)getpid());
    CHECK(symlink(victim, link) == 0);
    for (int k = 0; k < PLANTED; k++) {
        snprintf(link, sizeof link, "%s.tmp.%d.%d", path, (int)getpid(), k);
        CHECK(symlink(victim, link) == 0);
    }
    gy_err err;
    for (int round = 0; round < 3; round++) {
        char text[32];
        snprintf(text, sizeof text, "gpuyield_round %d\n", round);
        CHECK(gy_metrics_write_file(path, text, &err) == 0, "%s", err.msg);
        CHECK(file_is(path, text), "round %d", round);
        CHECK(file_is(victim, "precious\n"), "the link's target was written through in round %d", round);
    }
    struct stat st;
    CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
    /* Left: the victim, the target and the planted links, no temporary file of ours. */
    int entries = 0, links = 0;
    DIR *d = opendir(dir);
    REQUIRE(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char full[512];
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        entries++;
        links += lstat(full, &st) == 0 && S_ISLNK(st.st_mode);
        unlink(full);
    }
    closedir(d);
    rmdir(dir);
    CHECK(links == PLANTED + 1 && entries == PLANTED + 3, "%d entries, %d links", entries, links);
}
