// What one kernel launch costs the launching thread, timed call by call (the hook's cost shows
// in the median call: in event:N and time:US most launches insert nothing).
//   launch-cost calls LAUNCHES      one JSON line: median/p10/p90 ns of single launch calls (empty
//                                   kernel, CUDA runtime, batches of 128 with the synchronize
//                                   outside the timer), and the mean over all calls
//   launch-cost components LAUNCHES one JSON line, without the hook: the real cuCtxGetCurrent's
//                                   cost, and a launch followed by nothing / a locked add / mfence /
//                                   a plain store (does a fence after the driver call stall?)
//   launch-cost paired LAUNCHES     one JSON line, under LD_PRELOAD of the hook: in one process,
//                                   alternate launches through the hooked cuLaunchKernel (what
//                                   dlsym on libcuda hands out) and the driver's own (found with
//                                   glibc's real dlsym), each timed alone; the medians, and the
//                                   median of hooked minus real over adjacent pairs. Without the
//                                   hook both are the driver's: an A/A check (about 0). Under
//                                   GPUYIELD_MODE=event:N the pairs whose hooked launch inserts an
//                                   event record or query (known by position on a fresh stream)
//                                   are set apart: a quarter of slow calls in event:8 would move a
//                                   plain median by a few hundred ns of the driver's own spread.
// Each call is timed with steady_clock (about 20 ns of its own, the same in every variant: compare
// variants, not absolutes).
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda.h>

#include "check_cuda.cuh"
#include "spin_kernels.cuh"

using steady = std::chrono::steady_clock;
static const long kBatch = 128;

static double ns_between(steady::time_point a, steady::time_point b)
{
    return std::chrono::duration<double, std::nano>(b - a).count();
}

static double percentile(std::vector<double> v, double q)
{
    std::sort(v.begin(), v.end());
    size_t rank = (size_t)(q * (double)v.size());
    return v[std::min(rank, v.size() - 1)];
}

enum after_launch { AFTER_NOTHING, AFTER_LOCKED_ADD, AFTER_MFENCE, AFTER_PLAIN_STORE };
static std::atomic<unsigned long> sink_counter;
static volatile unsigned long sink_plain;

// Per-call durations of `launches` empty-kernel launches, each followed by `after`.
static std::vector<double> time_calls(cudaStream_t stream, long launches, after_launch after)
{
    std::vector<double> per_call;
    per_call.reserve((size_t)launches);
    long done = 0;
    while (done < launches) {
        long n = std::min(kBatch, launches - done);
        for (long i = 0; i < n; i++) {
            auto t0 = steady::now();
            gy_empty_kernel<<<1, 32, 0, stream>>>();
            switch (after) {
            case AFTER_NOTHING: break;
            case AFTER_LOCKED_ADD: sink_counter.fetch_add(1, std::memory_order_relaxed); break;
            case AFTER_MFENCE: std::atomic_thread_fence(std::memory_order_seq_cst); break;
            case AFTER_PLAIN_STORE: sink_plain = sink_plain + 1; break;
            }
            auto t1 = steady::now();
            per_call.push_back(ns_between(t0, t1));
        }
        done += n;
        CHECK_CUDA(cudaStreamSynchronize(stream));
    }
    CHECK_CUDA(cudaGetLastError());
    return per_call;
}

static void print_stats(const char *key, const std::vector<double> &v, bool last)
{
    double sum = 0;
    for (double x : v)
        sum += x;
    std::printf("\"%s\": {\"median\": %.1f, \"p10\": %.1f, \"p90\": %.1f, \"mean\": %.1f, \"n\": %zu}%s", key,
                percentile(v, 0.5), percentile(v, 0.1), percentile(v, 0.9), sum / (double)v.size(), v.size(),
                last ? "" : ", ");
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

// Under event:N, on a stream the hook has not seen: does the k-th hooked launch (from 0) insert a
// driver call? The last of each group records its event; the first of group g >= 2 queries g-2.
static bool inserts(long k, long group)
{
    return group > 0 && (k % group == group - 1 || (k % group == 0 && k >= 2 * group));
}

static int paired(long launches)
{
    const char *mode = std::getenv("GPUYIELD_MODE");
    long event_group = mode && !std::strncmp(mode, "event:", 6) ? std::atol(mode + 6) : 0;
    cudaStream_t stream; // fresh: the hook's group positions start at 0 here
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    // glibc's own dlsym: the hook wraps dlsym, never dlvsym.
    auto real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real_dlsym)
        real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (!cuda || !real_dlsym) {
        std::fprintf(stderr, "launch-cost: cannot reach libcuda.so.1 or glibc's dlsym\n");
        return 1;
    }
    auto hooked = (launch_fn)dlsym(cuda, "cuLaunchKernel");
    auto real = (launch_fn)real_dlsym(cuda, "cuLaunchKernel");
    cudaFunction_t fn;
    CHECK_CUDA(cudaGetFuncBySymbol(&fn, (const void *)gy_empty_kernel));
    if (!hooked || !real) {
        std::fprintf(stderr, "launch-cost: cuLaunchKernel not found\n");
        return 1;
    }
    std::vector<double> through_hook, direct, pair_diff, inserting_diff;
    long done = 0, hooked_launches = 0;
    while (done < launches) {
        long n = std::min(kBatch, launches - done);
        for (long i = 0; i < n; i += 2) {
            // Alternate which goes first, so that neither always follows the other.
            bool hook_first = (i / 2) % 2 == 0;
            double d[2];
            for (int which = 0; which < 2; which++) {
                launch_fn f = (which == 0) == hook_first ? hooked : real;
                auto t0 = steady::now();
                CUresult rc = f((CUfunction)fn, 1, 1, 1, 32, 1, 1, 0, (CUstream)stream, nullptr, nullptr);
                auto t1 = steady::now();
                if (rc != CUDA_SUCCESS) {
                    std::fprintf(stderr, "launch-cost: cuLaunchKernel returned %d\n", (int)rc);
                    return 1;
                }
                d[which] = ns_between(t0, t1);
            }
            double h = hook_first ? d[0] : d[1], r = hook_first ? d[1] : d[0];
            if (inserts(hooked_launches++, event_group)) {
                inserting_diff.push_back(h - r);
                continue;
            }
            through_hook.push_back(h);
            direct.push_back(r);
            pair_diff.push_back(h - r);
        }
        done += n;
        CHECK_CUDA(cudaStreamSynchronize(stream));
    }
    std::printf("{\"hooked_is_real\": %s, \"event_group\": %ld, ", hooked == real ? "true" : "false", event_group);
    if (!inserting_diff.empty())
        print_stats("inserting_pair_diff", inserting_diff, false);
    print_stats("through_hook", through_hook, false);
    print_stats("direct", direct, false);
    print_stats("pair_diff", pair_diff, true);
    std::printf("}\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (std::strcmp(argv[1], "calls") && std::strcmp(argv[1], "components") &&
                      std::strcmp(argv[1], "paired"))) {
        std::fprintf(stderr, "usage: launch-cost calls|components|paired LAUNCHES\n");
        return 2;
    }
    long launches = std::atol(argv[2]);
    if (launches < kBatch) {
        std::fprintf(stderr, "launch-cost: LAUNCHES must be at least %ld\n", kBatch);
        return 2;
    }
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    time_calls(stream, 4 * kBatch, AFTER_NOTHING); // warm up: module load, first launches
    if (!std::strcmp(argv[1], "paired"))
        return paired(launches);
    if (!std::strcmp(argv[1], "calls")) {
        std::printf("{");
        print_stats("launch", time_calls(stream, launches, AFTER_NOTHING), true);
        std::printf("}\n");
        return 0;
    }
    // The real driver's cuCtxGetCurrent, looked up in libcuda itself (run this without the hook).
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    auto get_current = cuda ? (CUresult(*)(CUcontext *))dlsym(cuda, "cuCtxGetCurrent") : nullptr;
    if (!get_current) {
        std::fprintf(stderr, "launch-cost: cannot find cuCtxGetCurrent in libcuda.so.1\n");
        return 1;
    }
    const long reps = 1000000;
    CUcontext ctx = nullptr;
    auto t0 = steady::now();
    for (long i = 0; i < reps; i++)
        get_current(&ctx);
    double get_current_ns = ns_between(t0, steady::now()) / (double)reps;
    std::printf("{\"ctx_get_current_ns\": %.2f, ", get_current_ns);
    // Interleaved so that drift hits each alike.
    std::vector<double> all[4];
    for (int round = 0; round < 5; round++)
        for (int a = 0; a < 4; a++) {
            auto v = time_calls(stream, launches / 5, (after_launch)a);
            all[a].insert(all[a].end(), v.begin(), v.end());
        }
    print_stats("launch_then_nothing", all[AFTER_NOTHING], false);
    print_stats("launch_then_locked_add", all[AFTER_LOCKED_ADD], false);
    print_stats("launch_then_mfence", all[AFTER_MFENCE], false);
    print_stats("launch_then_plain_store", all[AFTER_PLAIN_STORE], true);
    std::printf("}\n");
    return 0;
}
