// sppark's own BLS12-381 G1 MSM (msm/pippenger.cuh: the MSM supraseal-c2 runs for H, L, A and
// B_G1), with its bases resident on the device, as the baseline of `peer-gpu-bench --msm`.
// Built by build.rs with sppark's nvcc command (no -G: device code optimized as in a release
// of supraseal-c2).
#include <ff/bls12-381.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

// supraseal-c2's groth16_cuda.cu, linked into the same binary, defines sppark's one
// non-template kernel `sort` too: everything else pippenger.cuh pulls in first, then the
// header with that kernel renamed, so the two objects link.
#include <algorithm>
#include <cassert>
#include <vector>
#include <cuda.h>
#include <cooperative_groups.h>
#include <util/vec2d_t.hpp>
#include <util/slice_t.hpp>
#include <util/exception.cuh>
#include <util/rusterror.h>
#include <util/gpu_t.cuh>
#include <ff/shfl.cuh>
#define sort arenaprove_baseline_sort
#include <msm/pippenger.cuh>
#undef sort

typedef msm_t<bucket_t, point_t, affine_t, scalar_t> msm_g1_t;

// Uploads `n` bases (blst_p1_affine layout) once; *out owns them until sppark_g1_drop.
extern "C" RustError sppark_g1_new(const affine_t* points, size_t n, msm_g1_t** out)
{
    try {
        *out = new msm_g1_t(points, n);
        return RustError{cudaSuccess};
    } catch (const cuda_error& e) {
        *out = nullptr;
        return RustError{e.code(), e.what()};
    } catch (...) {
        // Nothing unwinds across the FFI edge (std::bad_alloc from new, say).
        *out = nullptr;
        return RustError{cudaErrorUnknown, "sppark_g1_new: a C++ exception"};
    }
}

// out = sum scalars[i] * bases[i] over the resident bases; scalars are canonical
// little-endian (not Montgomery), host memory. out is blst_p1 (Jacobian, Montgomery).
extern "C" RustError sppark_g1_invoke(msm_g1_t* msm, point_t* out, const scalar_t* scalars, size_t n)
{
    try {
        // Null points: the resident ones (the overload taking a slice of scalars does not
        // compile in 0.1.16: it passes nullptr where a pointer type is deduced).
        return msm->invoke(*out, static_cast<const affine_t*>(nullptr), n, scalars, false);
    } catch (const cuda_error& e) {
        out->inf();
        return RustError{e.code(), e.what()};
    } catch (...) {
        out->inf();
        return RustError{cudaErrorUnknown, "sppark_g1_invoke: a C++ exception"};
    }
}

extern "C" void sppark_g1_drop(msm_g1_t* msm)
{
    delete msm;
}
