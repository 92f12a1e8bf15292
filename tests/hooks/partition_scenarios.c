/* cuda_worker's scenarios for the partition policy. The worker runs at priority 0 under the hook;
 * a child forked before any CUDA call registers at priority 1 and begins and ends jobs on
 * command, so the worker's launches meet a higher job of another process. Kernels carry tags
 * ("spin_us:2000/d3"), and the checks read the fake driver's log: which stream ran each tagged
 * kernel (green-context streams have ids from 1000000), and when. The fake runs a green stream's
 * kernels beside the rest of the device, so only the hook's events order them. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
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
#include "partition_scenarios.h"
#include "worker_check.h"

#define GREEN_IDS 1000000ull
#define KERNEL_US 2000


/* ---- the higher process: begins and ends jobs on command ------------------------------------ */

static int to_hp = -1, from_hp = -1;
static pid_t hp_pid;

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
        gy_shm shm;
        gy_err err;
        gy_job job;
        if (gy_open(getenv("GPUYIELD_SHM"), &shm, &err) || gy_register(&shm, 1, &err)) {
            fprintf(stderr, "hp: %s\n", err.msg);
            _exit(1);
        }
        char c;
        while (read(cmd[0], &c, 1) == 1) {
            if (c == 'b')
                gy_job_enter(&shm, 1, 0, &job, &err);
            else if (c == 'e')
                gy_job_exit(&shm, &job, &err);
            else
                break;
            if (write(ack[1], &c, 1) != 1)
                break;
        }
        gy_close(&shm);
        _exit(0);
    }
    close(cmd[0]), close(ack[1]);
    to_hp = cmd[1], from_hp = ack[0];
}

static void hp_do(char c)
{
    char got = 0;
    if (write(to_hp, &c, 1) != 1 || read(from_hp, &got, 1) != 1 || got != c)
        fail("the higher process did not answer '%c'", c);
}

static void hp_stop(void)
{
    char c = 'q';
    if (write(to_hp, &c, 1) != 1)
        fail("the higher process is gone");
    close(to_hp), close(from_hp);
    waitpid(hp_pid, NULL, 0);
}

/* ---- CUDA helpers ---------------------------------------------------------------------------- */

static CUmodule module;

static void cuda_init(void)
{
    CUdevice dev;
    CUcontext ctx;
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    CU(cuModuleLoadData(&module, "fake image"));
}

static CUfunction tagged(long us, const char *tag)
{
    char name[48];
    snprintf(name, sizeof name, "spin_us:%ld/%s", us, tag);
    CUfunction f;
    CU(cuModuleGetFunction(&f, module, name));
    return f;
}

static CUresult run(const char *tag, CUstream s) { return cuLaunchKernel(tagged(KERNEL_US, tag), 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL); }

/* ---- the log --------------------------------------------------------------------------------- */

static struct fake_log the_log;

static void read_the_log(void)
{
    const char *path = getenv("FAKECUDA_LOG");
    if (!path || fake_log_read(path, &the_log)) {
        fail("no readable FAKECUDA_LOG");
        exit(1);
    }
    if (the_log.violations)
        fail("the fake driver logged %d illegal calls, the first: %s", the_log.violations, the_log.first_violation);
}

static const struct fake_kernel *find(const char *tag)
{
    size_t len = strlen(tag); /* "#kind": the first of that kind; "=name": by its full name */
    for (int i = 0; i < the_log.n; i++) {
        const struct fake_kernel *k = &the_log.kernels[i];
        const char *slash = strrchr(k->name, '/');
        if (k->pid == getpid() && (tag[0] == '#'   ? strcmp(k->kind, tag + 1) == 0
                                   : tag[0] == '=' ? strcmp(k->name, tag + 1) == 0
                                                   : slash && strlen(slash + 1) == len && !strcmp(slash + 1, tag)))
            return k;
    }
    fail("kernel %s is not in the log", tag);
    return NULL;
}

static void expect_green(const char *tag, bool green)
{
    const struct fake_kernel *k = find(tag);
    if (k && (k->stream >= GREEN_IDS) != green)
        fail("%s ran on stream %llu: expected %s", tag, (unsigned long long)k->stream,
             green ? "a green-context stream" : "its own stream");
}

static void expect_after(const char *later, const char *earlier)
{
    const struct fake_kernel *a = find(later), *b = find(earlier);
    if (a && b && a->start < b->end)
        fail("%s started at %llu, before %s ended at %llu", later, (unsigned long long)a->start, earlier,
             (unsigned long long)b->end);
}

static void expect_covered(const char *what, uint64_t t, const char *tag)
{
    const struct fake_kernel *k = find(tag);
    if (k && t < k->end)
        fail("%s returned at %llu, before %s ended at %llu", what, (unsigned long long)t, tag,
             (unsigned long long)k->end);
}

static uint64_t own_partition_copies;

static void own_status(uint64_t *partition_launches, char *partition, size_t len)
{
    gy_shm shm;
    gy_err err;
    static struct gy_status st;
    *partition_launches = own_partition_copies = 0;
    snprintf(partition, len, "?");
    if (gy_open(getenv("GPUYIELD_SHM"), &shm, &err) || gy_status_read(&shm, &st, &err)) {
        fail("cannot read the status: %s", err.msg);
        return;
    }
    gy_close(&shm);
    for (int i = 0; i < st.nprocs; i++)
        if (st.procs[i].pid == getpid()) {
            *partition_launches = st.procs[i].partition_launches;
            own_partition_copies = st.procs[i].partition_copies;
            snprintf(partition, len, "%s", st.procs[i].partition);
        }
    printf("partition pid=%d launches=%llu state=%s\n", (int)getpid(), (unsigned long long)*partition_launches,
           partition);
}

/* ---- scenarios ------------------------------------------------------------------------------- */

struct graph_launch {
    CUcontext ctx;
    CUgraphExec exec;
    CUstream stream;
    _Atomic bool returned;
    CUresult rc;
};

static void *launch_graph(void *arg)
{
    struct graph_launch *g = arg;
    g->rc = cuCtxSetCurrent(g->ctx);
    if (g->rc == CUDA_SUCCESS)
        g->rc = cuGraphLaunch(g->exec, g->stream);
    atomic_store(&g->returned, true);
    return NULL;
}

/* Has the launch thread returned within `ms`? */
static bool returned_within(struct graph_launch *g, int ms)
{
    for (int i = 0; i < ms && !atomic_load(&g->returned); i++)
        usleep(1000);
    return atomic_load(&g->returned);
}

/* One stream across a job, every use that must see the redirected kernels, the legacy stream,
 * a wait between streams, a capture (left alone) and a graph (sent as its twin). */
static void scenario_order(void)
{
    hp_start();
    cuda_init();
    CUstream s1, s2, s3;
    CUevent ev, ev2;
    CU(cuStreamCreate(&s1, 0));
    CU(cuStreamCreate(&s2, 0));
    CU(cuStreamCreate(&s3, 0));
    CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CU(cuEventCreate(&ev2, CU_EVENT_DISABLE_TIMING));
    CU(run("b0", s1));
    CU(run("b1", s1));
    hp_do('b');
    for (int i = 0; i < 5; i++) {
        char tag[8];
        snprintf(tag, sizeof tag, "d%d", i);
        CU(run(tag, s1));
    }
    CU(cuEventRecord(ev, s1));
    CU(cuEventSynchronize(ev));
    uint64_t t_event = gy_now_ns();
    CU(run("d5", s1));
    CUresult q;
    while ((q = cuStreamQuery(s1)) == CUDA_ERROR_NOT_READY)
        usleep(100);
    CU(q);
    uint64_t t_query = gy_now_ns();
    CU(run("d6", s1));
    CU(cuStreamSynchronize(s1));
    uint64_t t_sync = gy_now_ns();
    CU(run("d7", s1));
    CU(cuEventRecord(ev2, s1));
    CU(cuStreamWaitEvent(s2, ev2, 0));
    CU(run("w0", s2));
    CU(run("L0", NULL));
    CU(run("k0", s1));
    CU(run("L1", NULL));
    CUgraph graph;
    CUgraphExec exec;
    CU(cuStreamBeginCapture_v2(s3, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(run("c0", s3));
    CU(cuStreamEndCapture(s3, &graph));
    CU(cuGraphInstantiateWithFlags(&exec, graph, 0));
    /* A green stream does not confine a graph's kernels: the graph goes to s1's partition stream
     * as its twin (its kernel node naming the green context), after what s1 sent there, at once. */
    struct graph_launch gl = {.exec = exec, .stream = s1};
    CU(cuCtxGetCurrent(&gl.ctx));
    pthread_t graph_thread;
    pthread_create(&graph_thread, NULL, launch_graph, &gl);
    /* Still inside the job, as the CUDA 13 runtime finds it: "cuCtxSynchronize" resolves to
     * cuCtxSynchronize_v2, hooked, and covers what was sent to the partition. */
    void *fn = NULL;
    CUdriverProcAddressQueryResult found;
    CU(cuGetProcAddress_v2("cuCtxSynchronize", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &found));
    Dl_info info;
    if (!fn || !dladdr(fn, &info) || !info.dli_fname || !strstr(info.dli_fname, "libgpuyield"))
        fail("cuCtxSynchronize at CUDA 13 did not resolve to the hook");
    else
        CU(((CUresult(*)(CUcontext))fn)(NULL));
    uint64_t t_ctx = gy_now_ns();
    if (!returned_within(&gl, 2000))
        fail("a graph with a twin launched during the job waited for the job's end");
    hp_do('e');
    pthread_join(graph_thread, NULL);
    CU(gl.rc);
    CU(run("a0", s1));
    CU(cuStreamSynchronize(s1));
    hp_stop();

    read_the_log();
    const char *redirected[] = {"d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "w0", "L0", "k0", "L1"};
    for (size_t i = 0; i < sizeof redirected / sizeof *redirected; i++)
        expect_green(redirected[i], true);
    expect_green("b0", false), expect_green("b1", false), expect_green("a0", false);
    expect_green("#graph", true);
    const struct fake_kernel *twin = find("#graph");
    if (twin && twin->green_sms != 16)
        fail("the graph's twin ran on %u SMs, not inside the 16 of the partition", twin->green_sms);
    const char *s1_order[] = {"b0", "b1", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "k0", "#graph", "a0"};
    for (size_t i = 1; i < sizeof s1_order / sizeof *s1_order; i++)
        expect_after(s1_order[i], s1_order[i - 1]);
    expect_after("w0", "d7");  /* cuStreamWaitEvent on an event recorded on s1 */
    expect_after("k0", "L0");  /* a blocking stream after the legacy stream */
    expect_after("L1", "k0");  /* the legacy stream after a blocking stream */
    expect_after("L1", "w0");
    expect_covered("cuEventSynchronize of an event recorded on s1", t_event, "d4");
    expect_covered("cuStreamQuery(s1) == CUDA_SUCCESS", t_query, "d5");
    expect_covered("cuStreamSynchronize(s1)", t_sync, "d6");
    expect_covered("cuCtxSynchronize_v2", t_ctx, "k0");
    expect_covered("cuCtxSynchronize_v2", t_ctx, "L1");
    for (int i = 0; i < the_log.n; i++) /* the captured kernel ran only inside the graph */
        if (the_log.kernels[i].pid == getpid() && strstr(the_log.kernels[i].name, "/c0"))
            fail("the kernel launched into the capture ran on its own (stream %llu)",
                 (unsigned long long)the_log.kernels[i].stream);
    uint64_t launches;
    char state[80];
    own_status(&launches, state, sizeof state);
    if (launches != 13 || strcmp(state, "active") != 0)
        fail("status: %llu launches sent to the partition (expected 13), partition '%s' (expected active)",
             (unsigned long long)launches, state);
    fake_log_free(&the_log);
}

/* A graph captured on s: one tagged kernel. */
static CUgraph captured(const char *tag, CUstream s)
{
    CUgraph graph = NULL;
    CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(run(tag, s));
    CU(cuStreamEndCapture(s, &graph));
    return graph;
}

static CUgraphNode first_node(CUgraph graph)
{
    CUgraphNode node = NULL;
    size_t n = 1;
    CU(cuGraphGetNodes(graph, &node, &n));
    return node;
}

/* Graphs during a job: one with a twin runs inside the partition at once (twice: one twin made);
 * those that cannot have one (a kernel node without a CUkernel, a memory node, a graph changed in
 * place after instantiation) wait for the job's end and run on their own streams. */
static void scenario_graphs(void)
{
    hp_start();
    cuda_init();
    CUstream s[4];
    for (int i = 0; i < 4; i++)
        CU(cuStreamCreate(&s[i], 0));
    CUgraphExec twinned, no_kern, with_memory, changed;
    CU(cuGraphInstantiateWithFlags(&twinned, captured("g0", s[0]), 0));
    CUgraph g1 = captured("g1", s[1]);
    CUDA_KERNEL_NODE_PARAMS_v2 p;
    CU(cuGraphKernelNodeGetParams_v2(first_node(g1), &p));
    p.kern = NULL; /* a CUfunction only, as a node added by hand may hold */
    CU(cuGraphKernelNodeSetParams_v2(first_node(g1), &p));
    CU(cuGraphInstantiateWithFlags(&no_kern, g1, 0));
    CUgraph g2 = captured("g2", s[2]);
    CUgraphNode alloc;
    CU(fkGraphAddNode(&alloc, g2, first_node(g2), CU_GRAPH_NODE_TYPE_MEM_ALLOC, 0));
    CU(cuGraphInstantiateWithFlags(&with_memory, g2, 0));
    CUgraph g3 = captured("g3", s[3]);
    CU(cuGraphInstantiateWithFlags(&changed, g3, 0));
    CU(cuGraphKernelNodeGetParams_v2(first_node(g3), &p));
    CU(cuGraphExecKernelNodeSetParams_v2(changed, first_node(g3), &p));
    struct graph_launch gl[5] = {{.exec = twinned, .stream = s[0]}, {.exec = twinned, .stream = s[0]},
                                 {.exec = no_kern, .stream = s[1]}, {.exec = with_memory, .stream = s[2]},
                                 {.exec = changed, .stream = s[3]}};
    pthread_t threads[5];
    hp_do('b');
    for (int i = 0; i < 5; i++) {
        CU(cuCtxGetCurrent(&gl[i].ctx));
        pthread_create(&threads[i], NULL, launch_graph, &gl[i]);
        if (i < 2 && !returned_within(&gl[i], 2000))
            fail("launch %d of a graph with a twin waited for the job's end", i);
    }
    usleep(200 * 1000);
    for (int i = 2; i < 5; i++)
        if (atomic_load(&gl[i].returned))
            fail("graph launch %d (no twin possible) returned before the job ended (rc %d)", i, (int)gl[i].rc);
    uint64_t t_end = gy_now_ns();
    hp_do('e');
    for (int i = 0; i < 5; i++) {
        pthread_join(threads[i], NULL);
        CU(gl[i].rc);
    }
    CU(cuCtxSynchronize());
    hp_stop();

    read_the_log();
    int green = 0, own = 0;
    for (int i = 0; i < the_log.n; i++) {
        const struct fake_kernel *k = &the_log.kernels[i];
        if (k->pid != getpid() || strcmp(k->kind, "graph") != 0)
            continue;
        if (k->stream >= GREEN_IDS && k->green_sms == 16 && k->start < t_end)
            green++;
        else if (k->stream < GREEN_IDS && k->green_sms == 0 && k->submit >= t_end)
            own++;
        else
            fail("a graph ran on stream %llu (%u SMs of a green context) submitted at %llu, the job ended at %llu",
                 (unsigned long long)k->stream, k->green_sms, (unsigned long long)k->submit, (unsigned long long)t_end);
    }
    if (green != 2 || own != 3)
        fail("%d graph launches ran as twins inside the partition (expected 2), %d after the job on their own "
             "streams (expected 3)", green, own);
    fake_log_free(&the_log);
}

/* Jobs in progress at the higher level, read from the segment. */
static unsigned higher_jobs(void)
{
    gy_shm shm;
    gy_err err;
    static struct gy_status st;
    if (gy_open(getenv("GPUYIELD_SHM"), &shm, &err) || gy_status_read(&shm, &st, &err)) {
        fail("cannot read the status: %s", err.msg);
        return 0;
    }
    gy_close(&shm);
    return st.jobs[1];
}

/* Async copies and memsets during a job go to the partition stream with the kernels, in order,
 * without waiting for the job's end (a lower worker that copies its input every iteration). A
 * synchronous copy still joins. A copy that waited at the gate would block until a helper ends
 * the job after 10 s: the job is then over when the copy returns, which the check sees. */
#define COPY_BYTES 20000000 /* 2 ms on the fake driver */
static void scenario_copies(void)
{
    hp_start();
    cuda_init();
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    CUdeviceptr dev;
    CU(cuMemAlloc_v2(&dev, COPY_BYTES));
    static char host[64];
    CU(run("b0", s));
    hp_do('b');
    pid_t ender = fork();
    if (ender == 0) { /* only if a copy waits at the gate: ends the job so the test ends */
        sleep(10);
        char c = 'e';
        _exit(write(to_hp, &c, 1) == 1 ? 0 : 1);
    }
    CU(cuMemcpyHtoDAsync_v2(dev, host, COPY_BYTES, s)); /* first in the job: it forks */
    CU(run("d0", s));
    CU(cuMemsetD32Async(dev, 7, COPY_BYTES / 4, s));
    CU(run("d1", s));
    CU(cuMemcpyDtoDAsync_v2_ptsz(dev, dev, COPY_BYTES, NULL));
    unsigned jobs_after_copies = higher_jobs();
    kill(ender, SIGKILL);
    waitpid(ender, NULL, 0);
    if (jobs_after_copies != 1) {
        fail("the async copies returned after the job ended (%u higher jobs in progress): they waited", jobs_after_copies);
        char ack;
        if (read(from_hp, &ack, 1) != 1)
            fail("no end of the job");
    } else {
        hp_do('e');
    }
    CU(run("a0", s));
    CU(cuStreamSynchronize(s));
    CU(cuStreamSynchronize_ptsz(NULL));
    hp_stop();

    read_the_log();
    const char *redirected[] = {"=cuMemcpyHtoDAsync_v2", "d0", "=cuMemsetD32Async", "d1", "=cuMemcpyDtoDAsync_v2_ptsz"};
    for (size_t i = 0; i < sizeof redirected / sizeof *redirected; i++)
        expect_green(redirected[i], true);
    expect_green("b0", false), expect_green("a0", false);
    const char *order[] = {"b0", "=cuMemcpyHtoDAsync_v2", "d0", "=cuMemsetD32Async", "d1", "a0"};
    for (size_t i = 1; i < sizeof order / sizeof *order; i++)
        expect_after(order[i], order[i - 1]);
    uint64_t launches;
    char state[80];
    own_status(&launches, state, sizeof state);
    if (launches != 2 || own_partition_copies != 3)
        fail("status: %llu launches and %llu copies sent to the partition (expected 2 and 3)",
             (unsigned long long)launches, (unsigned long long)own_partition_copies);
    CU(cuMemFree_v2(dev));
    fake_log_free(&the_log);
}

/* Many threads, each with its own stream (half of them the per-thread default stream), launching
 * across the job's begin and end, with syncs and event records between. */
#define THREADS 8
#define PER_THREAD 40
static uint64_t synced_at[THREADS][PER_THREAD]; /* when the sync after kernel i returned, or 0 */

static void *thread_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    CUcontext ctx;
    CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU(cuCtxSetCurrent(ctx));
    CUstream s = NULL;
    bool per_thread = t % 2;
    if (!per_thread)
        CU(cuStreamCreate(&s, 0));
    CUevent ev;
    CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    for (int i = 0; i < PER_THREAD; i++) {
        char tag[16];
        snprintf(tag, sizeof tag, "t%d_%d", t, i);
        CUfunction f = tagged(1000, tag);
        if (per_thread)
            CU(cuLaunchKernel_ptsz(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
        else
            CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
        if (i % 10 == 9) {
            CU(per_thread ? cuStreamSynchronize_ptsz(NULL) : cuStreamSynchronize(s));
            synced_at[t][i] = gy_now_ns();
        }
        else if (i % 10 == 4)
            CU(per_thread ? cuEventRecord_ptsz(ev, NULL) : cuEventRecord(ev, s));
    }
    CU(per_thread ? cuStreamSynchronize_ptsz(NULL) : cuStreamSynchronize(s));
    return NULL;
}

static void scenario_threads(void)
{
    hp_start();
    cuda_init();
    pthread_t threads[THREADS];
    hp_do('b');
    for (int t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, thread_main, (void *)(intptr_t)t);
    usleep(30000);
    hp_do('e');
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    hp_stop();
    read_the_log();
    int green = 0;
    for (int t = 0; t < THREADS; t++)
        for (int i = 1; i < PER_THREAD; i++) {
            char now[16], before[16];
            snprintf(now, sizeof now, "t%d_%d", t, i);
            snprintf(before, sizeof before, "t%d_%d", t, i - 1);
            expect_after(now, before);
            const struct fake_kernel *k = find(now);
            green += k && k->stream >= GREEN_IDS;
            if (synced_at[t][i])
                expect_covered("cuStreamSynchronize", synced_at[t][i], now);
        }
    uint64_t launches;
    char state[80];
    own_status(&launches, state, sizeof state);
    if (!green || launches < (uint64_t)green)
        fail("%d kernels ran on green streams, status says %llu", green, (unsigned long long)launches);
    fake_log_free(&the_log);
}

/* fork while streams owe joins: the child starts with no partition state and works. */
static void scenario_fork(void)
{
    hp_start();
    cuda_init();
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    hp_do('b');
    CU(run("p0", s));
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        CUcontext ctx;
        CU(cuDevicePrimaryCtxRetain(&ctx, 0));
        CU(cuCtxSetCurrent(ctx));
        CUstream cs;
        CU(cuStreamCreate(&cs, 0));
        CU(run("f0", cs));
        CU(run("f1", cs));
        CU(cuStreamSynchronize(cs));
        fflush(stdout);
        _exit(failures ? 1 : 0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        fail("the forked child failed (status %#x)", status);
    hp_do('e');
    CU(run("p1", s));
    CU(cuStreamSynchronize(s));
    hp_stop();
    read_the_log();
    expect_green("p0", true);
    expect_after("p1", "p0");
    fake_log_free(&the_log);
}

/* Where the partition cannot be had, a launch inside a job waits for the job's end. */
static void scenario_fallback(void)
{
    hp_start();
    cuda_init();
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    CU(run("x0", s)); /* registers before the job */
    hp_do('b');
    pid_t ender = fork();
    if (ender == 0) { /* ends the job after a while, from outside */
        usleep(200000);
        char c = 'e';
        if (write(to_hp, &c, 1) != 1)
            _exit(1);
        _exit(0);
    }
    CU(run("x1", s));
    uint64_t launched = gy_now_ns();
    char ack;
    if (read(from_hp, &ack, 1) != 1 || ack != 'e')
        fail("no end of the job");
    uint64_t ended = gy_now_ns();
    waitpid(ender, NULL, 0);
    /* 150 ms of 200: the end's acknowledgement can come tens of ms after the woken launch under
     * TSan on a crowded machine; a launch that did not wait returns about 200 ms before it. */
    if (launched + 150000000ull < ended)
        fail("the launch inside the job returned %llu ms before the job ended: it did not wait",
             (unsigned long long)((ended - launched) / 1000000));
    CU(cuStreamSynchronize(s));
    hp_stop();
    read_the_log();
    expect_green("x1", false);
    uint64_t launches;
    char state[80];
    own_status(&launches, state, sizeof state);
    if (launches != 0 || strncmp(state, "fallback: ", 10) != 0)
        fail("status: %llu launches sent to the partition, partition '%s' (expected a fallback)",
             (unsigned long long)launches, state);
    fake_log_free(&the_log);
}

/* The partition stream has its own queue bound. Run under GPUYIELD_MODE=sync:1: a burst of kernels
 * launched during the job goes to the green stream, and each launch returns only once its kernel
 * has ended, so no kernel is submitted while another is still queued there. Without the bound the
 * burst is queued at once: kernels submitted behind others, launches returning before their
 * kernels end. Under time:US (US < 2 x KERNEL_US: each kernel goes alone) the bound, applied after
 * the launch, waits for the kernel before: at most one is still queued at a submit. */
#define BURST 20
static void scenario_bound(void)
{
    const char *mode = getenv("GPUYIELD_MODE") ? getenv("GPUYIELD_MODE") : "";
    bool time_mode = strncmp(mode, "time:", 5) == 0;
    hp_start();
    cuda_init();
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    CU(run("b0", s));
    hp_do('b');
    uint64_t returned[BURST];
    for (int i = 0; i < BURST; i++) {
        char tag[8];
        snprintf(tag, sizeof tag, "q%d", i);
        CU(run(tag, s));
        returned[i] = gy_now_ns();
    }
    hp_do('e');
    CU(cuStreamSynchronize(s));
    hp_stop();

    read_the_log();
    /* GPUYIELD_PARTITION_US: the green stream's own bound, here deeper than the mode's: groups of
     * US/2 of 2 ms kernels, two in flight, one more launched before its group's wait. */
    const char *green = getenv("GPUYIELD_PARTITION_US");
    unsigned per_group = green ? (unsigned)(strtoul(green, NULL, 10) / 2 / 2000) : 0;
    unsigned allowed = green ? 2 * (per_group ? per_group : 1) + 1 : time_mode ? 1u : 0u, deepest = 0;
    for (int i = 0; i < BURST; i++) {
        char tag[8], what[48];
        snprintf(tag, sizeof tag, "q%d", i);
        expect_green(tag, true);
        const struct fake_kernel *k = find(tag);
        if (k && k->outstanding > deepest)
            deepest = k->outstanding;
        if (k && k->outstanding > allowed)
            fail("%s was submitted with %u kernels still queued on its stream: %s (GPUYIELD_PARTITION_US %s) allows %u",
                 tag, k->outstanding, mode, green ? green : "unset", allowed);
        snprintf(what, sizeof what, "the launch of %s", tag);
        if (!time_mode)
            expect_covered(what, returned[i], tag);
    }
    if (green && per_group >= 2 && deepest < per_group + 1)
        fail("the deepest green queue at a submit was %u kernels: GPUYIELD_PARTITION_US=%s lets %u queue", deepest,
             green, allowed);
    gy_shm shm;
    gy_err err;
    static struct gy_status st;
    if (gy_open(getenv("GPUYIELD_SHM"), &shm, &err) || gy_status_read(&shm, &st, &err)) {
        fail("cannot read the status: %s", err.msg);
    } else {
        gy_close(&shm);
        /* sync:1 syncs after every launch; time mode counts a wait only where the kernel before had
         * not ended yet, which a slow (crowded) thread often finds. */
        unsigned long long syncs = time_mode ? 1 : BURST;
        for (int i = 0; i < st.nprocs; i++)
            if (st.procs[i].pid == getpid() && (st.procs[i].partition_launches != BURST || st.procs[i].sync_points < syncs))
                fail("status: %llu launches sent to the partition (expected %d), %llu sync points (expected >= %llu)",
                     (unsigned long long)st.procs[i].partition_launches, BURST,
                     (unsigned long long)st.procs[i].sync_points, syncs);
    }
    fake_log_free(&the_log);
}

int partition_scenario(const char *what, int argc, char **argv)
{
    (void)argc, (void)argv;
    if (strcmp(what, "partition") == 0)
        scenario_order();
    else if (strcmp(what, "partition_graphs") == 0)
        scenario_graphs();
    else if (strcmp(what, "partition_copies") == 0)
        scenario_copies();
    else if (strcmp(what, "partition_threads") == 0)
        scenario_threads();
    else if (strcmp(what, "partition_fork") == 0)
        scenario_fork();
    else if (strcmp(what, "partition_fallback") == 0)
        scenario_fallback();
    else if (strcmp(what, "partition_bound") == 0)
        scenario_bound();
    else
        fail("unknown scenario %s", what);
    return failures;
}
