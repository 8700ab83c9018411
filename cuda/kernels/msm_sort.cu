// Multi-scalar multiplication (G1 and G2), Pippenger's bucket method, for blst's memory
// layouts: bases are blst_p1_affine / blst_p2_affine (Montgomery limbs; (0, 0) is
// infinity), scalars are canonical 32-byte little-endian (the low 255 bits are read, as
// blst does with nbits = 255). This file is the scalar side; msm_points.cuh the rest.
//
// Pipeline (one window of c bits per blockIdx.y in the tile kernels):
//   msm_ones_*    (0/1 fast path) grid-stride sums of the bases whose scalar is exactly one,
//                 then msm_reduce_* rounds down to one point; those scalars are skipped below
//   msm_hist      per-tile histograms of digits in shared memory, summed into counts[w][d]
//   msm_scan      offsets = exclusive scan of counts; piece offsets = scan of
//                 ceil(count / piece_len) (large buckets are split into pieces)
//   msm_scatter   idx[offset[w][d] + k] = point index, slots taken per tile with one global
//                 atomic per (tile, digit) and shared atomics inside the tile
//   msm_pieces    piece descriptors (start, len) per bucket
//   msm_accumulate_{g1,g2} one thread per piece: sum of its affine points (xyzz)
//   msm_buckets_*  one thread per bucket: sum of its pieces
//   msm_window_segments_* / msm_window_sums_*: sum_d d * B_d per window by running sums over
//                 segments; each window total comes back as blst_p1 / blst_p2 (Jacobian); the
//                 host combines windows (Horner, c doublings per window).
#include "common.cuh"

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

// The digit of window w, or 0 for a scalar the 0/1 fast path has summed already (a one has
// a single nonzero digit: 1 in window 0).
__device__ __forceinline__ uint32_t scalar_digit(const uint32_t* s, uint32_t w, uint32_t c,
                                                 uint32_t skip_ones)
{
    const uint32_t d = scalar_digit_raw(s, w, c);
    if (skip_ones && w == 0 && d == 1 && scalar_is_one(s))
        return 0;
    return d;
}

extern "C" __global__ void msm_hist(const uint32_t* scalars, uint32_t n, uint32_t c,
                                    uint32_t tile, uint32_t skip_ones, uint32_t* counts)
{
    extern __shared__ uint32_t hist[];
    const uint32_t w = blockIdx.y, nb = 1u << c;
    for (uint32_t k = threadIdx.x; k < nb; k += blockDim.x)
        hist[k] = 0;
    __syncthreads();
    const size_t lo = (size_t)blockIdx.x * tile;
    const size_t hi = min(lo + tile, (size_t)n);
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        uint32_t d = scalar_digit(scalars + 8 * i, w, c, skip_ones);
        if (d != 0)
            atomicAdd(&hist[d], 1u);
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
                                       uint32_t tile, uint32_t skip_ones, uint32_t* cursor,
                                       uint32_t* idx)
{
    extern __shared__ uint32_t slot[];
    const uint32_t w = blockIdx.y, nb = 1u << c;
    for (uint32_t k = threadIdx.x; k < nb; k += blockDim.x)
        slot[k] = 0;
    __syncthreads();
    const size_t lo = (size_t)blockIdx.x * tile;
    const size_t hi = min(lo + tile, (size_t)n);
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        uint32_t d = scalar_digit(scalars + 8 * i, w, c, skip_ones);
        if (d != 0)
            atomicAdd(&slot[d], 1u);
    }
    __syncthreads();
    for (uint32_t k = threadIdx.x; k < nb; k += blockDim.x)
        if (slot[k] != 0)
            slot[k] = atomicAdd(&cursor[(size_t)w * nb + k], slot[k]);
    __syncthreads();
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        uint32_t d = scalar_digit(scalars + 8 * i, w, c, skip_ones);
        if (d != 0)
            idx[atomicAdd(&slot[d], 1u)] = (uint32_t)i;
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

