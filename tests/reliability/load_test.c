/* Load: many processes at every priority level hammer the gate at once (launch checks, blocked
 * waits, jobs, drain helpers acknowledging), then every counter must add up, no waiter may stay
 * blocked long after the last higher job ended, and a watchdog turns any deadlock into a failure.
 *
 *   load_test [PROCESSES [SECONDS [DRAIN_TIMEOUT_MS [HOGS]]]]
 *
 * (default 64 processes for 10 s, drain timeout 10 s, no hogs; levels = pid index % 8). A short
 * drain timeout with CPU hogs (busy loops) is issue 29's loaded machine: drains time out (counted,
 * not failed), and every job's end must still count it out: the status reader checks at every
 * snapshot that each level's count lies between the jobs certainly in progress and those possibly
 * so (the children count each step), and each process's slot holds no job once its last ended.
 *
 * Prints one line per check, a summary of the load held, and "N passed, N failed". */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "gpuyield.h"

#define MS 1000000ull
#define CHECKS_PER_BATCH 2000
#define JOB_GAP_MIN_MS 10
#define JOB_GAP_SPREAD_MS 60
/* Seconds-scale bounds: this machine has 2 cores shared with parallel builds. */
#define WAKE_BOUND_NS (2000 * MS)
#define DRAIN_TIMEOUT_NS (10000 * MS)
#define SLOW_WAKE_NS (100 * MS) /* reported, not asserted: above the controller's reap interval */
/* Under load, other wake-ups (job enters, drain acks) hide a lost one; so quiet rounds follow
 * where a job's exit is the only wake-up. A lost one is then freed only by the controller's
 * periodic re-check (100 ms), i.e. ~80 ms after the exit; a working one takes well under 1 ms. */
#define QUIET_ROUNDS 15
#define QUIET_WAITERS (GY_LEVELS - 1)
#define QUIET_PAUSE_MS 20
#define QUIET_MEDIAN_BOUND_NS (40 * MS)

/* What each child reports, in memory shared with the parent. */
struct child_report {
    int priority;
    char error[400];
    uint64_t checks, launches, blocked_waits, blocked_ns;
    uint64_t slot_waits, slot_blocked_ns; /* the controller's own counters, read before unregistering */
    uint64_t jobs_begun, jobs_ended, drain_timeouts, slot_drain_timeouts, max_job_wait_ns;
    uint64_t acks, slot_drains;
    uint64_t max_wake_latency_ns, sum_wake_latency_ns, slow_wakes;
    uint64_t held_after; /* jobs its slot still held (owed ends counted out) after its last end */
};

struct shared_board {
    /* Per level: when a job of that level last started to end (stored before gy_job_exit, so a
     * waiter released by that exit always sees it). */
    _Atomic uint64_t last_exit_ns[GY_LEVELS];
    /* The quiet rounds: the round the waiters should block in, and when each woke. */
    _Atomic int quiet_round;
    _Atomic uint64_t quiet_woke_ns[QUIET_WAITERS][QUIET_ROUNDS];
    /* Per level, counted by the children around each job: before gy_job_enter, after it returned,
     * before gy_job_exit, after it returned. A status count taken between two reads of these lies
     * in [entered(before) - exiting(after), entering(after) - exited(before)]. */
    _Atomic uint64_t entering[GY_LEVELS], entered[GY_LEVELS], exiting[GY_LEVELS], exited[GY_LEVELS];
    struct child_report children[];
};

static struct shared_board *board;
static char segment_name[GY_NAME_MAX];
static uint64_t drain_timeout_ns = DRAIN_TIMEOUT_NS;
static int checks_passed, checks_failed;

static void check(bool ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void check(bool ok, const char *name, const char *fmt, ...)
{
    if (ok) {
        checks_passed++;
        printf("ok   %s\n", name);
        return;
    }
    checks_failed++;
    printf("FAIL %s: ", name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static void sleep_us(unsigned us)
{
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000L};
    nanosleep(&ts, NULL);
}

/* ---- the child: a gated process with a drain helper -------------------------------------------- */

struct child {
    gy_shm shm;
    struct child_report *report;
    _Atomic uint64_t launches; /* the helper compares it across a drain */
    _Atomic int stop;
};

static void *drain_helper(void *arg)
{
    struct child *c = arg;
    uint64_t epoch;
    while (!atomic_load(&c->stop)) {
        if (!gy_drain_wait_request(&c->shm, 50 * MS, &epoch))
            continue;
        uint64_t before = atomic_load(&c->launches);
        sleep_us((unsigned)(epoch % 500)); /* "waits for its last events" */
        gy_drain_ack(&c->shm, epoch, atomic_load(&c->launches) != before);
        c->report->acks++;
    }
    return NULL;
}

static void note_wake(struct child *c, uint64_t blocked)
{
    struct child_report *r = c->report;
    uint64_t now = gy_now_ns(), last = 0;
    for (int level = r->priority + 1; level < GY_LEVELS; level++) {
        uint64_t t = atomic_load(&board->last_exit_ns[level]);
        if (t > last)
            last = t;
    }
    uint64_t latency = last && now > last ? now - last : 0;
    r->sum_wake_latency_ns += latency;
    if (latency > r->max_wake_latency_ns)
        r->max_wake_latency_ns = latency;
    if (latency > SLOW_WAKE_NS)
        r->slow_wakes++;
    r->blocked_waits++;
    r->blocked_ns += blocked;
}

/* One batch of launch checks, as the hook does them: mark in flight, check, wait when closed. */
static void launch_batch(struct child *c)
{
    for (int i = 0; i < CHECKS_PER_BATCH; i++) {
        gy_mark_inflight(&c->shm);
        c->report->checks++;
        if (!gy_launch_allowed(&c->shm, c->report->priority))
            note_wake(c, gy_wait_until_allowed(&c->shm, NULL));
        atomic_fetch_add_explicit(&c->launches, 1, memory_order_relaxed);
    }
}

static int run_job(struct child *c, unsigned *seed)
{
    struct child_report *r = c->report;
    gy_job job;
    gy_err err;
    atomic_fetch_add(&board->entering[r->priority], 1);
    if (gy_job_enter(&c->shm, r->priority, 0, &job, &err)) {
        snprintf(r->error, sizeof r->error, "job enter: %s", err.msg);
        return -1;
    }
    atomic_fetch_add(&board->entered[r->priority], 1);
    r->jobs_begun++;
    if (gy_job_wait_drained(&c->shm, &job, 0) == GY_WAIT_TIMEDOUT)
        r->drain_timeouts++;
    if (job.wait_ns > r->max_job_wait_ns)
        r->max_job_wait_ns = job.wait_ns;
    int body = 1 + (int)(rand_r(seed) % 3); /* a few batches, ~1 ms of "GPU work" in all */
    for (int i = 0; i < body; i++) {
        launch_batch(c);
        sleep_us(300);
    }
    atomic_store(&board->last_exit_ns[r->priority], gy_now_ns());
    atomic_fetch_add(&board->exiting[r->priority], 1);
    if (gy_job_exit(&c->shm, &job, &err)) {
        snprintf(r->error, sizeof r->error, "job exit: %s", err.msg);
        return -1;
    }
    atomic_fetch_add(&board->exited[r->priority], 1);
    r->jobs_ended++;
    return 0;
}

static int child_main(struct child_report *r, uint64_t deadline_ns)
{
    struct child c = {.report = r};
    gy_err err;
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
    if (getppid() == 1)
        return 1;
    if (gy_open(segment_name, &c.shm, &err) || gy_register(&c.shm, r->priority, &err)) {
        snprintf(r->error, sizeof r->error, "%s", err.msg);
        return 1;
    }
    pthread_t helper;
    if (pthread_create(&helper, NULL, drain_helper, &c)) {
        snprintf(r->error, sizeof r->error, "cannot start the drain helper thread");
        return 1;
    }
    /* Launch batches with short pauses (a worker also spends time on the CPU), and a job every
     * JOB_GAP_MIN_MS..+JOB_GAP_SPREAD_MS: dense enough that every level is blocked often, sparse
     * enough that the lowest level still gets to run. */
    unsigned seed = (unsigned)getpid();
    int rc = 0;
    uint64_t next_job = gy_now_ns() + (JOB_GAP_MIN_MS + rand_r(&seed) % JOB_GAP_SPREAD_MS) * MS;
    while (rc == 0 && gy_now_ns() < deadline_ns) {
        launch_batch(&c);
        sleep_us(rand_r(&seed) % 200);
        if (gy_now_ns() >= next_job) {
            rc = run_job(&c, &seed);
            next_job = gy_now_ns() + (JOB_GAP_MIN_MS + rand_r(&seed) % JOB_GAP_SPREAD_MS) * MS;
        }
    }
    atomic_store(&c.stop, 1);
    pthread_join(helper, NULL);
    struct gy_proc_slot *slot = gy_my_slot(&c.shm);
    static struct gy_status st; /* a read applies ends owed, or counts them out */
    gy_status_read(&c.shm, &st, &err);
    uint32_t owed[GY_LEVELS] = {0};
    for (int e = 0; e < GY_OWED_ENDS; e++) {
        uint32_t entry = atomic_load(&slot->ends_owed[e]);
        if (entry)
            owed[entry & 7] += entry >> 16;
    }
    for (int level = 0; level < GY_LEVELS; level++)
        r->held_after += slot->held_jobs[level] - owed[level];
    r->launches = atomic_load(&c.launches);
    r->slot_waits = atomic_load(&slot->counters.waits);
    r->slot_blocked_ns = atomic_load(&slot->counters.blocked_ns);
    r->slot_drain_timeouts = atomic_load(&slot->counters.drain_timeouts);
    r->slot_drains = atomic_load(&slot->counters.drains);
    gy_close(&c.shm);
    return rc;
}

/* ---- the parent: start, watch, check ----------------------------------------------------------- */

struct status_reader {
    gy_shm *shm;
    int nprocs;
    _Atomic int stop;
    uint64_t snapshots, failures, overcounts, untrue;
    char first_untrue[160];
    char first_error[320];
};

/* Reads status snapshots all along: each must succeed and be plausible (jobs per level never
 * above the number of processes of that level, since each holds at most one job). */
static void *read_status(void *arg)
{
    struct status_reader *sr = arg;
    static struct gy_status st;
    gy_err err;
    while (!atomic_load(&sr->stop)) {
        uint64_t entered[GY_LEVELS], exited[GY_LEVELS];
        for (int level = 0; level < GY_LEVELS; level++) {
            entered[level] = atomic_load(&board->entered[level]);
            exited[level] = atomic_load(&board->exited[level]);
        }
        if (gy_status_read(sr->shm, &st, &err)) {
            if (!sr->failures++)
                snprintf(sr->first_error, sizeof sr->first_error, "%s", err.msg);
        } else {
            for (int level = 0; level < GY_LEVELS; level++) {
                int at_level = sr->nprocs / GY_LEVELS + (level < sr->nprocs % GY_LEVELS);
                if (st.jobs[level] > (uint32_t)at_level)
                    sr->overcounts++;
                int64_t low = (int64_t)entered[level] - (int64_t)atomic_load(&board->exiting[level]);
                int64_t high = (int64_t)atomic_load(&board->entering[level]) - (int64_t)exited[level];
                if ((int64_t)st.jobs[level] < low || (int64_t)st.jobs[level] > high) {
                    if (!sr->untrue++)
                        snprintf(sr->first_untrue, sizeof sr->first_untrue,
                                 "level %d counted %u jobs, in progress %lld..%lld", level, st.jobs[level],
                                 (long long)low, (long long)high);
                }
            }
        }
        sr->snapshots++;
        sleep_us(2000);
    }
    return NULL;
}

/* ---- quiet rounds: a job's exit must wake its waiters by itself ------------------------------- */

static int quiet_waiter(int priority)
{
    gy_shm shm;
    gy_err err;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (gy_open(segment_name, &shm, &err) || gy_register(&shm, priority, &err))
        return 1;
    uint64_t give_up = gy_now_ns() + 60000 * MS;
    for (int round = 0; round < QUIET_ROUNDS; round++) {
        while (atomic_load(&board->quiet_round) != round + 1 && gy_now_ns() < give_up)
            sleep_us(500);
        if (gy_launch_allowed(&shm, priority))
            return 1; /* the round's job must be in progress */
        gy_wait_until_allowed(&shm, NULL);
        atomic_store(&board->quiet_woke_ns[priority][round], gy_now_ns());
    }
    gy_close(&shm);
    return 0;
}

static int count_blocked(const gy_shm *shm)
{
    int n = 0;
    for (int i = 0; i < GY_MAX_PROCS; i++)
        n += atomic_load(&shm->seg->procs[i].state) == GY_PROC_BLOCKED;
    return n;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One waiter per level below the top; each round the parent holds a top-level job until every
 * waiter is blocked, pauses so that nothing else is in motion, ends it and times the wake-ups.
 * Returns the median latency (and the max), or fills error. */
static uint64_t quiet_wake_rounds(gy_shm *shm, uint64_t *max_out, char *error, size_t error_len)
{
    static uint64_t latencies[QUIET_WAITERS * QUIET_ROUNDS];
    int n = 0;
    gy_err err;
    gy_job job;
    pid_t waiters[QUIET_WAITERS];
    if (gy_register(shm, GY_LEVELS - 1, &err)) {
        snprintf(error, error_len, "%s", err.msg);
        return 0;
    }
    fflush(NULL);
    for (int i = 0; i < QUIET_WAITERS; i++)
        if ((waiters[i] = fork()) == 0)
            _exit(quiet_waiter(i));
    for (int round = 0; round < QUIET_ROUNDS && !error[0]; round++) {
        if (gy_begin(shm, GY_LEVELS - 1, &job, &err)) {
            snprintf(error, error_len, "round %d: %s", round, err.msg);
            break;
        }
        atomic_store(&board->quiet_round, round + 1);
        uint64_t give_up = gy_now_ns() + 10000 * MS;
        while (count_blocked(shm) < QUIET_WAITERS && gy_now_ns() < give_up)
            sleep_us(1000);
        if (count_blocked(shm) < QUIET_WAITERS)
            snprintf(error, error_len, "round %d: only %d of %d waiters blocked", round, count_blocked(shm),
                     QUIET_WAITERS);
        sleep_us(QUIET_PAUSE_MS * 1000);
        uint64_t ended = gy_now_ns();
        gy_job_exit(shm, &job, &err);
        give_up = gy_now_ns() + 10000 * MS;
        for (int i = 0; i < QUIET_WAITERS && !error[0]; i++) {
            uint64_t woke;
            while (!(woke = atomic_load(&board->quiet_woke_ns[i][round])) && gy_now_ns() < give_up)
                sleep_us(200);
            if (!woke)
                snprintf(error, error_len, "round %d: waiter %d never resumed", round, i);
            else
                latencies[n++] = woke > ended ? woke - ended : 0;
        }
    }
    for (int i = 0; i < QUIET_WAITERS; i++) {
        int status;
        if (error[0])
            kill(waiters[i], SIGKILL);
        waitpid(waiters[i], &status, 0);
        if (!error[0] && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            snprintf(error, error_len, "quiet waiter %d failed", i);
    }
    gy_unregister(shm);
    if (n == 0)
        return 0;
    qsort(latencies, (size_t)n, sizeof latencies[0], compare_u64);
    *max_out = latencies[n - 1];
    return latencies[n / 2];
}

static void remove_segment_on_signal(int sig)
{
    gy_remove(segment_name, NULL);
    signal(sig, SIG_DFL);
    raise(sig);
}

int main(int argc, char **argv)
{
    int nprocs = argc > 1 ? atoi(argv[1]) : 64;
    double seconds = argc > 2 ? atof(argv[2]) : 10.0;
    int drain_ms = argc > 3 ? atoi(argv[3]) : (int)(DRAIN_TIMEOUT_NS / MS);
    int hogs = argc > 4 ? atoi(argv[4]) : 0;
    if (argc > 5 || nprocs < 2 || nprocs > GY_MAX_PROCS || !(seconds > 0 && seconds <= 600) || drain_ms < 1 ||
        drain_ms > 600000 || hogs < 0 || hogs > 64) {
        fprintf(stderr, "usage: load_test [PROCESSES 2..%d [SECONDS 0..600 [DRAIN_TIMEOUT_MS 1..600000 [HOGS 0..64]]]]\n",
                GY_MAX_PROCS);
        return 2;
    }
    drain_timeout_ns = (uint64_t)drain_ms * MS;
    bool loaded = drain_timeout_ns < DRAIN_TIMEOUT_NS || hogs > 0;
    pid_t hog_pids[64];
    for (int i = 0; i < hogs; i++) { /* busy loops: a loaded machine */
        hog_pids[i] = fork();
        if (hog_pids[i] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (volatile unsigned long spin = 0;; spin++)
                ;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    gy_shm shm;
    gy_err err;
    char tag[64];
    snprintf(tag, sizeof tag, "test-load-%d", getpid());
    if (gy_create(tag, drain_timeout_ns, &shm, &err)) {
        fprintf(stderr, "load_test: %s\n", err.msg);
        return 1;
    }
    snprintf(segment_name, sizeof segment_name, "%s", shm.name);
    signal(SIGINT, remove_segment_on_signal);
    signal(SIGTERM, remove_segment_on_signal);

    size_t board_size = sizeof *board + (size_t)nprocs * sizeof board->children[0];
    board = mmap(NULL, board_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (board == MAP_FAILED) {
        perror("load_test: mmap");
        gy_close(&shm);
        gy_remove(segment_name, NULL);
        return 1;
    }
    uint64_t start = gy_now_ns();
    uint64_t deadline = start + (uint64_t)(seconds * 1e9);
    pid_t pids[GY_MAX_PROCS];
    fflush(NULL);
    for (int i = 0; i < nprocs; i++) {
        board->children[i].priority = i % GY_LEVELS;
        pids[i] = fork();
        if (pids[i] == 0)
            _exit(child_main(&board->children[i], deadline));
        if (pids[i] < 0) {
            perror("load_test: fork");
            nprocs = i;
            break;
        }
    }
    struct status_reader sr = {.shm = &shm, .nprocs = nprocs};
    pthread_t reader;
    bool reading = pthread_create(&reader, NULL, read_status, &sr) == 0;

    /* Watchdog: everyone must be done well after the deadline, or something is stuck. */
    uint64_t give_up = deadline + (uint64_t)(20 + seconds * 2) * 1000 * MS;
    int exited = 0, bad_exits = 0;
    bool exited_ok[GY_MAX_PROCS] = {0};
    while (exited < nprocs && gy_now_ns() < give_up) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) {
            sleep_us(20000);
            continue;
        }
        for (int i = 0; i < nprocs; i++)
            if (pids[i] == pid) {
                exited_ok[i] = WIFEXITED(status) && WEXITSTATUS(status) == 0;
                bad_exits += !exited_ok[i];
                pids[i] = 0;
                exited++;
            }
    }
    uint64_t elapsed = gy_now_ns() - start;
    int stuck = nprocs - exited;
    if (stuck) {
        static struct gy_status st;
        if (gy_status_read(&shm, &st, &err) == 0)
            for (int i = 0; i < st.nprocs; i++)
                fprintf(stderr, "  stuck? pid %d priority %d state %s\n", st.procs[i].pid, st.procs[i].priority,
                        st.procs[i].state);
        for (int i = 0; i < nprocs; i++)
            if (pids[i] > 0) {
                kill(pids[i], SIGKILL);
                waitpid(pids[i], NULL, 0);
            }
    }
    if (reading) {
        atomic_store(&sr.stop, 1);
        pthread_join(reader, NULL);
    }
    for (int i = 0; i < hogs; i++) /* the load ends with the workers: the quiet rounds are timed */
        if (hog_pids[i] > 0) {
            kill(hog_pids[i], SIGKILL);
            waitpid(hog_pids[i], NULL, 0);
        }

    check(stuck == 0, "no_deadlock", "%d of %d processes still running %.0f s after the deadline", stuck, nprocs,
          (double)(give_up - deadline) / 1e9);
    check(bad_exits == 0, "every_process_exits_cleanly", "%d processes failed", bad_exits);
    struct child_report sum = {0};
    uint64_t max_wake = 0, max_job_wait = 0;
    int mismatched_waits = 0, mismatched_drains = 0, mismatched_timeouts = 0, unended = 0;
    for (int i = 0; i < nprocs; i++) {
        struct child_report *r = &board->children[i];
        if (r->error[0])
            fprintf(stderr, "  process %d (priority %d): %s\n", i, r->priority, r->error);
        if (!exited_ok[i])
            continue;
        sum.checks += r->checks;
        sum.blocked_waits += r->blocked_waits;
        sum.blocked_ns += r->blocked_ns;
        sum.jobs_begun += r->jobs_begun;
        sum.jobs_ended += r->jobs_ended;
        sum.drain_timeouts += r->drain_timeouts;
        sum.acks += r->acks;
        sum.slow_wakes += r->slow_wakes;
        sum.sum_wake_latency_ns += r->sum_wake_latency_ns;
        if (r->max_wake_latency_ns > max_wake)
            max_wake = r->max_wake_latency_ns;
        if (r->max_job_wait_ns > max_job_wait)
            max_job_wait = r->max_job_wait_ns;
        mismatched_waits += r->slot_waits != r->blocked_waits || r->slot_blocked_ns != r->blocked_ns;
        mismatched_drains += r->slot_drains != r->acks;
        mismatched_timeouts += r->slot_drain_timeouts != r->drain_timeouts;
        sum.held_after += r->held_after;
        unended += r->jobs_begun != r->jobs_ended;
    }
    check(unended == 0 && sum.jobs_begun == sum.jobs_ended, "jobs_begun_equal_jobs_ended",
          "%llu begun, %llu ended, %d processes unbalanced", (unsigned long long)sum.jobs_begun,
          (unsigned long long)sum.jobs_ended, unended);
    check(mismatched_waits == 0, "wait_counters_add_up",
          "%d processes whose slot counters (waits, blocked ns) differ from the waits they made",
          mismatched_waits);
    check(mismatched_drains == 0, "drain_acks_add_up", "%d processes whose slot drains differ from their acks",
          mismatched_drains);
    double mean_wake = sum.blocked_waits ? (double)sum.sum_wake_latency_ns / (double)sum.blocked_waits : 0;
    check(max_wake < WAKE_BOUND_NS, "no_waiter_stuck_after_the_last_higher_job",
          "a blocked waiter resumed %.0f ms after the last higher job ended (bound %.0f ms)", max_wake / 1e6,
          WAKE_BOUND_NS / 1e6);
    check(loaded || (sum.drain_timeouts == 0 && max_job_wait < DRAIN_TIMEOUT_NS), "drains_complete_before_timeout",
          "%llu drain timeouts, longest drain wait %.0f ms", (unsigned long long)sum.drain_timeouts,
          max_job_wait / 1e6);

    static struct gy_status st;
    int rc = gy_status_read(&shm, &st, &err);
    check(rc == 0, "status_readable_at_the_end", "%s", err.msg);
    bool levels_clear = true;
    for (int level = 0; level < GY_LEVELS; level++)
        levels_clear = levels_clear && shm.seg->jobs[level] == 0;
    check(levels_clear && atomic_load(&shm.seg->active_levels) == 0, "levels_back_to_zero",
          "jobs per level or active_levels left non-zero (active_levels %#x)",
          (unsigned)atomic_load(&shm.seg->active_levels));
    check(rc == 0 && st.nprocs == 0, "every_slot_freed", "%d processes still registered", st.nprocs);
    check(rc == 0 && st.job_epoch == sum.jobs_begun, "job_epoch_counts_every_job", "epoch %llu, jobs begun %llu",
          (unsigned long long)st.job_epoch, (unsigned long long)sum.jobs_begun);
    check(rc == 0 && st.total_drain_timeouts == sum.drain_timeouts && mismatched_timeouts == 0,
          "drain_timeouts_add_up", "segment %llu, processes %llu", (unsigned long long)st.total_drain_timeouts,
          (unsigned long long)sum.drain_timeouts);
    check(rc == 0 && st.reaped == 0, "nobody_reaped", "%llu processes reaped, none died",
          (unsigned long long)st.reaped);
    check(sum.held_after == 0, "no_job_counted_after_its_end", "%llu jobs still held by their slots after the last end",
          (unsigned long long)sum.held_after);
    check(sr.untrue == 0, "job_counts_equal_the_truth_at_every_snapshot", "%llu of %llu snapshots out of range, first: %s",
          (unsigned long long)sr.untrue, (unsigned long long)sr.snapshots, sr.first_untrue);
    check(sr.snapshots > 0 && sr.failures == 0 && sr.overcounts == 0, "status_reads_under_load",
          "%llu snapshots, %llu failed (%s), %llu implausible", (unsigned long long)sr.snapshots,
          (unsigned long long)sr.failures, sr.first_error, (unsigned long long)sr.overcounts);
    check(sum.blocked_waits > 0 && sum.jobs_begun > 0 && sum.acks > 0, "load_exercised_every_path",
          "blocked waits %llu, jobs %llu, drain acks %llu", (unsigned long long)sum.blocked_waits,
          (unsigned long long)sum.jobs_begun, (unsigned long long)sum.acks);

    char quiet_error[400] = "";
    uint64_t quiet_median = 0, quiet_max = 0;
    if (stuck == 0)
        quiet_median = quiet_wake_rounds(&shm, &quiet_max, quiet_error, sizeof quiet_error);
    check(!quiet_error[0] && quiet_median < QUIET_MEDIAN_BOUND_NS, "no_lost_wakeup",
          "%s%swaiters resumed %.1f ms (median) after the only job ended (bound %.0f ms): its wake-up was lost "
          "and only the periodic re-check freed them",
          quiet_error, quiet_error[0] ? "; " : "", quiet_median / 1e6, QUIET_MEDIAN_BOUND_NS / 1e6);

    printf("load: %d processes at %d levels for %.1f s: %llu launch checks, %llu blocked waits (%.1f s blocked in "
           "all, wake %.2f ms on average and %.1f ms at most after the last higher job ended, %llu over %.0f ms), %llu jobs (longest "
           "drain %.1f ms, %llu timeouts), %llu drain acks, %llu status snapshots\n",
           nprocs, GY_LEVELS, elapsed / 1e9, (unsigned long long)sum.checks, (unsigned long long)sum.blocked_waits,
           sum.blocked_ns / 1e9, mean_wake / 1e6, max_wake / 1e6, (unsigned long long)sum.slow_wakes, SLOW_WAKE_NS / 1e6,
           (unsigned long long)sum.jobs_begun, max_job_wait / 1e6, (unsigned long long)sum.drain_timeouts,
           (unsigned long long)sum.acks, (unsigned long long)sr.snapshots);
    printf("load: drain timeout %d ms, %d CPU hogs, %llu lock timeouts\n", drain_ms, hogs,
           (unsigned long long)atomic_load(&shm.seg->lock_timeouts));
    printf("quiet rounds: %d x %d waiters blocked behind one job: resumed %.2f ms (median), %.2f ms (max) after "
           "its end\n",
           QUIET_ROUNDS, QUIET_WAITERS, quiet_median / 1e6, quiet_max / 1e6);
    gy_close(&shm);
    gy_remove(segment_name, NULL);
    munmap(board, board_size);
    printf("%d passed, %d failed\n", checks_passed, checks_failed);
    return checks_failed ? 1 : 0;
}
