// Shared types of the arenaprove kernels: BLS12-381 Fr and Fp in Montgomery form (sppark's
// field headers; R = 2^256 and 2^384 as in blst, so host and device bytes are identical).
#pragma once
#include <cstdint>
#include <ff/bls12-381.hpp>
#include <ec/xyzz_t.hpp>
#include "index.cuh"

using bls12_381::fp_t;
using bls12_381::fr_t;

// blst_p1_affine: x, y (Montgomery Fp, 6 little-endian u64 each); (0, 0) is infinity.
typedef Affine_t<fp_t> g1_affine_t;
// Buckets: extended Jacobian (X, Y, ZZZ, ZZ) with x = X/ZZ, y = Y/ZZZ.
typedef xyzz_t<fp_t> g1_xyzz_t;

static_assert(sizeof(fr_t) == 32, "Fr is 32 bytes");
static_assert(sizeof(fp_t) == 48, "Fp is 48 bytes");
static_assert(sizeof(g1_affine_t::mem_t) == 96, "blst_p1_affine is 96 bytes");
