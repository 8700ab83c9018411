// G1 MSM point kernels: bases are blst_p1_affine (Montgomery Fp; (0, 0) is infinity),
// window sums come back as blst_p1. Scalar side: msm_sort.cu.
#include "msm_points.cuh"

MSM_POINT_KERNELS(g1, g1_xyzz_t, g1_affine_t, fp_t, 512)
