// Thread indexing and scalar tests shared by every kernel file, with no field arithmetic:
// msm_sort.cu includes only this, so the sort kernels also compile as host C++ against
// cuda/emu/cuda_emu.hpp (the CPU check of the sort, cuda/tests/emu.rs).
#pragma once
#include <cstdint>

__device__ __forceinline__ size_t global_tid()
{
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

// A canonical little-endian scalar (8 x u32) equal to one. The MSM's 0/1 fast path sums the
// bases of these directly instead of sorting them into one giant bucket.
__device__ __forceinline__ bool scalar_is_one(const uint32_t* s)
{
    uint32_t rest = s[0] ^ 1u;
#pragma unroll
    for (int k = 1; k < 8; k++)
        rest |= s[k];
    return rest == 0;
}
