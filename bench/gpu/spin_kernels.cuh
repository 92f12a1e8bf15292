// Kernels of a known duration for the GPU benchmarks: each block spins on the global timer.
#pragma once
#include <cstdint>

__global__ void gy_spin_kernel(unsigned long long duration_ns)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < duration_ns);
}

__global__ void gy_empty_kernel() {}
