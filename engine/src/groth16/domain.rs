//! Radix-2 evaluation domains and in-place NTTs over BLS12-381's scalar field, with
//! bellperson 0.27's conventions: the domain is the smallest power of two holding the
//! coefficients, `omega` is `Scalar::ROOT_OF_UNITY` squared down to that size, cosets use
//! `Scalar::MULTIPLICATIVE_GENERATOR`, and `z(tau) = tau^m - 1`.
//!
//! Every transform works in place on a caller's slice (slab memory in the prover); the
//! twiddle table is a caller's slice too, so nothing here allocates.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::error::{Groth16Error, Result};

/// Elements per parallel task for element-wise passes and small butterfly stages (8 KiB
/// of scalars per 256: enough work to amortize a rayon task).
const CHUNK: usize = 4096;

/// Stages whose twiddles lie this many table entries apart or more read them from a
/// compact copy, each such stage's twiddles side by side. Through the table itself they
/// would be `stride x 32 B` apart: from 512 B up every twiddle costs a cache line of its
/// own, from 4 KiB up (the first stages of any large domain) the hardware prefetchers no
/// longer follow, and on huge pages the power-of-two addresses crowd into a few cache sets.
/// The copy costs `size / 16` scalars beside the table's `size / 2`.
const COMPACT_STRIDE: usize = 16;

/// Scalars of the compact copy for a domain of `size`: the stage of half-block `h` (stride
/// `size / 2h >= COMPACT_STRIDE`) at offset `h - 1`, for `h = 1, 2, 4, ..` up to
/// `size / (2 COMPACT_STRIDE)`.
fn compact_len(size: usize) -> usize {
    let h_max = size / (2 * COMPACT_STRIDE);
    if h_max == 0 {
        0
    } else {
        2 * h_max - 1
    }
}

/// Scalars of a precomputed [`Twiddles`] table for a domain of `size` (a power of two):
/// `omega^k` for `k < size / 2`, then the compact copy of the strided stages.
pub fn twiddle_table_len(size: usize) -> usize {
    (size / 2).max(1) + compact_len(size)
}

/// A radix-2 domain of `size` points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Domain {
    pub size: usize,
    pub log_size: u32,
    pub omega: Scalar,
    pub omega_inv: Scalar,
    /// `1 / size`.
    pub size_inv: Scalar,
}

impl Domain {
    /// The smallest domain holding `min_size` coefficients.
    pub fn new(min_size: usize) -> Result<Domain> {
        let size = min_size.max(1).next_power_of_two();
        let log_size = size.trailing_zeros();
        if log_size >= Scalar::S {
            return Err(Groth16Error::Limit {
                what: "evaluation domain log2 size",
                value: log_size as usize,
                limit: Scalar::S as usize - 1,
            });
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_size..Scalar::S {
            omega = omega.square();
        }
        Ok(Domain {
            size,
            log_size,
            omega,
            omega_inv: omega.invert().expect("a root of unity is non-zero"),
            size_inv: Scalar::from(size as u64).invert().expect("size < r"),
        })
    }

    /// `tau^m - 1`: the vanishing polynomial of the domain at `tau`.
    pub fn z(&self, tau: &Scalar) -> Scalar {
        tau.pow_vartime([self.size as u64]) - Scalar::ONE
    }

    /// Twiddle scalars the recomputing transforms ([`Domain::fft`] and friends) need as
    /// scratch (`size / 2`). A precomputed [`Twiddles`] table holds more:
    /// [`twiddle_table_len`].
    pub fn twiddle_len(&self) -> usize {
        self.size / 2
    }

    /// Forward NTT in place: evaluations at `omega^i`.
    pub fn fft(&self, a: &mut [Scalar], twiddles: &mut [Scalar]) {
        ntt(a, self.omega, twiddles);
    }

    /// Inverse NTT in place.
    pub fn ifft(&self, a: &mut [Scalar], twiddles: &mut [Scalar]) {
        ntt(a, self.omega_inv, twiddles);
        scale(a, self.size_inv);
    }

    /// `distribute_powers(g)` then `fft`: evaluations on the coset `g * <omega>`.
    pub fn coset_fft(&self, a: &mut [Scalar], twiddles: &mut [Scalar]) {
        distribute_powers(a, Scalar::MULTIPLICATIVE_GENERATOR);
        self.fft(a, twiddles);
    }

    /// Inverse of [`Domain::coset_fft`].
    pub fn icoset_fft(&self, a: &mut [Scalar], twiddles: &mut [Scalar]) {
        self.ifft(a, twiddles);
        distribute_powers(a, Scalar::MULTIPLICATIVE_GENERATOR.invert().expect("generator is non-zero"));
    }

    /// [`Domain::fft`] with this domain's precomputed table (nothing recomputed per call).
    pub fn fft_with(&self, a: &mut [Scalar], tw: &Twiddles) {
        let (table, compact) = tw.table(self);
        ntt_table(a, table, compact, false);
    }

    /// [`Domain::ifft`] with this domain's precomputed table.
    pub fn ifft_with(&self, a: &mut [Scalar], tw: &Twiddles) {
        let (table, compact) = tw.table(self);
        ntt_table(a, table, compact, true);
        scale(a, self.size_inv);
    }

    /// [`Domain::coset_fft`] with this domain's precomputed table.
    pub fn coset_fft_with(&self, a: &mut [Scalar], tw: &Twiddles) {
        distribute_powers(a, Scalar::MULTIPLICATIVE_GENERATOR);
        self.fft_with(a, tw);
    }

    /// [`Domain::icoset_fft`] with this domain's precomputed table.
    pub fn icoset_fft_with(&self, a: &mut [Scalar], tw: &Twiddles) {
        self.ifft_with(a, tw);
        distribute_powers(a, Scalar::MULTIPLICATIVE_GENERATOR.invert().expect("generator is non-zero"));
    }

    /// The QAP quotient in place: `a, b, c` hold the evaluations of the constraints on the
    /// domain; afterwards `a` holds the coefficients of `h = (a b - c) / z` (its top one
    /// zero for a satisfied circuit), and `b`, `c` are spent.
    pub fn quotient_in_place(&self, a: &mut [Scalar], b: &mut [Scalar], c: &mut [Scalar], tw: &Twiddles) {
        // The three vectors' transforms run side by side: every step of an NTT is parallel,
        // but its rounds and stages end in barriers, and three at once fill those gaps.
        let to_coset = |v: &mut [Scalar]| {
            self.ifft_with(v, tw);
            self.coset_fft_with(v, tw);
        };
        rayon::join(|| to_coset(a), || rayon::join(|| to_coset(b), || to_coset(c)));
        a.par_iter_mut().zip(b.par_iter()).zip(c.par_iter()).for_each(|((a, b), c)| *a = *a * b - c);
        self.divide_by_z_on_coset(a);
        self.icoset_fft_with(a, tw);
    }

    /// Divides evaluations on the coset by `z(g) = g^m - 1` (constant on the coset).
    pub fn divide_by_z_on_coset(&self, a: &mut [Scalar]) {
        let z_inv = self.z(&Scalar::MULTIPLICATIVE_GENERATOR).invert().expect("g^m != 1 for the generator");
        scale(a, z_inv);
    }
}

/// The forward twiddle table of one domain, `omega^k` for `k < size / 2`, followed by the
/// compact copy of the stages that would stride through it (`COMPACT_STRIDE`), computed
/// once (at engine start) and shared by every proof of that domain size. The inverse
/// transform reads the same scalars: `omega^-k = omega^(size - k) = -omega^(size/2 - k)`
/// for `k >= 1`.
pub struct Twiddles {
    domain_size: usize,
    /// Where the compact copy starts in `powers` (`powers.len()` when there is none).
    compact_at: usize,
    powers: arenaprove_arena::SlabVec<Scalar>,
}

impl Twiddles {
    /// Fills `slab` (capacity at least [`twiddle_table_len`] of the domain) with the table
    /// and its compact copy.
    pub fn new(domain: &Domain, slab: arenaprove_arena::SlabVec<Scalar>) -> Result<Twiddles> {
        Self::fill(domain, slab, true)
    }

    /// The table alone, every stage striding through it: the layout before the compact
    /// copy, kept as `bench-ntt`'s baseline. `slab` needs `domain.twiddle_len()` scalars.
    pub fn new_strided(domain: &Domain, slab: arenaprove_arena::SlabVec<Scalar>) -> Result<Twiddles> {
        Self::fill(domain, slab, false)
    }

    fn fill(domain: &Domain, mut slab: arenaprove_arena::SlabVec<Scalar>, compact: bool) -> Result<Twiddles> {
        slab.clear();
        let half = domain.twiddle_len().max(1);
        let extra = if compact { compact_len(domain.size) } else { 0 };
        let out = slab.extend_stale(half + extra).map_err(Groth16Error::from)?;
        let (table, copy) = out.split_at_mut(half);
        fill_powers(table, domain.omega);
        // Stage h's twiddle j is omega^(j * size / 2h), at offset h - 1 + j.
        let n = domain.size;
        copy.par_chunks_mut(CHUNK).enumerate().for_each(|(c, ch)| {
            for (i, v) in (c * CHUNK..).zip(ch.iter_mut()) {
                let h = 1usize << (usize::BITS - 1 - (i + 1).leading_zeros());
                let j = i + 1 - h;
                *v = table[j * (n / (2 * h))];
            }
        });
        Ok(Twiddles { domain_size: domain.size, compact_at: half, powers: slab })
    }

    pub fn domain_size(&self) -> usize {
        self.domain_size
    }

    /// The pool the table's slab came from.
    pub fn pool(&self) -> &arenaprove_arena::SlabPool {
        self.powers.lease().pool()
    }

    /// The table and its compact copy (empty for [`Twiddles::new_strided`]).
    fn table(&self, d: &Domain) -> (&[Scalar], &[Scalar]) {
        assert_eq!(
            self.domain_size, d.size,
            "twiddles of domain {} used for domain {}",
            self.domain_size, d.size
        );
        self.powers.split_at(self.compact_at)
    }
}

impl std::fmt::Debug for Twiddles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Twiddles(domain {})", self.domain_size)
    }
}

/// `a[i] *= c`.
pub fn scale(a: &mut [Scalar], c: Scalar) {
    a.par_chunks_mut(CHUNK).for_each(|ch| ch.iter_mut().for_each(|v| *v *= c));
}

/// `a[i] *= g^i`.
pub fn distribute_powers(a: &mut [Scalar], g: Scalar) {
    a.par_chunks_mut(CHUNK).enumerate().for_each(|(k, ch)| {
        let mut p = g.pow_vartime([(k * CHUNK) as u64]);
        for v in ch {
            *v *= p;
            p *= g;
        }
    });
}

/// Fills `tw[k] = w^k`.
fn fill_powers(tw: &mut [Scalar], w: Scalar) {
    tw.par_chunks_mut(CHUNK).enumerate().for_each(|(k, ch)| {
        let mut p = w.pow_vartime([(k * CHUNK) as u64]);
        for v in ch {
            *v = p;
            p *= w;
        }
    });
}

/// `i` with its low `bits` bits reversed (0 for `bits == 0`: the block rounds' middle
/// index when there are no middle bits; a shift by the full width would overflow).
#[inline]
fn rev(i: usize, bits: u32) -> usize {
    i.reverse_bits().checked_shr(usize::BITS - bits).unwrap_or(0)
}

/// The bit-reversal permutation in place, one thread: the reference, and
/// [`bit_reverse`]'s path for small vectors.
pub fn bit_reverse_serial(a: &mut [Scalar]) {
    let n = a.len();
    assert!(n.is_power_of_two(), "bit reversal of {n} elements");
    let log = n.trailing_zeros();
    if log == 0 {
        return;
    }
    for i in 0..n {
        let j = rev(i, log);
        if i < j {
            a.swap(i, j);
        }
    }
}

/// Block bits of [`bit_reverse`]: `2^BLOCK_BITS` blocks, so each round has 16 pairs of
/// blocks to swap between, enough for the cores the prover runs on.
const BLOCK_BITS: u32 = 5;

/// Smallest vector (log2) [`bit_reverse`] permutes in parallel. Below it the serial walk
/// wins: the vector sits in the cache, and 32 rounds of tasks cost more than they save
/// (`bench-ntt` on the dev VM's 2 cores: serial 4.9 / 12.1 / 30.8 ms at 2^18 / 2^19 /
/// 2^20, parallel 8.2 / 14.4 / 17.2 ms).
const PARALLEL_BIT_REVERSE_LOG_MIN: u32 = 20;

/// The bit-reversal permutation in place, on every core, in safe Rust.
///
/// Write an index of `n = 2^L` as `(x, m, l)`: `x` the top `k` bits (its block), `l` the
/// low `k` bits, `m` the middle. Its reverse is `(rev l, rev m, rev x)`, so the elements of
/// block `x` whose `l` is `rev y` trade places exactly with the elements of block `y` whose
/// `l` is `rev x`. Round `t` pairs every block `x` with block `x ^ t` (round 0: each block
/// with itself), so a round's pairs are disjoint and run in parallel; over the `2^k`
/// rounds every element moves once, as in [`bit_reverse_serial`].
pub fn bit_reverse(a: &mut [Scalar]) {
    assert!(a.len().is_power_of_two(), "bit reversal of {} elements", a.len());
    if a.len().trailing_zeros() < PARALLEL_BIT_REVERSE_LOG_MIN {
        bit_reverse_serial(a)
    } else {
        bit_reverse_blocks(a)
    }
}

/// [`bit_reverse`]'s block rounds, for any length of at least `2^(2 BLOCK_BITS)`. The
/// blocks travel between rounds in fixed arrays, so nothing is allocated.
fn bit_reverse_blocks(a: &mut [Scalar]) {
    const BLOCKS: usize = 1 << BLOCK_BITS;
    let n = a.len();
    let log = n.trailing_zeros();
    let k = BLOCK_BITS;
    assert!(log >= 2 * k, "block rounds need 2^{} elements, not {n}", 2 * k);
    let mid = log - 2 * k;
    let stride = 1usize << k;
    let mut slots: [Option<&mut [Scalar]>; BLOCKS] = std::array::from_fn(|_| None);
    for (slot, blk) in slots.iter_mut().zip(a.chunks_mut(n / BLOCKS)) {
        *slot = Some(blk);
    }
    // Round 0: within each block x, l = rev x: swap (m, l) with (rev m, l).
    slots[..].par_iter_mut().enumerate().for_each(|(x, blk)| {
        let blk = blk.as_deref_mut().expect("every block is in place between rounds");
        let l = rev(x, k);
        for m in 0..1usize << mid {
            let m2 = rev(m, mid);
            if m < m2 {
                blk.swap(m * stride + l, m2 * stride + l);
            }
        }
    });
    for t in 1..BLOCKS {
        // Block x (the lower of each pair) with block x ^ t.
        type Pair<'a> = Option<(usize, &'a mut [Scalar], &'a mut [Scalar])>;
        let mut pairs: [Pair<'_>; BLOCKS / 2] = std::array::from_fn(|_| None);
        for (pair, x) in pairs.iter_mut().zip((0..BLOCKS).filter(|&x| x < x ^ t)) {
            let p = slots[x].take().expect("block taken once per round");
            let q = slots[x ^ t].take().expect("block taken once per round");
            *pair = Some((x, p, q));
        }
        pairs[..].par_iter_mut().for_each(|pair| {
            let (x, p, q) = pair.as_mut().expect("a round has BLOCKS / 2 pairs");
            let (lx, ly) = (rev(*x ^ t, k), rev(*x, k));
            for m in 0..1usize << mid {
                std::mem::swap(&mut p[m * stride + lx], &mut q[rev(m, mid) * stride + ly]);
            }
        });
        for (x, p, q) in pairs.into_iter().flatten() {
            slots[x] = Some(p);
            slots[x ^ t] = Some(q);
        }
    }
}

#[inline]
fn butterflies_table(
    lo: &mut [Scalar],
    hi: &mut [Scalar],
    tw: &[Scalar],
    j0: usize,
    stride: usize,
    inverse: bool,
) {
    let half_n = tw.len();
    for (j, (u, v)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        let k = (j0 + j) * stride;
        let w = if !inverse {
            tw[k]
        } else if k == 0 {
            Scalar::ONE
        } else {
            -tw[half_n - k]
        };
        let t = *v * w;
        *v = *u - t;
        *u += t;
    }
}

/// The NTT of [`ntt`] over a precomputed table of the full domain (`tw.len() == n / 2`),
/// forward or inverse; stages whose twiddles `compact` holds (see [`compact_len`]) read
/// them there, side by side, instead of striding through `tw` (same scalars, so the
/// result is identical).
///
/// Scheduling (the arithmetic is the textbook radix-2 DIT's, butterfly for butterfly, so
/// the result is identical): the bit reversal runs on every core ([`bit_reverse`]); the
/// first `log2(CHUNK)` stages run inside one chunk per task,
/// all of them before the chunk leaves the cache (one sweep of memory instead of one per
/// stage); each later stage runs all its blocks in parallel, every block split into tasks
/// of `CHUNK / 2` butterflies (before, the blocks of a stage ran one after another, and a
/// stage of 8 Ki-point blocks kept only two threads busy).
fn ntt_table(a: &mut [Scalar], tw: &[Scalar], compact: &[Scalar], inverse: bool) {
    let n = a.len();
    assert!(n.is_power_of_two(), "NTT length {n} is not a power of two");
    assert_eq!(tw.len(), (n / 2).max(1), "twiddle table of {} scalars for an NTT of {n}", tw.len());
    if n == 1 {
        return;
    }
    // The twiddles of the stage of half-block `half`, and the stride between them.
    let stage_tw = |half: usize| -> (&[Scalar], usize) {
        if 2 * half - 1 <= compact.len() {
            (&compact[half - 1..2 * half - 1], 1)
        } else {
            (tw, n / (2 * half))
        }
    };
    bit_reverse(a);
    let small = CHUNK.min(n);
    a.par_chunks_mut(small).for_each(|ch| {
        let mut half = 1;
        while half < small {
            let block = 2 * half;
            let (t, stride) = stage_tw(half);
            for blk in ch.chunks_mut(block) {
                let (lo, hi) = blk.split_at_mut(half);
                butterflies_table(lo, hi, t, 0, stride, inverse);
            }
            half = block;
        }
    });
    let mut half = small;
    while half < n {
        let block = 2 * half;
        let (t, stride) = stage_tw(half);
        let c = CHUNK / 2;
        a.par_chunks_mut(block).for_each(|blk| {
            let (lo, hi) = blk.split_at_mut(half);
            lo.par_chunks_mut(c)
                .zip(hi.par_chunks_mut(c))
                .enumerate()
                .for_each(|(k, (l, h))| butterflies_table(l, h, t, k * c, stride, inverse));
        });
        half = block;
    }
}

/// Iterative radix-2 Cooley-Tukey NTT with root `w` (of order `a.len()`), in place: the
/// table `w^k` is written into `twiddles`, then [`ntt_table`] runs forward over it.
fn ntt(a: &mut [Scalar], w: Scalar, twiddles: &mut [Scalar]) {
    let n = a.len();
    assert!(n.is_power_of_two(), "NTT length {n} is not a power of two");
    assert!(twiddles.len() >= n / 2, "twiddle buffer holds {} of {} scalars", twiddles.len(), n / 2);
    if n == 1 {
        return;
    }
    let tw = &mut twiddles[..n / 2];
    fill_powers(tw, w);
    ntt_table(a, tw, &[], false);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn naive_eval(coeffs: &[Scalar], x: Scalar) -> Scalar {
        coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
    }

    #[test]
    fn fft_matches_naive_evaluation_and_inverts() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // 13..=15: one, two and three stages past the per-chunk ones (CHUNK = 2^12).
        for log in [0u32, 1, 3, 6, 13, 14, 15] {
            let d = Domain::new(1 << log).unwrap();
            let coeffs: Vec<Scalar> = (0..d.size).map(|_| Scalar::random(&mut rng)).collect();
            let mut a = coeffs.clone();
            let mut tw = vec![Scalar::ZERO; d.twiddle_len().max(1)];
            d.fft(&mut a, &mut tw);
            for i in [0, d.size / 2, d.size - 1] {
                assert_eq!(a[i], naive_eval(&coeffs, d.omega.pow_vartime([i as u64])), "log {log} i {i}");
            }
            d.ifft(&mut a, &mut tw);
            assert_eq!(a, coeffs);
            d.coset_fft(&mut a, &mut tw);
            let g = Scalar::MULTIPLICATIVE_GENERATOR;
            assert_eq!(a[1 % d.size], naive_eval(&coeffs, g * d.omega.pow_vartime([1 % d.size as u64])));
            d.icoset_fft(&mut a, &mut tw);
            assert_eq!(a, coeffs);
        }
    }

    #[test]
    fn table_transforms_equal_the_recomputing_ones() {
        use arenaprove_arena::{Ledger, RegionConfig, SlabPool, SlabPoolConfig, SlabVec};
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        // 5: the first size with a compact copy (one stage); 13, 14: stages past the
        // per-chunk ones, both from the copy and strided through the table.
        for log in [0u32, 1, 2, 4, 5, 6, 13, 14] {
            let d = Domain::new(1 << log).unwrap();
            let bytes = twiddle_table_len(d.size) * 32;
            let pool = SlabPool::new(
                SlabPoolConfig::new("tw", bytes, 2).with_region(RegionConfig::heap()),
                &Ledger::unlimited(),
                None,
            )
            .unwrap();
            let compact = Twiddles::new(&d, SlabVec::new(pool.try_lease(bytes).unwrap())).unwrap();
            let strided = Twiddles::new_strided(&d, SlabVec::new(pool.try_lease(bytes).unwrap())).unwrap();
            assert_eq!(compact.table(&d).1.len(), compact_len(d.size), "log {log}");
            assert!(strided.table(&d).1.is_empty());
            let coeffs: Vec<Scalar> = (0..d.size).map(|_| Scalar::random(&mut rng)).collect();
            let mut scratch = vec![Scalar::ZERO; d.twiddle_len().max(1)];
            let mut x = coeffs.clone();
            d.coset_fft(&mut x, &mut scratch);
            for (name, tw) in [("compact", &compact), ("strided", &strided)] {
                let mut y = coeffs.clone();
                d.coset_fft_with(&mut y, tw);
                assert_eq!(x, y, "coset fft, {name}, log {log}");
                d.icoset_fft_with(&mut y, tw);
                assert_eq!(y, coeffs, "inverse coset fft, {name}, log {log}");
            }
        }
    }

    #[test]
    fn compact_copy_holds_each_strided_stage_side_by_side() {
        let n = 1usize << 8;
        assert_eq!(compact_len(n), 2 * (n / 32) - 1);
        assert_eq!(compact_len(16), 0);
        assert_eq!(twiddle_table_len(n), n / 2 + n / 16 - 1);
        let d = Domain::new(n).unwrap();
        let pool = arenaprove_arena::SlabPool::new(
            arenaprove_arena::SlabPoolConfig::new("tw", twiddle_table_len(n) * 32, 1)
                .with_region(arenaprove_arena::RegionConfig::heap()),
            &arenaprove_arena::Ledger::unlimited(),
            None,
        )
        .unwrap();
        let tw = Twiddles::new(
            &d,
            arenaprove_arena::SlabVec::new(pool.try_lease(twiddle_table_len(n) * 32).unwrap()),
        )
        .unwrap();
        let (table, copy) = tw.table(&d);
        for h in (0..).map(|e| 1usize << e).take_while(|h| n / (2 * h) >= COMPACT_STRIDE) {
            for j in 0..h {
                // Stage h's twiddle j is the primitive 2h-th root to the j.
                assert_eq!(copy[h - 1 + j], table[j * n / (2 * h)], "h {h} j {j}");
                assert_eq!(copy[h - 1 + j], d.omega.pow_vartime([(j * n / (2 * h)) as u64]));
            }
        }
    }

    #[test]
    fn parallel_bit_reversal_equals_the_serial_one() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        // bit_reverse is serial up to 2^19 and runs the block rounds from 2^20; the rounds
        // themselves are checked from 2^10 (no middle bits) up.
        let blocks: fn(&mut [Scalar]) = bit_reverse_blocks;
        let dispatch: fn(&mut [Scalar]) = bit_reverse;
        for (log, f) in [
            (0u32, dispatch),
            (1, dispatch),
            (5, dispatch),
            (10, blocks),
            (11, blocks),
            (14, blocks),
            (15, blocks),
            (19, dispatch),
            (20, dispatch),
        ] {
            let x: Vec<Scalar> = (0..1usize << log).map(|_| Scalar::random(&mut rng)).collect();
            let (mut a, mut b) = (x.clone(), x.clone());
            bit_reverse_serial(&mut a);
            f(&mut b);
            assert_eq!(a, b, "log {log}");
            if log >= 1 {
                assert_eq!(b[1], x[x.len() / 2], "log {log}");
            }
            f(&mut b);
            assert_eq!(b, x, "an involution, log {log}");
        }
    }

    #[test]
    fn domain_rounds_up_and_rejects_too_large() {
        assert_eq!(Domain::new(5).unwrap().size, 8);
        assert_eq!(Domain::new(0).unwrap().size, 1);
        assert!(Domain::new(1 << 33).is_err());
        let d = Domain::new(16).unwrap();
        assert_eq!(d.omega.pow_vartime([16]), Scalar::ONE);
        assert_ne!(d.omega.pow_vartime([8]), Scalar::ONE);
    }
}
