// Fixed-base products for parameter generation: out[i] = scalars[i] * g, one point per
// thread, for the millions of points of a parameters file (h, l, a, b_g1 in G1; b_g2 in G2).
// The host hands over the window table the CPU generator uses (engine
// groth16::FixedBaseTables): table[j * (2^w - 1) + d - 1] = d * 2^(w j) * g, affine, so a
// product is one mixed addition per non-zero w-bit digit of the scalar (no doublings), in
// xyzz coordinates, then one inversion to come back to affine: Fermat's a^(p - 2), with
// p - 2 handed over by the host (derived there from the field, not written out here).
// Scalars arrive as the host holds them (Montgomery Fr, blst_fr) and are made canonical
// here; points leave in blst's affine layout, the identity as (0, 0).
#include "fp2.cuh"
#include "msm_points.cuh"  // xyzz_fields, xyzz_dbl, affine_as_xyzz

// a^e, e given as `words` little-endian u32 words: square-and-multiply from the top bit.
// The exponent is the same for every thread, so the branches do not diverge.
__device__ __forceinline__ fp_t pow_words(const fp_t& a, const uint32_t* e, int words)
{
    fp_t r = fp_t::one();
    bool started = false;
    for (int k = words - 1; k >= 0; k--) {
        const uint32_t word = e[k];
        for (int bit = 31; bit >= 0; bit--) {
            if (started)
                r.sqr();
            if ((word >> bit) & 1) {
                if (started)
                    r *= a;
                else
                    r = a;
                started = true;
            }
        }
    }
    return r;
}

// 1 / a (a != 0) in Fp: a^(p - 2).
__device__ __forceinline__ fp_t inverse(const fp_t& a, const uint32_t* p_minus_2)
{
    return pow_words(a, p_minus_2, 12);
}

// 1 / a in Fp2 = Fp[u] / (u^2 + 1): conj(a) / (c0^2 + c1^2).
__device__ __forceinline__ fp2x_t inverse(const fp2x_t& a, const uint32_t* p_minus_2)
{
    const fp_t n = inverse(a.c0 * a.c0 + a.c1 * a.c1, p_minus_2);
    fp_t c1 = a.c1 * n;
    c1.cneg(true);
    return fp2x_t(a.c0 * n, c1);
}

template<class field, class xyzz, class affine>
__device__ __forceinline__ void fixed_base(const typename affine::mem_t* table, uint32_t w,
                                           uint32_t windows, const fr_t* scalars, size_t n,
                                           const uint32_t* p_minus_2, typename affine::mem_t* out)
{
    static_assert(sizeof(typename affine::mem_t) == 2 * sizeof(field), "affine is x, y");
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const uint32_t per = (1u << w) - 1;
    for (size_t i = global_tid(); i < n; i += stride) {
        fr_t s = scalars[i];
        s.from();  // canonical, little-endian u32 words
        xyzz acc;
        acc.inf();
        for (uint32_t j = 0; j < windows; j++) {
            const uint32_t bit = j * w, word = bit / 32;
            uint64_t two = s[word];
            if (word + 1 < 8)
                two |= (uint64_t)s[word + 1] << 32;
            const uint32_t d = (uint32_t)(two >> (bit % 32)) & per;
            if (d != 0) {
                const affine pt = table[(size_t)j * per + d - 1];
                acc.add(pt);
            }
        }
        typename xyzz::mem_t m;
        m = acc;
        const field* c = reinterpret_cast<const field*>(&m);  // X, Y, ZZZ, ZZ
        field* o = reinterpret_cast<field*>(out + i);
        if (c[3].is_zero()) {
            o[0].zero();
            o[1].zero();
            continue;
        }
        // x = X / ZZ, y = Y / ZZZ, with one inversion of ZZ * ZZZ.
        const field t = inverse(c[3] * c[2], p_minus_2);
        o[0] = c[0] * (t * c[2]);
        o[1] = c[1] * (t * c[3]);
    }
}

extern "C" __global__ void fixed_base_g1(const g1_affine_t::mem_t* table, uint32_t w, uint32_t windows,
                                         const fr_t* scalars, size_t n, const uint32_t* p_minus_2,
                                         g1_affine_t::mem_t* out)
{
    fixed_base<fp_t, g1_xyzz_t, g1_affine_t>(table, w, windows, scalars, n, p_minus_2, out);
}

extern "C" __global__ void fixed_base_g2(const g2_affine_t::mem_t* table, uint32_t w, uint32_t windows,
                                         const fr_t* scalars, size_t n, const uint32_t* p_minus_2,
                                         g2_affine_t::mem_t* out)
{
    fixed_base<fp2x_t, g2_xyzz_t, g2_affine_t>(table, w, windows, scalars, n, p_minus_2, out);
}

// Fixed-base windows for the MSM (the host's `FixedWindows`, `Gpu::upload_g1_bases_fixed`):
// out[i] = 2^c * in[i] for n affine G1 points, one point per thread: c doublings in xyzz
// coordinates, then one Fermat inversion back to affine. The host runs it once per copy
// (copy t from copy t - 1), when the parameters' bases are loaded. Infinity, (0, 0) in
// blst's layout, stays (0, 0); a point of odd order never doubles to infinity (the curve's
// order over Fp is odd), but a sum at infinity would be written as (0, 0) too.
extern "C" __global__ void fixed_shift_g1(const g1_affine_t::mem_t* in, size_t n, uint32_t c,
                                          const uint32_t* p_minus_2, g1_affine_t::mem_t* out)
{
    static_assert(sizeof(g1_affine_t::mem_t) == 2 * sizeof(fp_t), "affine is x, y");
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = global_tid(); i < n; i += stride) {
        const fp_t* f = reinterpret_cast<const fp_t*>(in + i);
        fp_t* o = reinterpret_cast<fp_t*>(out + i);
        const fp_t x = f[0], y = f[1];
        if (x.is_zero() && y.is_zero()) {
            o[0].zero();
            o[1].zero();
            continue;
        }
        xyzz_fields<fp_t> p = affine_as_xyzz(x, y);
        for (uint32_t k = 0; k < c; k++)
            xyzz_dbl(p);
        if (p.is_inf()) {
            o[0].zero();
            o[1].zero();
            continue;
        }
        // x = X / ZZ, y = Y / ZZZ, with one inversion of ZZ * ZZZ.
        const fp_t t = inverse(p.ZZ * p.ZZZ, p_minus_2);
        o[0] = p.X * (t * p.ZZZ);
        o[1] = p.Y * (t * p.ZZ);
    }
}
