// Multi-scalar multiplication, point side: templates over the bucket type (xyzz over Fp
// for G1, over Fp2 for G2), instantiated with extern "C" names in msm_g1.cu / msm_g2.cu.
// See msm_sort.cu for the whole pipeline.
#pragma once
#include "common.cuh"

// 0/1 fast path: thread t sums the bases i = t, t + stride, ... whose scalar is exactly one
// (boolean-heavy witnesses: most of SHA-256's and PoRep's nonzero scalars). Every thread
// writes its sum (infinity if none), so msm_reduce can fold the grid's sums.
template<class xyzz, class affine>
__device__ __forceinline__ void ones(const typename affine::mem_t* bases, const uint32_t* scalars,
                                     uint32_t n, typename xyzz::mem_t* out)
{
    const size_t t = global_tid(), stride = (size_t)gridDim.x * blockDim.x;
    xyzz acc;
    acc.inf();
    for (size_t i = t; i < n; i += stride)
        if (scalar_is_one(scalars + 8 * i)) {
            affine pt = bases[i];
            acc.add(pt);
        }
    out[t] = acc;
}

// Whether the scalar (8 words) is zero.
__device__ __forceinline__ bool scalar_is_zero(const uint32_t* s)
{
    uint32_t any = 0;
#pragma unroll
    for (int k = 0; k < 8; k++)
        any |= s[k];
    return any == 0;
}

// Most warps in a block of the compacting 0/1 kernel (1024 threads).
#define ONES_QUEUE_WARPS 32

// The 0/1 fast path of the sparse sort: as `ones`, and the indices of the scalars that are
// neither zero nor one appended to rest[0 .. cap) (their count, even past cap, in *nrest;
// the sort reads rest only when *nrest <= cap). A warp walks 32 consecutive scalars at a
// time, so every lane is present at the ballots. The ones are not added where they lie
// (with ones and zeros mixed, half of a warp's lanes would idle at each addition): each
// warp queues their indices in shared memory and all 32 lanes add once 32 are queued.
// The order of rest depends on the warps' timing; the buckets' sums do not.
template<class xyzz, class affine>
__device__ __forceinline__ void ones_compact(const typename affine::mem_t* bases,
                                             const uint32_t* scalars, uint32_t n,
                                             typename xyzz::mem_t* out, uint32_t* rest,
                                             uint32_t* nrest, uint32_t cap)
{
    __shared__ uint32_t queues[ONES_QUEUE_WARPS][64];
    const size_t t = global_tid(), stride = (size_t)gridDim.x * blockDim.x;
    const uint32_t lane = threadIdx.x & 31, below = (1u << lane) - 1;
    uint32_t* q = queues[threadIdx.x >> 5];
    uint32_t queued = 0; // the same in every lane: always below 32 between steps
    xyzz acc;
    acc.inf();
    for (size_t i = t; i - lane < n; i += stride) {
        bool one = false, other = false;
        if (i < n) {
            const uint4* p = reinterpret_cast<const uint4*>(scalars + 8 * i);
            const uint4 a = p[0], b = p[1];
            const uint32_t s[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
            one = scalar_is_one(s);
            other = !one && !scalar_is_zero(s);
        }
        const uint32_t ones = __ballot_sync(0xffffffffu, one);
        if (one)
            q[queued + __popc(ones & below)] = (uint32_t)i;
        queued += __popc(ones);
        __syncwarp();
        if (queued >= 32) {
            affine pt = bases[q[lane]];
            acc.add(pt);
            __syncwarp();
            if (lane < queued - 32)
                q[lane] = q[32 + lane];
            queued -= 32;
            __syncwarp();
        }
        const uint32_t others = __ballot_sync(0xffffffffu, other);
        if (others == 0)
            continue;
        // Once the count is past cap the list is not read: no more atomics or writes (dense
        // scalars would otherwise put one atomic per warp on a single address).
        uint32_t first = cap;
        if (lane == 0 && *(volatile uint32_t*)nrest <= cap)
            first = atomicAdd(nrest, (uint32_t)__popc(others));
        first = __shfl_sync(0xffffffffu, first, 0);
        const uint32_t slot = first + __popc(others & below);
        if (other && first < cap && slot < cap)
            rest[slot] = (uint32_t)i;
    }
    if (lane < queued) {
        affine pt = bases[q[lane]];
        acc.add(pt);
    }
    out[t] = acc;
}

// One thread per group of `fan` points: out[t] = sum in[t * fan .. min((t + 1) * fan, n)).
template<class xyzz>
__device__ __forceinline__ void reduce(const typename xyzz::mem_t* in, uint32_t n, uint32_t fan,
                                       typename xyzz::mem_t* out)
{
    const size_t t = global_tid(), lo = t * fan;
    if (lo >= n)
        return;
    const size_t hi = min(lo + fan, (size_t)n);
    xyzz acc;
    acc.inf();
    for (size_t i = lo; i < hi; i++) {
        xyzz q = in[i];
        acc.add(q);
    }
    out[t] = acc;
}

// One thread per piece: the sum of its affine points. SIGNED: bit 31 of an entry says
// "add the negated point" (msm_sort.cu's signed digits); unsigned entries are plain indices.
// Thread k sums piece perm[k] (msm_piece_order: the pieces by decreasing length), or piece k
// without a perm; the sum goes to the piece's own slot either way.
template<class xyzz, class affine, bool SIGNED>
__device__ __forceinline__ void accumulate(const typename affine::mem_t* bases, const uint32_t* idx,
                                           const uint2* pieces, const uint32_t* npieces,
                                           const uint32_t* perm, typename xyzz::mem_t* partial)
{
    const size_t k = global_tid();
    if (k >= *npieces)
        return;
    const size_t p = perm != nullptr ? perm[k] : k;
    const uint2 pc = pieces[p];
    xyzz acc;
    acc.inf();
    for (uint32_t j = pc.x; j < pc.x + pc.y; j++) {
        const uint32_t e = idx[j];
        if (SIGNED) {
            affine pt = bases[e & 0x7fffffffu];
            acc.add(pt, (e >> 31) != 0);
        } else {
            affine pt = bases[e];
            acc.add(pt);
        }
    }
    partial[p] = acc;
}

// A piece's sum as the madd kernels keep it: xyzz (x = X/ZZ, y = Y/ZZZ; ZZ = 0 is infinity),
// fields in xyzz_t::mem_t's order, with its mixed addition written out (EFD add-madd-2008-s:
// 8M + 2S) so that it inlines into the loop. sppark's xyzz_t::add carries its doubling in
// the same body; for G2 (Fp2) nvcc keeps that body out of line, a call per point with the
// sum passed through local memory (608 bytes of stack). Here the doubling and the P = -Q
// case, which random points almost never meet, are a call of their own, off the loop.
template<class field>
struct madd_acc {
    field X, Y, ZZZ, ZZ;

    __device__ __forceinline__ void inf()
    {
        ZZZ.zero();
        ZZ.zero();
    }
};

// 2 * (x, y) (EFD mdbl-2008-s-1: the affine point doubled) for `dbl`, else infinity (the
// point was added to its own negation). By value: the sum's address never escapes the loop.
template<class field>
__device__ __noinline__ madd_acc<field> madd_rare(const field x, const field y, bool dbl)
{
    madd_acc<field> r;
    if (!dbl) {
        r.inf();
        return r;
    }
    field U = y + y;   // U = 2y
    field V = U ^ 2;   // V = U^2
    field W = U * V;   // W = U V
    field S = x * V;   // S = x V
    field M = x ^ 2;
    M = M + M + M;     // M = 3 x^2 (a = 0)
    r.X = M ^ 2;
    r.X -= S;
    r.X -= S;          // X3 = M^2 - 2 S
    S -= r.X;
    S *= M;
    r.Y = W * y;
    r.Y = S - r.Y;     // Y3 = M (S - X3) - W y
    r.ZZ = V;
    r.ZZZ = W;
    return r;
}

// acc += (x, y), y already negated for a negative digit; (0, 0) is infinity.
template<class field>
__device__ __forceinline__ void madd(madd_acc<field>& acc, const field& x, const field& y)
{
    if (x.is_zero(y))
        return;
    if (acc.ZZ.is_zero()) {
        acc.X = x;
        acc.Y = y;
        acc.ZZ = field::one();
        acc.ZZZ = acc.ZZ;
        return;
    }
    field R = y * acc.ZZZ;  // S2 = y ZZZ1
    R -= acc.Y;             // R = S2 - Y1
    field P = x * acc.ZZ;   // U2 = x ZZ1
    P -= acc.X;             // P = U2 - X1
    if (P.is_zero()) {
        acc = madd_rare<field>(x, y, R.is_zero());
        return;
    }
    field PP = P ^ 2;       // PP = P^2
    P *= PP;                // PPP = P PP
    acc.ZZ *= PP;           // ZZ3 = ZZ1 PP
    acc.ZZZ *= P;           // ZZZ3 = ZZZ1 PPP
    PP *= acc.X;            // Q = X1 PP
    acc.X = R ^ 2;
    acc.X -= P;
    acc.X -= PP;
    acc.X -= PP;            // X3 = R^2 - PPP - 2 Q
    PP -= acc.X;
    PP *= R;                // R (Q - X3)
    acc.Y *= P;             // Y1 PPP
    acc.Y = PP - acc.Y;     // Y3 = R (Q - X3) - Y1 PPP
}

// `accumulate` (signed) through `madd`: the same piece sums, bit for bit in the group (the
// coordinates may differ by the xyzz scaling, which every later kernel accepts).
template<class xyzz, class affine, class field>
__device__ __forceinline__ void accumulate_madd(const typename affine::mem_t* bases, const uint32_t* idx,
                                                const uint2* pieces, const uint32_t* npieces,
                                                const uint32_t* perm, typename xyzz::mem_t* partial)
{
    static_assert(sizeof(typename affine::mem_t) == 2 * sizeof(field), "affine is (x, y)");
    static_assert(sizeof(typename xyzz::mem_t) == 4 * sizeof(field), "xyzz is (X, Y, ZZZ, ZZ)");
    const size_t k = global_tid();
    if (k >= *npieces)
        return;
    const size_t p = perm != nullptr ? perm[k] : k;
    const uint2 pc = pieces[p];
    const field* pts = reinterpret_cast<const field*>(bases);
    madd_acc<field> acc;
    acc.inf();
#pragma unroll 1
    for (uint32_t j = pc.x; j < pc.x + pc.y; j++) {
        const uint32_t e = idx[j];
        const size_t at = 2 * (size_t)(e & 0x7fffffffu);
        const field x = pts[at];
        field y = pts[at + 1];
        y.cneg((e >> 31) != 0);
        madd(acc, x, y);
    }
    field* out = reinterpret_cast<field*>(partial + p);
    out[0] = acc.X;
    out[1] = acc.Y;
    out[2] = acc.ZZZ;
    out[3] = acc.ZZ;
}

// One thread per bucket: the sum of its pieces, written to out[b] or (add: a chunked
// MSM's later chunk) added to what out[b] holds.
template<class xyzz>
__device__ __forceinline__ void buckets(const typename xyzz::mem_t* partial, const uint32_t* poffsets,
                                        uint32_t m, uint32_t add, typename xyzz::mem_t* out)
{
    size_t b = global_tid();
    if (b >= m)
        return;
    xyzz acc;
    if (add)
        acc = out[b];
    else
        acc.inf();
    for (uint32_t p = poffsets[b]; p < poffsets[b + 1]; p++) {
        xyzz q = partial[p];
        acc.add(q);
    }
    out[b] = acc;
}

// One thread per (window, segment of 2^seg_log buckets [lo, lo + len)), `c` bucket bits
// per window, bucket d weighing d + base (base 0: unsigned digits; 1: signed, bucket
// |digit| - 1): out = sum_{d in segment} (d + base) * B_d = acc + (lo + base) * run, where
// run = sum B_d and acc = sum (d - lo) * B_d by running sums from the top.
template<class xyzz>
__device__ __forceinline__ void window_segments(const typename xyzz::mem_t* bkts, uint32_t c,
                                                uint32_t nwin, uint32_t seg_log, uint32_t base,
                                                typename xyzz::mem_t* seg_out)
{
    size_t t = global_tid();
    const uint32_t nseg = 1u << (c - seg_log);
    if (t >= (size_t)nwin * nseg)
        return;
    const uint32_t w = t / nseg, seg = t % nseg;
    const uint32_t lo = seg << seg_log, len = 1u << seg_log;
    const typename xyzz::mem_t* B = bkts + ((size_t)w << c);
    xyzz run, acc;
    run.inf();
    acc.inf();
    for (uint32_t d = lo + len - 1; d > lo; d--) {
        xyzz b = B[d];
        run.add(b);
        acc.add(run);
    }
    {
        xyzz b = B[lo];
        run.add(b);
    }
    const uint32_t k = lo + base;
    if (k != 0) {
        // acc += k * run, double-and-add from the top bit.
        xyzz q;
        q.inf();
        for (int bit = 31 - __clz(k); bit >= 0; bit--) {
            xyzz d2 = q;
            q.add(d2);
            if ((k >> bit) & 1)
                q.add(run);
        }
        acc.add(q);
    }
    seg_out[t] = acc;
}

// One thread per window: the sum of its segments, written as blst's Jacobian point
// (X, Y, Z with X = X*ZZ, Y = Y*ZZZ, Z = ZZ; infinity has Z = 0).
template<class xyzz, class field>
__device__ __forceinline__ void window_sums(const typename xyzz::mem_t* seg_out, uint32_t nseg,
                                            uint32_t nwin, field* out)
{
    size_t w = global_tid();
    if (w >= nwin)
        return;
    xyzz acc;
    acc.inf();
    for (uint32_t s = 0; s < nseg; s++) {
        xyzz q = seg_out[w * nseg + s];
        acc.add(q);
    }
    // xyzz_t keeps its fields private; its mem_t has the same layout (X, Y, ZZZ, ZZ).
    typename xyzz::mem_t m;
    m = acc;
    const field* f = reinterpret_cast<const field*>(&m);
    field X = f[0], Y = f[1], ZZZ = f[2], ZZ = f[3];
    out[3 * w + 0] = X * ZZ;
    out[3 * w + 1] = Y * ZZZ;
    out[3 * w + 2] = ZZ;
}

// ACC_THREADS: the block size the signed accumulate and the compacting 0/1 kernels are
// bounded for (the host launches them with exactly that many threads: msm.rs,
// `SIGNED_ACC_THREADS`).
#define MSM_POINT_KERNELS(SUFFIX, XYZZ, AFFINE, FIELD, ACC_THREADS)                             \
    extern "C" __global__ void msm_ones_##SUFFIX(const AFFINE::mem_t* bases,                    \
        const uint32_t* scalars, uint32_t n, XYZZ::mem_t* out)                                  \
    {   ones<XYZZ, AFFINE>(bases, scalars, n, out);   }                                         \
    extern "C" __global__ void __launch_bounds__(ACC_THREADS) msm_ones_compact_##SUFFIX(        \
        const AFFINE::mem_t* bases, const uint32_t* scalars, uint32_t n, XYZZ::mem_t* out,      \
        uint32_t* rest, uint32_t* nrest, uint32_t cap)                                          \
    {   ones_compact<XYZZ, AFFINE>(bases, scalars, n, out, rest, nrest, cap);   }               \
    extern "C" __global__ void msm_reduce_##SUFFIX(const XYZZ::mem_t* in, uint32_t n,           \
        uint32_t fan, XYZZ::mem_t* out)                                                         \
    {   reduce<XYZZ>(in, n, fan, out);   }                                                      \
    extern "C" __global__ void msm_accumulate_##SUFFIX(const AFFINE::mem_t* bases,              \
        const uint32_t* idx, const uint2* pieces, const uint32_t* npieces, const uint32_t* perm, \
        XYZZ::mem_t* partial)                                                                   \
    {   accumulate<XYZZ, AFFINE, false>(bases, idx, pieces, npieces, perm, partial);   }        \
    extern "C" __global__ void __launch_bounds__(ACC_THREADS) msm_accumulate_signed_##SUFFIX(  \
        const AFFINE::mem_t* bases, const uint32_t* idx, const uint2* pieces,                   \
        const uint32_t* npieces, const uint32_t* perm, XYZZ::mem_t* partial)                    \
    {   accumulate<XYZZ, AFFINE, true>(bases, idx, pieces, npieces, perm, partial);   }         \
    extern "C" __global__ void __launch_bounds__(ACC_THREADS) msm_accumulate_madd_##SUFFIX(    \
        const AFFINE::mem_t* bases, const uint32_t* idx, const uint2* pieces,                   \
        const uint32_t* npieces, const uint32_t* perm, XYZZ::mem_t* partial)                    \
    {   accumulate_madd<XYZZ, AFFINE, FIELD>(bases, idx, pieces, npieces, perm, partial);   }   \
    extern "C" __global__ void msm_buckets_##SUFFIX(const XYZZ::mem_t* partial,                \
        const uint32_t* poffsets, uint32_t m, uint32_t add, XYZZ::mem_t* out)                  \
    {   buckets<XYZZ>(partial, poffsets, m, add, out);   }                                      \
    extern "C" __global__ void msm_window_segments_##SUFFIX(const XYZZ::mem_t* bkts,            \
        uint32_t c, uint32_t nwin, uint32_t seg_log, uint32_t base, XYZZ::mem_t* seg_out)      \
    {   window_segments<XYZZ>(bkts, c, nwin, seg_log, base, seg_out);   }                       \
    extern "C" __global__ void msm_window_sums_##SUFFIX(const XYZZ::mem_t* seg_out,             \
        uint32_t nseg, uint32_t nwin, FIELD* out)                                               \
    {   window_sums<XYZZ, FIELD>(seg_out, nseg, nwin, out);   }
