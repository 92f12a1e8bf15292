/* cuda_worker's scenario for the guarded policy, end to end on the fake driver: the worker runs
 * at priority 0 under the hook; a child forked before any CUDA call registers at priority 1 and
 * begins jobs on command, telling the arm each job got (chosen in its gy_job_enter, under the
 * segment's mutex) and, for a timed job, when it ended. The checks read the fake driver's log:
 * which green context (its SMs) ran each tagged kernel, and when. */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_log.h"
#include "fakecuda.h"
#include "gpuyield.h"
#include "guarded.h"
#include "guarded_scenarios.h"
#include "worker_check.h"

#define KERNEL_US 2000
#define TIMED_JOB_US 60000

/* ---- the higher process ---------------------------------------------------------------------- */

static int to_hp = -1, from_hp = -1;
static pid_t hp_pid;

/* Commands: 'b' begin (answers the arm), 'e' end (answers the end time: CLOCK_MONOTONIC ns, the
 * same clock in every process), 'B' and 'E' the same for a second job open beside the first, 't'
 * a timed job: begin, answer the arm, sleep TIMED_JOB_US, end, answer the end time. */
static void hp_main(int cmd, int ack)
{
    gy_shm shm;
    gy_err err;
    gy_job jobs[2];
    if (gy_open(getenv("GPUYIELD_SHM"), &shm, &err) || gy_register(&shm, 1, &err)) {
        fprintf(stderr, "hp: %s\n", err.msg);
        _exit(1);
    }
    char c;
    while (read(cmd, &c, 1) == 1 && c != 'q') {
        int32_t arm = -2;
        uint64_t ended = 0;
        gy_job *job = &jobs[c == 'B' || c == 'E'];
        c = c == 'B' ? 'b' : c == 'E' ? 'e' : c;
        if (c == 'b' || c == 't') {
            if (gy_begin(&shm, 1, job, &err))
                fprintf(stderr, "hp: %s\n", err.msg);
            arm = job->guard_arm;
            if (write(ack, &arm, sizeof arm) != sizeof arm)
                break;
        }
        if (c == 't')
            usleep(TIMED_JOB_US);
        if (c == 'e' || c == 't') {
            ended = gy_now_ns(); /* before the gate opens: a launch held by the job returns after it */
            if (gy_job_exit(&shm, job, &err))
                fprintf(stderr, "hp: %s\n", err.msg);
            if (write(ack, &ended, sizeof ended) != sizeof ended)
                break;
        }
    }
    gy_close(&shm);
    _exit(0);
}

static void hp_start(void)
{
    int cmd[2], ack[2];
    if (pipe(cmd) || pipe(ack)) {
        fail("pipe");
        exit(1);
    }
    fflush(stdout);
    hp_pid = fork();
    if (hp_pid == 0) {
        close(cmd[1]), close(ack[0]);
        hp_main(cmd[0], ack[1]);
    }
    close(cmd[0]), close(ack[1]);
    to_hp = cmd[1], from_hp = ack[0];
}

static void hp_send(char c)
{
    if (write(to_hp, &c, 1) != 1)
        fail("the higher process is gone");
}

static int hp_arm(void)
{
    int32_t arm = -3;
    if (read(from_hp, &arm, sizeof arm) != sizeof arm)
        fail("no arm from the higher process");
    return arm;
}

static uint64_t hp_ended(void)
{
    uint64_t ended = 0;
    if (read(from_hp, &ended, sizeof ended) != sizeof ended)
        fail("no end from the higher process");
    return ended;
}

static void hp_stop(void)
{
    hp_send('q');
    close(to_hp), close(from_hp);
    waitpid(hp_pid, NULL, 0);
}

/* ---- CUDA and the log ------------------------------------------------------------------------ */

static CUmodule module;

static CUresult run(const char *tag, CUstream s)
{
    char name[48];
    snprintf(name, sizeof name, "spin_us:%d/%s", KERNEL_US, tag);
    CUfunction f;
    CU(cuModuleGetFunction(&f, module, name));
    return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
}

static struct fake_log the_log;

static const struct fake_kernel *find(const char *tag)
{
    for (int i = 0; i < the_log.n; i++) {
        const char *slash = strrchr(the_log.kernels[i].name, '/');
        if (the_log.kernels[i].pid == getpid() && slash && strcmp(slash + 1, tag) == 0)
            return &the_log.kernels[i];
    }
    fail("kernel %s is not in the log", tag);
    return NULL;
}

static void expect_sms(const char *tag, unsigned sms)
{
    const struct fake_kernel *k = find(tag);
    if (k && k->green_sms != sms)
        fail("%s ran on a stream of %u green SMs (0: its own stream), expected %u", tag, k->green_sms, sms);
}

/* The n-th graph launch of this process in the log (0-based, in the order they ran). */
static const struct fake_kernel *nth_graph(int n)
{
    for (int i = 0; i < the_log.n; i++)
        if (the_log.kernels[i].pid == getpid() && strcmp(the_log.kernels[i].kind, "graph") == 0 && n-- == 0)
            return &the_log.kernels[i];
    fail("graph launch %d is not in the log", n);
    return NULL;
}

static void expect_after(const char *later, const char *earlier)
{
    const struct fake_kernel *a = find(later), *b = find(earlier);
    if (a && b && a->start < b->end)
        fail("%s started at %llu, before %s ended at %llu", later, (unsigned long long)a->start, earlier,
             (unsigned long long)b->end);
}

/* The fake device's primary context current, the module loaded, and a stream of it. */
static CUstream cuda_ready(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUstream s = NULL;
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    CU(cuModuleLoadData(&module, "fake image"));
    CU(cuStreamCreate(&s, 0));
    return s;
}

/* ---- the scenario ---------------------------------------------------------------------------- */

/* A launch from another thread, so that the main one can end the jobs while it is held. */
struct held {
    CUcontext ctx;
    CUstream stream;
    _Atomic bool returned;
    uint64_t at;
    CUresult rc;
};

static void *launch_held(void *arg)
{
    struct held *h = arg;
    h->rc = cuCtxSetCurrent(h->ctx);
    if (h->rc == CUDA_SUCCESS)
        h->rc = run("held", h->stream);
    h->at = gy_now_ns();
    atomic_store(&h->returned, true);
    return NULL;
}

/* H's launch started on S from another thread while a job is open, and still held 100 ms later. */
static void held_launch_start(struct held *h, CUstream s, pthread_t *thread, const char *what)
{
    *h = (struct held){.stream = s};
    CU(cuCtxGetCurrent(&h->ctx));
    pthread_create(thread, NULL, launch_held, h);
    usleep(100000);
    if (atomic_load(&h->returned))
        fail("%s: the launch returned while the job was open", what);
}

static void configure(gy_shm *shm, double stop_share, int force)
{
    gy_err err;
    if (gy_guarded_configure(shm, 0.02, 0.05, stop_share, 3, &err) || (force >= 0 && gy_guarded_force(shm, force, &err)))
        fail("%s", err.msg);
}

/* The segment opened, the higher process forked, CUDA ready and a first kernel run on *S (which
 * registers this process before any job); false, said, when the segment cannot be opened. */
static bool scenario_start(gy_shm *shm, CUstream *s)
{
    gy_err err;
    if (gy_open(getenv("GPUYIELD_SHM"), shm, &err)) {
        fail("%s", err.msg);
        return false;
    }
    hp_start();
    *s = cuda_ready();
    CU(run("before", *s));
    return true;
}

#define TIMED_JOBS 12

static void scenario_guarded(void)
{
    gy_shm shm;
    gy_err err;
    CUstream s;
    if (!scenario_start(&shm, &s))
        return;
    CUgraph graph;
    CUgraphExec exec;
    CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(run("captured", s));
    CU(cuStreamEndCapture(s, &graph));
    CU(cuGraphInstantiateWithFlags(&exec, graph, 0));

    /* Each partition arm in force: a job's launches go to a green context of that many SMs, one
     * context per size, each made at its first use (disjoint:64's lower side is partition:64's);
     * a graph launch goes there as its twin for that size; after the job, back on the stream, in
     * order. */
    static const enum gy_guard_arm arms[] = {GY_ARM_P16, GY_ARM_P64, GY_ARM_D64, GY_ARM_P32, GY_ARM_P16};
    char prev[16] = "before";
    uint64_t partition_launches = 0;
    for (size_t i = 0; i < sizeof arms / sizeof *arms; i++) {
        configure(&shm, 0.0, arms[i]);
        hp_send('b');
        int arm = hp_arm();
        if (arm != (int)arms[i])
            fail("job %zu got arm %d, expected %s", i, arm, gy_guard_arm_name(arms[i]));
        char in0[16], in1[16], after[16];
        snprintf(in0, sizeof in0, "in%zu_0", i), snprintf(in1, sizeof in1, "in%zu_1", i);
        snprintf(after, sizeof after, "after%zu", i);
        CU(run(in0, s));
        CU(cuGraphLaunch(exec, s));
        CU(run(in1, s));
        partition_launches += 3;
        hp_send('e');
        hp_ended();
        CU(run(after, s));
        CU(cuStreamSynchronize(s));
        fake_log_read(getenv("FAKECUDA_LOG"), &the_log);
        unsigned sms = gy_guard_arm_sms(gy_guard_arm_lower_twin(arms[i]));
        expect_sms(in0, sms), expect_sms(in1, sms), expect_sms(after, 0);
        const struct fake_kernel *twin = nth_graph((int)i), *k0 = find(in0), *k1 = find(in1);
        if (twin && (twin->green_sms != sms || (k0 && twin->start < k0->end) || (k1 && k1->start < twin->end)))
            fail("job %zu: the graph ran on %u green SMs (expected %u as its twin), from %llu to %llu, between %s "
                 "and %s",
                 i, twin->green_sms, sms, (unsigned long long)twin->start, (unsigned long long)twin->end, in0, in1);
        expect_after(in0, prev), expect_after(in1, in0), expect_after(after, in1);
        fake_log_free(&the_log);
        snprintf(prev, sizeof prev, "%s", after);
    }

    /* Stop and the partition interleaved (share 1/2, seeded): a job of arm stop holds the launch
     * until its end, as corun does; a partition job's launch returns at once, on 32 SMs. */
    configure(&shm, 0.5, GY_ARM_P32);
    int got[TIMED_JOBS], stops = 0;
    uint64_t returned[TIMED_JOBS], ended[TIMED_JOBS];
    for (int j = 0; j < TIMED_JOBS; j++) {
        hp_send('t');
        got[j] = hp_arm();
        char tag[16];
        snprintf(tag, sizeof tag, "t%d", j);
        CU(run(tag, s));
        returned[j] = gy_now_ns();
        ended[j] = hp_ended();
        CU(cuStreamSynchronize(s));
        stops += got[j] == GY_ARM_STOP;
        partition_launches += got[j] == GY_ARM_P32;
    }
    if (stops == 0 || stops == TIMED_JOBS)
        fail("%d of %d jobs got stop at share 1/2", stops, TIMED_JOBS);
    fake_log_read(getenv("FAKECUDA_LOG"), &the_log);
    for (int j = 0; j < TIMED_JOBS; j++) {
        char tag[16];
        snprintf(tag, sizeof tag, "t%d", j);
        if (got[j] == GY_ARM_STOP) {
            expect_sms(tag, 0);
            if (returned[j] < ended[j])
                fail("%s: launched in a job of arm stop, it returned %llu us before the job ended", tag,
                     (unsigned long long)(ended[j] - returned[j]) / 1000);
        } else {
            expect_sms(tag, 32);
            if (returned[j] > ended[j])
                fail("%s: launched in a job of arm partition:32, it waited for the job's end", tag);
        }
    }
    fake_log_free(&the_log);

    /* Back to back: a stop job holds a launch; a partition job begins before the stop job ends,
     * so the gate never opens between them. Once the stop job ends the held launch goes to the
     * partition at once, instead of waiting through the partition job too. */
    configure(&shm, 1.0, -1);
    hp_send('b');
    int first = hp_arm();
    configure(&shm, 0.0, GY_ARM_P32);
    hp_send('B');
    int second = hp_arm();
    if (first != GY_ARM_STOP || second != GY_ARM_P32)
        fail("back to back: arms %d and %d, expected stop and partition:32", first, second);
    struct held held;
    pthread_t thread;
    held_launch_start(&held, s, &thread, "back to back, the stop job");
    hp_send('e');
    uint64_t stop_ended = hp_ended();
    for (int i = 0; i < 2000 && !atomic_load(&held.returned); i++)
        usleep(1000);
    bool in_partition_job = atomic_load(&held.returned);
    hp_send('E');
    uint64_t partition_ended = hp_ended();
    pthread_join(thread, NULL);
    CU(held.rc);
    partition_launches += 1;
    if (!in_partition_job || held.at < stop_ended || held.at > partition_ended)
        fail("back to back: the held launch returned at %llu; the stop job ended at %llu, the partition job at %llu",
             (unsigned long long)held.at, (unsigned long long)stop_ended, (unsigned long long)partition_ended);
    CU(cuStreamSynchronize(s));
    fake_log_read(getenv("FAKECUDA_LOG"), &the_log);
    expect_sms("held", 32);
    fake_log_free(&the_log);
    hp_stop();

    /* The per-arm statistics saw the jobs: the timed ones took TIMED_JOB_US or more (the forced
     * ones, a few ms, are in partition:32's window too, but fewer). */
    struct gy_guard g;
    if (gy_guarded_snapshot(&shm, &g, &err) == 0) {
        struct gy_guard_arm_stats stop, p32;
        gy_guard_arm_stats(&g, GY_ARM_STOP, &stop);
        gy_guard_arm_stats(&g, GY_ARM_P32, &p32);
        if (stop.jobs != (uint64_t)stops + 1 /* the back-to-back one */ || stop.p50_ms < TIMED_JOB_US / 1e3 || p32.p50_ms < TIMED_JOB_US / 1e3 ||
            p32.lp_per_s <= 0)
            fail("statistics: stop %llu jobs p50 %.1f ms, partition:32 p50 %.1f ms, lp %.1f/s",
                 (unsigned long long)stop.jobs, stop.p50_ms, p32.p50_ms, p32.lp_per_s);
    } else {
        fail("%s", err.msg);
    }
    static struct gy_status st;
    if (gy_status_read(&shm, &st, &err) == 0) {
        for (int i = 0; i < st.nprocs; i++)
            if (st.procs[i].pid == getpid() &&
                (st.procs[i].partition_launches != partition_launches || strcmp(st.procs[i].partition, "active")))
                fail("status: %llu partition launches (expected %llu), partition '%s'",
                     (unsigned long long)st.procs[i].partition_launches, (unsigned long long)partition_launches,
                     st.procs[i].partition);
    }
    printf("guarded pid=%d stops=%d partition_launches=%llu\n", (int)getpid(), stops,
           (unsigned long long)partition_launches);
    gy_close(&shm);
}

/* Nothing forced: the HP runs CONVERGE_JOBS jobs of 3 ms while this process launches without
 * pause. The fake GPU gives green streams their own SMs, so a partition costs the HP nothing: the
 * rule, measuring real job times and the LP's partition launches, must leave stop for a partition
 * (the bound is wide here, 20 %: the machine running the test is shared and its timing noisy).
 * Where it ends is not checked: a burst of load on that machine may rightly make it fall back. */
#define CONVERGE_JOBS 1200 /* the first pass needs 256 jobs in both windows (GY_GUARD_P99_MIN_JOBS): about 600 of the HP's */

static void scenario_converges(void)
{
    gy_shm shm;
    gy_err err;
    if (gy_open(getenv("GPUYIELD_SHM"), &shm, &err)) {
        fail("%s", err.msg);
        return;
    }
    if (gy_guarded_configure(&shm, 0.2, 0.5, 0.25, 9, &err))
        fail("%s", err.msg);
    int cmd[2], ack[2];
    if (pipe(cmd) || pipe(ack)) {
        fail("pipe");
        return;
    }
    fflush(stdout), fflush(stderr);
    pid_t hp = fork();
    if (hp == 0) { /* the HP: jobs of 3 ms, 0.5 ms apart, then 'd' */
        close(cmd[1]), close(ack[0]);
        gy_shm own;
        gy_job job;
        char go;
        if (gy_open(getenv("GPUYIELD_SHM"), &own, &err) || gy_register(&own, 1, &err) || read(cmd[0], &go, 1) != 1)
            _exit(1);
        for (int j = 0; j < CONVERGE_JOBS; j++) {
            if (gy_begin(&own, 1, &job, &err))
                _exit(1);
            usleep(3000);
            gy_job_exit(&own, &job, &err);
            usleep(500);
        }
        gy_close(&own);
        _exit(write(ack[1], "d", 1) == 1 ? 0 : 1);
    }
    close(cmd[0]), close(ack[1]);
    CUstream s = cuda_ready();
    CUfunction f;
    CU(cuModuleGetFunction(&f, module, "spin_us:200/lp"));
    if (write(cmd[1], "g", 1) != 1)
        fail("the HP is gone");
    struct pollfd done = {.fd = ack[0], .events = POLLIN};
    unsigned long launched = 0;
    while (poll(&done, 1, 0) == 0) {
        CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
        if (++launched % 4 == 0)
            CU(cuStreamSynchronize(s));
    }
    CU(cuStreamSynchronize(s));
    int status = 0;
    waitpid(hp, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        fail("the HP failed (status %#x)", status);
    struct gy_guard g;
    if (gy_guarded_snapshot(&shm, &g, &err)) {
        fail("%s", err.msg);
    } else {
        struct gy_guard_arm_stats first; /* the middle arm, tried first */
        gy_guard_arm_stats(&g, GY_ARM_P64, &first);
        if (g.changes == 0 || first.jobs < GY_GUARD_MIN_JOBS || first.lp_per_s <= 0)
            fail("after %d jobs: in force %s (%s), %u changes, LP %.0f launches/s on 64 SMs", CONVERGE_JOBS,
                 gy_guard_arm_name(g.in_force), gy_guard_reason_text(g.reason), g.changes, first.lp_per_s);
        printf("guarded_converges in_force=%s reason=%s jobs=%llu changes=%u\n", gy_guard_arm_name(g.in_force),
               gy_guard_reason_name(g.reason), (unsigned long long)g.jobs, g.changes);
    }
    close(cmd[1]), close(ack[0]);
    gy_close(&shm);
}

/* This process is the HP (hooked at priority 1, GPUYIELD_PRIORITY) and marks its own jobs. Under
 * a disjoint arm its launches during the job run on the rest of the lower processes' split (132 -
 * K SMs on the fake device), in program order with what came before and after; under a partition
 * arm, under stop and between jobs on its own stream. */
static void hp_job_on(gy_shm *shm, enum gy_guard_arm arm, double stop_share, const char *tag, CUstream s)
{
    gy_err err;
    gy_job job;
    configure(shm, stop_share, arm);
    if (gy_begin(shm, 1, &job, &err)) {
        fail("%s", err.msg);
        return;
    }
    enum gy_guard_arm want = stop_share >= 1 ? GY_ARM_STOP : arm;
    if (job.guard_arm != (int)want)
        fail("%s: the job got arm %d, expected %s", tag, job.guard_arm, gy_guard_arm_name(want));
    char in0[32], in1[32];
    snprintf(in0, sizeof in0, "%s_0", tag), snprintf(in1, sizeof in1, "%s_1", tag);
    CU(run(in0, s));
    CU(run(in1, s));
    CU(cuStreamSynchronize(s)); /* the HP's own end of a job: its work done, then the job ends */
    if (gy_job_exit(shm, &job, &err))
        fail("%s", err.msg);
}

static void scenario_disjoint_hp(void)
{
    gy_shm shm;
    gy_err err;
    if (gy_open(getenv("GPUYIELD_SHM"), &shm, &err) || gy_register(&shm, 1, &err)) {
        fail("%s", err.msg);
        return;
    }
    CUstream s = cuda_ready();
    CU(run("before", s));
    hp_job_on(&shm, GY_ARM_D64, 0.0, "d64", s);
    CU(run("between", s));
    hp_job_on(&shm, GY_ARM_D120, 0.0, "d120", s);
    hp_job_on(&shm, GY_ARM_P64, 0.0, "p64", s);
    hp_job_on(&shm, GY_ARM_D64, 1.0, "stop", s);
    CU(run("after", s));
    CU(cuStreamSynchronize(s));
    fake_log_read(getenv("FAKECUDA_LOG"), &the_log);
    expect_sms("d64_0", 132 - 64), expect_sms("d64_1", 132 - 64), expect_sms("between", 0);
    expect_sms("d120_0", 132 - 120), expect_sms("d120_1", 132 - 120);
    expect_sms("p64_0", 0), expect_sms("stop_0", 0), expect_sms("after", 0);
    static const char *const order[] = {"before", "d64_0", "d64_1", "between", "d120_0", "d120_1",
                                        "p64_0", "p64_1", "stop_0", "stop_1", "after"};
    for (size_t i = 1; i < sizeof order / sizeof *order; i++)
        expect_after(order[i], order[i - 1]);
    fake_log_free(&the_log);
    /* its confined launches are its own partition launches, never the lower processes' progress */
    struct gy_guard g;
    if (gy_guarded_snapshot(&shm, &g, &err) == 0) {
        struct gy_guard_arm_stats d64;
        gy_guard_arm_stats(&g, GY_ARM_D64, &d64);
        if (d64.jobs != 1 || d64.lp_per_s != 0)
            fail("disjoint:64: %llu jobs, lp %.1f/s: expected 1 job and no lower progress", (unsigned long long)d64.jobs,
                 d64.lp_per_s);
    } else {
        fail("%s", err.msg);
    }
    printf("guarded_disjoint_hp pid=%d\n", (int)getpid());
    gy_close(&shm);
}

/* guarded is the default under MPS, also on drivers older than green contexts (CUDA 12.4): there a
 * job whose arm is a partition holds the lower launches until its end, as stop does. */
static void scenario_no_green(void)
{
    gy_shm shm;
    CUstream s;
    if (!scenario_start(&shm, &s))
        return;
    configure(&shm, 0.0, GY_ARM_P32);
    hp_send('b');
    if (hp_arm() != GY_ARM_P32)
        fail("the job did not get partition:32");
    struct held held;
    pthread_t thread;
    held_launch_start(&held, s, &thread, "no green contexts, a partition:32 job");
    hp_send('e');
    uint64_t ended = hp_ended();
    pthread_join(thread, NULL);
    CU(held.rc);
    if (held.at < ended)
        fail("no green contexts: the held launch returned %llu us before the job ended",
             (unsigned long long)(ended - held.at) / 1000);
    CU(cuStreamSynchronize(s));
    hp_stop();
    fake_log_read(getenv("FAKECUDA_LOG"), &the_log);
    expect_sms("held", 0);
    fake_log_free(&the_log);
    printf("guarded_no_green pid=%d\n", (int)getpid());
    gy_close(&shm);
}

int guarded_scenario(const char *what, int argc, char **argv)
{
    (void)argc, (void)argv;
    if (strcmp(what, "guarded") == 0)
        scenario_guarded();
    else if (strcmp(what, "guarded_converges") == 0)
        scenario_converges();
    else if (strcmp(what, "guarded_disjoint_hp") == 0)
        scenario_disjoint_hp();
    else if (strcmp(what, "guarded_no_green") == 0)
        scenario_no_green();
    else
        fail("unknown scenario %s", what);
    return failures;
}
