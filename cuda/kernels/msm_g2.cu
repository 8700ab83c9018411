// G2 MSM point kernels: bases are blst_p2_affine (x, y in Fp2 = c0 + c1*u, u^2 = -1, each
// component Montgomery Fp), window sums come back as blst_p2. Scalar side: msm_sort.cu.
// Fp2 and the G2 types: fp2.cuh. The mixed additions' kernels two ways:
// sppark's point arithmetic (`_g2`, the benches' baseline) and written out (`_g2_inl`).
#include "msm_points.cuh"
#include "fp2.cuh"

typedef sppark_ops<g2_xyzz_t, g2_affine_t> g2_sppark_ops;
typedef inline_ops<fp2x_t> g2_inline_ops;
// The full additions' kernels (sppark's) read the sums the written-out kernels store.
static_assert(sizeof(g2_inline_ops::bucket_t) == sizeof(g2_sppark_ops::bucket_t), "one bucket layout");
static_assert(sizeof(g2_inline_ops::base_t) == sizeof(g2_sppark_ops::base_t), "one base layout");
MSM_MIXED_KERNELS(g2, g2_sppark_ops, 256)
MSM_MIXED_KERNELS(g2_inl, g2_inline_ops, 256)
MSM_FULL_KERNELS(g2, g2_sppark_ops, fp2x_t, 128)
