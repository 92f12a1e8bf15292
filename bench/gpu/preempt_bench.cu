// Preemption latency with synthetic kernels of a fixed duration.
//   preempt-bench lp DUR_US SECONDS         low priority: spin kernels of DUR_US back to back
//   preempt-bench hp JOBS INTERVAL_MS [JITTER_MS]
//                                           high priority: JOBS jobs, INTERVAL_MS plus a uniform
//                                           random 0..JITTER_MS apart; each begins (waits for the
//                                           drain), runs one 20 us kernel, ends. Without jitter a
//                                           fixed interval that is a multiple of the low-priority
//                                           cycle lands every begin at the same point of it, and
//                                           the figures show that point, not the spread.
// The hp role prints one JSON line: per job the begin->drained wait and the begin->own kernel
// done latency (what a high-priority job really sees), in ns.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "job_shim.h"
#include "check_cuda.cuh"
#include "spin_kernels.cuh"

static int sm_count()
{
    int n = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0));
    return n;
}

static int run_lp(long dur_us, double seconds)
{
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    int blocks = sm_count() * 2;
    uint64_t end = bench_now_ns() + (uint64_t)(seconds * 1e9);
    long launched = 0;
    while (bench_now_ns() < end) {
        gy_spin_kernel<<<blocks, 128, 0, stream>>>((unsigned long long)dur_us * 1000ull);
        launched++;
    }
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::printf("{\"role\": \"lp\", \"launched\": %ld}\n", launched);
    return 0;
}

static int run_hp(int jobs, int interval_ms, int jitter_ms)
{
    std::mt19937 rng(12345); // the same arrival times in every run and mode
    std::uniform_int_distribution<int> jitter_us(0, jitter_ms > 0 ? jitter_ms * 1000 - 1 : 0);
    if (bench_connect(1))
        return 1;
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    int blocks = sm_count();
    gy_spin_kernel<<<blocks, 128, 0, stream>>>(20000ull); // warm-up, outside any job
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::vector<unsigned long long> drain, done;
    int timeouts = 0;
    for (int j = 0; j < jobs; j++) {
        std::this_thread::sleep_for(std::chrono::microseconds(interval_ms * 1000 + jitter_us(rng)));
        int timed_out = 0;
        uint64_t t0 = bench_now_ns();
        uint64_t waited = bench_job_begin(1, &timed_out);
        gy_spin_kernel<<<blocks, 128, 0, stream>>>(20000ull);
        CHECK_CUDA(cudaStreamSynchronize(stream));
        uint64_t t2 = bench_now_ns();
        bench_job_end();
        drain.push_back(waited);
        done.push_back(t2 - t0);
        timeouts += timed_out;
    }
    std::printf("{\"role\": \"hp\", \"jobs\": %d, \"interval_ms\": %d, \"jitter_ms\": %d, \"timeouts\": %d, "
                "\"drain_ns\": [",
                jobs, interval_ms, jitter_ms, timeouts);
    for (size_t i = 0; i < drain.size(); i++)
        std::printf("%s%llu", i ? ", " : "", drain[i]);
    std::printf("], \"done_ns\": [");
    for (size_t i = 0; i < done.size(); i++)
        std::printf("%s%llu", i ? ", " : "", done[i]);
    std::printf("]}\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !std::strcmp(argv[1], "lp"))
        return run_lp(std::atol(argv[2]), std::atof(argv[3]));
    if ((argc == 4 || argc == 5) && !std::strcmp(argv[1], "hp"))
        return run_hp(std::atoi(argv[2]), std::atoi(argv[3]), argc == 5 ? std::atoi(argv[4]) : 0);
    std::fprintf(stderr, "usage: preempt-bench lp DUR_US SECONDS | hp JOBS INTERVAL_MS [JITTER_MS]\n");
    return 2;
}
