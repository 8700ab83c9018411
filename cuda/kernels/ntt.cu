// Radix-2 NTT over BLS12-381 Fr with the CPU engine's conventions (engine/src/groth16/
// domain.rs): natural-order input, bit-reversal, then Cooley-Tukey DIT stages with
// t = v * w^k, v' = u - t, u' = u + t. Field results are canonical, so the output equals
// the CPU's bit for bit.
//
// Twiddles: one table tw[k] = w_max^k, k < 2^(tw_log-1), for the largest domain 2^tw_log;
// a domain of 2^log_n uses every 2^(tw_log-log_n)-th entry (bellperson derives omega by
// squaring down, so w_n = w_max^(2^(tw_log-log_n)) exactly). Inverse twiddles come from the
// same table: w^-k = -w^(N/2-k) for 0 < k < N/2.
#include "common.cuh"

__device__ __forceinline__ fr_t twiddle(const fr_t* tw, uint32_t tw_log, size_t k, uint32_t inv)
{
    if (!inv)
        return tw[k];
    if (k == 0)
        return fr_t::one();
    fr_t t = tw[((size_t)1 << (tw_log - 1)) - k];
    return -t;
}

// twiddle() without a branch (tw[0] = 1 serves k = 0 either way), so that a pass group's
// table loads can all issue before its first product: the `AHEAD` pass kernels.
__device__ __forceinline__ fr_t twiddle_flat(const fr_t* tw, uint32_t tw_log, size_t k, uint32_t inv)
{
    const bool flip = inv != 0 && k != 0;
    fr_t t = tw[flip ? ((size_t)1 << (tw_log - 1)) - k : k];
    t.cneg(flip);
    return t;
}

// a[i] <-> a[bitrev(i)], in place.
extern "C" __global__ void fr_bitrev(fr_t* a, uint32_t log_n)
{
    size_t i = global_tid();
    if (i >= ((size_t)1 << log_n))
        return;
    size_t j = __brevll(i) >> (64 - log_n);
    if (i < j) {
        fr_t x = a[i], y = a[j];
        a[i] = y;
        a[j] = x;
    }
}

#define NTT_SHARED_LOG 10

// The first `stages` DIT stages (blocks of 2^stages consecutive elements) in shared memory.
// One CUDA block per 2^stages elements, 2^(stages-1) threads.
extern "C" __global__ void __launch_bounds__(1 << (NTT_SHARED_LOG - 1))
fr_ntt_shared(fr_t* a, const fr_t* tw, uint32_t stages, uint32_t tw_log, uint32_t inv)
{
    __shared__ __align__(32) uint4 raw[2 << NTT_SHARED_LOG];
    fr_t* sm = reinterpret_cast<fr_t*>(raw);
    const uint32_t size = 1u << stages;
    fr_t* blk = a + ((size_t)blockIdx.x << stages);
    for (uint32_t k = threadIdx.x; k < size; k += blockDim.x)
        sm[k] = blk[k];
    __syncthreads();
    for (uint32_t s = 0; s < stages; s++) {
        const uint32_t t = threadIdx.x;
        const uint32_t half = 1u << s;
        const uint32_t j = t & (half - 1);
        const uint32_t i0 = ((t >> s) << (s + 1)) + j;
        fr_t w = twiddle(tw, tw_log, (size_t)j << (tw_log - s - 1), inv);
        fr_t u = sm[i0];
        fr_t v = sm[i0 + half] * w;
        sm[i0] = u + v;
        sm[i0 + half] = u - v;
        __syncthreads();
    }
    for (uint32_t k = threadIdx.x; k < size; k += blockDim.x)
        blk[k] = sm[k];
}

// One pass of `k` stages [s0, s0 + k) in shared memory (ntt_passes.rs has the plan and a
// CPU model of the pass kernels). Element i = hi * 2^(s0+k) + m * 2^s0 + lo is entry m
// of a 2^k-point sub-transform; a block of 2^block_log scalars holds every m for
// 2^(block_log - k) consecutive lo (requires block_log - k <= s0). DIT (dif = 0) runs the
// stages upwards with t = v * w, (u + t, u - t); DIF downwards with (u + v, (u - v) * w).
// The twiddle of stage s for butterfly index j = x * 2^s0 + lo (x = m mod 2^t) is w_{s+1}^j.
//
// One block of a pass: entry e of its shared array is a[at(e)], for every m and
// 2^lo_bits consecutive lo (lo_bits = block_log - k) starting at lo0.
struct pass_block {
    uint32_t lo_bits, s0, size;
    size_t lo0, base;

    __device__ __forceinline__ pass_block(uint32_t s0_, uint32_t k, uint32_t block_log)
        : lo_bits(block_log - k), s0(s0_), size(1u << block_log)
    {
        const size_t groups = (size_t)1 << (s0 - lo_bits);
        lo0 = (blockIdx.x % groups) << lo_bits;
        base = ((blockIdx.x / groups) << (s0 + k)) + lo0;
    }
    __device__ __forceinline__ size_t at(uint32_t e) const
    {
        return base + ((size_t)(e >> lo_bits) << s0) + (e & ((1u << lo_bits) - 1));
    }
    __device__ __forceinline__ void load(const fr_t* a, fr_t* sm) const
    {
        for (uint32_t e = threadIdx.x; e < size; e += blockDim.x)
            sm[e] = a[at(e)];
    }
    __device__ __forceinline__ void store(fr_t* a, const fr_t* sm) const
    {
        for (uint32_t e = threadIdx.x; e < size; e += blockDim.x)
            a[at(e)] = sm[e];
    }
};

// The twiddle of stage s = s0 + t for sub-transform index x and offset lo0 + lo.
// FLAT: twiddle_flat's table read.
template<bool FLAT = false>
__device__ __forceinline__ fr_t pass_twiddle(const fr_t* tw, uint32_t tw_log, uint32_t s0, uint32_t t,
                                             uint32_t x, size_t lo, uint32_t inv)
{
    const uint32_t s = s0 + t;
    const size_t k = (((size_t)x << s0) + lo) << (tw_log - s - 1);
    return FLAT ? twiddle_flat(tw, tw_log, k, inv) : twiddle(tw, tw_log, k, inv);
}

// One radix-2 stage t of a pass on shared memory: butterfly q (of 2^(block_log - 1)).
__device__ __forceinline__ void pass_butterfly(fr_t* sm, const fr_t* tw, uint32_t tw_log, uint32_t s0,
                                               uint32_t t, uint32_t lo_bits, size_t lo0, uint32_t bf,
                                               uint32_t inv, uint32_t dif)
{
    const uint32_t lo = bf & ((1u << lo_bits) - 1), q = bf >> lo_bits;
    const uint32_t x = q & ((1u << t) - 1);
    const uint32_t m0 = ((q >> t) << (t + 1)) | x;
    const uint32_t e0 = (m0 << lo_bits) | lo, e1 = e0 + (1u << (t + lo_bits));
    const fr_t w = pass_twiddle(tw, tw_log, s0, t, x, lo0 + lo, inv);
    fr_t u = sm[e0], v = sm[e1];
    if (dif) {
        sm[e0] = u + v;
        sm[e1] = (u - v) * w;
    } else {
        v = v * w;
        sm[e0] = u + v;
        sm[e1] = u - v;
    }
}

// Radix 2: 2^(block_log - 1) threads, one butterfly each per stage, a barrier per stage.
extern "C" __global__ void __launch_bounds__(1 << (NTT_SHARED_LOG - 1))
fr_ntt_pass(fr_t* a, const fr_t* tw, uint32_t s0, uint32_t k, uint32_t block_log, uint32_t tw_log,
            uint32_t inv, uint32_t dif)
{
    __shared__ __align__(32) uint4 raw[2 << NTT_SHARED_LOG];
    fr_t* sm = reinterpret_cast<fr_t*>(raw);
    const pass_block blk(s0, k, block_log);
    const uint32_t lo_bits = blk.lo_bits;
    const size_t lo0 = blk.lo0;
    blk.load(a, sm);
    __syncthreads();
    for (uint32_t step = 0; step < k; step++) {
        const uint32_t t = dif ? k - 1 - step : step;
        pass_butterfly(sm, tw, tw_log, s0, t, lo_bits, lo0, threadIdx.x, inv, dif);
        __syncthreads();
    }
    blk.store(a, sm);
}

// Radix 4: 2^(block_log - 2) threads (block_log >= 2). Each thread takes the four entries
// m0, m0 + 2^t, m0 + 2^(t+1), m0 + 3 * 2^t of stages t and t + 1 into registers, so one
// barrier and one shared-memory round trip serve two stages; an odd stage left over (the
// last one going up, the first going down) is done radix 2, two butterflies per thread.
extern "C" __global__ void __launch_bounds__(1 << (NTT_SHARED_LOG - 2))
fr_ntt_pass4(fr_t* a, const fr_t* tw, uint32_t s0, uint32_t k, uint32_t block_log, uint32_t tw_log,
             uint32_t inv, uint32_t dif)
{
    __shared__ __align__(32) uint4 raw[2 << NTT_SHARED_LOG];
    fr_t* sm = reinterpret_cast<fr_t*>(raw);
    const pass_block blk(s0, k, block_log);
    const uint32_t lo_bits = blk.lo_bits, lo_cnt = 1u << lo_bits;
    const size_t lo0 = blk.lo0;
    const uint32_t quarter = 1u << (block_log - 2);
    blk.load(a, sm);
    __syncthreads();
    const uint32_t pairs = k / 2, odd = k & 1;
    // DIF: the odd stage (k - 1) first.
    if (dif && odd) {
        for (uint32_t bf = threadIdx.x; bf < 2 * quarter; bf += quarter)
            pass_butterfly(sm, tw, tw_log, s0, k - 1, lo_bits, lo0, bf, inv, 1);
        __syncthreads();
    }
    const uint32_t g = threadIdx.x;
    const uint32_t lo = g & (lo_cnt - 1), q = g >> lo_bits;
    for (uint32_t p = 0; p < pairs; p++) {
        const uint32_t t = 2 * (dif ? pairs - 1 - p : p);
        const uint32_t x = q & ((1u << t) - 1);
        const uint32_t m0 = ((q >> t) << (t + 2)) | x;
        const uint32_t e0 = (m0 << lo_bits) | lo, h = 1u << (t + lo_bits);
        const size_t l = lo0 + lo;
        // Stage t: pairs (0, 1) and (2, 3), both with index x; stage t + 1: pairs (0, 2)
        // with index x and (1, 3) with index x + 2^t.
        const fr_t w = pass_twiddle(tw, tw_log, s0, t, x, l, inv);
        const fr_t w0 = pass_twiddle(tw, tw_log, s0, t + 1, x, l, inv);
        const fr_t w1 = pass_twiddle(tw, tw_log, s0, t + 1, x + (1u << t), l, inv);
        fr_t x0 = sm[e0], x1 = sm[e0 + h], x2 = sm[e0 + 2 * h], x3 = sm[e0 + 3 * h];
        if (!dif) {
            fr_t t1 = x1 * w, t3 = x3 * w;
            fr_t y0 = x0 + t1, y1 = x0 - t1, y2 = x2 + t3, y3 = x2 - t3;
            fr_t u2 = y2 * w0, u3 = y3 * w1;
            sm[e0] = y0 + u2;
            sm[e0 + 2 * h] = y0 - u2;
            sm[e0 + h] = y1 + u3;
            sm[e0 + 3 * h] = y1 - u3;
        } else {
            fr_t y0 = x0 + x2, y2 = (x0 - x2) * w0, y1 = x1 + x3, y3 = (x1 - x3) * w1;
            sm[e0] = y0 + y1;
            sm[e0 + h] = (y0 - y1) * w;
            sm[e0 + 2 * h] = y2 + y3;
            sm[e0 + 3 * h] = (y2 - y3) * w;
        }
        __syncthreads();
    }
    // DIT: the odd stage (k - 1) last.
    if (!dif && odd) {
        for (uint32_t bf = threadIdx.x; bf < 2 * quarter; bf += quarter)
            pass_butterfly(sm, tw, tw_log, s0, k - 1, lo_bits, lo0, bf, inv, 0);
        __syncthreads();
    }
    blk.store(a, sm);
}

// Radix 2^R: a group is the 2^R entries m0 + j * 2^t (j < 2^R) of stages t .. t + R - 1,
// held in registers for all R stages (one shared-memory round trip and one barrier per R
// stages). Stage t + u pairs j with j + 2^u (bit u of j clear) with the twiddle of index
// x + (j mod 2^u) * 2^t; DIT runs u upwards with t = v * w, (u + t, u - t); DIF downwards
// with (u + v, (u - v) * w). R and DIF are template arguments so that every register
// index is known after unrolling (else v would live in local memory). fr_ntt_pass4 writes
// its R = 2 group out by hand: through this template it was 3-4% slower on the H200
// (BENCHMARKS.md, eighteenth session).
//
// AHEAD: the group's 2^R - 1 twiddles are read first, without a branch (twiddle_flat), so
// their loads are in flight together instead of one before each stage's products.
template<int R, bool DIF, bool AHEAD>
__device__ __forceinline__ void pass_group(fr_t* sm, const fr_t* tw, uint32_t tw_log, const pass_block& blk,
                                           uint32_t t, uint32_t g, uint32_t inv)
{
    const uint32_t lo_bits = blk.lo_bits;
    const uint32_t lo = g & ((1u << lo_bits) - 1), q = g >> lo_bits;
    const uint32_t x = q & ((1u << t) - 1);
    const uint32_t m0 = ((q >> t) << (t + R)) | x;
    const uint32_t e0 = (m0 << lo_bits) | lo, h = 1u << (t + lo_bits);
    const size_t l = blk.lo0 + lo;
    // Stage u's twiddle r at ws[2^u - 1 + r].
    fr_t ws[(1 << R) - 1];
    if (AHEAD) {
#pragma unroll
        for (int u = 0; u < R; u++)
#pragma unroll
            for (int r = 0; r < (1 << u); r++)
                ws[(1 << u) - 1 + r] = pass_twiddle<true>(tw, tw_log, blk.s0, t + u, x + ((uint32_t)r << t), l, inv);
    }
    fr_t v[1 << R];
#pragma unroll
    for (int j = 0; j < (1 << R); j++)
        v[j] = sm[e0 + j * h];
#pragma unroll
    for (int step = 0; step < R; step++) {
        const int u = DIF ? R - 1 - step : step, half = 1 << u;
        // Twiddle r serves the butterflies (j, j + half) with j mod 2 * half = r.
#pragma unroll
        for (int r = 0; r < half; r++) {
            const fr_t w = AHEAD ? ws[half - 1 + r] : pass_twiddle(tw, tw_log, blk.s0, t + u, x + ((uint32_t)r << t), l, inv);
#pragma unroll
            for (int j = r; j < (1 << R); j += 2 * half) {
                const fr_t a = v[j];
                if (DIF) {
                    const fr_t b = v[j + half];
                    v[j] = a + b;
                    v[j + half] = (a - b) * w;
                } else {
                    const fr_t b = v[j + half] * w;
                    v[j] = a + b;
                    v[j + half] = a - b;
                }
            }
        }
    }
#pragma unroll
    for (int j = 0; j < (1 << R); j++)
        sm[e0 + j * h] = v[j];
}

// pass_group with R = r (1 <= r <= 3) and the direction chosen at run time.
template<bool DIF, bool AHEAD>
__device__ __forceinline__ void pass_group_of(uint32_t r, fr_t* sm, const fr_t* tw, uint32_t tw_log,
                                              const pass_block& blk, uint32_t t, uint32_t g, uint32_t inv)
{
    if (r == 3)
        pass_group<3, DIF, AHEAD>(sm, tw, tw_log, blk, t, g, inv);
    else if (r == 2)
        pass_group<2, DIF, AHEAD>(sm, tw, tw_log, blk, t, g, inv);
    else
        pass_group<1, DIF, AHEAD>(sm, tw, tw_log, blk, t, g, inv);
}

// Radix 8: 2^(block_log - 3) threads (block_log >= 3), eight entries each. The pass's k
// stages go in steps of three (the last step one or two when 3 does not divide k), DIT
// upwards and DIF downwards (so DIF starts with the short step), a barrier per step; each
// thread takes its step's groups in turn.
template<bool AHEAD>
__device__ __forceinline__ void ntt_pass8(fr_t* a, const fr_t* tw, uint32_t s0, uint32_t k, uint32_t block_log,
                                          uint32_t tw_log, uint32_t inv, uint32_t dif)
{
    __shared__ __align__(32) uint4 raw[2 << NTT_SHARED_LOG];
    fr_t* sm = reinterpret_cast<fr_t*>(raw);
    const pass_block blk(s0, k, block_log);
    blk.load(a, sm);
    __syncthreads();
    const uint32_t steps = (k + 2) / 3;
    for (uint32_t i = 0; i < steps; i++) {
        const uint32_t t = 3 * (dif ? steps - 1 - i : i), r = min(3u, k - t);
        for (uint32_t g = threadIdx.x; g < (1u << (block_log - r)); g += blockDim.x) {
            if (dif)
                pass_group_of<true, AHEAD>(r, sm, tw, tw_log, blk, t, g, inv);
            else
                pass_group_of<false, AHEAD>(r, sm, tw, tw_log, blk, t, g, inv);
        }
        __syncthreads();
    }
    blk.store(a, sm);
}

extern "C" __global__ void __launch_bounds__(1 << (NTT_SHARED_LOG - 3))
fr_ntt_pass8(fr_t* a, const fr_t* tw, uint32_t s0, uint32_t k, uint32_t block_log, uint32_t tw_log,
             uint32_t inv, uint32_t dif)
{   ntt_pass8<false>(a, tw, s0, k, block_log, tw_log, inv, dif);   }
extern "C" __global__ void __launch_bounds__(1 << (NTT_SHARED_LOG - 3))
fr_ntt_pass8_ahead(fr_t* a, const fr_t* tw, uint32_t s0, uint32_t k, uint32_t block_log, uint32_t tw_log,
                   uint32_t inv, uint32_t dif)
{   ntt_pass8<true>(a, tw, s0, k, block_log, tw_log, inv, dif);   }

// a[i] *= c[0] * g^(bitrev(i)): the coset scaling of coefficients held in bit-reversed
// order (after a DIF transform), so the forward DIT transform reads them as they lie.
extern "C" __global__ void fr_scale_powers_bitrev(fr_t* a, uint32_t log_n, const fr_t* c, const fr_t* lo,
                                                  const fr_t* hi, uint32_t split)
{
    size_t i = global_tid();
    if (i >= ((size_t)1 << log_n))
        return;
    const size_t j = log_n == 0 ? 0 : __brevll(i) >> (64 - log_n);
    fr_t f = c[0] * (lo[j & (((size_t)1 << split) - 1)] * hi[j >> split]);
    a[i] = a[i] * f;
}

// out[i] = a[bitrev(i)] * c[0] * g^i, as canonical bytes when `canonical` (MSM scalars):
// the last step of the h pipeline, from the DIF inverse transform's bit-reversed
// coefficients to h in natural order. Out of place (out != a).
extern "C" __global__ void fr_unbitrev_scale_canonical(const fr_t* a, fr_t* out, uint32_t log_n,
                                                       const fr_t* c, const fr_t* lo, const fr_t* hi,
                                                       uint32_t split, uint32_t canonical)
{
    size_t i = global_tid();
    if (i >= ((size_t)1 << log_n))
        return;
    const size_t j = log_n == 0 ? 0 : __brevll(i) >> (64 - log_n);
    fr_t x = a[j] * (c[0] * (lo[i & (((size_t)1 << split) - 1)] * hi[i >> split]));
    if (canonical)
        x.from();
    out[i] = x;
}

// out[i] = (a[i] * b[i] - c[i]) * zinv[0] (out may be a or b).
extern "C" __global__ void fr_ab_minus_c_div_z_to(fr_t* out, const fr_t* a, const fr_t* b, const fr_t* c,
                                                  size_t n, const fr_t* zinv)
{
    size_t i = global_tid();
    if (i >= n)
        return;
    fr_t x = a[i] * b[i];
    x -= c[i];
    out[i] = x * zinv[0];
}

// Two DIT stages s and s+1 (radix-4 pass): each thread owns 4 elements
// i, i + h, i + 2h, i + 3h with h = 2^s.
extern "C" __global__ void fr_ntt_stage2(fr_t* a, const fr_t* tw, uint32_t log_n, uint32_t s,
                                         uint32_t tw_log, uint32_t inv)
{
    size_t t = global_tid();
    if (t >= ((size_t)1 << (log_n - 2)))
        return;
    const size_t h = (size_t)1 << s;
    const size_t j = t & (h - 1);
    const size_t i0 = ((t >> s) << (s + 2)) + j;
    fr_t x0 = a[i0], x1 = a[i0 + h], x2 = a[i0 + 2 * h], x3 = a[i0 + 3 * h];
    // stage s: pairs (x0, x1) and (x2, x3), twiddle index j within blocks of 2h.
    fr_t w = twiddle(tw, tw_log, j << (tw_log - s - 1), inv);
    fr_t t1 = x1 * w, t3 = x3 * w;
    fr_t y0 = x0 + t1, y1 = x0 - t1, y2 = x2 + t3, y3 = x2 - t3;
    // stage s+1: pairs (y0, y2) with index j and (y1, y3) with index j + h, blocks of 4h.
    fr_t w0 = twiddle(tw, tw_log, j << (tw_log - s - 2), inv);
    fr_t w1 = twiddle(tw, tw_log, (j + h) << (tw_log - s - 2), inv);
    fr_t u2 = y2 * w0, u3 = y3 * w1;
    a[i0] = y0 + u2;
    a[i0 + 2 * h] = y0 - u2;
    a[i0 + h] = y1 + u3;
    a[i0 + 3 * h] = y1 - u3;
}

// One DIT stage s (half = 2^s) over the whole array; one thread per butterfly.
extern "C" __global__ void fr_ntt_stage(fr_t* a, const fr_t* tw, uint32_t log_n, uint32_t s,
                                        uint32_t tw_log, uint32_t inv)
{
    size_t t = global_tid();
    if (t >= ((size_t)1 << (log_n - 1)))
        return;
    const size_t half = (size_t)1 << s;
    const size_t j = t & (half - 1);
    const size_t i0 = ((t >> s) << (s + 1)) + j;
    fr_t w = twiddle(tw, tw_log, j << (tw_log - s - 1), inv);
    fr_t u = a[i0];
    fr_t v = a[i0 + half] * w;
    a[i0] = u + v;
    a[i0 + half] = u - v;
}

// tw[k] = lo[k & (2^split - 1)] * hi[k >> split] for k < count.
extern "C" __global__ void fr_powers_from_split(fr_t* tw, size_t count, const fr_t* lo,
                                                const fr_t* hi, uint32_t split)
{
    size_t k = global_tid();
    if (k >= count)
        return;
    tw[k] = lo[k & (((size_t)1 << split) - 1)] * hi[k >> split];
}

// a[i] *= c[0] * g^i, with g^i = lo[i & (2^split - 1)] * hi[i >> split]; lo == nullptr
// means a plain a[i] *= c[0].
extern "C" __global__ void fr_scale_powers(fr_t* a, size_t n, const fr_t* c, const fr_t* lo,
                                           const fr_t* hi, uint32_t split)
{
    size_t i = global_tid();
    if (i >= n)
        return;
    fr_t f = c[0];
    if (lo != nullptr)
        f = f * (lo[i & (((size_t)1 << split) - 1)] * hi[i >> split]);
    a[i] = a[i] * f;
}

// a[i] = (a[i] * b[i] - c[i]) * zinv[0]: the quotient's evaluations on the coset.
extern "C" __global__ void fr_ab_minus_c_div_z(fr_t* a, const fr_t* b, const fr_t* c, size_t n,
                                               const fr_t* zinv)
{
    size_t i = global_tid();
    if (i >= n)
        return;
    fr_t x = a[i] * b[i];
    x -= c[i];
    a[i] = x * zinv[0];
}

// out[i] = canonical (non-Montgomery) little-endian form of a[i]: MSM scalars.
extern "C" __global__ void fr_to_canonical(const fr_t* a, fr_t* out, size_t n)
{
    size_t i = global_tid();
    if (i >= n)
        return;
    fr_t x = a[i];
    x.from();
    out[i] = x;
}
