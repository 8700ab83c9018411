// Multi-scalar multiplication (G1 and G2), Pippenger's bucket method, for blst's memory
// layouts: bases are blst_p1_affine / blst_p2_affine (Montgomery limbs; (0, 0) is
// infinity), scalars are canonical 32-byte little-endian (the low 255 bits are read, as
// blst does with nbits = 255). This file is the scalar side; msm_points.cuh the rest.
//
// Two digit schemes (the host's `MsmKernels`): unsigned c-bit digits, 2^c buckets per
// window (bucket d for digit d; bucket 0 unused), or signed digits (Booth recoding: each
// digit in [-2^(c-1), 2^(c-1)], from its window's bits and the bit below), 2^(c-1)
// buckets per window (bucket |d| - 1) and the point negated for a negative digit: half
// the buckets for the same window, so windows can be wider (fewer of them) at the same
// reduction cost.
//
// Pipeline (one window of c bits per blockIdx.y in the tile kernels):
//   msm_ones_*    (0/1 fast path) grid-stride sums of the bases whose scalar is exactly one,
//                 then msm_reduce_* rounds down to one point; those scalars are skipped below
//                 (msm_ones_compact_*, the sparse sort: the same sums, and the indices of
//                 the scalars neither 0 nor 1 listed, so that the sort below reads only those
//                 while they are at most a quarter of the scalars)
//   msm_hist      per-tile histograms of buckets in shared memory, summed into counts[w][b]
//   msm_scan      offsets = exclusive scan of counts; piece offsets = scan of
//                 ceil(count / piece_len) (large buckets are split into pieces)
//   msm_scatter   idx[offset[w][b] + k] = point index (bit 31: negate the point), slots
//                 taken per tile with one global atomic per (tile, bucket) and shared
//                 atomics inside the tile
//   msm_pieces    piece descriptors (start, len) per bucket
//   msm_accumulate_{g1,g2} (unsigned) / msm_accumulate_signed_{g1,g2}: one thread per
//                 piece, the sum of its affine points (xyzz)
//   msm_buckets_*  one thread per bucket: sum of its pieces
//   msm_window_segments_* / msm_reduce_* / msm_window_sums_*: sum_b weight(b) * B_b per
//                 window by running sums over segments, the segments folded per window;
//                 each window total comes back as blst_p1 / blst_p2 (Jacobian); the host
//                 combines windows (Horner, c doublings per window).
#include "index.cuh"

__device__ __forceinline__ uint32_t scalar_digit_raw(const uint32_t* s, uint32_t w, uint32_t c)
{
    const uint32_t bit = w * c;
    if (bit >= 255)
        return 0;
    const uint32_t wi = bit >> 5;
    uint64_t v = s[wi];
    if (wi + 1 < 8)
        v |= (uint64_t)s[wi + 1] << 32;
    v >>= (bit & 31);
    const uint32_t width = min(c, 255 - bit);
    return (uint32_t)v & ((1u << width) - 1);
}

// Bit 31 of a sorted index entry: the point is negated (a negative signed digit).
#define MSM_NEG_BIT 0x80000000u

// Window w's bucket of the scalar s, plus one (0: no bucket: a zero digit, or a scalar the
// 0/1 fast path has summed already; a one has the single digit 1 in window 0 under both
// schemes), with MSM_NEG_BIT set for a negative signed digit.
//   unsigned: bucket d of digit d (2^c buckets, 0 unused);
//   signed:   Booth recoding, O(1) per window: the carry into window w is the top bit of
//             window w - 1 (bit w*c - 1 of s); t = raw + carry, and a raw digit with its top
//             bit set gives t - 2^c (a carry out), so digits lie in [-2^(c-1), 2^(c-1)]:
//             bucket |d| - 1 (2^(c-1) buckets). The host gives signed schemes
//             floor(255 / c) + 1 windows (c never divides 255), so the top window has at
//             most c - 1 raw bits: its top bit is clear and it never carries out.
__device__ __forceinline__ uint32_t scalar_entry(const uint32_t* s, uint32_t w, uint32_t c,
                                                 uint32_t skip_ones, uint32_t signed_digits)
{
    if (!signed_digits) {
        const uint32_t d = scalar_digit_raw(s, w, c);
        if (d == 0 || (skip_ones && w == 0 && d == 1 && scalar_is_one(s)))
            return 0;
        return d + 1;
    }
    if (skip_ones && scalar_is_one(s))
        return 0;
    const uint32_t half = 1u << (c - 1);
    const uint32_t raw = scalar_digit_raw(s, w, c);
    const uint32_t below = w * c - 1; // the previous window's top bit (w > 0)
    const uint32_t carry = w == 0 ? 0 : (s[below >> 5] >> (below & 31)) & 1;
    const uint32_t t = raw + carry;
    if (raw >= half) {
        const uint32_t mag = (1u << c) - t; // |t - 2^c|, 0 when t = 2^c
        return mag == 0 ? 0 : mag | MSM_NEG_BIT;
    }
    return t;
}

// The bucket of a nonzero entry.
__device__ __forceinline__ uint32_t entry_bucket(uint32_t e)
{
    return (e & ~MSM_NEG_BIT) - 1;
}

// The scalar's 8 words, loaded once (two 16-byte loads: scalars are 32-byte aligned).
struct scalar_words {
    uint32_t w[8];
    __device__ __forceinline__ explicit scalar_words(const uint32_t* p)
    {
        const uint4* q = reinterpret_cast<const uint4*>(p);
        const uint4 a = q[0], b = q[1];
        w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w;
        w[4] = b.x; w[5] = b.y; w[6] = b.z; w[7] = b.w;
    }
};

// The entries one tile block sorts: scalars [lo, hi) in their own order (dense), or the
// sparse sort's: entries [lo, hi) of the list `rest` of the scalars that are neither zero
// nor one (msm_ones_compact_*), split evenly over the grid's blocks. A null `rest`, or a
// list that overflowed its `cap` (the scalars are not 0/1-heavy), sorts densely.
struct tile_range {
    size_t lo, hi;
    const uint32_t* rest;

    // The point index of entry j.
    __device__ __forceinline__ uint32_t point(size_t j) const
    {
        return rest != nullptr ? rest[j] : (uint32_t)j;
    }
};

__device__ __forceinline__ tile_range tile_of(uint32_t n, uint32_t tile, const uint32_t* rest,
                                              const uint32_t* nrest, uint32_t cap)
{
    if (rest != nullptr) {
        const size_t count = *nrest;
        if (count <= cap) {
            const size_t per = (count + gridDim.x - 1) / gridDim.x;
            const size_t lo = min((size_t)blockIdx.x * per, count);
            return {lo, min(lo + per, count), rest};
        }
    }
    const size_t lo = (size_t)blockIdx.x * tile;
    return {lo, min(lo + tile, (size_t)n), nullptr};
}

// Buckets per window: 2^c unsigned, 2^(c-1) signed (the shared histogram's length).
extern "C" __global__ void msm_hist(const uint32_t* scalars, uint32_t n, uint32_t c,
                                    uint32_t tile, uint32_t skip_ones, uint32_t signed_digits,
                                    const uint32_t* rest, const uint32_t* nrest, uint32_t cap,
                                    uint32_t* counts)
{
    extern __shared__ uint32_t hist[];
    const tile_range r = tile_of(n, tile, rest, nrest, cap);
    if (r.lo >= r.hi)
        return;
    const uint32_t w = blockIdx.y, nb = 1u << (c - (signed_digits ? 1 : 0));
    for (uint32_t k = threadIdx.x; k < nb; k += blockDim.x)
        hist[k] = 0;
    __syncthreads();
    for (size_t j = r.lo + threadIdx.x; j < r.hi; j += blockDim.x) {
        const scalar_words sw(scalars + 8 * (size_t)r.point(j));
        const uint32_t e = scalar_entry(sw.w, w, c, skip_ones, signed_digits);
        if (e != 0)
            atomicAdd(&hist[entry_bucket(e)], 1u);
    }
    __syncthreads();
    for (uint32_t k = threadIdx.x; k < nb; k += blockDim.x)
        if (hist[k] != 0)
            atomicAdd(&counts[(size_t)w * nb + k], hist[k]);
}

#define SCAN_THREADS 1024

// Single block. offsets[i] = sum counts[..i], cursor = offsets, poffsets[i] = sum of
// ceil(counts[..i] / piece_len); offsets[m] and poffsets[m] are the totals.
extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
msm_scan(const uint32_t* counts, uint32_t m, uint32_t piece_len, uint32_t* offsets,
         uint32_t* cursor, uint32_t* poffsets)
{
    __shared__ uint32_t s_cnt[SCAN_THREADS], s_pc[SCAN_THREADS];
    const uint32_t t = threadIdx.x;
    const uint32_t per = (m + SCAN_THREADS - 1) / SCAN_THREADS;
    const uint32_t lo = min(t * per, m), hi = min(lo + per, m);
    uint32_t sc = 0, sp = 0;
    for (uint32_t i = lo; i < hi; i++) {
        sc += counts[i];
        sp += (counts[i] + piece_len - 1) / piece_len;
    }
    s_cnt[t] = sc;
    s_pc[t] = sp;
    __syncthreads();
    // Hillis-Steele inclusive scan.
    for (uint32_t off = 1; off < SCAN_THREADS; off <<= 1) {
        uint32_t a = t >= off ? s_cnt[t - off] : 0;
        uint32_t b = t >= off ? s_pc[t - off] : 0;
        __syncthreads();
        s_cnt[t] += a;
        s_pc[t] += b;
        __syncthreads();
    }
    uint32_t rc = s_cnt[t] - sc, rp = s_pc[t] - sp;
    for (uint32_t i = lo; i < hi; i++) {
        offsets[i] = rc;
        cursor[i] = rc;
        poffsets[i] = rp;
        rc += counts[i];
        rp += (counts[i] + piece_len - 1) / piece_len;
    }
    if (t == SCAN_THREADS - 1) {
        offsets[m] = s_cnt[t];
        poffsets[m] = s_pc[t];
    }
}

extern "C" __global__ void msm_scatter(const uint32_t* scalars, uint32_t n, uint32_t c,
                                       uint32_t tile, uint32_t skip_ones, uint32_t signed_digits,
                                       const uint32_t* rest, const uint32_t* nrest, uint32_t cap,
                                       uint32_t* cursor, uint32_t* idx)
{
    extern __shared__ uint32_t slot[];
    const tile_range r = tile_of(n, tile, rest, nrest, cap);
    if (r.lo >= r.hi)
        return;
    const uint32_t w = blockIdx.y, nb = 1u << (c - (signed_digits ? 1 : 0));
    for (uint32_t k = threadIdx.x; k < nb; k += blockDim.x)
        slot[k] = 0;
    __syncthreads();
    for (size_t j = r.lo + threadIdx.x; j < r.hi; j += blockDim.x) {
        const scalar_words sw(scalars + 8 * (size_t)r.point(j));
        const uint32_t e = scalar_entry(sw.w, w, c, skip_ones, signed_digits);
        if (e != 0)
            atomicAdd(&slot[entry_bucket(e)], 1u);
    }
    __syncthreads();
    for (uint32_t k = threadIdx.x; k < nb; k += blockDim.x)
        if (slot[k] != 0)
            slot[k] = atomicAdd(&cursor[(size_t)w * nb + k], slot[k]);
    __syncthreads();
    for (size_t j = r.lo + threadIdx.x; j < r.hi; j += blockDim.x) {
        const uint32_t i = r.point(j);
        const scalar_words sw(scalars + 8 * (size_t)i);
        const uint32_t e = scalar_entry(sw.w, w, c, skip_ones, signed_digits);
        if (e != 0)
            idx[atomicAdd(&slot[entry_bucket(e)], 1u)] = i | (e & MSM_NEG_BIT);
    }
}

extern "C" __global__ void msm_pieces(const uint32_t* counts, const uint32_t* offsets,
                                      const uint32_t* poffsets, uint32_t m, uint32_t piece_len,
                                      uint2* pieces)
{
    size_t b = global_tid();
    if (b >= m)
        return;
    const uint32_t cnt = counts[b], off = offsets[b];
    uint32_t p = poffsets[b];
    for (uint32_t k = 0; k < cnt; k += piece_len)
        pieces[p++] = make_uint2(off + k, min(piece_len, cnt - k));
}


// ---------------------------------------------------------------------------------------
// Wide windows (the host's `MsmKernels::Wide`): signed digits of up to 22 bits, 2^21
// buckets per window, past any shared histogram. The counts live in global memory and
// every entry takes one atomic there (a window's counts, at most 8 MiB, stay in L2 while
// its blocks run: blockIdx.y is the window, and blocks run x first); the offsets come from
// a scan over all blocks in three launches instead of msm_scan's single block. Then
// msm_pieces and the point kernels as for the other schemes. Wider windows mean fewer of
// them: 13 windows of 20 bits at 2^24 and 12 of 22 bits at 2^27 instead of 16 of 16, so
// fewer bucket additions for the same points. `MsmKernels::SignedGlobal` runs this sort
// with the signed windows' widths (at most 16 bits): the shared histogram zeroes and
// flushes 2^15 counters per block and window whatever the block holds.

// One block's range of entries in windows [blockIdx.y * wins, (blockIdx.y + 1) * wins) (dense
// or sparse, as tile_of), one global atomic on its bucket's counter each: SCATTER false
// counts them (counter = counts); true writes each to its bucket's slot (counter = cursor;
// the order inside a bucket depends on timing, its sum does not). With wins = 1 the grid's
// y is the window (a window's counters stay in L2 while its blocks run); with wins = the
// window count each scalar is read once for all its windows.
//
// Fixed-base windows (the host's `FixedWindows`): the bases hold `group` copies, copy t at
// point index t * stride being 2^(c t) times the base, so window w = q * group + t is
// window q * group of copy t: windows of one group share bucket set q, and the host
// combines the sets c * group bits apart. Without copies group = 1 (set = window, copy 0).
template<bool SCATTER>
__device__ __forceinline__ void global_pass(const uint32_t* scalars, uint32_t n, uint32_t c,
                                            uint32_t tile, uint32_t skip_ones,
                                            const uint32_t* rest, const uint32_t* nrest,
                                            uint32_t cap, uint32_t wins, uint32_t group,
                                            uint32_t stride, uint32_t* counter, uint32_t* idx)
{
    const tile_range r = tile_of(n, tile, rest, nrest, cap);
    const uint32_t w0 = blockIdx.y * wins;
    const uint32_t set0 = w0 / group, copy0 = w0 - set0 * group;
    for (size_t j = r.lo + threadIdx.x; j < r.hi; j += blockDim.x) {
        const uint32_t i = r.point(j);
        const scalar_words sw(scalars + 8 * (size_t)i);
        uint32_t set = set0, copy = copy0;
        for (uint32_t w = w0; w < w0 + wins; w++) {
            const uint32_t e = scalar_entry(sw.w, w, c, skip_ones, 1);
            if (e != 0) {
                const uint32_t slot =
                    atomicAdd(&counter[((size_t)set << (c - 1)) + entry_bucket(e)], 1u);
                if (SCATTER)
                    idx[slot] = (i + copy * stride) | (e & MSM_NEG_BIT);
            }
            if (++copy == group) {
                copy = 0;
                set++;
            }
        }
    }
}

// The bucket counts of the entries of one block's range.
extern "C" __global__ void msm_hist_global(const uint32_t* scalars, uint32_t n, uint32_t c,
                                           uint32_t tile, uint32_t skip_ones,
                                           const uint32_t* rest, const uint32_t* nrest,
                                           uint32_t cap, uint32_t wins, uint32_t group,
                                           uint32_t stride, uint32_t* counts)
{
    global_pass<false>(scalars, n, c, tile, skip_ones, rest, nrest, cap, wins, group, stride, counts,
                       nullptr);
}

// The entries of the same ranges written to their buckets' slots.
extern "C" __global__ void msm_scatter_global(const uint32_t* scalars, uint32_t n, uint32_t c,
                                              uint32_t tile, uint32_t skip_ones,
                                              const uint32_t* rest, const uint32_t* nrest,
                                              uint32_t cap, uint32_t wins, uint32_t group,
                                              uint32_t stride, uint32_t* cursor, uint32_t* idx)
{
    global_pass<true>(scalars, n, c, tile, skip_ones, rest, nrest, cap, wins, group, stride, cursor,
                      idx);
}

// Counts one block of the multi-block scan covers: SCAN_PER_THREAD consecutive counts per
// thread.
#define SCAN_PER_THREAD 8
#define SCAN_BLOCK_COUNTS (SCAN_THREADS * SCAN_PER_THREAD)

// Exclusive scan of (a, b) over a block of SCAN_THREADS threads in thread order; (ta, tb)
// are the block's totals. Every thread of the block calls it.
__device__ __forceinline__ void block_scan2(uint32_t& a, uint32_t& b, uint32_t& ta, uint32_t& tb)
{
    __shared__ uint32_t wa[SCAN_THREADS / 32], wb[SCAN_THREADS / 32];
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    uint32_t ia = a, ib = b;
#pragma unroll
    for (uint32_t off = 1; off < 32; off <<= 1) {
        const uint32_t xa = __shfl_up_sync(0xffffffffu, ia, off);
        const uint32_t xb = __shfl_up_sync(0xffffffffu, ib, off);
        if (lane >= off) {
            ia += xa;
            ib += xb;
        }
    }
    if (lane == 31) {
        wa[warp] = ia;
        wb[warp] = ib;
    }
    __syncthreads();
    if (warp == 0) {
        uint32_t va = wa[lane], vb = wb[lane];
#pragma unroll
        for (uint32_t off = 1; off < 32; off <<= 1) {
            const uint32_t xa = __shfl_up_sync(0xffffffffu, va, off);
            const uint32_t xb = __shfl_up_sync(0xffffffffu, vb, off);
            if (lane >= off) {
                va += xa;
                vb += xb;
            }
        }
        wa[lane] = va;
        wb[lane] = vb;
    }
    __syncthreads();
    const uint32_t pa = warp > 0 ? wa[warp - 1] : 0, pb = warp > 0 ? wb[warp - 1] : 0;
    ta = wa[SCAN_THREADS / 32 - 1];
    tb = wb[SCAN_THREADS / 32 - 1];
    a = pa + ia - a;
    b = pb + ib - b;
    __syncthreads();
}

// This thread's counts in block blockIdx.x of the scan, [lo, hi), and their totals: sc of
// the counts, sp of the pieces (ceil(count / piece_len)).
__device__ __forceinline__ void scan_span(const uint32_t* counts, uint32_t m, uint32_t piece_len,
                                          uint32_t& lo, uint32_t& hi, uint32_t& sc, uint32_t& sp)
{
    const size_t l = (size_t)blockIdx.x * SCAN_BLOCK_COUNTS + (size_t)threadIdx.x * SCAN_PER_THREAD;
    lo = (uint32_t)min(l, (size_t)m);
    hi = (uint32_t)min(l + SCAN_PER_THREAD, (size_t)m);
    sc = 0;
    sp = 0;
    for (uint32_t i = lo; i < hi; i++) {
        const uint32_t k = counts[i];
        sc += k;
        sp += (k + piece_len - 1) / piece_len;
    }
}

// Scan, launch 1 of 3: each block's totals of counts and of pieces (ceil(count /
// piece_len)), into sums[b] and sums[nblocks + b].
extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
msm_scan_sums(const uint32_t* counts, uint32_t m, uint32_t piece_len, uint32_t* sums)
{
    uint32_t lo, hi, sc, sp, tc, tp;
    scan_span(counts, m, piece_len, lo, hi, sc, sp);
    block_scan2(sc, sp, tc, tp);
    if (threadIdx.x == 0) {
        sums[blockIdx.x] = tc;
        sums[gridDim.x + blockIdx.x] = tp;
    }
}

// Scan, launch 2 of 3 (one block): the blocks' totals scanned in place (exclusive), and
// the grand totals written where msm_scan writes them (offsets[m], poffsets[m]).
extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
msm_scan_top(uint32_t* sums, uint32_t nblocks, uint32_t* total, uint32_t* ptotal)
{
    uint32_t carry_c = 0, carry_p = 0;
    for (uint32_t base = 0; base < nblocks; base += SCAN_THREADS) {
        const uint32_t i = base + threadIdx.x;
        uint32_t c = i < nblocks ? sums[i] : 0, p = i < nblocks ? sums[nblocks + i] : 0, tc, tp;
        block_scan2(c, p, tc, tp);
        if (i < nblocks) {
            sums[i] = carry_c + c;
            sums[nblocks + i] = carry_p + p;
        }
        carry_c += tc;
        carry_p += tp;
    }
    if (threadIdx.x == 0) {
        *total = carry_c;
        *ptotal = carry_p;
    }
}

// Scan, launch 3 of 3: each block's counts scanned from its scanned total: offsets,
// cursor and piece offsets as msm_scan writes them.
extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
msm_scan_write(const uint32_t* counts, uint32_t m, uint32_t piece_len, const uint32_t* sums,
               uint32_t* offsets, uint32_t* cursor, uint32_t* poffsets)
{
    uint32_t lo, hi, sc, sp, tc, tp;
    scan_span(counts, m, piece_len, lo, hi, sc, sp);
    block_scan2(sc, sp, tc, tp);
    uint32_t rc = sums[blockIdx.x] + sc, rp = sums[gridDim.x + blockIdx.x] + sp;
    for (uint32_t i = lo; i < hi; i++) {
        const uint32_t k = counts[i];
        offsets[i] = rc;
        cursor[i] = rc;
        poffsets[i] = rp;
        rc += k;
        rp += (k + piece_len - 1) / piece_len;
    }
}

// ---------------------------------------------------------------------------------------
// Pieces in order of decreasing length (the host's `Gpu::set_msm_piece_order`, on by
// default). The accumulate kernels run one thread per piece, so a warp takes as long as its
// longest piece. In bucket order a warp's pieces are as uneven as the buckets' counts: with
// random scalars a bucket holds Poisson(mean) points, and at ~32 points per bucket (2^20 in
// 16-bit windows, or 2^24 in 20-bit ones) a warp's longest piece is ~1.4 times its mean; at
// 512 per bucket ~1.1 times. A counting sort by length gives each warp pieces of one length.
// Class of a piece: PIECE_CLASSES - len below PIECE_CLASSES (so the longest come first),
// and class 0 for longer pieces (only a skewed bucket's, most of them exactly piece_len).
#define PIECE_CLASSES 4096

__device__ __forceinline__ uint32_t piece_class(uint32_t len)
{
    return len >= PIECE_CLASSES ? 0 : PIECE_CLASSES - len;
}

// Histogram of the pieces' classes: per block in shared memory, summed into hist.
extern "C" __global__ void msm_piece_hist(const uint2* pieces, const uint32_t* npieces, uint32_t* hist)
{
    __shared__ uint32_t h[PIECE_CLASSES];
    for (uint32_t k = threadIdx.x; k < PIECE_CLASSES; k += blockDim.x)
        h[k] = 0;
    __syncthreads();
    const size_t n = *npieces, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t p = global_tid(); p < n; p += stride)
        atomicAdd(&h[piece_class(pieces[p].y)], 1u);
    __syncthreads();
    for (uint32_t k = threadIdx.x; k < PIECE_CLASSES; k += blockDim.x)
        if (h[k] != 0)
            atomicAdd(&hist[k], h[k]);
}

// perm[cursor[class] + k] = piece index: the same grid as msm_piece_hist; each block
// reserves its slots per class with one global atomic, as msm_scatter does for buckets.
extern "C" __global__ void msm_piece_order(const uint2* pieces, const uint32_t* npieces, uint32_t* cursor,
                                           uint32_t* perm)
{
    __shared__ uint32_t slot[PIECE_CLASSES];
    for (uint32_t k = threadIdx.x; k < PIECE_CLASSES; k += blockDim.x)
        slot[k] = 0;
    __syncthreads();
    const size_t n = *npieces, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t p = global_tid(); p < n; p += stride)
        atomicAdd(&slot[piece_class(pieces[p].y)], 1u);
    __syncthreads();
    for (uint32_t k = threadIdx.x; k < PIECE_CLASSES; k += blockDim.x)
        if (slot[k] != 0)
            slot[k] = atomicAdd(&cursor[k], slot[k]);
    __syncthreads();
    for (size_t p = global_tid(); p < n; p += stride)
        perm[atomicAdd(&slot[piece_class(pieces[p].y)], 1u)] = (uint32_t)p;
}
