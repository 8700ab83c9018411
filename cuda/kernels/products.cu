// The sparse products of precompiled constraints: a = A.w, b = B.w, c = C.w for the
// recorded rows, from the row stream (circuits/src/precompiled/format.rs) and the witness
// (inputs, aux: Montgomery Fr as in host memory). One thread per block of ROWS_PER_BLOCK
// rows: the block table gives each block's first word, so blocks are independent.
#include "common.cuh"

#define ROWS_PER_BLOCK 2048
#define ROW_ESCAPE 0xffffffffu
#define INDEX_MASK ((1u << 29) - 1)
#define INPUT_BIT (1u << 31)

extern "C" __global__ void pce_products(const uint32_t* stream, const uint64_t* blocks, size_t nblocks,
                                        size_t rows, const fr_t* coeffs, const fr_t* inputs,
                                        const fr_t* aux, fr_t* a, fr_t* b, fr_t* c)
{
    size_t k = global_tid();
    if (k >= nblocks)
        return;
    size_t pos = blocks[k];
    size_t end = (k + 1) * ROWS_PER_BLOCK;
    if (end > rows)
        end = rows;
    fr_t* out[3] = {a, b, c};
    for (size_t r = k * ROWS_PER_BLOCK; r < end; r++) {
        uint32_t len[3];
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
}
