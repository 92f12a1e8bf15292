// Kernel launches per second of an empty kernel, through the CUDA runtime (which reaches the
// driver through cuGetProcAddress, i.e. through the hook when it is preloaded).
// usage: launch-rate LAUNCHES REPS  -> one JSON line: median ns per launch and launches/s.
// Two figures: ns_per_launch times LAUNCHES back to back and the final synchronize, so once the
// launch queue is full it is bounded by how fast the GPU retires empty kernels; host_ns_per_launch
// times only the launch calls, in batches of 256 (below the queue depth) with the synchronize
// between batches outside the timer: the CPU cost of a launch, where a hook's cost would show.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "check_cuda.cuh"
#include "spin_kernels.cuh"

// A whole number in [1, max], or -1.
static long parse_count(const char *s, long max)
{
    char *end;
    long v = std::strtol(s, &end, 10);
    return (*end || end == s || v < 1 || v > max) ? -1 : v;
}

int main(int argc, char **argv)
{
    long launches = argc > 1 ? parse_count(argv[1], 100000000) : 200000;
    int reps = argc > 2 ? (int)parse_count(argv[2], 1000) : 7;
    if (argc > 3 || launches < 0 || reps < 0) { // --help included: no benchmark on a bad command line
        bool help = argc > 1 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"));
        std::fprintf(help ? stdout : stderr, "usage: launch-rate [LAUNCHES [REPS]]  (default 200000 7)\n");
        return help ? 0 : 2;
    }
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    gy_empty_kernel<<<1, 32, 0, stream>>>();
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::vector<double> per_launch;
    for (int r = 0; r < reps; r++) {
        auto t0 = std::chrono::steady_clock::now();
        for (long i = 0; i < launches; i++)
            gy_empty_kernel<<<1, 32, 0, stream>>>();
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaStreamSynchronize(stream));
        auto t1 = std::chrono::steady_clock::now();
        per_launch.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / launches);
    }
    const long batch = 256;
    std::vector<double> host_per_launch;
    for (int r = 0; r < reps; r++) {
        double ns = 0;
        long done = 0;
        while (done < launches) {
            long n = std::min(batch, launches - done);
            auto t0 = std::chrono::steady_clock::now();
            for (long i = 0; i < n; i++)
                gy_empty_kernel<<<1, 32, 0, stream>>>();
            auto t1 = std::chrono::steady_clock::now();
            ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
            done += n;
            CHECK_CUDA(cudaStreamSynchronize(stream));
        }
        CHECK_CUDA(cudaGetLastError());
        host_per_launch.push_back(ns / launches);
    }
    std::sort(host_per_launch.begin(), host_per_launch.end());
    double host_med = host_per_launch[host_per_launch.size() / 2];
    std::sort(per_launch.begin(), per_launch.end());
    double med = per_launch[per_launch.size() / 2];
    std::printf("{\"ns_per_launch\": %.1f, \"launches_per_s\": %.0f, \"launches\": %ld, \"reps\": %d, \"all_ns\": [", med,
                1e9 / med, launches, reps);
    for (size_t i = 0; i < per_launch.size(); i++)
        std::printf("%s%.1f", i ? ", " : "", per_launch[i]);
    std::printf("], \"host_ns_per_launch\": %.1f, \"host_all_ns\": [", host_med);
    for (size_t i = 0; i < host_per_launch.size(); i++)
        std::printf("%s%.1f", i ? ", " : "", host_per_launch[i]);
    std::printf("]}\n");
    return 0;
}
