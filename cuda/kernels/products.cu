// The sparse products of precompiled constraints: a = A.w, b = B.w, c = C.w for the
// recorded rows, from the row stream (circuits/src/precompiled/format.rs) and the witness
// (inputs, aux: Montgomery Fr as in host memory).
//
// The stream is variable-length per row; its block table gives the first word of each block
// of ROWS_PER_BLOCK rows. pce_row_offsets walks each block once (when the stream becomes
// resident) and writes every row's word offset from its block's start, so pce_products can
// run one thread per row.
#include "common.cuh"

#define ROWS_PER_BLOCK 2048
#define ROW_ESCAPE 0xffffffffu
#define INDEX_MASK ((1u << 29) - 1)
#define INPUT_BIT (1u << 31)

// The three term counts of the row at `pos`; advances `pos` past the row's header.
__device__ __forceinline__ void row_lengths(const uint32_t* stream, size_t& pos, uint32_t len[3])
{
    uint32_t h = stream[pos++];
    if (h == ROW_ESCAPE) {
        len[0] = stream[pos++];
        len[1] = stream[pos++];
        len[2] = stream[pos++];
    } else {
        len[0] = h & 1023u;
        len[1] = (h >> 10) & 1023u;
        len[2] = (h >> 20) & 1023u;
    }
}

// One thread per block of rows: offsets[r] = first word of row r - blocks[r / ROWS_PER_BLOCK].
extern "C" __global__ void pce_row_offsets(const uint32_t* stream, const uint64_t* blocks, size_t nblocks,
                                           size_t rows, uint32_t* offsets)
{
    size_t k = global_tid();
    if (k >= nblocks)
        return;
    size_t start = blocks[k];
    size_t pos = start;
    size_t end = (k + 1) * ROWS_PER_BLOCK;
    if (end > rows)
        end = rows;
    for (size_t r = k * ROWS_PER_BLOCK; r < end; r++) {
        offsets[r] = (uint32_t)(pos - start);
        uint32_t len[3];
        row_lengths(stream, pos, len);
        for (int m = 0; m < 3; m++)
            for (uint32_t t = 0; t < len[m]; t++) {
                uint32_t w = stream[pos++];
                if (((w >> 29) & 3u) >= 2u)
                    pos++; // the coefficient's index
            }
    }
}

// One thread per row.
extern "C" __global__ void pce_products(const uint32_t* stream, const uint64_t* blocks, const uint32_t* offsets,
                                        size_t rows, const fr_t* coeffs, const fr_t* inputs, const fr_t* aux,
                                        fr_t* a, fr_t* b, fr_t* c)
{
    size_t r = global_tid();
    if (r >= rows)
        return;
    size_t pos = blocks[r / ROWS_PER_BLOCK] + offsets[r];
    fr_t* out[3] = {a, b, c};
    uint32_t len[3];
    row_lengths(stream, pos, len);
    for (int m = 0; m < 3; m++) {
        fr_t acc;
        acc.zero();
        for (uint32_t t = 0; t < len[m]; t++) {
            uint32_t w = stream[pos++];
            uint32_t i = w & INDEX_MASK;
            fr_t v = (w & INPUT_BIT) ? inputs[i] : aux[i];
            switch ((w >> 29) & 3u) {
            case 0:
                acc += v;
                break;
            case 1:
                acc -= v;
                break;
            default:
                acc += v * coeffs[stream[pos++]];
            }
        }
        out[m][r] = acc;
    }
}

// Split vectors from the assignment: the aux variables a density bitmap selects, in order,
// as canonical scalars (the MSM's input). A chunk is 64 density words (4096 variables).
#define CHUNK_WORDS 64

// One thread per chunk: word_prefix[w] = set bits of the chunk's words before w;
// chunk_totals[k] = set bits of chunk k.
extern "C" __global__ void density_word_prefix(const uint64_t* words, size_t nwords, uint32_t* word_prefix,
                                               uint32_t* chunk_totals)
{
    size_t k = global_tid();
    size_t first = k * CHUNK_WORDS;
    if (first >= nwords)
        return;
    size_t end = first + CHUNK_WORDS;
    if (end > nwords)
        end = nwords;
    uint32_t acc = 0;
    for (size_t w = first; w < end; w++) {
        word_prefix[w] = acc;
        acc += (uint32_t)__popcll(words[w]);
    }
    chunk_totals[k] = acc;
}

// Exclusive prefix sum of v[0..n) in place, by one block of 1024 threads.
extern "C" __global__ void scan_exclusive_u32(uint32_t* v, size_t n)
{
    __shared__ uint32_t sums[1024];
    size_t t = threadIdx.x;
    size_t per = (n + blockDim.x - 1) / blockDim.x;
    size_t lo = t * per, hi = lo + per;
    if (lo > n)
        lo = n;
    if (hi > n)
        hi = n;
    uint32_t s = 0;
    for (size_t i = lo; i < hi; i++)
        s += v[i];
    sums[t] = s;
    __syncthreads();
    if (t == 0) {
        uint32_t acc = 0;
        for (unsigned j = 0; j < blockDim.x; j++) {
            uint32_t x = sums[j];
            sums[j] = acc;
            acc += x;
        }
    }
    __syncthreads();
    uint32_t acc = sums[t];
    for (size_t i = lo; i < hi; i++) {
        uint32_t x = v[i];
        v[i] = acc;
        acc += x;
    }
}

// One thread per aux variable i: with all != 0, out[i] = canonical(aux[i]); else, when bit
// i of words is set, out[j] = canonical(aux[i]) with j the set bits before i.
extern "C" __global__ void fr_gather_canonical(const fr_t* aux, size_t naux, uint32_t all, const uint64_t* words,
                                               const uint32_t* word_prefix, const uint32_t* chunk_prefix,
                                               fr_t* out)
{
    size_t i = global_tid();
    if (i >= naux)
        return;
    size_t j = i;
    if (!all) {
        uint64_t w = words[i >> 6];
        uint32_t bit = (uint32_t)(i & 63);
        if (!((w >> bit) & 1ull))
            return;
        uint64_t below = bit == 0 ? 0ull : (w & ((1ull << bit) - 1ull));
        j = (size_t)chunk_prefix[i / (64 * CHUNK_WORDS)] + word_prefix[i >> 6] + (uint32_t)__popcll(below);
    }
    fr_t x = aux[i];
    x.from();
    out[j] = x;
}

// A witness's aux packed on the host (cuda/src/aux_pack.rs), written out as the slab holds
// it (Montgomery form): 2-bit codes, 16 per word (0: zero, 1: one, 2: the next of
// `others`), and per block of 256 variables the count of others before the block. One
// thread per variable, 256 per block (the block ranks its others with warp ballots).
extern "C" __global__ void fr_unpack_aux(const uint32_t* codes, const uint32_t* block_others, const fr_t* others,
                                         size_t n, fr_t* out)
{
    __shared__ uint32_t warp_others[8];
    const size_t i = global_tid();
    const uint32_t code = i < n ? (codes[i >> 4] >> (2 * (uint32_t)(i & 15))) & 3u : 0u;
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint32_t mask = __ballot_sync(0xffffffffu, code == 2u);
    if (lane == 0)
        warp_others[warp] = __popc(mask);
    __syncthreads();
    if (i >= n)
        return;
    if (code == 2u) {
        uint32_t rank = __popc(mask & ((1u << lane) - 1u));
        for (uint32_t w = 0; w < warp; w++)
            rank += warp_others[w];
        out[i] = others[block_others[blockIdx.x] + rank];
    } else {
        out[i] = fr_t::one(code == 0u);
    }
}
