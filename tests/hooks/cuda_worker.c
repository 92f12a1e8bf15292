/* A CUDA "application" for the hook tests: runs under LD_PRELOAD=libgpuyield.so against the fake
 * libcuda.so.1 and does one scenario (argv[1]). It prints what the test driver checks:
 *   counters pid=P slot=0|1 launches=N graph_launches=N sync_points=N waits=N drains=N
 *   JOB <entered_ns> <drained_ns> <exit_ns> <timed_out>      (jobs)
 *   QUEUED / CAPTURING / ENDED / STARTED <ns>                (coordination marks)
 * and exits 0, or 1 with a line "FAIL ..." when a check of its own fails. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_log.h"
#include "fakecuda.h"
#include "partition_scenarios.h"
#include "guarded_scenarios.h"
#include "worker_check.h"
#include "gpuyield.h"


static uint64_t now_ns(void) { return gy_now_ns(); }

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static CUfunction kernel_of(long us)
{
    static CUmodule module;
    if (!module) {
        CUdevice dev;
        CUcontext ctx;
        CU(cuInit(0));
        CU(cuDeviceGet(&dev, 0));
        CU(cuDevicePrimaryCtxRetain(&ctx, dev));
        CU(cuCtxSetCurrent(ctx));
        CU(cuModuleLoadData(&module, "fake image"));
    }
    char name[32];
    snprintf(name, sizeof name, "spin_us:%ld", us);
    CUfunction f;
    CU(cuModuleGetFunction(&f, module, name));
    return f;
}

static CUresult launch(CUfunction f, CUstream s) { return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL); }

/* Our own counters, read through the controller API from the segment the hook joined. */
static void print_counters(void)
{
    const char *tag = getenv("GPUYIELD_SHM");
    static char compat_tag[64];
    if (!tag && getenv("SUFFIX")) { /* the original harness's variable (libcuinterpose*.so) */
        snprintf(compat_tag, sizeof compat_tag, "compat%s", getenv("SUFFIX"));
        tag = compat_tag;
    }
    int pid = getpid();
    if (!tag) {
        printf("counters pid=%d slot=0\n", pid);
        return;
    }
    gy_shm shm;
    gy_err err;
    static struct gy_status st;
    if (gy_open(tag, &shm, &err) || gy_status_read(&shm, &st, &err)) {
        fail("cannot read counters: %s", err.msg);
        return;
    }
    gy_close(&shm);
    /* A process that also registered itself (the jobs scenario) has two slots: sum them. */
    struct gy_status_proc sum = {0};
    int found = 0;
    for (int i = 0; i < st.nprocs; i++) {
        const struct gy_status_proc *p = &st.procs[i];
        if (p->pid != pid)
            continue;
        found++;
        sum.launches += p->launches, sum.graph_launches += p->graph_launches, sum.sync_points += p->sync_points;
        sum.waits += p->waits, sum.drains += p->drains;
        sum.auto_jobs += p->auto_jobs, sum.auto_job_ns += p->auto_job_ns;
    }
    printf("counters pid=%d slot=%d launches=%llu graph_launches=%llu sync_points=%llu waits=%llu drains=%llu "
           "auto_jobs=%llu auto_job_ns=%llu\n",
           pid, found, (unsigned long long)sum.launches, (unsigned long long)sum.graph_launches,
           (unsigned long long)sum.sync_points, (unsigned long long)sum.waits, (unsigned long long)sum.drains,
           (unsigned long long)sum.auto_jobs, (unsigned long long)sum.auto_job_ns);
}

/* ---- paths: every way an application reaches a launch function ------------------------------ */

static char expected[64]; /* stream of each launch, in order: L legacy, P per-thread, S created */
static int nexpected, graphs;

static void *must_be_hook(void *fn, const char *how)
{
    Dl_info info;
    if (!fn)
        fail("%s: got NULL", how);
    else if (!dladdr(fn, &info) || !info.dli_fname || !strstr(info.dli_fname, "libgpuyield"))
        fail("%s: got a function of %s, not the hook", how, fn && info.dli_fname ? info.dli_fname : "?");
    return fn;
}

static void expect(char stream) { expected[nexpected++] = stream; }

static void check_log_streams(void)
{
    struct fake_log log;
    const char *path = getenv("FAKECUDA_LOG");
    if (!path || fake_log_read(path, &log)) {
        fail("no readable FAKECUDA_LOG");
        return;
    }
    uint64_t per_thread = 0, created = 0;
    int seen = 0;
    for (int i = 0; i < log.n; i++) {
        const struct fake_kernel *k = &log.kernels[i];
        if (k->pid != getpid())
            continue;
        if (seen >= nexpected) {
            fail("more kernels in the log than launched");
            break;
        }
        char want = expected[seen++];
        uint64_t *id = want == 'P' ? &per_thread : want == 'S' ? &created : NULL;
        if (id && !*id)
            *id = k->stream;
        bool ok = want == 'L' ? k->stream == 0 : (k->stream != 0 && k->stream == *id);
        if (!ok || (per_thread && per_thread == created))
            fail("launch %d ran on stream %llu, expected the %s stream", seen, (unsigned long long)k->stream,
                 want == 'L' ? "legacy" : want == 'P' ? "per-thread" : "created");
    }
    if (seen != nexpected)
        fail("the log has %d kernels of ours, %d were launched", seen, nexpected);
    fake_log_free(&log);
}

static void scenario_paths(void)
{
    CUfunction f = kernel_of(10);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        fail("dlopen libcuda.so.1: %s", dlerror());
        return;
    }
    /* dlsym on the driver's handle, as PyTorch does. */
    PFN_cuLaunchKernel lk = (PFN_cuLaunchKernel)must_be_hook(dlsym(h, "cuLaunchKernel"), "dlsym cuLaunchKernel");
    PFN_cuLaunchKernel lk_ptsz =
        (PFN_cuLaunchKernel)must_be_hook(dlsym(h, "cuLaunchKernel_ptsz"), "dlsym cuLaunchKernel_ptsz");
    CU(lk(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)); expect('L');
    CU(lk_ptsz(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)); expect('P');
    CU(lk_ptsz(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL)); expect('S');

    /* The resolver, found with dlsym as the CUDA runtime does. */
    PFN_cuGetProcAddress_v2 gpa2 =
        (PFN_cuGetProcAddress_v2)must_be_hook(dlsym(h, "cuGetProcAddress_v2"), "dlsym cuGetProcAddress_v2");
    PFN_cuGetProcAddress gpa =
        (PFN_cuGetProcAddress)must_be_hook(dlsym(h, "cuGetProcAddress"), "dlsym cuGetProcAddress");
    /* Resolver of resolver, both arities: cudaVersion >= 12000 gives the 5-argument one. */
    void *p = NULL;
    CUdriverProcAddressQueryResult status;
    CU(gpa2("cuGetProcAddress", &p, 12000, 0, &status));
    PFN_cuGetProcAddress_v2 gpa2_again = (PFN_cuGetProcAddress_v2)must_be_hook(p, "resolver(cuGetProcAddress, 12000)");
    CU(gpa2("cuGetProcAddress", &p, 11030, 0, &status));
    PFN_cuGetProcAddress gpa_legacy = (PFN_cuGetProcAddress)must_be_hook(p, "resolver(cuGetProcAddress, 11030)");
    if ((void *)gpa2_again != (void *)gpa2 || (void *)gpa_legacy != (void *)gpa)
        fail("the resolver asked for itself did not return our resolver of the matching arity");

    const int versions[] = {4000, 7000, 12000, 13000};
    for (int v = 0; v < 4; v++) {
        for (int flags = 0; flags <= 2; flags++) {
            char how[96];
            snprintf(how, sizeof how, "resolver(cuLaunchKernel, %d, flags %d)", versions[v], flags);
            CU(gpa2_again("cuLaunchKernel", &p, versions[v], (cuuint64_t)flags, &status));
            PFN_cuLaunchKernel fn = (PFN_cuLaunchKernel)must_be_hook(p, how);
            CU(fn(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)); expect(flags == 2 ? 'P' : 'L');
            CU(gpa_legacy("cuLaunchKernel", &p, versions[v], (cuuint64_t)flags));
            fn = (PFN_cuLaunchKernel)must_be_hook(p, how);
            CU(fn(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)); expect(flags == 2 ? 'P' : 'L');
        }
    }
    /* cuLaunchKernelEx, a cooperative launch as its attribute, on NULL and a created stream. */
    CUlaunchAttribute coop = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE, .value.cooperative = 1};
    CUlaunchConfig config = {1, 1, 1, 32, 1, 1, 0, NULL, &coop, 1};
    for (int flags = 0; flags <= 2; flags += 2) {
        CU(gpa2("cuLaunchKernelEx", &p, 12000, (cuuint64_t)flags, &status));
        PFN_cuLaunchKernelEx ex = (PFN_cuLaunchKernelEx)must_be_hook(p, "resolver(cuLaunchKernelEx)");
        config.hStream = NULL;
        CU(ex(&config, f, NULL, NULL)); expect(flags == 2 ? 'P' : 'L');
        config.hStream = s;
        CU(ex(&config, f, NULL, NULL)); expect('S');
    }
    PFN_cuLaunchKernelEx ex_dl = (PFN_cuLaunchKernelEx)must_be_hook(dlsym(h, "cuLaunchKernelEx_ptsz"), "dlsym Ex_ptsz");
    config.hStream = NULL;
    CU(ex_dl(&config, f, NULL, NULL)); expect('P');
    /* Cooperative launches. */
    for (int flags = 0; flags <= 2; flags += 2) {
        CU(gpa2("cuLaunchCooperativeKernel", &p, 12000, (cuuint64_t)flags, &status));
        PFN_cuLaunchCooperativeKernel ck = (PFN_cuLaunchCooperativeKernel)must_be_hook(p, "resolver(coop)");
        CU(ck(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL)); expect(flags == 2 ? 'P' : 'L');
    }
    /* A graph launch is one unit. */
    CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < 3; i++)
        CU(launch(f, s)); /* captured: counted as a launch, runs only inside the graph */
    CUgraph graph;
    CUgraphExec exec;
    CU(cuStreamEndCapture(s, &graph));
    CU(cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int flags = 0; flags <= 2; flags += 2) {
        CU(gpa2("cuGraphLaunch", &p, 12000, (cuuint64_t)flags, &status));
        PFN_cuGraphLaunch gl = (PFN_cuGraphLaunch)must_be_hook(p, "resolver(cuGraphLaunch)");
        CU(gl(exec, NULL)); expect(flags == 2 ? 'P' : 'L'); graphs++;
    }
    /* Calls linked directly to libcuda reach the exported hooks too. */
    CU(launch(f, NULL)); expect('L');
    CU(cuLaunchKernel_ptsz(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)); expect('P');

    /* Failed lookups come back unchanged. */
    p = (void *)&status;
    if (gpa2("cuLaunchKernelEx", &p, 11000, 0, &status) != CUDA_ERROR_NOT_FOUND ||
        status != CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT || p)
        fail("a too-old cudaVersion did not come back as the driver says");
    if (gpa2("cuNoSuchFunction", &p, 12000, 0, &status) != CUDA_SUCCESS || p ||
        status != CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
        fail("an unknown symbol did not come back as the driver says");
    if (gpa("cuNoSuchFunction", &p, 12000, 0) != CUDA_ERROR_NOT_FOUND)
        fail("an unknown symbol (legacy resolver) did not come back as the driver says");
    /* Functions we do not hook are the driver's own. */
    CU(gpa2("cuStreamSynchronize", &p, 12000, 0, &status));
    if (p != dlsym(h, "cuStreamSynchronize"))
        fail("an unhooked function did not come back as the driver's own");
    CU(cuCtxSynchronize());
    int kernels = nexpected - graphs;
    check_log_streams();
    printf("launched kernels=%d captured=3 graphs=%d\n", kernels, graphs);
}

/* ---- the other scenarios --------------------------------------------------------------------- */

static void scenario_plain(int count)
{
    CUfunction f = kernel_of(10);
    for (int i = 0; i < count; i++)
        CU(launch(f, NULL));
    CU(cuCtxSynchronize());
}

/* A low-priority inference loop: `batch` kernels, then wait for the results; for `seconds`. */
static void scenario_spin(long us, int batch, double seconds)
{
    CUfunction f = kernel_of(us);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
    while (now_ns() < end) {
        for (int i = 0; i < batch; i++)
            CU(launch(f, s));
        CU(cuStreamSynchronize(s));
    }
}

/* Like an inference loop: each round copies its input to the device (1 MB), then runs `batch`
 * kernels and waits. The copies must be gated like the kernels. */
static void scenario_copyspin(long us, int batch, double seconds)
{
    CUfunction f = kernel_of(us);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    CUdeviceptr dst;
    CU(cuMemAlloc_v2(&dst, 1 << 20));
    static char input[1 << 20];
    uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
    while (now_ns() < end) {
        CU(cuMemcpyHtoDAsync_v2(dst, input, sizeof input, s));
        for (int i = 0; i < batch; i++)
            CU(launch(f, s));
        CU(cuStreamSynchronize(s));
    }
}

/* A high-priority worker: jobs of `k` kernels, each between begin and end, `gap_ms` apart plus
 * a random 0..jitter_us (so that jobs do not keep one phase of a periodic lower worker). */
static void scenario_jobs(int priority, int njobs, long us, int k, long gap_ms, long jitter_us)
{
    unsigned seed = (unsigned)getpid();
    CUfunction f = kernel_of(us);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    gy_shm shm;
    gy_err err;
    if (gy_open(getenv("GPUYIELD_SHM"), &shm, &err) || gy_register(&shm, priority, &err)) {
        fail("cannot join as a job runner: %s", err.msg);
        return;
    }
    for (int j = 0; j < njobs; j++) {
        sleep_ms(gap_ms);
        if (jitter_us > 0) {
            long extra_us = (long)(rand_r(&seed) % (unsigned)jitter_us);
            struct timespec ts = {.tv_sec = extra_us / 1000000, .tv_nsec = extra_us % 1000000 * 1000};
            nanosleep(&ts, NULL);
        }
        gy_job job;
        if (gy_begin(&shm, priority, &job, &err)) {
            fail("begin: %s", err.msg);
            break;
        }
        uint64_t drained = now_ns();
        for (int i = 0; i < k; i++)
            CU(launch(f, s));
        CU(cuStreamSynchronize(s));
        uint64_t exit_ns = now_ns();
        printf("JOB %llu %llu %llu %d\n", (unsigned long long)job.entered_ns, (unsigned long long)drained,
               (unsigned long long)exit_ns, job.timed_out);
        fflush(stdout);
        if (gy_job_exit(&shm, &job, &err))
            fail("end: %s", err.msg);
    }
    print_counters();
    gy_close(&shm);
}

/* Queue work, then stay busy on the CPU without launching. */
/* second_context: the thread launches once, then creates (and so switches to) a second
 * context and queues the work there: the drain must synchronize that context too. */
static void scenario_busy(long us, int count, double seconds, bool second_context)
{
    CUfunction f = kernel_of(us);
    CUstream s;
    if (second_context) {
        CU(launch(kernel_of(10), NULL));
        CUcontext other;
        CU(cuCtxCreate_v2(&other, 0, 0));
    }
    CU(cuStreamCreate(&s, 0));
    for (int i = 0; i < count; i++)
        CU(launch(f, s));
    printf("QUEUED %llu\n", (unsigned long long)now_ns());
    fflush(stdout);
    uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
    volatile uint64_t spin = 0;
    while (now_ns() < end)
        spin++;
}

static void scenario_bound(long us, int count)
{
    CUfunction f = kernel_of(us);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    for (int i = 0; i < count; i++)
        CU(launch(f, s));
    for (int i = 0; i < count; i++)
        CU(cuLaunchKernel_ptsz(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    CU(cuCtxSynchronize());
}

/* Rounds of many short kernels then graph launches of 5 ms each on one stream: time:US must bound
 * the graphs by their own GPU time, not by the short kernels' time per launch. */
static void scenario_graph_mix(int rounds)
{
    CUfunction small = kernel_of(20), big = kernel_of(500);
    CUstream s, capture;
    CU(cuStreamCreate(&s, 0));
    CU(cuStreamCreate(&capture, 0));
    CUgraph graph;
    CUgraphExec exec;
    CU(cuStreamBeginCapture_v2(capture, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < 10; i++)
        CU(launch(big, capture));
    CU(cuStreamEndCapture(capture, &graph));
    CU(cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 60; i++)
            CU(launch(small, s));
        for (int i = 0; i < 10; i++)
            CU(cuGraphLaunch(exec, s));
    }
    CU(cuStreamSynchronize(s));
}

/* A lower-priority loop that never synchronizes: units of `us` of GPU time on one stream for
 * `ms` milliseconds, each a kernel or (graph) a graph launch of 10 kernels of us/10; only the
 * queue bound limits what it queues. Prints STARTED <ns> after its first unit (graphs: after its
 * fourth, once a graph that is cut into parts is cut: graph_split.c times three launches first). */
static void scenario_units(long us, bool graph, long ms)
{
    CUfunction f = kernel_of(graph ? us / 10 : us);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    CUgraphExec exec = NULL;
    if (graph) {
        CUstream capture;
        CUgraph g;
        CU(cuStreamCreate(&capture, 0));
        CU(cuStreamBeginCapture_v2(capture, CU_STREAM_CAPTURE_MODE_GLOBAL));
        for (int i = 0; i < 10; i++)
            CU(launch(f, capture));
        CU(cuStreamEndCapture(capture, &g));
        CU(cuGraphInstantiateWithFlags(&exec, g, 0));
    }
    uint64_t end = now_ns() + (uint64_t)ms * 1000000ull;
    for (int i = 0; now_ns() < end; i++) {
        CU(graph ? cuGraphLaunch(exec, s) : launch(f, s));
        if (i == (graph ? 3 : 0)) {
            printf("STARTED %llu\n", (unsigned long long)now_ns());
            fflush(stdout);
        }
    }
    CU(cuStreamSynchronize(s));
}

/* A graph of 8 kernels of `us` each: k0, then two branches of 3, joined by an event node (one
 * branch by a programmatic edge: its data must be read, or the driver refuses the query), then k7
 * (with `alloc`, a memory-allocation node before k0: such a graph is never cut). Launched
 * `replays` times on one stream, changed in place (a kernel node's parameters), launched `replays`
 * times more. Prints "graph_parts changed_after=N". */
static void scenario_graph_parts(long us, int replays, bool alloc)
{
    (void)kernel_of(us); /* the context */
    uint64_t ns = (uint64_t)us * 1000;
    CUgraph g;
    CUgraphNode head = NULL, k0, a, b, join, last;
    CU(cuGraphCreate(&g, 0));
    if (alloc)
        CU(fkGraphAddNode(&head, g, NULL, CU_GRAPH_NODE_TYPE_MEM_ALLOC, 0));
    CU(fkGraphAddNode(&k0, g, head, CU_GRAPH_NODE_TYPE_KERNEL, ns));
    a = b = k0;
    for (int i = 0; i < 3; i++) {
        CU(fkGraphAddNode(&a, g, a, CU_GRAPH_NODE_TYPE_KERNEL, ns));
        CU(fkGraphAddNode(&b, g, b, CU_GRAPH_NODE_TYPE_KERNEL, ns));
    }
    CU(fkGraphAddNode(&join, g, a, CU_GRAPH_NODE_TYPE_EVENT_RECORD, 0));
    CU(fkGraphAddEdge(g, b, join, 1)); /* a programmatic edge, as cuBLAS captures on Hopper */
    CU(fkGraphAddNode(&last, g, join, CU_GRAPH_NODE_TYPE_KERNEL, ns));
    CUgraphExec exec;
    CUDA_GRAPH_INSTANTIATE_PARAMS params = {0}; /* the CUDA 12 entry point (the units scenario: WithFlags) */
    CU(cuGraphInstantiateWithParams(&exec, g, &params));
    CU(cuGraphDestroy(g)); /* as torch does: the exec outlives its graph */
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    for (int i = 0; i < replays; i++)
        CU(cuGraphLaunch(exec, s));
    int kernel_params = 1;
    CU(cuGraphExecKernelNodeSetParams_v2(exec, last, &kernel_params));
    for (int i = 0; i < replays; i++)
        CU(cuGraphLaunch(exec, s));
    CU(cuStreamSynchronize(s));
    CU(cuGraphExecDestroy(exec));
    printf("graph_parts changed_after=%d\n", replays);
}

/* A lower-priority loop of one uneven graph: 2 x (two kernels of long_us, then 6 of short_us) in
 * a chain, replayed without a synchronisation for `ms` milliseconds, or `replays` times when not 0.
 * Prints STARTED <ns> after the 20th replay: by then graph_split.c has timed it whole, cut it by
 * count, timed the parts and cut again by their times (fewer than 20 launches). */
static void scenario_uneven_graph(long long_us, long short_us, long ms, long replays)
{
    (void)kernel_of(long_us); /* the context */
    CUgraph g;
    CUgraphNode node = NULL;
    CU(cuGraphCreate(&g, 0));
    for (int i = 0; i < 16; i++)
        CU(fkGraphAddNode(&node, g, node, CU_GRAPH_NODE_TYPE_KERNEL, (uint64_t)(i % 8 < 2 ? long_us : short_us) * 1000));
    CUgraphExec exec;
    CU(cuGraphInstantiateWithFlags(&exec, g, 0));
    CU(cuGraphDestroy(g));
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    uint64_t end = now_ns() + (uint64_t)ms * 1000000ull;
    for (int i = 0; replays ? i < replays : now_ns() < end; i++) {
        CU(cuGraphLaunch(exec, s));
        if (i == 19) {
            printf("STARTED %llu\n", (unsigned long long)now_ns());
            fflush(stdout);
        }
    }
    CU(cuStreamSynchronize(s));
    CU(cuGraphExecDestroy(exec));
}

/* Kernels, a capture (launches inside it), the graph, kernels again: with sync:N / event:N the
 * hook must not insert a sync point into the capture. */
static void scenario_capture(long us)
{
    CUfunction f = kernel_of(us);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    for (int i = 0; i < 5; i++)
        CU(launch(f, s));
    CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < 10; i++)
        CU(launch(f, s));
    CUgraph graph;
    CUgraphExec exec;
    CU(cuStreamEndCapture(s, &graph));
    CU(cuGraphInstantiateWithFlags(&exec, graph, 0));
    CU(cuGraphLaunch(exec, s));
    for (int i = 0; i < 5; i++)
        CU(launch(f, s));
    CU(cuStreamSynchronize(s));
}

/* Work queued, then a capture held open for hold_ms: a drain requested meanwhile must wait. */
static void scenario_capture_hold(long hold_ms)
{
    CUfunction f = kernel_of(20000);
    CUstream s, busy;
    CU(cuStreamCreate(&s, 0));
    CU(cuStreamCreate(&busy, 0));
    for (int i = 0; i < 5; i++)
        CU(launch(f, busy));
    CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(launch(f, s));
    printf("CAPTURING %llu\n", (unsigned long long)now_ns());
    fflush(stdout);
    sleep_ms(hold_ms);
    CUgraph graph;
    uint64_t ending = now_ns();
    CU(cuStreamEndCapture(s, &graph));
    printf("ENDED %llu\n", (unsigned long long)ending);
    fflush(stdout);
    sleep_ms(300);
}

/* For bench/hook_overhead.sh: the CPU cost of a launch of a zero-length kernel, best of 5. */
static void scenario_rate(int count)
{
    CUfunction f = kernel_of(0);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < count; i++)
            CU(launch(f, s));
        double per = (double)(now_ns() - t0) / count;
        best = per < best ? per : best;
        CU(cuStreamSynchronize(s));
    }
    printf("RATE %.1f ns/launch\n", best);
}

/* For each device ordinal given: make its primary context current, launch 3 short kernels and
 * synchronize, then print "PASSED <ordinal>" (a launch blocked by a job on that GPU holds it). */
static void scenario_devices(int argc, char **argv)
{
    CUfunction f = kernel_of(10); /* loads the module in device 0's context */
    for (int i = 2; i < argc; i++) {
        int ordinal = atoi(argv[i]);
        CUdevice dev;
        CUcontext ctx;
        CU(cuDeviceGet(&dev, ordinal));
        CU(cuDevicePrimaryCtxRetain(&ctx, dev));
        CU(cuCtxSetCurrent(ctx));
        for (int k = 0; k < 3; k++)
            CU(launch(f, NULL));
        CU(cuCtxSynchronize());
        printf("PASSED %d\n", ordinal);
    }
}

/* Work on two GPUs: a short kernel on GPU 0 (finished), then `us` of kernel queued on GPU 1,
 * then "QUEUED <ns>" and a wait for it: a job on GPU 0 must not wait for GPU 1's queue. Created
 * streams, not the legacy one (the fake driver keeps one legacy stream for all contexts). */
static void scenario_device_backlog(long us)
{
    CUfunction quick = kernel_of(10), slow = kernel_of(us);
    CUstream on0, on1;
    CUdevice dev;
    CUcontext ctx;
    CU(cuStreamCreate(&on0, 0)); /* kernel_of made GPU 0's context current */
    CU(launch(quick, on0));
    CU(cuStreamSynchronize(on0));
    CU(cuDeviceGet(&dev, 1));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    CU(cuStreamCreate(&on1, 0));
    CU(launch(slow, on1));
    printf("QUEUED %llu\n", (unsigned long long)now_ns());
    CU(cuStreamSynchronize(on1));
}


/* ---- auto jobs (GPUYIELD_JOBS=auto) --------------------------------------------------------- */

/* Jobs in progress at `level` in the segment, all devices (a job on one device counts there too). */
static gy_shm seg_view;
static bool seg_view_ok;
static void open_seg_view(void)
{
    gy_err err;
    seg_view_ok = gy_open(getenv("GPUYIELD_SHM"), &seg_view, &err) == 0;
    if (!seg_view_ok)
        fail("cannot open the segment: %s", err.msg);
}
static unsigned seg_jobs(int level)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* threads of auto_threads call it at once */
    pthread_once(&once, open_seg_view);
    return seg_view_ok ? __atomic_load_n(&seg_view.seg->jobs[level], __ATOMIC_SEQ_CST) : 0;
}

/* Until the segment counts `want` jobs at level (at most `ms`): true when it did. */
static bool jobs_become(int level, unsigned want, long ms)
{
    for (long i = 0; i <= ms; i++) {
        if (seg_jobs(level) == want)
            return true;
        sleep_ms(1);
    }
    return false;
}

/* `bursts` bursts of `per_burst` kernels of `us`, one every `gap_ms` of host time apart (less than
 * GPUYIELD_IDLE_US keeps one job), each followed by a sync. Checks the auto job is open (level `p`
 * counts 1) at each launch and closes after the burst (then `rest_ms` of silence). Prints
 * BURST <first launch ns> <synced ns> and CLOSED <ns> per burst. */
static void scenario_auto_bursts(int p, int bursts, int per_burst, long us, long gap_ms, long rest_ms)
{
    CUfunction f = kernel_of(us);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    for (int b = 0; b < bursts; b++) {
        uint64_t start = now_ns();
        for (int i = 0; i < per_burst; i++) {
            CU(launch(f, s));
            if (seg_jobs(p) != 1)
                fail("burst %d launch %d: %u jobs at level %d, expected its one auto job", b, i, seg_jobs(p), p);
            if (gap_ms)
                sleep_ms(gap_ms);
        }
        CU(cuStreamSynchronize(s));
        printf("BURST %llu %llu\n", (unsigned long long)start, (unsigned long long)now_ns());
        if (!jobs_become(p, 0, 3000))
            fail("burst %d: the auto job was still open 3 s after its work completed", b);
        printf("CLOSED %llu\n", (unsigned long long)now_ns());
        sleep_ms(rest_ms);
    }
}

/* One kernel of `us`, launched and left running: the job must stay open while it runs, though no
 * launch comes for longer than the idle time, and close after it. Prints OPEN <ns> once launched. */
static void scenario_auto_long(int p, long us, long check_ms)
{
    CUfunction f = kernel_of(us);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    CU(launch(f, s));
    printf("OPEN %llu\n", (unsigned long long)now_ns());
    sleep_ms(check_ms);
    CUresult done = cuStreamQuery(s);
    if (done == CUDA_SUCCESS)
        fail("the kernel of %ld us finished within %ld ms: the test proves nothing", us, check_ms);
    else if (seg_jobs(p) != 1)
        fail("%u jobs at level %d %ld ms after the launch, its kernel still running: the auto job closed early",
             seg_jobs(p), p, check_ms);
    CU(cuStreamSynchronize(s));
    if (!jobs_become(p, 0, 3000))
        fail("the auto job was still open 3 s after its work completed");
}

/* One short launch, timed on the host: prints LAUNCH_NS <ns the launch call took> (it opens the
 * auto job: under drain that waits for the lower queues, under corun it must not). */
static void scenario_auto_one(int p)
{
    CUfunction f = kernel_of(10);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    uint64_t t0 = now_ns();
    CU(launch(f, s));
    printf("LAUNCH_NS %llu\n", (unsigned long long)(now_ns() - t0));
    if (seg_jobs(p) != 1)
        fail("no auto job after the launch: %u jobs at level %d", seg_jobs(p), p);
}

/* Threads each launching on their own stream, staggered so that some thread launches every few ms
 * (less than the idle time) from start to end: one auto job for all of it. */
static CUfunction thread_kernel;
static CUcontext thread_ctx;
static _Atomic int thread_fail_jobs;
static void *auto_thread(void *arg)
{
    long offset_ms = (long)(intptr_t)arg;
    CU(cuCtxSetCurrent(thread_ctx));
    CUstream s;
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    sleep_ms(offset_ms);
    for (int i = 0; i < 20; i++) {
        CU(launch(thread_kernel, i % 2 ? s : NULL));
        if (seg_jobs(1) != 1)
            atomic_fetch_add(&thread_fail_jobs, 1);
        sleep_ms(8);
    }
    CU(cuStreamSynchronize(s));
    return NULL;
}
static void scenario_auto_threads(int nthreads)
{
    thread_kernel = kernel_of(500);
    CU(cuCtxGetCurrent(&thread_ctx));
    pthread_t threads[8];
    nthreads = nthreads > 8 ? 8 : nthreads;
    for (int t = 0; t < nthreads; t++)
        pthread_create(&threads[t], NULL, auto_thread, (void *)(intptr_t)(t * 3));
    for (int t = 0; t < nthreads; t++)
        pthread_join(threads[t], NULL);
    CU(cuCtxSynchronize());
    if (atomic_load(&thread_fail_jobs))
        fail("%d launches saw a job count at level 1 other than one auto job", atomic_load(&thread_fail_jobs));
    if (!jobs_become(1, 0, 3000))
        fail("the auto job was still open 3 s after the threads' work completed");
}

/* Open an auto job (a kernel of 1 s), fork: the child's first launch opens a job of its own (2 at
 * level p), it prints its counters and exits; the parent's job is still open after the child's exit
 * and closes after its kernel. */
static void scenario_auto_fork(int p)
{
    CUfunction f = kernel_of(1000000), quick = kernel_of(100);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    CU(launch(f, s));
    if (seg_jobs(p) != 1)
        fail("the parent's auto job is not open after its launch (%u jobs)", seg_jobs(p));
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        CUcontext ctx;
        CU(cuDevicePrimaryCtxRetain(&ctx, 0));
        CU(cuCtxSetCurrent(ctx));
        if (seg_jobs(p) != 1)
            fail("child before its first launch: %u jobs at level %d, expected the parent's one", seg_jobs(p), p);
        CU(launch(quick, NULL));
        if (seg_jobs(p) != 2)
            fail("child after its first launch: %u jobs at level %d, expected the parent's and its own", seg_jobs(p), p);
        /* Its kernel queues behind the parent's on the fake's one time line: no sync here. A normal
         * exit frees the child's slot, with its auto job, at once (atexit). */
        print_counters();
        exit(failures ? 1 : 0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        fail("the forked child failed (status %#x)", status);
    if (cuStreamQuery(s) == CUDA_SUCCESS)
        fail("the parent's kernel ended before the child did: the test proves nothing");
    else if (seg_jobs(p) != 1)
        fail("after the child's exit: %u jobs at level %d, expected the parent's auto job", seg_jobs(p), p);
    CU(cuStreamSynchronize(s));
    if (!jobs_become(p, 0, 3000))
        fail("the parent's auto job did not close after its kernel");
}

/* A job the process marks itself (gy_begin at p, as the Python extension would, in a slot of its
 * own) covers its launches: no auto job inside it (level p counts 1), and an auto job opened before
 * a marked one begins is ended once the marked one covers it (counts once again). */
static void scenario_auto_marked(int p)
{
    CUfunction f = kernel_of(1000);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    gy_shm shm;
    gy_err err;
    if (gy_open(getenv("GPUYIELD_SHM"), &shm, &err) || gy_register(&shm, p, &err)) {
        fail("cannot register as a job marker: %s", err.msg);
        return;
    }
    gy_job job;
    if (gy_begin(&shm, p, &job, &err)) {
        fail("begin: %s", err.msg);
        return;
    }
    for (int i = 0; i < 5; i++) {
        CU(launch(f, s));
        if (seg_jobs(p) != 1)
            fail("inside a marked job, launch %d: %u jobs at level %d, expected the marked one alone", i,
                 seg_jobs(p), p);
    }
    CU(cuStreamSynchronize(s));
    gy_job_exit(&shm, &job, &err);
    if (!jobs_become(p, 0, 3000))
        fail("jobs left open after the marked job ended: %u", seg_jobs(p));
    sleep_ms(500); /* the closer notices the marked job's end (it polls): its launches open again */
    /* Now the other order: an auto job, then a marked job begins inside it. */
    CU(launch(f, s));
    if (seg_jobs(p) != 1)
        fail("no auto job after the marked one ended: %u jobs", seg_jobs(p));
    if (gy_begin(&shm, p, &job, &err)) {
        fail("begin: %s", err.msg);
        return;
    }
    for (int i = 0; i < 200 && seg_jobs(p) != 1; i++) {
        CU(launch(f, s));
        sleep_ms(2);
    }
    if (seg_jobs(p) != 1)
        fail("a marked job inside an open auto job: %u jobs at level %d, expected it to count once", seg_jobs(p), p);
    CU(cuStreamSynchronize(s));
    gy_job_exit(&shm, &job, &err);
    if (!jobs_become(p, 0, 3000))
        fail("jobs left open at the end: %u", seg_jobs(p));
    gy_close(&shm);
}

int gy_next_call(void); /* tests/hooks/next_first.c */

/* dlsym(RTLD_NEXT) from a library after the hook must find the definition after that library. */
static void scenario_rtld_next(void)
{
    int got = gy_next_call();
    if (got != 2)
        fail("dlsym(RTLD_NEXT) from libgy_next_first found definition %d, expected 2 (the next library's)", got);
}

static void scenario_fork(int count)
{
    CUfunction f = kernel_of(10);
    CU(launch(f, NULL));
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        /* As after a real fork, the child sets up its own context before launching. */
        CUcontext ctx;
        CU(cuDevicePrimaryCtxRetain(&ctx, 0));
        CU(cuCtxSetCurrent(ctx));
        for (int i = 0; i < count; i++)
            CU(launch(f, NULL));
        CU(cuCtxSynchronize());
        print_counters();
        fflush(stdout);
        _exit(failures ? 1 : 0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        fail("the forked child failed (status %#x)", status);
    CU(launch(f, NULL));
    CU(cuCtxSynchronize());
}

/* A fork while another thread binds the hook to the driver (its first call of a hooked function):
 * the child's own first call must not wait for a lock the binding thread held at the fork (that
 * thread does not exist in the child). The call is a stream query (no context: its result does not
 * matter here, only that it returns). Each round is a fresh, unbound process; the fork lands at a random point
 * in the first 10 us after the other thread starts its call (the binding takes about 7 us with the
 * fake driver). A child still waiting after 5 s is stuck, and the first stuck one ends the rounds. */
static _Atomic int binder_started;
static void *first_cuda_call(void *unused)
{
    (void)unused;
    atomic_store(&binder_started, 1);
    (void)cuStreamQuery(NULL);
    return NULL;
}
static void scenario_fork_while_binding(int rounds)
{
    int stuck = 0, failed = 0;
    unsigned seed = (unsigned)getpid();
    int r = 0;
    for (; r < rounds; r++) {
        fflush(stdout);
        pid_t unbound = fork();
        if (unbound == 0) {
            pthread_t binder;
            pthread_create(&binder, NULL, first_cuda_call, NULL);
            while (!atomic_load(&binder_started))
                ;
            uint64_t until = now_ns() + (uint64_t)(rand_r(&seed) % 10000u);
            while (now_ns() < until)
                ;
            pid_t child = fork();
            if (child == 0) {
                alarm(5);
                (void)cuStreamQuery(NULL);
                _exit(0);
            }
            int status = 0;
            waitpid(child, &status, 0);
            pthread_join(binder, NULL);
            _exit(WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? 3 : WIFEXITED(status) ? WEXITSTATUS(status) : 2);
        }
        int status = 0;
        waitpid(unbound, &status, 0);
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 2;
        stuck += code == 3;
        failed += code != 0 && code != 3;
        if (stuck)
            break;
        seed = seed * 1103515245u + 12345u;
    }
    printf("fork_while_binding rounds=%d stuck=%d failed=%d\n", r, stuck, failed);
    if (stuck || failed)
        fail("%d of %d forked children stuck in their first CUDA call, %d failed", stuck, rounds, failed);
}

/* A thread launches, then sets a pthread key created after the hook's, whose destructor
 * launches once more while the thread exits: the hook's per-thread state must not be used after
 * its own destructor freed it (event mode keeps events in it). */
static CUcontext exit_ctx;
static CUfunction exit_kernel;
static pthread_key_t late_key;
static void late_destructor(void *unused)
{
    (void)unused;
    CU(launch(exit_kernel, NULL));
}
static void *launch_then_exit(void *unused)
{
    (void)unused;
    CU(cuCtxSetCurrent(exit_ctx));
    for (int i = 0; i < 3; i++)
        CU(launch(exit_kernel, NULL));
    pthread_key_create(&late_key, late_destructor);
    pthread_setspecific(late_key, (void *)1);
    return NULL;
}
static void scenario_thread_exit(void)
{
    exit_kernel = kernel_of(10);
    CU(cuCtxGetCurrent(&exit_ctx));
    pthread_t thread;
    if (pthread_create(&thread, NULL, launch_then_exit, NULL) || pthread_join(thread, NULL))
        fail("cannot run the launching thread");
    CU(cuCtxSynchronize());
    print_counters();
}

/* A capture in global mode on one thread while another thread launches on its own stream: the
 * queue bound must insert no sync or query anywhere in the process until the capture ends (the
 * fake, like the driver, counts such a call as breaking the capture). */
static CUstream other_stream;
static void *launch_on_other_stream(void *unused)
{
    (void)unused;
    CU(cuCtxSetCurrent(exit_ctx));
    for (int i = 0; i < 10; i++)
        CU(launch(exit_kernel, other_stream));
    return NULL;
}
static void scenario_capture_two_threads(long us)
{
    exit_kernel = kernel_of(us);
    CU(cuCtxGetCurrent(&exit_ctx));
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    CU(cuStreamCreate(&other_stream, 0));
    CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(launch(exit_kernel, s));
    pthread_t thread;
    if (pthread_create(&thread, NULL, launch_on_other_stream, NULL) || pthread_join(thread, NULL))
        fail("cannot run the launching thread");
    CUgraph graph;
    CU(cuStreamEndCapture(s, &graph));
    for (int i = 0; i < 10; i++) /* the capture is over: sync points are due again */
        CU(launch(exit_kernel, other_stream));
    CU(cuCtxSynchronize());
    print_counters();
}

/* Launches n kernels (its slot is marked in flight), then becomes another run of this worker with
 * the remaining arguments (exec: same pid, same start time, the preload inherited). */
static void scenario_exec(int n, char **rest, char *self)
{
    CUfunction f = kernel_of(1000);
    CUstream s;
    CU(cuStreamCreate(&s, 0));
    for (int i = 0; i < n; i++)
        CU(launch(f, s));
    CU(cuStreamSynchronize(s));
    char *args[16] = {self};
    for (int i = 0; rest[i] && i < 14; i++)
        args[i + 1] = rest[i];
    execv("/proc/self/exe", args);
    fail("execv /proc/self/exe");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *what = argc > 1 ? argv[1] : "";
#define ARG(i, dflt) (argc > (i) ? atof(argv[i]) : (dflt))
    if (strcmp(what, "paths") == 0)
        scenario_paths();
    else if (strcmp(what, "plain") == 0)
        scenario_plain((int)ARG(2, 3));
    else if (strcmp(what, "exec") == 0 && argc > 3)
        scenario_exec((int)ARG(2, 5), argv + 3, argv[0]);
    else if (strcmp(what, "spin") == 0)
        scenario_spin((long)ARG(2, 1000), (int)ARG(3, 5), ARG(4, 2));
    else if (strcmp(what, "copyspin") == 0)
        scenario_copyspin((long)ARG(2, 1000), (int)ARG(3, 5), ARG(4, 2));
    else if (strcmp(what, "jobs") == 0)
        scenario_jobs((int)ARG(2, 1), (int)ARG(3, 5), (long)ARG(4, 1000), (int)ARG(5, 5), (long)ARG(6, 100),
                      (long)ARG(7, 0));
    else if (strcmp(what, "busy") == 0)
        scenario_busy((long)ARG(2, 10000), (int)ARG(3, 20), ARG(4, 3), ARG(5, 0) != 0);
    else if (strcmp(what, "bound") == 0)
        scenario_bound((long)ARG(2, 200), (int)ARG(3, 200));
    else if (strcmp(what, "units") == 0)
        scenario_units((long)ARG(2, 2000), ARG(3, 0) != 0, (long)ARG(4, 500));
    else if (strcmp(what, "uneven_graph") == 0)
        scenario_uneven_graph((long)ARG(2, 300), (long)ARG(3, 10), (long)ARG(4, 600), (long)ARG(5, 0));
    else if (strcmp(what, "graph_parts") == 0)
        scenario_graph_parts((long)ARG(2, 100), (int)ARG(3, 10), ARG(4, 0) != 0);
    else if (strcmp(what, "graph_mix") == 0)
        scenario_graph_mix((int)ARG(2, 3));
    else if (strcmp(what, "capture") == 0)
        scenario_capture((long)ARG(2, 100));
    else if (strcmp(what, "capture_hold") == 0)
        scenario_capture_hold((long)ARG(2, 500));
    else if (strcmp(what, "rate") == 0)
        scenario_rate((int)ARG(2, 200000));
    else if (strcmp(what, "rtld_next") == 0)
        scenario_rtld_next();
    else if (strcmp(what, "capture_two_threads") == 0)
        scenario_capture_two_threads((long)ARG(2, 100));
    else if (strcmp(what, "thread_exit") == 0)
        scenario_thread_exit();
    else if (strcmp(what, "devices") == 0)
        scenario_devices(argc, argv);
    else if (strcmp(what, "device_backlog") == 0)
        scenario_device_backlog((long)ARG(2, 3000000));
    else if (strcmp(what, "fork") == 0)
        scenario_fork((int)ARG(2, 7));
    else if (strcmp(what, "fork_while_binding") == 0)
        scenario_fork_while_binding((int)ARG(2, 300));
    else if (strcmp(what, "auto_bursts") == 0)
        scenario_auto_bursts((int)ARG(2, 1), (int)ARG(3, 3), (int)ARG(4, 20), (long)ARG(5, 200), (long)ARG(6, 1),
                             (long)ARG(7, 0));
    else if (strcmp(what, "auto_long") == 0)
        scenario_auto_long((int)ARG(2, 1), (long)ARG(3, 400000), (long)ARG(4, 150));
    else if (strcmp(what, "auto_one") == 0)
        scenario_auto_one((int)ARG(2, 1));
    else if (strcmp(what, "auto_threads") == 0)
        scenario_auto_threads((int)ARG(2, 4));
    else if (strcmp(what, "auto_fork") == 0)
        scenario_auto_fork((int)ARG(2, 1));
    else if (strcmp(what, "auto_marked") == 0)
        scenario_auto_marked((int)ARG(2, 1));
    else if (strncmp(what, "partition", 9) == 0)
        partition_scenario(what, argc, argv); /* its failures are counted in `failures` */
    else if (strncmp(what, "guarded", 7) == 0)
        guarded_scenario(what, argc, argv);
    else {
        fprintf(stderr, "usage: cuda_worker paths|plain|spin|copyspin|jobs|busy|bound|capture|capture_hold|rate|rtld_next|thread_exit|capture_two_threads|fork|fork_while_binding|devices|device_backlog|graph_mix|graph_parts|uneven_graph|units|partition*|guarded [args]\n");
        return 2;
    }
    if (strcmp(what, "jobs") != 0 && strcmp(what, "fork_while_binding") != 0)
        print_counters(); /* fork_while_binding's parent never calls CUDA: it stays unbound */
    return failures ? 1 : 0;
}
