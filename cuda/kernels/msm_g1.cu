// G1 MSM point kernels: bases are blst_p1_affine (Montgomery Fp; (0, 0) is infinity),
// window sums come back as blst_p1. Scalar side: msm_sort.cu. The mixed additions' kernels two
// ways: sppark's point arithmetic (`_g1`, the benches' baseline) and written out (`_g1_inl`).
#include "msm_points.cuh"

typedef sppark_ops<g1_xyzz_t, g1_affine_t> g1_sppark_ops;
typedef inline_ops<fp_t> g1_inline_ops;
// The full additions' kernels (sppark's) read the sums the written-out kernels store.
static_assert(sizeof(g1_inline_ops::bucket_t) == sizeof(g1_sppark_ops::bucket_t), "one bucket layout");
static_assert(sizeof(g1_inline_ops::base_t) == sizeof(g1_sppark_ops::base_t), "one base layout");
MSM_MIXED_KERNELS(g1, g1_sppark_ops, 512)
MSM_MIXED_KERNELS(g1_inl, g1_inline_ops, 512)
MSM_FULL_KERNELS(g1, g1_sppark_ops, fp_t, 256)
// Batch-affine accumulation (msm_batch_affine.cuh): G1 only (`Gpu::set_msm_batch_affine`).
#include "msm_batch_affine.cuh"
MSM_BA_KERNELS(g1_ba16, fp_t, 16, 2)
MSM_BA_KERNELS(g1_ba8, fp_t, 8, 2)
MSM_BA_KERNELS(g1_ba4, fp_t, 4, 2)
