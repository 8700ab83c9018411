// The sort kernels (kernels/msm_sort.cu) on the CPU (cuda_emu.hpp): the global sort's
// counts, three-launch scan and scatter; the shared-histogram sort
// (signed and unsigned digits); then the pieces and their order by length; checked on
// random, 0/1-heavy, sparse-listed and skewed scalars, plain and fixed-base windows. Built and run
// by cuda/tests/emu.rs, which passes the kernel file (its `extern __shared__` arrays
// rewritten) as EMU_SORT_SOURCE. Prints "N passed, N failed"; exits 1 on any failure.
//
// The check is independent of the kernels' digit code: from the sorted output alone (each
// bucket's range of idx, each word's point and sign) it rebuilds every scalar as
// sum of +-digit(bucket) * 2^(c * window) and compares it with the scalar (0 for a one the
// 0/1 path takes). The pieces must cut every bucket's range, each listed once in the order,
// longest first.
#include "cuda_emu.hpp"
#include EMU_SORT_SOURCE

#include <algorithm>
#include <array>
#include <cstdio>
#include <random>
#include <string>

namespace {

struct Case {
    std::string name;
    uint32_t n, c, windows, group, stride; // stride: points between copies (0 unless group > 1)
    uint32_t skip_ones;
    bool sparse;   // the scalars neither 0 nor 1 listed (`rest`), as the 0/1 path does
    int kind;      // 0 random, 1 99% zeros/ones, 2 skewed (few distinct scalars)
    uint32_t tile, threads;
    uint32_t piece_len;
    // The shared-histogram sort (msm_hist, msm_scan, msm_scatter: `Signed` and `Unsigned`)
    // instead of the global one, with signed or unsigned digits.
    bool shared = false;
    uint32_t signed_digits = 1;
};

using Scalar = std::array<uint32_t, 8>;

std::vector<Scalar> scalars_of(const Case& k, std::mt19937_64& rng)
{
    std::vector<Scalar> s(k.n);
    std::vector<Scalar> few(5);
    for (auto& f : few)
        for (auto& w : f)
            w = (uint32_t)rng();
    for (uint32_t i = 0; i < k.n; i++) {
        Scalar v{};
        if (k.kind == 1 && rng() % 100 != 0) {
            v[0] = (uint32_t)(rng() % 2);
        } else if (k.kind == 2) {
            v = few[rng() % few.size()];
        } else {
            for (auto& w : v)
                w = (uint32_t)rng();
        }
        v[7] &= 0x73eda752u; // below r's top word: canonical
        s[i] = v;
    }
    return s;
}

bool is_one(const Scalar& s)
{
    if (s[0] != 1)
        return false;
    for (int k = 1; k < 8; k++)
        if (s[k] != 0)
            return false;
    return true;
}

struct Sorted {
    std::vector<uint32_t> counts, offsets, idx, poffsets;
    std::vector<uint2> pieces;
    std::vector<uint32_t> perm;
};

uint32_t buckets_per_set(const Case& k)
{
    return 1u << (k.c - k.signed_digits);
}

// The pieces (msm_pieces) and their order by decreasing length (msm_piece_hist, msm_scan,
// msm_piece_order), as the host runs them after either sort.
void cut_and_order(const Case& k, Sorted& r, uint32_t m)
{
    r.pieces.assign(r.poffsets[m] + 1, uint2{0xFFFFFFFFu, 0xFFFFFFFFu});
    emu::launch(dim3{(m + 255) / 256, 1, 1}, 256, 0, msm_pieces, (const uint32_t*)r.counts.data(),
                (const uint32_t*)r.offsets.data(), (const uint32_t*)r.poffsets.data(), m, k.piece_len,
                r.pieces.data());
    const uint32_t npieces = r.poffsets[m];
    std::vector<uint32_t> hist(PIECE_CLASSES, 0), off(PIECE_CLASSES + 1), cur(PIECE_CLASSES),
        poff(PIECE_CLASSES + 1);
    emu::launch(dim3{2, 1, 1}, 256, 0, msm_piece_hist, (const uint2*)r.pieces.data(), &npieces, hist.data());
    emu::launch(dim3{1, 1, 1}, 1024, 0, msm_scan, (const uint32_t*)hist.data(), (uint32_t)PIECE_CLASSES, 1u,
                off.data(), cur.data(), poff.data());
    r.perm.assign(npieces, 0xFFFFFFFFu);
    emu::launch(dim3{2, 1, 1}, 256, 0, msm_piece_order, (const uint2*)r.pieces.data(), &npieces, cur.data(),
                r.perm.data());
}

// Empty when the pieces cut each bucket's range in order into pieces of at most piece_len,
// and the order lists every piece once, longest first.
std::string check_pieces(const Case& k, const Sorted& r, uint32_t m)
{
    for (uint32_t b = 0; b < m; b++) {
        uint32_t at = r.offsets[b];
        for (uint32_t q = r.poffsets[b]; q < r.poffsets[b + 1]; q++) {
            const uint2 pc = r.pieces[q];
            if (pc.x != at || pc.y == 0 || pc.y > k.piece_len)
                return "piece " + std::to_string(q) + " of bucket " + std::to_string(b) + " is wrong";
            at += pc.y;
        }
        if (at != r.offsets[b + 1])
            return "bucket " + std::to_string(b) + "'s pieces do not cover it";
    }
    const uint32_t npieces = r.poffsets[m];
    std::vector<bool> seen(npieces, false);
    uint32_t last = UINT32_MAX;
    for (uint32_t q : r.perm) {
        if (q >= npieces || seen[q])
            return "the order is no permutation of the pieces";
        seen[q] = true;
        const uint32_t len = min(r.pieces[q].y, (uint32_t)PIECE_CLASSES);
        if (len > last)
            return "the order is not longest first";
        last = len;
    }
    return "";
}

// Runs one sort as the host does (msm.rs): the shared-histogram one (msm_hist, msm_scan,
// msm_scatter) or the global one (msm_hist_global, the three-launch scan,
// msm_scatter_global, `wins` windows a scalar read); then the pieces and their order.
Sorted run(const Case& k, const std::vector<Scalar>& s, const std::vector<uint32_t>& rest, uint32_t wins)
{
    const uint32_t m = ((k.windows + k.group - 1) / k.group) * buckets_per_set(k);
    const size_t entries = (size_t)k.n * k.windows;
    std::vector<uint32_t> counts(m + 1, 0), offsets(m + 1), cursor(m), poffsets(m + 1);
    std::vector<uint32_t> idx(entries, 0xFFFFFFFFu);
    const uint32_t* sc = s[0].data();
    const uint32_t* rp = k.sparse ? rest.data() : nullptr;
    uint32_t nrest = (uint32_t)rest.size();
    const uint32_t cap = k.sparse ? (uint32_t)rest.size() : 0;
    // The sparse sort's count lives after the counts on the device.
    counts[m] = nrest;
    const uint32_t* nrp = &counts[m];
    if (k.shared) {
        const dim3 tiles{(k.n + k.tile - 1) / k.tile, k.windows, 1};
        const size_t smem = 4 * (size_t)buckets_per_set(k);
        emu::launch(tiles, k.threads, smem, msm_hist, sc, k.n, k.c, k.tile, k.skip_ones, k.signed_digits, rp,
                    nrp, cap, counts.data());
        emu::launch(dim3{1, 1, 1}, 1024, 0, msm_scan, (const uint32_t*)counts.data(), m, k.piece_len,
                    offsets.data(), cursor.data(), poffsets.data());
        emu::launch(tiles, k.threads, smem, msm_scatter, sc, k.n, k.c, k.tile, k.skip_ones, k.signed_digits, rp,
                    nrp, cap, cursor.data(), idx.data());
    } else {
        const dim3 grid{(k.n + k.tile - 1) / k.tile, k.windows / wins, 1};
        emu::launch(grid, k.threads, 0, msm_hist_global, sc, k.n, k.c, k.tile, k.skip_ones, rp, nrp, cap,
                    wins, k.group, k.stride, counts.data());
        const uint32_t blocks = (m + SCAN_BLOCK_COUNTS - 1) / SCAN_BLOCK_COUNTS;
        std::vector<uint32_t> sums(2 * blocks);
        emu::launch(dim3{blocks, 1, 1}, 1024, 0, msm_scan_sums, (const uint32_t*)counts.data(), m, k.piece_len,
                    sums.data());
        emu::launch(dim3{1, 1, 1}, 1024, 0, msm_scan_top, sums.data(), blocks, &offsets[m], &poffsets[m]);
        emu::launch(dim3{blocks, 1, 1}, 1024, 0, msm_scan_write, (const uint32_t*)counts.data(), m, k.piece_len,
                    (const uint32_t*)sums.data(), offsets.data(), cursor.data(), poffsets.data());
        emu::launch(grid, k.threads, 0, msm_scatter_global, sc, k.n, k.c, k.tile, k.skip_ones, rp, nrp, cap, wins,
                    k.group, k.stride, cursor.data(), idx.data());
    }
    Sorted r{counts, offsets, idx, poffsets, {}, {}};
    cut_and_order(k, r, m);
    r.counts.resize(m);
    return r;
}

// Empty when the sorted output rebuilds every scalar; otherwise what went wrong.
std::string rebuild(const Case& k, const std::vector<Scalar>& s, const Sorted& r)
{
    const uint32_t m = (uint32_t)r.counts.size(), per_set = buckets_per_set(k);
    if (r.offsets[0] != 0)
        return "offsets[0] != 0";
    for (uint32_t b = 0; b < m; b++)
        if (r.offsets[b + 1] - r.offsets[b] != r.counts[b])
            return "offsets do not scan the counts at bucket " + std::to_string(b);
    // acc[i][limb]: signed 64-bit sums of 32-bit-aligned parts.
    std::vector<std::array<int64_t, 9>> acc(k.n);
    for (auto& a : acc)
        a.fill(0);
    for (uint32_t b = 0; b < m; b++) {
        const uint32_t set = b / per_set, digit = b % per_set + k.signed_digits;
        for (uint32_t j = r.offsets[b]; j < r.offsets[b + 1]; j++) {
            const uint32_t word = r.idx[j];
            if (word == 0xFFFFFFFFu)
                return "slot " + std::to_string(j) + " of bucket " + std::to_string(b) + " never written";
            const uint32_t point = word & ~MSM_NEG_BIT;
            const uint32_t i = k.group > 1 ? point % k.stride : point;
            const uint32_t copy = k.group > 1 ? point / k.stride : 0;
            if (i >= k.n || copy >= k.group)
                return "word " + std::to_string(word) + " names no point";
            const uint32_t window = set * k.group + copy, bit = window * k.c;
            const int64_t v = (int64_t)((uint64_t)digit << (bit % 32)) * ((word & MSM_NEG_BIT) ? -1 : 1);
            acc[i][bit / 32] += v;
        }
    }
    for (uint32_t i = 0; i < k.n; i++) {
        const bool taken = k.skip_ones && is_one(s[i]);
        int64_t carry = 0;
        for (int l = 0; l < 9; l++) {
            const int64_t t = acc[i][l] + carry;
            const int64_t lo = t & 0xFFFFFFFFll;
            carry = (t - lo) / (int64_t(1) << 32);
            const uint32_t want = l < 8 && !taken ? s[i][l] : 0;
            if ((uint32_t)lo != want)
                return "scalar " + std::to_string(i) + " rebuilt wrong at limb " + std::to_string(l);
        }
        if (carry != 0)
            return "scalar " + std::to_string(i) + " rebuilt with a carry out";
    }
    return "";
}

} // namespace

int main()
{
    std::mt19937_64 rng(0x5eed5);
    // name, n, c, windows, group, stride, skip_ones, sparse, kind, tile, threads, piece_len[, shared, signed]
    const std::vector<Case> cases = {
        {"plain c10, random", 3000, 10, 26, 1, 0, 1, false, 0, 1024, 256, 8},
        {"plain c12, random, odd tail", 2049, 12, 22, 1, 0, 0, false, 0, 512, 128, 16},
        {"plain c9, 99% zeros and ones", 4000, 9, 29, 1, 0, 1, false, 1, 1024, 256, 8},
        {"plain c9, 99% 0/1, sparse list", 4000, 9, 29, 1, 0, 1, true, 1, 1024, 256, 8},
        {"plain c11, skewed", 3000, 11, 24, 1, 0, 1, false, 2, 1024, 256, 32},
        {"fixed c10 x 26 copies (one set)", 1500, 10, 26, 26, 1500, 1, false, 0, 512, 256, 8},
        {"fixed c10 x 9 copies (3 sets)", 1700, 10, 26, 9, 1800, 1, false, 0, 512, 256, 8},
        // The shared-histogram sort: signed and unsigned digits.
        {"shared, signed c9, random", 3000, 9, 29, 1, 0, 1, false, 0, 1024, 256, 8, true, 1},
        {"shared, unsigned c8, random", 3000, 8, 32, 1, 0, 1, false, 0, 1024, 256, 8, true, 0},
        {"shared, signed c9, 99% 0/1, sparse list", 4000, 9, 29, 1, 0, 1, true, 1, 1024, 256, 8, true, 1},
        {"shared, unsigned c10, skewed", 3000, 10, 26, 1, 0, 1, false, 2, 512, 128, 16, true, 0},
    };
    int passed = 0, failed = 0;
    for (const Case& k : cases) {
        const auto s = scalars_of(k, rng);
        std::vector<uint32_t> rest;
        for (uint32_t i = 0; i < k.n; i++) {
            const bool zero = std::all_of(s[i].begin(), s[i].end(), [](uint32_t w) { return w == 0; });
            if (!zero && !is_one(s[i]))
                rest.push_back(i);
        }
        // The global sort reads the scalars per window and once; the shared one per window.
        for (uint32_t wins : {1u, k.windows}) {
            if (k.windows % wins != 0 || (k.shared && wins != 1))
                continue;
            const Sorted r = run(k, s, rest, wins);
            std::string e = rebuild(k, s, r);
            if (e.empty())
                e = check_pieces(k, r, (uint32_t)r.counts.size());
            const char* reads = k.shared ? "" : wins == 1 ? " (counts read per window)" : " (counts read once)";
            std::printf("%s %s%s: %s\n", e.empty() ? "ok  " : "FAIL", k.name.c_str(), reads,
                        e.empty() ? "rebuilt, pieces cut and ordered" : e.c_str());
            (e.empty() ? passed : failed)++;
        }
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
