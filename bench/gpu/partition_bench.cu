// The two sides of the partition proof and sweep (plain CUDA runtime programs: the hook, when
// preloaded, decides where their launches go).
//   partition-bench lp PREFIX [--spin-us 200] [--blocks 4xSMs] [--threads 256] [--smem-kb 48]
//                             [--ring 32768] [--record-blocks 0|1]
//       Launches spin kernels back to back on one stream until SIGTERM/SIGINT. Every launch
//       records its first block start and last block end (%globaltimer) into a ring of --ring
//       slots; with --record-blocks 1 every block also records its SM (%smid) and start. Prints
//       "ready" once the first launch has run, and at the end writes PREFIX.json (what was run),
//       PREFIX.launches.bin (per slot: launch number, first start, last end, blocks: 4 x u64),
//       PREFIX.starts.bin (u64 per block) and PREFIX.smids.bin (u32 per block), slot by slot.
//   partition-bench hp JOBS [--kernels 10] [--iters N] [--blocks 112] [--threads 1024]
//                           [--smem-kb 100] [--idle-ms 5,20] [--seed 1]
//       Connects to $GPUYIELD_SHM at priority 1 and runs JOBS jobs: begin, a marker kernel
//       (%globaltimer), --kernels work kernels, a marker kernel, synchronize, end, then idles a
//       uniform random time in --idle-ms. Prints one JSON object with per-job markers (GPU ns)
//       and host times (ns).
//   partition-bench calibrate TARGET_US [--blocks 112] [--threads 1024] [--smem-kb 100]
//       Prints {"iters": N, "kernel_us": T}: the work kernel's iteration count for about
//       TARGET_US alone.
// Exit 1 on a CUDA error, 2 on bad usage.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "job_shim.h"
#include "check_cuda.cuh"
#include "smid_kernels.cuh"


static int usage(const char *why)
{
    std::fprintf(stderr,
                 "partition-bench: %s\nusage: partition-bench lp PREFIX [--spin-us US] [--blocks N] [--threads N] "
                 "[--smem-kb KB] [--ring N] [--record-blocks 0|1]\n"
                 "       partition-bench hp JOBS [--kernels K] [--iters N] [--blocks N] [--threads N] [--smem-kb KB] "
                 "[--idle-ms MIN,MAX] [--seed S]\n"
                 "       partition-bench calibrate TARGET_US [--blocks N] [--threads N] [--smem-kb KB]\n",
                 why);
    return 2;
}

// --name value options after the positional argument; every value a non-negative integer except
// --idle-ms (MIN,MAX).
struct options {
    long spin_us = 200, blocks = -1, threads = -1, smem_kb = -1, ring = 32768, record_blocks = 0;
    long kernels = 10, iters = 20000, seed = 1, idle_min_ms = 5, idle_max_ms = 20;
};

static bool parse_long(const char *s, long *out)
{
    char *end;
    long v = std::strtol(s, &end, 10);
    if (!*s || *end || v < 0)
        return false;
    *out = v;
    return true;
}

static int parse_options(int argc, char **argv, int first, options *o, std::string *err)
{
    for (int i = first; i < argc; i += 2) {
        std::string name = argv[i];
        if (i + 1 >= argc) {
            *err = "option " + name + " needs a value";
            return -1;
        }
        const char *v = argv[i + 1];
        long *slot = name == "--spin-us"         ? &o->spin_us
                     : name == "--blocks"        ? &o->blocks
                     : name == "--threads"       ? &o->threads
                     : name == "--smem-kb"       ? &o->smem_kb
                     : name == "--ring"          ? &o->ring
                     : name == "--record-blocks" ? &o->record_blocks
                     : name == "--kernels"       ? &o->kernels
                     : name == "--iters"         ? &o->iters
                     : name == "--seed"          ? &o->seed
                                                 : nullptr;
        if (name == "--idle-ms") {
            char *mid;
            o->idle_min_ms = std::strtol(v, &mid, 10);
            if (*mid != ',' || !parse_long(mid + 1, &o->idle_max_ms) || o->idle_min_ms < 0 ||
                o->idle_max_ms < o->idle_min_ms) {
                *err = std::string("--idle-ms takes MIN,MAX milliseconds (0 <= MIN <= MAX), not '") + v + "'";
                return -1;
            }
        } else if (!slot) {
            *err = "unknown option " + name;
            return -1;
        } else if (!parse_long(v, slot)) {
            *err = "option " + name + " takes a non-negative integer, not '" + v + "'";
            return -1;
        }
    }
    return 0;
}

static int sm_count()
{
    int n = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0));
    return n;
}

static volatile std::sig_atomic_t stop_requested = 0;
static void on_stop(int) { stop_requested = 1; }

static bool write_file(const std::string &path, const void *data, size_t bytes)
{
    FILE *f = std::fopen(path.c_str(), "wb");
    bool ok = f && std::fwrite(data, 1, bytes, f) == bytes;
    if (f && std::fclose(f) != 0)
        ok = false;
    if (!ok) {
        std::fprintf(stderr, "partition-bench: cannot write %s\n", path.c_str());
        std::remove(path.c_str());
    }
    return ok;
}

static int run_lp(const std::string &prefix, const options &o)
{
    long blocks = o.blocks >= 0 ? o.blocks : 4L * sm_count();
    long threads = o.threads >= 0 ? o.threads : 256, smem = (o.smem_kb >= 0 ? o.smem_kb : 48) * 1024;
    if (blocks <= 0 || threads <= 0 || threads > 1024 || o.ring <= 0)
        return usage("lp: --blocks, --ring and --threads (at most 1024) must be positive");
    struct sigaction sa = {};
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    CHECK_CUDA(cudaFuncSetAttribute(gy_record_spin_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    size_t ring = (size_t)o.ring, per_block = o.record_blocks ? ring * blocks : 0;
    gy_launch_record *recs;
    gy_launch_counters *cnts;
    unsigned long long *starts = nullptr;
    unsigned *smids = nullptr;
    CHECK_CUDA(cudaMalloc(&recs, ring * sizeof *recs));
    CHECK_CUDA(cudaMalloc(&cnts, ring * sizeof *cnts));
    CHECK_CUDA(cudaMemset(recs, 0, ring * sizeof *recs));
    CHECK_CUDA(cudaMemset(cnts, 0, ring * sizeof *cnts));
    if (per_block) {
        CHECK_CUDA(cudaMalloc(&starts, per_block * sizeof *starts));
        CHECK_CUDA(cudaMalloc(&smids, per_block * sizeof *smids));
        CHECK_CUDA(cudaMemset(starts, 0, per_block * sizeof *starts));
        CHECK_CUDA(cudaMemset(smids, 0, per_block * sizeof *smids));
    }
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    unsigned long long spin_ns = (unsigned long long)o.spin_us * 1000ull, launches = 0;
    auto launch = [&]() {
        size_t slot = launches % ring;
        gy_record_spin_kernel<<<(unsigned)blocks, (unsigned)threads, (size_t)smem, stream>>>(
            spin_ns, launches, recs + slot, cnts + slot, per_block ? starts + slot * blocks : nullptr,
            per_block ? smids + slot * blocks : nullptr);
        launches++;
    };
    launch();
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::printf("ready\n");
    std::fflush(stdout);
    auto t0 = std::chrono::steady_clock::now();
    while (!stop_requested)
        launch();
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(stream));
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Only the slots that were used (all of them once the ring has wrapped).
    size_t used = std::min<size_t>(launches, ring), used_blocks = per_block ? used * blocks : 0;
    std::vector<gy_launch_record> host_recs(used);
    CHECK_CUDA(cudaMemcpy(host_recs.data(), recs, used * sizeof *recs, cudaMemcpyDeviceToHost));
    bool ok = write_file(prefix + ".launches.bin", host_recs.data(), used * sizeof *recs);
    if (used_blocks && ok) {
        std::vector<unsigned long long> host_starts(used_blocks);
        std::vector<unsigned> host_smids(used_blocks);
        CHECK_CUDA(cudaMemcpy(host_starts.data(), starts, used_blocks * sizeof *starts, cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(host_smids.data(), smids, used_blocks * sizeof *smids, cudaMemcpyDeviceToHost));
        ok = write_file(prefix + ".starts.bin", host_starts.data(), used_blocks * sizeof *starts) &&
             write_file(prefix + ".smids.bin", host_smids.data(), used_blocks * sizeof *smids);
    }
    char meta[512];
    std::snprintf(meta, sizeof meta,
                  "{\"role\": \"lp\", \"launches\": %llu, \"ring\": %zu, \"slots\": %zu, \"blocks\": %ld, \"threads\": %ld, "
                  "\"smem_bytes\": %ld, \"spin_us\": %ld, \"record_blocks\": %s, \"host_seconds\": %.3f}\n",
                  launches, ring, used, blocks, threads, smem, o.spin_us, per_block ? "true" : "false", seconds);
    ok = ok && write_file(prefix + ".json", meta, std::strlen(meta));
    std::fputs(meta, stdout);
    return ok ? 0 : 1;
}

static void setup_work(long smem)
{
    CHECK_CUDA(cudaFuncSetAttribute(gy_work_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
}

static int run_calibrate(long target_us, const options &o)
{
    long blocks = o.blocks >= 0 ? o.blocks : 112, threads = o.threads >= 0 ? o.threads : 1024;
    long smem = (o.smem_kb >= 0 ? o.smem_kb : 100) * 1024;
    if (target_us <= 0 || blocks <= 0 || threads <= 0 || threads > 1024 || smem < threads * 4)
        return usage("calibrate: TARGET_US, --blocks and --threads must be positive, --smem-kb at least 4 bytes a thread");
    setup_work(smem);
    float *sink;
    CHECK_CUDA(cudaMalloc(&sink, blocks * sizeof *sink));
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    double iters = 20000, us = 0;
    for (int round = 0; round < 6; round++) {
        gy_work_kernel<<<(unsigned)blocks, (unsigned)threads, (size_t)smem>>>((unsigned)iters, sink); // warm
        CHECK_CUDA(cudaEventRecord(a));
        for (int i = 0; i < 5; i++)
            gy_work_kernel<<<(unsigned)blocks, (unsigned)threads, (size_t)smem>>>((unsigned)iters, sink);
        CHECK_CUDA(cudaEventRecord(b));
        CHECK_CUDA(cudaEventSynchronize(b));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
        us = ms * 1000.0 / 5;
        if (round < 5)
            iters = std::min(2e9, std::max(1.0, iters * target_us / us));
    }
    std::printf("{\"iters\": %.0f, \"kernel_us\": %.1f, \"target_us\": %ld, \"blocks\": %ld, \"threads\": %ld, "
                "\"smem_bytes\": %ld}\n",
                iters, us, target_us, blocks, threads, smem);
    return 0;
}

static int run_hp(long jobs, const options &o)
{
    long blocks = o.blocks >= 0 ? o.blocks : 112, threads = o.threads >= 0 ? o.threads : 1024;
    long smem = (o.smem_kb >= 0 ? o.smem_kb : 100) * 1024;
    if (jobs <= 0 || blocks <= 0 || threads <= 0 || threads > 1024 || smem < threads * 4 || o.iters <= 0)
        return usage("hp: JOBS, --blocks, --threads and --iters must be positive, --smem-kb at least 4 bytes a thread");
    if (bench_connect(1))
        return 1;
    setup_work(smem);
    std::mt19937 rng((unsigned)o.seed);
    std::uniform_int_distribution<long> idle_us(o.idle_min_ms * 1000, o.idle_max_ms * 1000);
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float *sink;
    unsigned long long *markers;
    CHECK_CUDA(cudaMalloc(&sink, blocks * sizeof *sink));
    CHECK_CUDA(cudaMalloc(&markers, 2 * jobs * sizeof *markers));
    // Warm-up outside any job: module load, first launches.
    gy_work_kernel<<<(unsigned)blocks, (unsigned)threads, (size_t)smem, stream>>>((unsigned)o.iters, sink);
    gy_marker_kernel<<<1, 1, 0, stream>>>(markers);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::vector<unsigned long long> begin_ns(jobs), end_ns(jobs), wait_ns(jobs);
    int timeouts = 0;
    for (long j = 0; j < jobs; j++) {
        int timed_out = 0;
        begin_ns[j] = bench_now_ns();
        wait_ns[j] = bench_job_begin(1, &timed_out);
        gy_marker_kernel<<<1, 1, 0, stream>>>(markers + 2 * j);
        for (long k = 0; k < o.kernels; k++)
            gy_work_kernel<<<(unsigned)blocks, (unsigned)threads, (size_t)smem, stream>>>((unsigned)o.iters, sink);
        gy_marker_kernel<<<1, 1, 0, stream>>>(markers + 2 * j + 1);
        CHECK_CUDA(cudaStreamSynchronize(stream));
        end_ns[j] = bench_now_ns();
        bench_job_end();
        timeouts += timed_out;
        std::this_thread::sleep_for(std::chrono::microseconds(idle_us(rng)));
    }
    CHECK_CUDA(cudaGetLastError());
    std::vector<unsigned long long> m(2 * jobs);
    CHECK_CUDA(cudaMemcpy(m.data(), markers, m.size() * sizeof m[0], cudaMemcpyDeviceToHost));
    std::printf("{\"role\": \"hp\", \"jobs\": %ld, \"kernels\": %ld, \"iters\": %ld, \"blocks\": %ld, \"threads\": %ld, "
                "\"smem_bytes\": %ld, \"timeouts\": %d",
                jobs, o.kernels, o.iters, blocks, threads, smem, timeouts);
    auto list = [&](const char *name, const std::vector<unsigned long long> &v, size_t from, size_t step) {
        std::printf(", \"%s\": [", name);
        for (size_t i = from; i < v.size(); i += step)
            std::printf("%s%llu", i == from ? "" : ", ", v[i]);
        std::printf("]");
    };
    list("first_marker_ns", m, 0, 2);
    list("last_marker_ns", m, 1, 2);
    list("begin_ns", begin_ns, 0, 1);
    list("end_ns", end_ns, 0, 1);
    list("wait_ns", wait_ns, 0, 1);
    std::printf("}\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage("give a role and its argument");
    options o;
    std::string err;
    if (parse_options(argc, argv, 3, &o, &err))
        return usage(err.c_str());
    std::string role = argv[1];
    long n;
    if (role == "lp")
        return run_lp(argv[2], o);
    if (role != "hp" && role != "calibrate")
        return usage(("unknown role '" + role + "'").c_str());
    if (!parse_long(argv[2], &n) || n <= 0)
        return usage((role + " takes a positive integer, not '" + argv[2] + "'").c_str());
    return role == "hp" ? run_hp(n, o) : run_calibrate(n, o);
}
