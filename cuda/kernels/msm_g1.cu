// G1 MSM point kernels: bases are blst_p1_affine (Montgomery Fp; (0, 0) is infinity),
// window sums come back as blst_p1. Scalar side: msm_sort.cu.
#include "msm_points.cuh"

MSM_POINT_KERNELS(g1, g1_xyzz_t, g1_affine_t, fp_t, 384)

// The signed accumulation bounded at 512 threads (128 registers, a few spilled: 16 warps
// per SM against the 384-thread instance's 12), run when `Gpu::set_msm_wide_accumulate`
// asks, so a bench can time both occupancies in one run.
extern "C" __global__ void __launch_bounds__(512) msm_accumulate_signed_wide_g1(const g1_affine_t::mem_t* bases,
    const uint32_t* idx, const uint2* pieces, const uint32_t* npieces, g1_xyzz_t::mem_t* partial)
{   accumulate<g1_xyzz_t, g1_affine_t, true>(bases, idx, pieces, npieces, partial);   }
