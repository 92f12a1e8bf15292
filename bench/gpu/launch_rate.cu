// Kernel launches per second of an empty kernel, through the CUDA runtime (which reaches the
// driver through cuGetProcAddress, i.e. through the hook when it is preloaded).
// usage: launch-rate LAUNCHES REPS  -> one JSON line: median ns per launch and launches/s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "spin_kernels.cuh"

#define CHECK_CUDA(call)                                                                             \
    do {                                                                                             \
        cudaError_t e_ = (call);                                                                     \
        if (e_ != cudaSuccess) {                                                                     \
            std::fprintf(stderr, "launch-rate: %s failed: %s\n", #call, cudaGetErrorString(e_));     \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

int main(int argc, char **argv)
{
    long launches = argc > 1 ? std::atol(argv[1]) : 200000;
    int reps = argc > 2 ? std::atoi(argv[2]) : 7;
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
    std::sort(per_launch.begin(), per_launch.end());
    double med = per_launch[per_launch.size() / 2];
    std::printf("{\"ns_per_launch\": %.1f, \"launches_per_s\": %.0f, \"launches\": %ld, \"reps\": %d, \"all_ns\": [", med,
                1e9 / med, launches, reps);
    for (size_t i = 0; i < per_launch.size(); i++)
        std::printf("%s%.1f", i ? ", " : "", per_launch[i]);
    std::printf("]}\n");
    return 0;
}
