// The NTT kernels of kernels/ntt.cu, run on the CPU (cuda_emu.hpp) over the field of
// small_fr.hpp, against a textbook transform. Each kernel choice is driven the way
// cuda/src/ntt.rs drives it:
// - the pass kernels (radix 2, 4, 8, and 8 with the twiddles read ahead), DIT after a
//   bit-reversal and DIF on natural input, in both directions;
// - the kernels before them (fr_ntt_shared, then fr_ntt_stage2 / fr_ntt_stage).
// Sizes run from 2^1 to 2^16, with the twiddle table of the size itself and of a larger
// domain (every 2^d-th entry used, as the h pipeline's tables are). Prints each failure and
// "N passed, M failed".
#include EMU_NTT_SOURCE

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using Kernel = void (*)(fr_t*, const fr_t*, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t);

// ntt.rs's constants: blocks of 2^10 scalars, at most 8 stages a pass after the first,
// 256 threads for the one-thread-per-item kernels.
constexpr uint32_t BLOCK_LOG = 10, PASS_STAGES_MAX = 8, THREADS = 256;

struct Pass {
    uint32_t s0, k, block_log;
};

// ntt_passes.rs's `passes`: the first pass takes min(block, n) stages, the rest are spread
// evenly over passes of at most PASS_STAGES_MAX.
std::vector<Pass> passes(uint32_t log_n)
{
    const uint32_t blk = min(BLOCK_LOG, log_n);
    std::vector<Pass> out{{0, blk, blk}};
    const uint32_t rest = log_n - blk;
    if (rest == 0)
        return out;
    const uint32_t count = (rest + PASS_STAGES_MAX - 1) / PASS_STAGES_MAX;
    uint32_t s0 = blk;
    for (uint32_t p = 0; p < count; p++) {
        const uint32_t k = rest / count + (p < rest % count ? 1 : 0);
        out.push_back({s0, k, blk});
        s0 += k;
    }
    return out;
}

unsigned blocks_for(size_t items, unsigned threads)
{
    return (unsigned)((items + threads - 1) / threads);
}

// The table ntt_tables.rs uploads: w^k for k < 2^(tw_log - 1), w of order 2^tw_log.
std::vector<fr_t> table(uint32_t tw_log)
{
    std::vector<fr_t> tw(size_t(1) << (tw_log - 1));
    const fr_t w = fr_root(tw_log);
    fr_t p = fr_t::one();
    for (auto& t : tw) {
        t = p;
        p = p * w;
    }
    return tw;
}

// A primitive len-th root of unity (len a power of two), or its inverse.
fr_t root_of(size_t len, bool inverse)
{
    unsigned log = 0;
    while ((size_t(1) << log) < len)
        log++;
    const fr_t w = fr_root(log);
    return inverse ? fr_pow(w, len - 1) : w;
}

std::vector<fr_t> random_values(std::mt19937_64& rng, size_t n)
{
    std::vector<fr_t> a(n);
    for (auto& x : a)
        x = fr_t{uint32_t(rng() % fr_t::P)};
    return a;
}

// X_k = sum_j a_j w^(j k), w = w_n or its inverse: iterative Cooley-Tukey, written
// independently of the kernels (and checked against the plain sum on small sizes).
std::vector<fr_t> reference(std::vector<fr_t> a, bool inverse)
{
    const size_t n = a.size();
    for (size_t i = 1, j = 0; i < n; i++) {
        size_t bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j)
            std::swap(a[i], a[j]);
    }
    for (size_t len = 2; len <= n; len <<= 1) {
        const fr_t w = root_of(len, inverse);
        for (size_t i = 0; i < n; i += len) {
            fr_t x = fr_t::one();
            for (size_t j = 0; j < len / 2; j++, x = x * w) {
                const fr_t u = a[i + j], v = a[i + j + len / 2] * x;
                a[i + j] = u + v;
                a[i + j + len / 2] = u - v;
            }
        }
    }
    return a;
}

std::vector<fr_t> plain_sum(const std::vector<fr_t>& a, bool inverse)
{
    const size_t n = a.size();
    const fr_t w = root_of(n, inverse);
    std::vector<fr_t> out(n);
    for (size_t k = 0; k < n; k++) {
        fr_t s{}, x = fr_t::one(), wk = fr_pow(w, k);
        for (size_t j = 0; j < n; j++, x = x * wk)
            s = s + a[j] * x;
        out[k] = s;
    }
    return out;
}

std::vector<fr_t> bitrev(std::vector<fr_t> a, uint32_t log_n)
{
    emu::launch(dim3{blocks_for(a.size(), THREADS)}, THREADS, 0, fr_bitrev, a.data(), log_n);
    return a;
}

// The pass kernels' transform (ntt.rs, `passes_enqueue`): radix 2^r kernels on 2^(block_log
// - r) threads, r at most block_log.
std::vector<fr_t> by_passes(std::vector<fr_t> a, uint32_t log_n, const std::vector<fr_t>& tw, uint32_t tw_log,
                            bool inverse, bool dif, uint32_t radix_log, bool ahead)
{
    auto plan = passes(log_n);
    if (dif)
        std::reverse(plan.begin(), plan.end());
    for (const Pass& p : plan) {
        const uint32_t r = min(radix_log, p.block_log);
        const Kernel k = r == 3 ? (ahead ? fr_ntt_pass8_ahead : fr_ntt_pass8) : r == 2 ? fr_ntt_pass4 : fr_ntt_pass;
        emu::launch(dim3{1u << (log_n - p.block_log)}, 1u << (p.block_log - r), 0, k, a.data(), tw.data(), p.s0,
                    p.k, p.block_log, tw_log, (uint32_t)inverse, (uint32_t)dif);
    }
    return a;
}

// The kernels before the passes (ntt.rs, `ntt_stages_enqueue`), natural order in and out.
std::vector<fr_t> by_stages(std::vector<fr_t> a, uint32_t log_n, const std::vector<fr_t>& tw, uint32_t tw_log,
                            bool inverse)
{
    const size_t n = a.size();
    a = bitrev(std::move(a), log_n);
    const uint32_t sh = min(log_n, BLOCK_LOG), inv = inverse;
    emu::launch(dim3{(unsigned)(n >> sh)}, 1u << (sh - 1), 0, fr_ntt_shared, a.data(), tw.data(), sh, tw_log, inv);
    for (uint32_t s = sh; s < log_n;) {
        if (s + 1 < log_n) {
            emu::launch(dim3{blocks_for(n / 4, THREADS)}, THREADS, 0, fr_ntt_stage2, a.data(), tw.data(), log_n, s,
                        tw_log, inv);
            s += 2;
        } else {
            emu::launch(dim3{blocks_for(n / 2, THREADS)}, THREADS, 0, fr_ntt_stage, a.data(), tw.data(), log_n, s,
                        tw_log, inv);
            s += 1;
        }
    }
    return a;
}

} // namespace

int main()
{
    unsigned passed = 0, failed = 0;
    auto check = [&](bool ok, const std::string& what) {
        if (ok) {
            passed++;
        } else {
            failed++;
            std::printf("FAILED: %s\n", what.c_str());
        }
    };
    std::mt19937_64 rng(2026);

    // The reference against the plain sum.
    for (uint32_t log_n : {1u, 2u, 3u, 6u}) {
        const auto a = random_values(rng, size_t(1) << log_n);
        for (bool inverse : {false, true})
            check(reference(a, inverse) == plain_sum(a, inverse),
                  "reference 2^" + std::to_string(log_n) + (inverse ? " inverse" : " forward"));
    }

    struct Radix {
        const char* name;
        uint32_t log;
        bool ahead;
    };
    const Radix radixes[] = {{"radix 2", 1, false}, {"radix 4", 2, false}, {"radix 8", 3, false},
                             {"radix 8 ahead", 3, true}};
    for (uint32_t log_n : {1u, 2u, 3u, 4u, 5u, 7u, 9u, 10u, 11u, 12u, 13u, 16u}) {
        const auto a = random_values(rng, size_t(1) << log_n);
        for (uint32_t extra : {0u, 3u}) {
            if (extra != 0 && log_n > 12)
                continue;
            const uint32_t tw_log = log_n + extra;
            const auto tw = table(tw_log);
            for (bool inverse : {false, true}) {
                const auto want = reference(a, inverse);
                const auto want_rev = bitrev(want, log_n);
                const std::string size = " 2^" + std::to_string(log_n) + " (table 2^" + std::to_string(tw_log) +
                                         (inverse ? "), inverse" : "), forward");
                for (const Radix& r : radixes) {
                    check(by_passes(bitrev(a, log_n), log_n, tw, tw_log, inverse, false, r.log, r.ahead) == want,
                          std::string(r.name) + " DIT" + size);
                    check(by_passes(a, log_n, tw, tw_log, inverse, true, r.log, r.ahead) == want_rev,
                          std::string(r.name) + " DIF" + size);
                }
                check(by_stages(a, log_n, tw, tw_log, inverse) == want, "stages" + size);
            }
        }
    }
    std::printf("%u passed, %u failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
