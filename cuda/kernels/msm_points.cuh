// Multi-scalar multiplication, point side: templates over the point arithmetic (`Ops`:
// xyzz buckets over Fp for G1, over Fp2 for G2), instantiated with extern "C" names in
// msm_g1.cu / msm_g2.cu. See msm_sort.cu for the whole pipeline.
#pragma once
#include "common.cuh"

// The point arithmetic, two ways (each kernel below is a template over one):
//
// - `sppark_ops`: sppark's xyzz_t, whose additions carry their doubling and infinity cases
//   in one body. For G2 (Fp2) nvcc keeps that body out of line: a call per addition, the
//   sum passed through local memory (608 bytes of stack in the accumulation).
// - `inline_ops`: the mixed addition (bucket += base, EFD add-madd-2008-s) written out in
//   the same coordinates (xyzz, fields in xyzz_t::mem_t's order), so that it inlines into
//   the loop; the cases random points almost never meet (a base added to itself or to
//   its negation) are a call of their own, by value, off the loop.
//
// The kernels of mixed additions (the 0/1 sums, the accumulation) come both ways
// (`Gpu::set_msm_madd`; sppark's are the benches' baseline). The kernels of full additions
// (bucket sums, running sums, folds) run sppark's only: written out for Fp2 they spilled
// (9.7 KB in the running sums) and the G2 2^22 reduction took 16.8 ms against 15.0; in G1
// they were within 0.4 ms (BENCHMARKS.md, nineteenth session). Both give the same points
// (a sum's xyzz coordinates may differ by a scaling, which every later step accepts); the
// GPU tests run every kernel both ways against blst.

template<class XYZZ, class AFFINE>
struct sppark_ops {
    using acc_t = XYZZ;
    using bucket_t = typename XYZZ::mem_t;
    using base_t = typename AFFINE::mem_t;

    static __device__ __forceinline__ acc_t inf()
    {
        acc_t a;
        a.inf();
        return a;
    }
    static __device__ __forceinline__ void add_base(acc_t& acc, const base_t* bases, size_t i, bool neg)
    {
        AFFINE pt = bases[i];
        acc.add(pt, neg);
    }
    static __device__ __forceinline__ void add(acc_t& acc, const acc_t& b)
    {
        acc.add(b);
    }
    static __device__ __forceinline__ void dbl(acc_t& acc)
    {
        acc_t d = acc;
        acc.add(d);
    }
    static __device__ __forceinline__ acc_t load(const bucket_t& m)
    {
        acc_t a = m;
        return a;
    }
    static __device__ __forceinline__ void store(bucket_t& m, const acc_t& a)
    {
        m = a;
    }
};

// An xyzz point as `inline_ops` keeps it: x = X/ZZ, y = Y/ZZZ, ZZ = 0 infinity.
template<class field>
struct xyzz_fields {
    field X, Y, ZZZ, ZZ;

    __device__ __forceinline__ void inf()
    {
        ZZZ.zero();
        ZZ.zero();
    }
    __device__ __forceinline__ bool is_inf() const
    {
        return ZZ.is_zero();
    }
};

// 2 p (EFD dbl-2008-s-1, a = 0); infinity stays infinity (ZZ3 = V ZZ1 = 0).
template<class field>
__device__ __forceinline__ void xyzz_dbl(xyzz_fields<field>& p)
{
    field U = p.Y + p.Y;  // U = 2 Y1
    field V = U ^ 2;      // V = U^2
    field W = U * V;      // W = U V
    field S = p.X * V;    // S = X1 V
    field M = p.X ^ 2;
    M = M + M + M;        // M = 3 X1^2
    p.X = M ^ 2;
    p.X -= S;
    p.X -= S;             // X3 = M^2 - 2 S
    S -= p.X;
    p.Y.cneg(true);
    // Y3 = M (S - X3) - W Y1 as one dot product (see add_base's Y3).
    p.Y = field::dot_product(S, M, W, p.Y);
    p.ZZ *= V;            // ZZ3 = V ZZ1
    p.ZZZ *= W;           // ZZZ3 = W ZZZ1
}

template<class field>
__device__ __forceinline__ xyzz_fields<field> affine_as_xyzz(const field& x, const field& y)
{
    xyzz_fields<field> p;
    p.X = x;
    p.Y = y;
    p.ZZ = field::one();
    p.ZZZ = p.ZZ;
    return p;
}

// The rare case of a mixed addition: (x, y) plus itself (`same`) or plus its negation. Takes
// the affine point, not the sum, so that less goes through the call.
template<class field>
__device__ __noinline__ xyzz_fields<field> affine_rare(const field x, const field y, bool same)
{
    xyzz_fields<field> p = affine_as_xyzz(x, y);
    if (same)
        xyzz_dbl(p);
    else
        p.inf();
    return p;
}

template<class field>
struct inline_ops {
    using acc_t = xyzz_fields<field>;
    // Sums and bases in the layouts of sppark's xyzz_t::mem_t and Affine_t::mem_t (the
    // same bytes: blst's Montgomery fields in order), so the full-addition kernels read
    // what these write.
    struct bucket_t { field X, Y, ZZZ, ZZ; };
    struct base_t { field x, y; };

    static __device__ __forceinline__ acc_t inf()
    {
        acc_t a;
        a.inf();
        return a;
    }
    // acc += +-(x, y); (0, 0) is infinity (EFD add-madd-2008-s: 8M + 2S).
    static __device__ __forceinline__ void add_base(acc_t& acc, const base_t* bases, size_t i, bool neg)
    {
        const field x = bases[i].x;
        field y = bases[i].y;
        if (x.is_zero(y))
            return;
        y.cneg(neg);
        if (acc.is_inf()) {
            acc = affine_as_xyzz(x, y);
            return;
        }
        field R = y * acc.ZZZ;  // S2 = y ZZZ1
        R -= acc.Y;             // R = S2 - Y1
        field P = x * acc.ZZ;   // U2 = x ZZ1
        P -= acc.X;             // P = U2 - X1
        if (P.is_zero()) {
            acc = affine_rare(x, y, R.is_zero());
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
        PP -= acc.X;            // Q - X3
        P.cneg(true);           // -PPP
        // Y3 = R (Q - X3) - Y1 PPP as sppark's dot_product: Fp's 381 bits in 384 let both
        // products be summed before one Montgomery reduction (9 reductions an addition,
        // not 10). Fp2's dot_product is two Karatsuba products (no headroom gained).
        acc.Y = field::dot_product(PP, R, acc.Y, P);
    }
    static __device__ __forceinline__ void store(bucket_t& m, const acc_t& a)
    {
        m.X = a.X;
        m.Y = a.Y;
        m.ZZZ = a.ZZZ;
        m.ZZ = a.ZZ;
    }
};

// 0/1 fast path: thread t sums the bases i = t, t + stride, ... whose scalar is exactly one
// (boolean-heavy witnesses: most of SHA-256's and PoRep's nonzero scalars). Every thread
// writes its sum (infinity if none), so msm_reduce can fold the grid's sums.
template<class Ops>
__device__ __forceinline__ void ones(const typename Ops::base_t* bases, const uint32_t* scalars, uint32_t n,
                                     typename Ops::bucket_t* out)
{
    const size_t t = global_tid(), stride = (size_t)gridDim.x * blockDim.x;
    auto acc = Ops::inf();
    for (size_t i = t; i < n; i += stride)
        if (scalar_is_one(scalars + 8 * i))
            Ops::add_base(acc, bases, i, false);
    Ops::store(out[t], acc);
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
template<class Ops>
__device__ __forceinline__ void ones_compact(const typename Ops::base_t* bases, const uint32_t* scalars,
                                             uint32_t n, typename Ops::bucket_t* out, uint32_t* rest,
                                             uint32_t* nrest, uint32_t cap)
{
    __shared__ uint32_t queues[ONES_QUEUE_WARPS][64];
    const size_t t = global_tid(), stride = (size_t)gridDim.x * blockDim.x;
    const uint32_t lane = threadIdx.x & 31, below = (1u << lane) - 1;
    uint32_t* q = queues[threadIdx.x >> 5];
    uint32_t queued = 0; // the same in every lane: always below 32 between steps
    auto acc = Ops::inf();
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
            Ops::add_base(acc, bases, q[lane], false);
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
    if (lane < queued)
        Ops::add_base(acc, bases, q[lane], false);
    Ops::store(out[t], acc);
}

// One thread per group of `fan` points: out[t] = sum in[t * fan .. min((t + 1) * fan, n)).
template<class Ops>
__device__ __forceinline__ void reduce(const typename Ops::bucket_t* in, uint32_t n, uint32_t fan,
                                       typename Ops::bucket_t* out)
{
    const size_t t = global_tid(), lo = t * fan;
    if (lo >= n)
        return;
    const size_t hi = min(lo + fan, (size_t)n);
    auto acc = Ops::inf();
    for (size_t i = lo; i < hi; i++)
        Ops::add(acc, Ops::load(in[i]));
    Ops::store(out[t], acc);
}

// Blocks of T threads, each group of `fan` consecutive points (fan a power of two dividing
// T, n a multiple of fan) summed by a tree in shared memory: out[g] = sum in[g * fan ..
// (g + 1) * fan). A chain of log2(fan) dependent additions, where `reduce` runs fan of
// them: the reduction's folds are latency-bound (few points, each addition thousands of
// cycles deep).
template<class Ops, unsigned T>
__device__ __forceinline__ void fold_tree(const typename Ops::bucket_t* in, uint32_t n, uint32_t fan,
                                          typename Ops::bucket_t* out)
{
    using bucket_t = typename Ops::bucket_t;
    static_assert(T * sizeof(bucket_t) <= 48 * 1024, "static shared memory");
    __shared__ alignas(16) unsigned char raw[T * sizeof(bucket_t)];
    bucket_t* sm = reinterpret_cast<bucket_t*>(raw);
    const uint32_t lane = threadIdx.x;
    const size_t i = (size_t)blockIdx.x * T + lane;
    if (i < n)
        sm[lane] = in[i];
    __syncthreads();
    const uint32_t first = lane & ~(fan - 1), k = lane - first;
    for (uint32_t h = fan >> 1; h > 0; h >>= 1) {
        if (k < h && i + h < n) {
            auto a = Ops::load(sm[lane]);
            Ops::add(a, Ops::load(sm[lane + h]));
            Ops::store(sm[lane], a);
        }
        __syncthreads();
    }
    if (k == 0 && i < n)
        out[i / fan] = sm[lane];
}

// One thread per piece: the sum of its affine points. SIGNED: bit 31 of an entry says
// "add the negated point" (msm_sort.cu's signed digits); unsigned entries are plain indices.
// Thread k sums piece perm[k] (msm_piece_order: the pieces by decreasing length), or piece k
// without a perm; the sum goes to the piece's own slot either way.
template<class Ops, bool SIGNED>
__device__ __forceinline__ void accumulate(const typename Ops::base_t* bases, const uint32_t* idx,
                                           const uint2* pieces, const uint32_t* npieces,
                                           const uint32_t* perm, typename Ops::bucket_t* partial)
{
    const size_t k = global_tid();
    if (k >= *npieces)
        return;
    const size_t p = perm != nullptr ? perm[k] : k;
    const uint2 pc = pieces[p];
    auto acc = Ops::inf();
#pragma unroll 1
    for (uint32_t j = pc.x; j < pc.x + pc.y; j++) {
        const uint32_t e = idx[j];
        if (SIGNED)
            Ops::add_base(acc, bases, e & 0x7fffffffu, (e >> 31) != 0);
        else
            Ops::add_base(acc, bases, e, false);
    }
    Ops::store(partial[p], acc);
}

// One thread per bucket: the sum of its pieces, written to out[b] or (add: a chunked
// MSM's later chunk) added to what out[b] holds.
template<class Ops>
__device__ __forceinline__ void buckets(const typename Ops::bucket_t* partial, const uint32_t* poffsets,
                                        uint32_t m, uint32_t add, typename Ops::bucket_t* out)
{
    size_t b = global_tid();
    if (b >= m)
        return;
    auto acc = add ? Ops::load(out[b]) : Ops::inf();
    for (uint32_t p = poffsets[b]; p < poffsets[b + 1]; p++)
        Ops::add(acc, Ops::load(partial[p]));
    Ops::store(out[b], acc);
}

// Signed windows' reduction, first level. One thread per (window, run of 2^run_log buckets
// [lo, lo + len)), `bits` bucket bits per window, bucket d weighing d + base: the run's
// share sum_{d in run} (d - lo + base) * B_d = acc + base * sum, by running sums from the
// top, goes to seg_out[t], and its sum B_lo + .. + B_{lo+len-1} replaces B_lo (the second
// level weighs those sums by lo: window_segments with stride_log = run_log).
template<class Ops>
__device__ __forceinline__ void window_runs(typename Ops::bucket_t* bkts, uint32_t bits, uint32_t nwin,
                                            uint32_t run_log, uint32_t base,
                                            typename Ops::bucket_t* seg_out)
{
    size_t t = global_tid();
    const uint32_t nrun = 1u << (bits - run_log);
    if (t >= (size_t)nwin * nrun)
        return;
    const uint32_t w = t / nrun, lo = (t % nrun) << run_log, len = 1u << run_log;
    typename Ops::bucket_t* B = bkts + ((size_t)w << bits);
    auto run = Ops::inf(), acc = Ops::inf();
    for (uint32_t d = lo + len - 1; d > lo; d--) {
        Ops::add(run, Ops::load(B[d]));
        Ops::add(acc, run);
    }
    Ops::add(run, Ops::load(B[lo]));
    if (base)
        Ops::add(acc, run);
    Ops::store(seg_out[t], acc);
    Ops::store(B[lo], run);
}

// One thread per (window, segment of 2^seg_log items [lo, lo + len)), item j of window w at
// bkts[(w << bits) + (j << stride_log)], 2^(bits - stride_log) items per window, item j
// weighing j + base: v = sum_{j in segment} (j + base) * B_j = acc + (lo + base) * run, where
// run = sum B_j and acc = sum (j - lo) * B_j by running sums from the top. Unsigned windows
// (stride_log 0) write v to seg_out[t]; the signed reduction's second level (stride_log =
// run_log: the items are window_runs' sums) adds 2^stride_log * v to seg_out[w * 2^(bits -
// stride_log) + segment], the first level's slots.
template<class Ops>
__device__ __forceinline__ void window_segments(const typename Ops::bucket_t* bkts, uint32_t bits,
                                                uint32_t nwin, uint32_t seg_log, uint32_t base,
                                                uint32_t stride_log, typename Ops::bucket_t* seg_out)
{
    size_t t = global_tid();
    const uint32_t items_log = bits - stride_log, nseg = 1u << (items_log - seg_log);
    if (t >= (size_t)nwin * nseg)
        return;
    const uint32_t w = t / nseg, seg = t % nseg;
    const uint32_t lo = seg << seg_log, len = 1u << seg_log;
    const typename Ops::bucket_t* B = bkts + ((size_t)w << bits);
    auto run = Ops::inf(), acc = Ops::inf();
    for (uint32_t j = lo + len - 1; j > lo; j--) {
        Ops::add(run, Ops::load(B[(size_t)j << stride_log]));
        Ops::add(acc, run);
    }
    Ops::add(run, Ops::load(B[(size_t)lo << stride_log]));
    const uint32_t k = lo + base;
    if (k != 0) {
        // acc += k * run, double-and-add from the top bit.
        auto q = Ops::inf();
        for (int bit = 31 - __clz(k); bit >= 0; bit--) {
            Ops::dbl(q);
            if ((k >> bit) & 1)
                Ops::add(q, run);
        }
        Ops::add(acc, q);
    }
    if (stride_log == 0) {
        Ops::store(seg_out[t], acc);
        return;
    }
    for (uint32_t i = 0; i < stride_log; i++)
        Ops::dbl(acc);
    const size_t slot = ((size_t)w << items_log) + seg;
    Ops::add(acc, Ops::load(seg_out[slot]));
    Ops::store(seg_out[slot], acc);
}

// One thread per window: the sum of its segments, written as blst's Jacobian point
// (X, Y, Z with X = X*ZZ, Y = Y*ZZZ, Z = ZZ; infinity has Z = 0).
template<class Ops, class field>
__device__ __forceinline__ void window_sums(const typename Ops::bucket_t* seg_out, uint32_t nseg,
                                            uint32_t nwin, field* out)
{
    size_t w = global_tid();
    if (w >= nwin)
        return;
    auto acc = Ops::inf();
    for (uint32_t s = 0; s < nseg; s++)
        Ops::add(acc, Ops::load(seg_out[w * nseg + s]));
    // The bucket holds the fields X, Y, ZZZ, ZZ in that order.
    typename Ops::bucket_t m;
    Ops::store(m, acc);
    const field* f = reinterpret_cast<const field*>(&m);
    field X = f[0], Y = f[1], ZZZ = f[2], ZZ = f[3];
    out[3 * w + 0] = X * ZZ;
    out[3 * w + 1] = Y * ZZZ;
    out[3 * w + 2] = ZZ;
}

// The kernels of mixed additions of one group under the arithmetic OPS (`sppark_ops<..>` or
// `inline_ops<FIELD>`), named with SUFFIX. ACC_THREADS: the block size the signed
// accumulate and the compacting 0/1 kernels are bounded for (the host launches them with
// exactly that many threads: msm.rs, `SIGNED_ACC_THREADS`).
#define MSM_MIXED_KERNELS(SUFFIX, OPS, ACC_THREADS)                                            \
    extern "C" __global__ void msm_ones_##SUFFIX(const OPS::base_t* bases,                      \
        const uint32_t* scalars, uint32_t n, OPS::bucket_t* out)                                \
    {   ones<OPS>(bases, scalars, n, out);   }                                                  \
    extern "C" __global__ void __launch_bounds__(ACC_THREADS) msm_ones_compact_##SUFFIX(        \
        const OPS::base_t* bases, const uint32_t* scalars, uint32_t n, OPS::bucket_t* out,      \
        uint32_t* rest, uint32_t* nrest, uint32_t cap)                                          \
    {   ones_compact<OPS>(bases, scalars, n, out, rest, nrest, cap);   }                        \
    extern "C" __global__ void msm_accumulate_##SUFFIX(const OPS::base_t* bases,                \
        const uint32_t* idx, const uint2* pieces, const uint32_t* npieces, const uint32_t* perm, \
        OPS::bucket_t* partial)                                                                 \
    {   accumulate<OPS, false>(bases, idx, pieces, npieces, perm, partial);   }                 \
    extern "C" __global__ void __launch_bounds__(ACC_THREADS) msm_accumulate_signed_##SUFFIX(  \
        const OPS::base_t* bases, const uint32_t* idx, const uint2* pieces,                     \
        const uint32_t* npieces, const uint32_t* perm, OPS::bucket_t* partial)                  \
    {   accumulate<OPS, true>(bases, idx, pieces, npieces, perm, partial);   }

// The kernels of full additions of one group (OPS: `sppark_ops<..>`), named with SUFFIX;
// TREE: the block size of msm_fold_tree (msm.rs, `FOLD_TREE_THREADS`).
#define MSM_FULL_KERNELS(SUFFIX, OPS, FIELD, TREE)                                              \
    extern "C" __global__ void msm_reduce_##SUFFIX(const OPS::bucket_t* in, uint32_t n,         \
        uint32_t fan, OPS::bucket_t* out)                                                       \
    {   reduce<OPS>(in, n, fan, out);   }                                                       \
    extern "C" __global__ void __launch_bounds__(TREE) msm_fold_tree_##SUFFIX(                  \
        const OPS::bucket_t* in, uint32_t n, uint32_t fan, OPS::bucket_t* out)                  \
    {   fold_tree<OPS, TREE>(in, n, fan, out);   }                                              \
    extern "C" __global__ void msm_buckets_##SUFFIX(const OPS::bucket_t* partial,              \
        const uint32_t* poffsets, uint32_t m, uint32_t add, OPS::bucket_t* out)                 \
    {   buckets<OPS>(partial, poffsets, m, add, out);   }                                       \
    extern "C" __global__ void msm_window_runs_##SUFFIX(OPS::bucket_t* bkts, uint32_t bits,     \
        uint32_t nwin, uint32_t run_log, uint32_t base, OPS::bucket_t* seg_out)                 \
    {   window_runs<OPS>(bkts, bits, nwin, run_log, base, seg_out);   }                         \
    extern "C" __global__ void msm_window_segments_##SUFFIX(const OPS::bucket_t* bkts,          \
        uint32_t bits, uint32_t nwin, uint32_t seg_log, uint32_t base, uint32_t stride_log,     \
        OPS::bucket_t* seg_out)                                                                 \
    {   window_segments<OPS>(bkts, bits, nwin, seg_log, base, stride_log, seg_out);   }         \
    extern "C" __global__ void msm_window_sums_##SUFFIX(const OPS::bucket_t* seg_out,           \
        uint32_t nseg, uint32_t nwin, FIELD* out)                                               \
    {   window_sums<OPS, FIELD>(seg_out, nseg, nwin, out);   }
