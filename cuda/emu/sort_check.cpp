// The global sort's kernels (kernels/msm_sort.cu) on the CPU (cuda_emu.hpp): counts, the
// three-launch scan, then the atomic scatter and the binned scatter, checked on random,
// 0/1-heavy, sparse-listed and skewed scalars, plain and fixed-base windows. Built and run
// by cuda/tests/emu_sort.rs, which passes the kernel file (its `extern __shared__` arrays
// rewritten) as EMU_SORT_SOURCE. Prints "N passed, N failed"; exits 1 on any failure.
//
// The check is independent of the kernels' digit code: from the sorted output alone (each
// bucket's range of idx, each word's point and sign) it rebuilds every scalar as
// sum of +-(bucket + 1) * 2^(c * window) and compares it with the scalar (0 for a one the
// 0/1 path takes). The two scatters must also give each bucket the same set of words.
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
    uint32_t tile, threads, bin_tile;
    uint32_t piece_len;
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
    std::vector<uint32_t> counts, offsets, idx;
};

// Runs msm_hist_global, the scan and one scatter as the host does (msm.rs).
Sorted run(const Case& k, const std::vector<Scalar>& s, const std::vector<uint32_t>& rest, bool binned,
           uint32_t wins)
{
    const uint32_t m = ((k.windows + k.group - 1) / k.group) << (k.c - 1);
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
    if (!binned) {
        emu::launch(grid, k.threads, 0, msm_scatter_global, sc, k.n, k.c, k.tile, k.skip_ones, rp, nrp, cap,
                    wins, k.group, k.stride, cursor.data(), idx.data());
    } else {
        uint32_t shift = 0;
        while (((m + (1u << shift) - 1) >> shift) > 64)
            shift++;
        const uint32_t nbins = (m + (1u << shift) - 1) >> shift;
        std::vector<uint32_t> bin_cursor(nbins);
        std::vector<uint2> pairs(entries, uint2{0xFFFFFFFFu, 0xFFFFFFFFu});
        emu::launch(dim3{(nbins + 255) / 256, 1, 1}, 256, 0, msm_bin_init, (const uint32_t*)offsets.data(), m,
                    shift, nbins, bin_cursor.data());
        const dim3 bgrid{(k.n + k.bin_tile - 1) / k.bin_tile, 1, 1};
        emu::launch(bgrid, k.threads, 4 * nbins, msm_bin_scatter, sc, k.n, k.c, k.bin_tile, k.skip_ones, rp,
                    nrp, cap, k.windows, k.group, k.stride, shift, nbins, bin_cursor.data(), pairs.data());
        emu::launch(dim3{nbins, 1, 1}, 256, 4u << shift, msm_bin_place, (const uint2*)pairs.data(),
                    (const uint32_t*)offsets.data(), m, shift, idx.data());
    }
    counts.resize(m);
    return {counts, offsets, idx};
}

// Empty when the sorted output rebuilds every scalar; otherwise what went wrong.
std::string rebuild(const Case& k, const std::vector<Scalar>& s, const Sorted& r)
{
    const uint32_t m = (uint32_t)r.counts.size(), per_set = 1u << (k.c - 1);
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
        const uint32_t set = b / per_set, digit = b % per_set + 1;
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

bool same_sets(const Sorted& a, const Sorted& b)
{
    if (a.counts != b.counts || a.offsets != b.offsets)
        return false;
    for (size_t x = 0; x + 1 < a.offsets.size(); x++) {
        std::vector<uint32_t> u(a.idx.begin() + a.offsets[x], a.idx.begin() + a.offsets[x + 1]);
        std::vector<uint32_t> v(b.idx.begin() + b.offsets[x], b.idx.begin() + b.offsets[x + 1]);
        std::sort(u.begin(), u.end());
        std::sort(v.begin(), v.end());
        if (u != v)
            return false;
    }
    return true;
}

} // namespace

int main()
{
    std::mt19937_64 rng(0x5eed5);
    // name, n, c, windows, group, stride, skip_ones, sparse, kind, tile, threads, bin_tile, piece_len
    const std::vector<Case> cases = {
        {"plain c10, random", 3000, 10, 26, 1, 0, 1, false, 0, 1024, 256, 512, 8},
        {"plain c12, random, odd tail", 2049, 12, 22, 1, 0, 0, false, 0, 512, 128, 1024, 16},
        {"plain c9, 99% zeros and ones", 4000, 9, 29, 1, 0, 1, false, 1, 1024, 256, 1024, 8},
        {"plain c9, 99% 0/1, sparse list", 4000, 9, 29, 1, 0, 1, true, 1, 1024, 256, 1024, 8},
        {"plain c11, skewed", 3000, 11, 24, 1, 0, 1, false, 2, 1024, 256, 1024, 32},
        {"fixed c10 x 26 copies (one set)", 1500, 10, 26, 26, 1500, 1, false, 0, 512, 256, 512, 8},
        {"fixed c10 x 9 copies (3 sets)", 1700, 10, 26, 9, 1800, 1, false, 0, 512, 256, 1024, 8},
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
        for (uint32_t wins : {1u, k.windows}) {
            if (k.windows % wins != 0)
                continue;
            const Sorted atomic = run(k, s, rest, false, wins);
            const Sorted binned = run(k, s, rest, true, wins);
            const std::string ea = rebuild(k, s, atomic), eb = rebuild(k, s, binned);
            const bool same = same_sets(atomic, binned);
            const bool ok = ea.empty() && eb.empty() && same;
            std::printf("%s %s (counts read %s): %s%s%s%s\n", ok ? "ok  " : "FAIL", k.name.c_str(),
                        wins == 1 ? "per window" : "once", ea.empty() ? "" : (" atomic: " + ea).c_str(),
                        eb.empty() ? "" : (" binned: " + eb).c_str(),
                        same ? "" : " the scatters' buckets differ", ok ? "rebuilt, same buckets" : "");
            (ok ? passed : failed)++;
        }
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
