// Cross-process occupancy proof that two processes which split the SMs with the same call,
// cuDevSmResourceSplitByCount(&part, &one, &all, &rest, 0, K), get disjoint SM sets: the partition
// policy puts the LP's launches on `part` in the LP's process and the HP's on `rest` in the HP's
// own. Proved by occupancy, not by %smid (SM ids need not name the same SMs in two MPS clients).
//   disjoint-probe fill K SECONDS
//       Keeps every SM of `part` full (blocks per SM at most occupancy, 2 ms spin blocks) on green
//       streams for SECONDS or until SIGTERM/SIGINT. Prints "ready" once a whole grid was resident
//       at once and the next launches are queued behind it, then one JSON line at the end.
//   disjoint-probe probe K [--reps 20] [--alone]
//       Makes green contexts of `part` and `rest` of one split and times (events), --reps times
//       each, interleaved, one full wave of 200 us (T) spin blocks on: rest (rest SMs x blocks per
//       SM), part (part SMs x blocks per SM: one wave of its own, so ~T alone whatever K is) and
//       the primary context's ordinary stream (rest SMs x blocks per SM: what fits beside a filler
//       held to part). Prints one JSON object. Beside a filler the verdict is disjoint:
//       median(rest) <= 1.5 T (the filler is not on rest) and median(part) >= 2 T (it is on part:
//       the check can fail). With --alone (no filler) the verdict is that every median <= 1.5 T.
// Exit 0 when the mode's verdict holds, 1 when it does not or on a CUDA error, 2 on bad usage.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "check_cuda.cuh"
#include "smid_kernels.cuh"


static const unsigned BLOCK_THREADS = 256;
static const unsigned long long FILL_BLOCK_NS = 2000000ull; // 10 T: a wave on the filler's SMs waits for it
static const unsigned long long WAVE_BLOCK_NS = 200000ull;  // T
// A launch always queued behind the running one, so the part never empties between launches, and
// one more, so that a late host thread does not empty it either.
static const int FILL_STREAMS = 3;

static int usage(const char *why)
{
    std::fprintf(stderr,
                 "disjoint-probe: %s\nusage: disjoint-probe fill K SECONDS\n"
                 "       disjoint-probe probe K [--reps N] [--alone]\n"
                 "  K: the SM count asked of cuDevSmResourceSplitByCount (1 .. the device's SMs - 1);\n"
                 "  SECONDS: how long the filler keeps the part full (> 0); N: timed waves per target (default 20)\n",
                 why);
    return 2;
}

static bool parse_positive(const char *s, long *out)
{
    char *end;
    long v = std::strtol(s, &end, 10);
    if (!*s || *end || v <= 0)
        return false;
    *out = v;
    return true;
}

// One kernel for the filler and the probe, so that their blocks have the same footprint: an SM full
// of the filler's blocks has no room for one of the probe's. With span, thread 0 folds the block's
// start into span[0] (the latest) and its end into span[1] (the earliest): latest start < earliest
// end means every block of the grid was resident at once.
__global__ void dp_spin_kernel(unsigned long long spin_ns, unsigned long long *span)
{
    __shared__ unsigned long long start;
    if (threadIdx.x == 0) {
        start = gy_globaltimer();
        if (span)
            atomicMax(&span[0], start);
    }
    __syncthreads();
    while (gy_globaltimer() - start < spin_ns) {
    }
    __syncthreads();
    if (threadIdx.x == 0 && span)
        atomicMin(&span[1], gy_globaltimer());
}

static void launch(CUstream stream, unsigned blocks, unsigned long long spin_ns, unsigned long long *span)
{
    dp_spin_kernel<<<blocks, BLOCK_THREADS, 0, (cudaStream_t)stream>>>(spin_ns, span);
    CHECK_CUDA(cudaGetLastError());
}

// The device, its primary context (current) and the partition policy's split of its SMs.
struct split {
    CUdevice dev;
    CUcontext primary;
    int sm_total;
    char name[256];
    CUdevResource part, rest;
};

// 0, or 2 when K does not fit the device (then the usage message is printed).
static int make_split(long k, split *s)
{
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaFree(nullptr)); // the primary context, current
    CHECK_CU(cuCtxGetCurrent(&s->primary));
    CHECK_CU(cuCtxGetDevice(&s->dev));
    std::memset(s->name, 0, sizeof s->name);
    CHECK_CU(cuDeviceGetName(s->name, sizeof s->name - 1, s->dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&s->sm_total, cudaDevAttrMultiProcessorCount, 0));
    if (k >= s->sm_total) {
        std::string why = "K " + std::to_string(k) + " leaves no SM for rest on this device (" +
                          std::to_string(s->sm_total) + " SMs)";
        return usage(why.c_str());
    }
    CUdevResource all;
    CHECK_CU(cuDeviceGetDevResource(s->dev, &all, CU_DEV_RESOURCE_TYPE_SM));
    unsigned groups = 1;
    CHECK_CU(cuDevSmResourceSplitByCount(&s->part, &groups, &all, &s->rest, 0, (unsigned)k));
    if (groups != 1 || s->rest.sm.smCount == 0) {
        std::fprintf(stderr, "disjoint-probe: the split by %ld gave %u group(s) and %u SMs of rest out of %u\n", k,
                     groups, s->rest.sm.smCount, all.sm.smCount);
        std::exit(1);
    }
    return 0;
}

static CUgreenCtx make_green(CUdevResource res, CUdevice dev)
{
    CUdevResourceDesc desc;
    CHECK_CU(cuDevResourceGenerateDesc(&desc, &res, 1));
    CUgreenCtx green;
    CHECK_CU(cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    return green;
}

static CUstream green_stream(CUgreenCtx green)
{
    CUstream stream;
    CHECK_CU(cuGreenCtxStreamCreate(&stream, green, CU_STREAM_NON_BLOCKING, 0));
    return stream;
}

// The spin kernel's blocks per SM at BLOCK_THREADS threads and no dynamic shared memory.
static int blocks_per_sm()
{
    cudaFunction_t fn;
    CHECK_CUDA(cudaGetFuncBySymbol(&fn, (const void *)dp_spin_kernel));
    int n = 0;
    CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, (CUfunction)fn, BLOCK_THREADS, 0));
    if (n <= 0) {
        std::fprintf(stderr, "disjoint-probe: the spin kernel fits %d blocks of %u threads per SM\n", n, BLOCK_THREADS);
        std::exit(1);
    }
    return n;
}

static volatile std::sig_atomic_t stop_requested = 0;
static void on_stop(int) { stop_requested = 1; }

static int run_fill(long k, long seconds)
{
    struct sigaction sa = {};
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    split s;
    if (int rc = make_split(k, &s))
        return rc;
    CUgreenCtx green = make_green(s.part, s.dev);
    CUstream streams[FILL_STREAMS];
    for (CUstream &st : streams)
        st = green_stream(green);
    CHECK_CU(cuCtxSetCurrent(s.primary));
    int bps = blocks_per_sm();
    unsigned blocks = s.part.sm.smCount * (unsigned)bps;

    unsigned long long *span, host_span[2] = {0ull, ~0ull};
    CHECK_CUDA(cudaMalloc(&span, sizeof host_span));
    CHECK_CUDA(cudaMemcpy(span, host_span, sizeof host_span, cudaMemcpyHostToDevice));
    launch(streams[0], blocks, FILL_BLOCK_NS, span);
    for (int i = 1; i < FILL_STREAMS; i++)
        launch(streams[i], blocks, FILL_BLOCK_NS, nullptr);
    unsigned long long launches = FILL_STREAMS;
    // When the first launch is over its successor, queued before it started, holds the part.
    CHECK_CU(cuStreamSynchronize(streams[0]));
    CHECK_CUDA(cudaMemcpy(host_span, span, sizeof host_span, cudaMemcpyDeviceToHost));
    if (host_span[0] >= host_span[1]) {
        std::fprintf(stderr,
                     "disjoint-probe: the filler's first grid (%u blocks, %d per SM) was not resident at once on its "
                     "%u SMs (last block start %llu ns >= first block end %llu ns): something else occupies them\n",
                     blocks, bps, s.part.sm.smCount, host_span[0], host_span[1]);
        return 1;
    }
    std::printf("ready\n");
    std::fflush(stdout);

    auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    while (!stop_requested && elapsed() < (double)seconds) {
        // Its stream's last launch is over: the other streams' launches hold the part meanwhile.
        CUstream st = streams[launches % FILL_STREAMS];
        CHECK_CU(cuStreamSynchronize(st));
        launch(st, blocks, FILL_BLOCK_NS, nullptr);
        launches++;
    }
    for (CUstream st : streams)
        CHECK_CU(cuStreamSynchronize(st));
    std::printf("{\"mode\": \"fill\", \"k\": %ld, \"part_sms\": %u, \"blocks_per_sm\": %d, \"blocks\": %u, "
                "\"block_us\": %llu, \"launches\": %llu, \"seconds\": %.3f, \"stopped_by_signal\": %s}\n",
                k, s.part.sm.smCount, bps, blocks, FILL_BLOCK_NS / 1000, launches, elapsed(),
                stop_requested ? "true" : "false");
    for (CUstream st : streams)
        CHECK_CU(cuStreamDestroy(st));
    CHECK_CU(cuGreenCtxDestroy(green));
    CHECK_CUDA(cudaFree(span));
    return 0;
}

// Where a timed wave goes: a stream, the wave's size, and events of the stream's own context.
struct target {
    const char *name;
    CUstream stream;
    unsigned blocks;
    CUevent start, stop;
    std::vector<double> us;
};

static target make_target(const char *name, CUstream stream, unsigned blocks, CUcontext primary)
{
    target t{name, stream, blocks, nullptr, nullptr, {}};
    CUcontext ctx; // cuEventRecord wants the event and the stream of one context
    CHECK_CU(cuStreamGetCtx(stream, &ctx));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuEventCreate(&t.start, CU_EVENT_DEFAULT));
    CHECK_CU(cuEventCreate(&t.stop, CU_EVENT_DEFAULT));
    CHECK_CU(cuCtxSetCurrent(primary));
    return t;
}

// Microseconds from the stream reaching the wave to the wave's last block ending: the wait for
// free slots included.
static double time_wave(const target &t)
{
    CHECK_CU(cuEventRecord(t.start, t.stream));
    launch(t.stream, t.blocks, WAVE_BLOCK_NS, nullptr);
    CHECK_CU(cuEventRecord(t.stop, t.stream));
    CHECK_CU(cuEventSynchronize(t.stop));
    float ms = 0;
    CHECK_CU(cuEventElapsedTime(&ms, t.start, t.stop));
    return ms * 1000.0;
}

// Nearest rank, as bench/gpu/stats.py: the smallest value with at least half at or below it.
static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[(v.size() + 1) / 2 - 1];
}

static int run_probe(long k, long reps, bool alone)
{
    split s;
    if (int rc = make_split(k, &s))
        return rc;
    CUgreenCtx part_ctx = make_green(s.part, s.dev), rest_ctx = make_green(s.rest, s.dev);
    CUstream part_stream = green_stream(part_ctx), rest_stream = green_stream(rest_ctx);
    CHECK_CU(cuCtxSetCurrent(s.primary)); // everything below runs with the primary context current
    cudaStream_t ordinary;
    CHECK_CUDA(cudaStreamCreateWithFlags(&ordinary, cudaStreamNonBlocking));
    int bps = blocks_per_sm();
    unsigned rest_blocks = s.rest.sm.smCount * (unsigned)bps, part_blocks = s.part.sm.smCount * (unsigned)bps;
    std::vector<target> targets = {make_target("rest", rest_stream, rest_blocks, s.primary),
                                   make_target("part", part_stream, part_blocks, s.primary),
                                   make_target("primary", (CUstream)ordinary, rest_blocks, s.primary)};
    for (target &t : targets) // the first launch of each loads the module and the stream
        time_wave(t);
    // Interleaved, the first target rotating, so that no target always follows the same one.
    for (long r = 0; r < reps; r++)
        for (size_t i = 0; i < targets.size(); i++) {
            target &t = targets[(i + r) % targets.size()];
            t.us.push_back(time_wave(t));
        }

    const double t_us = WAVE_BLOCK_NS / 1000.0;
    double m_rest = median(targets[0].us), m_part = median(targets[1].us), m_primary = median(targets[2].us);
    bool disjoint = m_rest <= 1.5 * t_us && m_part >= 2 * t_us;
    bool all_about_t = m_rest <= 1.5 * t_us && m_part <= 1.5 * t_us && m_primary <= 1.5 * t_us;
    bool ok = alone ? all_about_t : disjoint;

    std::printf("{\"device\": \"%s\", \"sm_count\": %d, \"k\": %ld, \"part_sms\": %u, \"rest_sms\": %u, "
                "\"block_threads\": %u, \"blocks_per_sm\": %d, \"t_us\": %.0f, \"reps\": %ld, \"mode\": \"%s\",\n",
                s.name, s.sm_total, k, s.part.sm.smCount, s.rest.sm.smCount, BLOCK_THREADS, bps, t_us, reps,
                alone ? "alone" : "beside_filler");
    std::printf(" \"targets\": {");
    for (size_t i = 0; i < targets.size(); i++) {
        const target &t = targets[i];
        std::printf("%s\n  \"%s\": {\"blocks\": %u, \"median_us\": %.1f, \"elapsed_us\": [", i ? "," : "", t.name,
                    t.blocks, median(t.us));
        for (size_t j = 0; j < t.us.size(); j++)
            std::printf("%s%.1f", j ? ", " : "", t.us[j]);
        std::printf("]}");
    }
    std::printf("},\n \"rule_disjoint\": \"median(rest) <= 1.5 T and median(part) >= 2 T\", \"disjoint\": %s,\n"
                " \"rule_alone\": \"every median <= 1.5 T\", \"all_about_t\": %s, \"ok\": %s}\n",
                disjoint ? "true" : "false", all_about_t ? "true" : "false", ok ? "true" : "false");
    for (target &t : targets) {
        CHECK_CU(cuEventDestroy(t.start));
        CHECK_CU(cuEventDestroy(t.stop));
    }
    CHECK_CUDA(cudaStreamDestroy(ordinary));
    CHECK_CU(cuStreamDestroy(part_stream));
    CHECK_CU(cuStreamDestroy(rest_stream));
    CHECK_CU(cuGreenCtxDestroy(part_ctx));
    CHECK_CU(cuGreenCtxDestroy(rest_ctx));
    if (!ok)
        std::fprintf(stderr, "disjoint-probe: %s does not hold (medians: rest %.1f, part %.1f, primary %.1f us; T %.0f us)\n",
                     alone ? "every median <= 1.5 T (alone)" : "disjoint", m_rest, m_part, m_primary, t_us);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage("a mode and K are needed");
    std::string mode = argv[1];
    long k = 0;
    if (!parse_positive(argv[2], &k))
        return usage("K must be a positive integer");
    if (mode == "fill") {
        long seconds = 0;
        if (argc != 4 || !parse_positive(argv[3], &seconds))
            return usage("fill takes K and SECONDS (a positive integer)");
        return run_fill(k, seconds);
    }
    if (mode != "probe")
        return usage(("unknown mode '" + mode + "'").c_str());
    long reps = 20;
    bool alone = false;
    for (int i = 3; i < argc; i++) {
        std::string opt = argv[i];
        if (opt == "--alone")
            alone = true;
        else if (opt == "--reps" && i + 1 < argc && parse_positive(argv[i + 1], &reps) && reps <= 10000)
            i++;
        else
            return usage(("bad option '" + opt + "' (--reps takes 1 .. 10000)").c_str());
    }
    return run_probe(k, reps, alone);
}
