// Fp2 = Fp[u] / (u^2 + 1) as a plain pair of sppark Fp elements, one element per thread
// (sppark's fp2_t spreads one Fp2 element over two threads). Layout: blst_fp2 (c0, c1, each
// Montgomery Fp). Used by the G2 MSM (msm_g2.cu) and the G2 subgroup test (subgroup.cu).
#pragma once
#include "common.cuh"

class fp2x_t {
public:
    fp_t c0, c1;
    using mem_t = fp2x_t;
    static const uint32_t degree = 1;

    __device__ __forceinline__ fp2x_t() {}
    __device__ __forceinline__ fp2x_t(const fp_t& a, const fp_t& b) : c0(a), c1(b) {}

    __device__ __forceinline__ fp2x_t& operator+=(const fp2x_t& b)
    {   c0 += b.c0; c1 += b.c1; return *this;   }
    friend __device__ __forceinline__ fp2x_t operator+(fp2x_t a, const fp2x_t& b)
    {   return a += b;   }
    __device__ __forceinline__ fp2x_t& operator-=(const fp2x_t& b)
    {   c0 -= b.c0; c1 -= b.c1; return *this;   }
    friend __device__ __forceinline__ fp2x_t operator-(fp2x_t a, const fp2x_t& b)
    {   return a -= b;   }
    // Karatsuba: (a0 + a1 u)(b0 + b1 u) = a0 b0 - a1 b1 + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u
    friend __device__ __forceinline__ fp2x_t operator*(const fp2x_t& a, const fp2x_t& b)
    {
        fp_t v0 = a.c0 * b.c0, v1 = a.c1 * b.c1;
        fp_t s = (a.c0 + a.c1) * (b.c0 + b.c1);
        s -= v0;
        s -= v1;
        return fp2x_t(v0 - v1, s);
    }
    // a b + c d: two Karatsuba products (a dot product by Fp's would make 8 products and 4
    // reductions for Karatsuba's 6 and 6: no fewer operations).
    static __device__ __forceinline__ fp2x_t dot_product(const fp2x_t& a, const fp2x_t& b, const fp2x_t& c,
                                                         const fp2x_t& d)
    {   return a * b + c * d;   }
    __device__ __forceinline__ fp2x_t& operator*=(const fp2x_t& b)
    {   return *this = *this * b;   }
    __device__ __forceinline__ fp2x_t sqr() const
    {
        // (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u
        fp_t t = c0 * c1;
        return fp2x_t((c0 + c1) * (c0 - c1), t + t);
    }
    // Only squaring (p == 2) appears in the xyzz formulas; other powers multiply out.
    friend __device__ __forceinline__ fp2x_t operator^(const fp2x_t& a, int p)
    {
        if (p == 2)
            return a.sqr();
        fp2x_t r = a;
        for (int i = 1; i < p; i++)
            r *= a;
        return r;
    }
    __device__ __forceinline__ bool is_zero() const
    {   return c0.is_zero(c1);   }
    __device__ __forceinline__ bool is_zero(const fp2x_t& b) const
    {   return c0.is_zero(c1) & b.c0.is_zero(b.c1);   }
    __device__ __forceinline__ fp2x_t& cneg(bool flag)
    {   c0.cneg(flag); c1.cneg(flag); return *this;   }
    __device__ __forceinline__ void zero()
    {   c0.zero(); c1.zero();   }
    static __device__ __forceinline__ fp2x_t one(int or_zero = 0)
    {
        fp_t z;
        z.zero();
        return fp2x_t(fp_t::one(or_zero), z);
    }
};

static_assert(sizeof(fp2x_t) == 96, "blst_fp2 is 96 bytes");

typedef Affine_t<fp2x_t> g2_affine_t;
typedef xyzz_t<fp2x_t> g2_xyzz_t;
static_assert(sizeof(g2_affine_t::mem_t) == 192, "blst_p2_affine is 192 bytes");
