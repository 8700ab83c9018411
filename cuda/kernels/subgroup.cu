// Prime-order subgroup tests for points already known to be on their curve (a parameter
// load's decode checks that), one point per thread: Scott's endomorphism tests, the ones
// blst's POINTonE1_in_G1 / POINTonE2_in_G2 run on the CPU ("A note on group membership tests
// for G1, G2 and GT on BLS pairing-friendly curves", 2021):
//   G1: P in G1  iff  sigma(P) == -[z^2] P,  sigma(x, y) = (beta x, y);
//   G2: P in G2  iff  psi(P)   == [z] P,     psi(x, y)   = (cx conj(x), cy conj(y)),
// with z = -|z| BLS12-381's curve parameter. The host passes |z| and the constants (beta;
// cx, cy), derived from the generators and checked there (cuda/src/subgroup.rs), so no
// curve constant is written twice. Each thread that finds a point outside its subgroup
// lowers `*bad` to that point's index (`first + i`): the host reads the first one.
#include "fp2.cuh"

// The four coordinates of an xyzz point (X, Y, ZZZ, ZZ; x = X/ZZ, y = Y/ZZZ).
template<class field, class xyzz>
__device__ __forceinline__ void xyzz_coords(const xyzz& p, field& X, field& Y, field& ZZZ, field& ZZ)
{
    typename xyzz::mem_t m;
    m = p;
    const field* f = reinterpret_cast<const field*>(&m);
    X = f[0];
    Y = f[1];
    ZZZ = f[2];
    ZZ = f[3];
}

// [k] p by double-and-add from the top bit of k (k > 0); p affine or xyzz.
template<class xyzz, class point>
__device__ __forceinline__ xyzz times_u64(const point& p, uint64_t k)
{
    xyzz acc;
    acc = p;
    for (int bit = 62 - __clzll(k); bit >= 0; bit--) {
        xyzz d = acc;
        acc.add(d);
        if ((k >> bit) & 1)
            acc.add(p);
    }
    return acc;
}

extern "C" __global__ void subgroup_g1(const g1_affine_t::mem_t* pts, size_t n, size_t first,
                                       const fp_t* beta, size_t z_abs, uint32_t* bad)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const fp_t b = *beta;
    for (size_t i = global_tid(); i < n; i += stride) {
        const g1_affine_t p = pts[i];
        if (p.is_inf())
            continue;
        const fp_t* xy = reinterpret_cast<const fp_t*>(pts + i);
        const fp_t px = xy[0], py = xy[1];
        g1_xyzz_t q = times_u64<g1_xyzz_t>(p, z_abs);
        q = times_u64<g1_xyzz_t>(q, z_abs);  // [z^2] p
        fp_t X, Y, ZZZ, ZZ;
        xyzz_coords(q, X, Y, ZZZ, ZZ);
        // sigma(p) == -q: beta px == X / ZZ and py == -Y / ZZZ (q finite).
        const bool in = !ZZ.is_zero() & (X - b * px * ZZ).is_zero() & (Y + py * ZZZ).is_zero();
        if (!in)
            atomicMin(bad, (uint32_t)(first + i));
    }
}

extern "C" __global__ void subgroup_g2(const g2_affine_t::mem_t* pts, size_t n, size_t first,
                                       const fp2x_t* psi, size_t z_abs, uint32_t* bad)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const fp2x_t cx = psi[0], cy = psi[1];
    for (size_t i = global_tid(); i < n; i += stride) {
        const g2_affine_t p = pts[i];
        if (p.is_inf())
            continue;
        const fp2x_t* xy = reinterpret_cast<const fp2x_t*>(pts + i);
        fp2x_t px = xy[0], py = xy[1];
        px.c1.cneg(true);  // conj(x)
        py.c1.cneg(true);  // conj(y)
        const g2_xyzz_t q = times_u64<g2_xyzz_t>(p, z_abs);  // [|z|] p = -[z] p
        fp2x_t X, Y, ZZZ, ZZ;
        xyzz_coords(q, X, Y, ZZZ, ZZ);
        // psi(p) == [z] p == -q: cx conj(px) == X / ZZ and cy conj(py) == -Y / ZZZ.
        const bool in = !ZZ.is_zero() & (X - cx * px * ZZ).is_zero() & (Y + cy * py * ZZZ).is_zero();
        if (!in)
            atomicMin(bad, (uint32_t)(first + i));
    }
}
