// Kernels that say where and when they ran: each block records the SM it ran on (%smid) and when
// it started (%globaltimer, a GPU-wide ns clock that processes on one GPU share), for the
// green-context probe and the partition proof.
#pragma once
#include <cstdint>

__device__ __forceinline__ unsigned gy_smid()
{
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

__device__ __forceinline__ unsigned long long gy_globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// One launch's summary, written by its blocks: which launch, its first block's start, its last
// block's end. The counters go back to zero with the last block, so a ring slot can be reused by
// a later launch on the same stream.
struct gy_launch_record {
    unsigned long long launch_no;
    unsigned long long first_start_ns;
    unsigned long long last_end_ns;
    unsigned long long blocks;
};
struct gy_launch_counters {
    unsigned started;
    unsigned ended;
};

// Every thread spins for spin_ns (so the block holds its SM slot that long); thread 0 records the
// block's SM and start time into starts/smids (when not null, indexed by block) and counts the
// block in and out of the launch record.
__global__ void gy_record_spin_kernel(unsigned long long spin_ns, unsigned long long launch_no,
                                      gy_launch_record *rec, gy_launch_counters *cnt,
                                      unsigned long long *starts, unsigned *smids)
{
    __shared__ unsigned long long start;
    if (threadIdx.x == 0) {
        start = gy_globaltimer();
        if (starts) {
            starts[blockIdx.x] = start;
            smids[blockIdx.x] = gy_smid();
        }
        if (atomicAdd(&cnt->started, 1u) == 0) {
            rec->launch_no = launch_no;
            rec->first_start_ns = start;
        }
    }
    __syncthreads();
    while (gy_globaltimer() - start < spin_ns) {
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(&cnt->ended, 1u) == gridDim.x - 1) {
            rec->last_end_ns = gy_globaltimer();
            rec->blocks = gridDim.x;
            cnt->started = 0;
            cnt->ended = 0;
            __threadfence();
        }
    }
}

// A fixed amount of arithmetic per thread (it slows down when the SM is shared, unlike a spin on
// the clock); dynamic shared memory is reserved by the launch so that blocks cannot share an SM.
__global__ void gy_work_kernel(unsigned iters, float *sink)
{
    extern __shared__ float smem[];
    float a = threadIdx.x * 1e-3f, b = 1.0001f;
    for (unsigned i = 0; i < iters; i++) {
        a = a * b + 1e-7f;
        b = b * 0.99999f + 1e-5f;
    }
    smem[threadIdx.x] = a;
    __syncthreads();
    if (smem[(threadIdx.x + 1) % blockDim.x] == -1.0f) // never true: keeps the loop
        sink[blockIdx.x] = a;
}

// One thread writes the time it ran: job markers.
__global__ void gy_marker_kernel(unsigned long long *slot)
{
    *slot = gy_globaltimer();
}
