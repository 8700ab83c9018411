// Batch-affine accumulation: the pieces' sums in affine coordinates, one field inversion per
// block and round shared by all of the block's additions (Montgomery's trick).
//
// The written-out mixed addition (msm_points.cuh, `inline_ops`) costs 8 products and 2
// squares per point. An affine addition costs 3 (lambda = (y2 - y1) / (x2 - x1), lambda^2,
// lambda (x1 - x3)) once 1 / (x2 - x1) is known, and Montgomery's trick gets it for 3 more:
// one product on the way up (the running product), two on the way down (the inverse, and
// the running inverse). 6 against 10, plus the block's one inversion per round.
//
// Thread t of a block owns BA_K pieces: perm positions first + t + i BA_THREADS (the pieces
// by decreasing length, so a block's pieces are about equally long). Round r adds each
// piece's r-th point to its sum: forward, each thread's running product of the
// denominators, the prefix stored where the piece's sum lies; the block inverts its 256
// running products with one inversion (`block_inverse`); backward, each denominator's
// inverse, and the addition. The sums live in the pieces' own `partial` slots (x in X, y in
// Y, the prefix in ZZZ) and come out as xyzz points (ZZ = ZZZ = 1, or 0 at infinity), the
// layout the buckets kernel reads.
//
// Rare cases: a base at infinity ((0, 0)) adds nothing; a sum at infinity takes the next
// point as it is; the same x with the same y is a doubling (denominator 2y, numerator 3x^2),
// with the opposite y the sum goes to infinity.
#pragma once
#include "msm_points.cuh"

// Threads of a batch-affine block, and the pieces each thread owns.
#define BA_THREADS 256

// 1 / q for every thread's q (all nonzero), with one inversion per block: warp 0 takes the
// products of each lane's column (q of threads lane, lane + 32, ..), keeping the prefixes,
// inverts its 32 products (sppark's reciprocal pairs the lanes), and walks the columns back.
template<class field>
__device__ __forceinline__ field block_inverse(const field& q)
{
    constexpr int ROWS = BA_THREADS / 32;
    __shared__ uint4 s_raw[BA_THREADS * sizeof(field) / 16], c_raw[BA_THREADS * sizeof(field) / 16];
    field* s = reinterpret_cast<field*>(s_raw);
    field* c = reinterpret_cast<field*>(c_raw);
    const int t = threadIdx.x;
    s[t] = q;
    __syncthreads();
    if (t < 32) {
        field acc = s[t];
        c[t] = acc;
#pragma unroll 1
        for (int j = 1; j < ROWS; j++) {
            acc *= s[t + 32 * j];
            c[t + 32 * j] = acc;
        }
        field inv = acc.reciprocal();
#pragma unroll 1
        for (int j = ROWS - 1; j > 0; j--) {
            const field r = inv * c[t + 32 * (j - 1)];
            inv *= s[t + 32 * j];
            c[t + 32 * j] = r;
        }
        c[t] = inv;
    }
    __syncthreads();
    const field r = c[t];
    __syncthreads(); // s and c are free for the next round
    return r;
}

// What round r does with one piece (2 bits each in a thread's mask).
#define BA_NONE 0u
#define BA_ADD 1u
#define BA_DBL 2u

template<class field, bool SIGNED, int K>
__device__ __forceinline__ void accumulate_ba(const typename inline_ops<field>::base_t* bases,
                                              const uint32_t* idx, const uint2* pieces,
                                              const uint32_t* npieces, const uint32_t* perm,
                                              typename inline_ops<field>::bucket_t* partial)
{
    static_assert(2 * K <= 32, "a round's kinds fit one word");
    const uint32_t np = *npieces;
    const size_t first = (size_t)blockIdx.x * BA_THREADS * K + threadIdx.x;
    if (first - threadIdx.x >= np)
        return; // the whole block: no piece for it
    __shared__ uint32_t rounds;
    if (threadIdx.x == 0)
        rounds = 0;
    __syncthreads();

    // Round 0: each sum is its piece's first point. inf: bit i, piece i's sum is infinity.
    uint32_t inf = 0, longest = 0;
#pragma unroll 1
    for (int i = 0; i < K; i++) {
        const size_t pos = first + (size_t)i * BA_THREADS;
        if (pos >= np)
            break;
        const uint32_t p = perm != nullptr ? perm[pos] : (uint32_t)pos;
        const uint2 pc = pieces[p];
        longest = max(longest, pc.y);
        const uint32_t e = idx[pc.x];
        const uint32_t j = SIGNED ? e & 0x7fffffffu : e;
        const field x = bases[j].x;
        field y = bases[j].y;
        if (x.is_zero(y))
            inf |= 1u << i;
        y.cneg(SIGNED && (e >> 31) != 0);
        partial[p].X = x;
        partial[p].Y = y;
    }
    atomicMax(&rounds, longest);
    __syncthreads();
    const uint32_t nrounds = rounds;

#pragma unroll 1
    for (uint32_t r = 1; r < nrounds; r++) {
        // Forward: the denominators' running product, its prefix kept in ZZZ.
        field q = field::one();
        uint32_t kinds = 0;
#pragma unroll 1
        for (int i = 0; i < K; i++) {
            const size_t pos = first + (size_t)i * BA_THREADS;
            if (pos >= np)
                break;
            const uint32_t p = perm != nullptr ? perm[pos] : (uint32_t)pos;
            const uint2 pc = pieces[p];
            if (r >= pc.y)
                continue;
            const uint32_t e = idx[pc.x + r];
            const uint32_t j = SIGNED ? e & 0x7fffffffu : e;
            const bool neg = SIGNED && (e >> 31) != 0;
            const field x2 = bases[j].x;
            if (x2.is_zero() && x2.is_zero(bases[j].y))
                continue; // the base is infinity
            if ((inf >> i) & 1) {
                field y2 = bases[j].y;
                partial[p].X = x2;
                partial[p].Y = y2.cneg(neg);
                inf &= ~(1u << i);
                continue;
            }
            field d = x2 - partial[p].X;
            uint32_t kind = BA_ADD;
            if (d.is_zero()) {
                const field y1 = partial[p].Y;
                field y2 = bases[j].y;
                y2.cneg(neg);
                d = y1 + y1;
                if (!(y2 - y1).is_zero() || d.is_zero()) {
                    inf |= 1u << i; // P + (-P), or a point of order 2
                    continue;
                }
                kind = BA_DBL;
            }
            partial[p].ZZZ = q;
            q *= d;
            kinds |= kind << (2 * i);
        }

        field inv = block_inverse(q);

        // Backward: each denominator's inverse from the prefix, then the affine addition.
#pragma unroll 1
        for (int i = K - 1; i >= 0; i--) {
            const uint32_t kind = (kinds >> (2 * i)) & 3u;
            if (kind == BA_NONE)
                continue;
            const size_t pos = first + (size_t)i * BA_THREADS;
            const uint32_t p = perm != nullptr ? perm[pos] : (uint32_t)pos;
            const uint2 pc = pieces[p];
            const uint32_t e = idx[pc.x + r];
            const uint32_t j = SIGNED ? e & 0x7fffffffu : e;
            const field x1 = partial[p].X, y1 = partial[p].Y;
            field x2 = bases[j].x, y2 = bases[j].y;
            y2.cneg(SIGNED && (e >> 31) != 0);
            field num, d;
            if (kind == BA_ADD) {
                d = x2 - x1;
                num = y2 - y1;
            } else {
                d = y1 + y1;
                num = x1 ^ 2;
                num = num + num + num;
            }
            const field dinv = inv * partial[p].ZZZ;
            inv *= d;
            const field lambda = num * dinv;
            field x3 = lambda ^ 2;
            x3 -= x1;
            x3 -= x2; // the doubling's x2 is x1
            field y3 = x1 - x3;
            y3 *= lambda;
            y3 -= y1;
            partial[p].X = x3;
            partial[p].Y = y3;
        }
    }

    // The sums as xyzz: ZZ = ZZZ = 1, or 0 at infinity.
#pragma unroll 1
    for (int i = 0; i < K; i++) {
        const size_t pos = first + (size_t)i * BA_THREADS;
        if (pos >= np)
            break;
        const uint32_t p = perm != nullptr ? perm[pos] : (uint32_t)pos;
        field z = field::one();
        if ((inf >> i) & 1)
            z.zero();
        partial[p].ZZZ = z;
        partial[p].ZZ = z;
    }
}

// The batch-affine accumulate kernels over FIELD (unsigned and signed entries), K pieces per
// thread, named with SUFFIX; launched with BA_THREADS threads and one block per
// BA_THREADS * K pieces (msm.rs, `BA_PIECES_PER_THREAD`).
#define MSM_BA_KERNELS(SUFFIX, FIELD, K, MINB)                                                   \
    extern "C" __global__ void __launch_bounds__(BA_THREADS, MINB) msm_accumulate_##SUFFIX(     \
        const inline_ops<FIELD>::base_t* bases, const uint32_t* idx, const uint2* pieces,       \
        const uint32_t* npieces, const uint32_t* perm, inline_ops<FIELD>::bucket_t* partial)    \
    {   accumulate_ba<FIELD, false, K>(bases, idx, pieces, npieces, perm, partial);   }         \
    extern "C" __global__ void __launch_bounds__(BA_THREADS, MINB) msm_accumulate_signed_##SUFFIX(\
        const inline_ops<FIELD>::base_t* bases, const uint32_t* idx, const uint2* pieces,       \
        const uint32_t* npieces, const uint32_t* perm, inline_ops<FIELD>::bucket_t* partial)    \
    {   accumulate_ba<FIELD, true, K>(bases, idx, pieces, npieces, perm, partial);   }
