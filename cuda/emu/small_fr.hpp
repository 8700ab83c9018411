// A stand-in for sppark's fr_t in the CPU check of the NTT kernels (emu/ntt_check.cpp):
// the field of p = 998244353 = 119 * 2^23 + 1, whose 2^23-th roots of unity let the
// kernels' index and twiddle arithmetic run unchanged on small, exact values. It offers
// the operations kernels/ntt.cu uses; values stay canonical, so `from` does nothing.
#pragma once
#include <cstdint>

struct fr_t {
    static constexpr uint32_t P = 998244353u;
    uint32_t v = 0;

    static fr_t one()
    {
        return fr_t{1};
    }
    friend fr_t operator+(fr_t a, fr_t b)
    {
        return fr_t{uint32_t(((uint64_t)a.v + b.v) % P)};
    }
    friend fr_t operator-(fr_t a, fr_t b)
    {
        return fr_t{uint32_t(((uint64_t)a.v + P - b.v) % P)};
    }
    friend fr_t operator*(fr_t a, fr_t b)
    {
        return fr_t{uint32_t((uint64_t)a.v * b.v % P)};
    }
    fr_t operator-() const
    {
        return fr_t{v == 0 ? 0 : P - v};
    }
    fr_t& operator+=(fr_t b)
    {
        return *this = *this + b;
    }
    fr_t& operator-=(fr_t b)
    {
        return *this = *this - b;
    }
    fr_t& operator*=(fr_t b)
    {
        return *this = *this * b;
    }
    fr_t& cneg(bool flag)
    {
        if (flag)
            *this = -*this;
        return *this;
    }
    void from() {}
    friend bool operator==(fr_t a, fr_t b)
    {
        return a.v == b.v;
    }
};

// g^e.
inline fr_t fr_pow(fr_t g, uint64_t e)
{
    fr_t r = fr_t::one();
    for (; e != 0; e >>= 1, g = g * g)
        if (e & 1)
            r = r * g;
    return r;
}

// A primitive 2^log-th root of unity (3 generates the multiplicative group).
inline fr_t fr_root(unsigned log)
{
    return fr_pow(fr_t{3}, (fr_t::P - 1) >> log);
}
