// CHECK_CUDA(call): a CUDA runtime call that must succeed (CHECK_CU: a driver API call); on failure one line
// "<program>: <call> failed: <reason>" and exit status 1. Shared by the benchmark programs of
// bench/gpu (the program name is the binary's own, e.g. launch-cost).
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <cuda.h>
#include <cuda_runtime.h>

#define CHECK_CUDA(call)                                                                             \
    do {                                                                                             \
        cudaError_t e_ = (call);                                                                     \
        if (e_ != cudaSuccess) {                                                                     \
            std::fprintf(stderr, "%s: %s failed: %s\n", program_invocation_short_name, #call,         \
                         cudaGetErrorString(e_));                                                    \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

#define CHECK_CU(call)                                                                               \
    do {                                                                                             \
        CUresult r_ = (call);                                                                        \
        if (r_ != CUDA_SUCCESS) {                                                                    \
            const char *s_ = nullptr;                                                                \
            cuGetErrorString(r_, &s_);                                                               \
            std::fprintf(stderr, "%s: %s failed: %s\n", program_invocation_short_name, #call,        \
                         s_ ? s_ : "unknown error");                                                 \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)
