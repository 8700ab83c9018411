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

    /// Twiddle scalars an NTT of this domain needs (`size / 2`).
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
        ntt_table(a, tw.table(self), false);
    }

    /// [`Domain::ifft`] with this domain's precomputed table.
    pub fn ifft_with(&self, a: &mut [Scalar], tw: &Twiddles) {
        ntt_table(a, tw.table(self), true);
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

    /// Divides evaluations on the coset by `z(g) = g^m - 1` (constant on the coset).
    pub fn divide_by_z_on_coset(&self, a: &mut [Scalar]) {
        let z_inv = self.z(&Scalar::MULTIPLICATIVE_GENERATOR).invert().expect("g^m != 1 for the generator");
        scale(a, z_inv);
    }
}

/// The forward twiddle table of one domain, `omega^k` for `k < size / 2`, computed once
/// (at engine start) and shared by every proof of that domain size. The inverse transform
/// reads the same table: `omega^-k = omega^(size - k) = -omega^(size/2 - k)` for `k >= 1`.
pub struct Twiddles {
    domain_size: usize,
    powers: arenaprove_arena::SlabVec<Scalar>,
}

impl Twiddles {
    /// Fills `slab` (capacity at least `domain.twiddle_len()`, at least 1) with the table.
    pub fn new(domain: &Domain, mut slab: arenaprove_arena::SlabVec<Scalar>) -> Result<Twiddles> {
        slab.clear();
        let n = domain.twiddle_len().max(1);
        let out = slab.extend_stale(n).map_err(Groth16Error::from)?;
        fill_powers(out, domain.omega);
        Ok(Twiddles { domain_size: domain.size, powers: slab })
    }

    pub fn domain_size(&self) -> usize {
        self.domain_size
    }

    /// The pool the table's slab came from.
    pub fn pool(&self) -> &arenaprove_arena::SlabPool {
        self.powers.lease().pool()
    }

    fn table(&self, d: &Domain) -> &[Scalar] {
        assert_eq!(
            self.domain_size, d.size,
            "twiddles of domain {} used for domain {}",
            self.domain_size, d.size
        );
        &self.powers
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

fn bit_reverse(a: &mut [Scalar]) {
    let n = a.len();
    let log = n.trailing_zeros();
    if log == 0 {
        return;
    }
    for i in 0..n {
        let j = i.reverse_bits() >> (usize::BITS - log);
        if i < j {
            a.swap(i, j);
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
/// forward or inverse.
///
/// Scheduling (the arithmetic is the textbook radix-2 DIT's, butterfly for butterfly, so
/// the result is identical): the first `log2(CHUNK)` stages run inside one chunk per task,
/// all of them before the chunk leaves the cache (one sweep of memory instead of one per
/// stage); each later stage runs all its blocks in parallel, every block split into tasks
/// of `CHUNK / 2` butterflies (before, the blocks of a stage ran one after another, and a
/// stage of 8 Ki-point blocks kept only two threads busy).
fn ntt_table(a: &mut [Scalar], tw: &[Scalar], inverse: bool) {
    let n = a.len();
    assert!(n.is_power_of_two(), "NTT length {n} is not a power of two");
    assert_eq!(tw.len(), (n / 2).max(1), "twiddle table of {} scalars for an NTT of {n}", tw.len());
    if n == 1 {
        return;
    }
    bit_reverse(a);
    let small = CHUNK.min(n);
    a.par_chunks_mut(small).for_each(|ch| {
        let mut half = 1;
        while half < small {
            let block = 2 * half;
            for blk in ch.chunks_mut(block) {
                let (lo, hi) = blk.split_at_mut(half);
                butterflies_table(lo, hi, tw, 0, n / block, inverse);
            }
            half = block;
        }
    });
    let mut half = small;
    while half < n {
        let block = 2 * half;
        let stride = n / block;
        let c = CHUNK / 2;
        a.par_chunks_mut(block).for_each(|blk| {
            let (lo, hi) = blk.split_at_mut(half);
            lo.par_chunks_mut(c)
                .zip(hi.par_chunks_mut(c))
                .enumerate()
                .for_each(|(k, (l, h))| butterflies_table(l, h, tw, k * c, stride, inverse));
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
    ntt_table(a, tw, false);
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
        for log in [0u32, 1, 2, 5, 13, 14] {
            let d = Domain::new(1 << log).unwrap();
            let pool = SlabPool::new(
                SlabPoolConfig::new("tw", d.twiddle_len().max(1) * 32, 1).with_region(RegionConfig::heap()),
                &Ledger::unlimited(),
                None,
            )
            .unwrap();
            let tw = Twiddles::new(&d, SlabVec::new(pool.try_lease(d.twiddle_len().max(1) * 32).unwrap()))
                .unwrap();
            let coeffs: Vec<Scalar> = (0..d.size).map(|_| Scalar::random(&mut rng)).collect();
            let mut scratch = vec![Scalar::ZERO; d.twiddle_len().max(1)];
            let (mut x, mut y) = (coeffs.clone(), coeffs.clone());
            d.coset_fft(&mut x, &mut scratch);
            d.coset_fft_with(&mut y, &tw);
            assert_eq!(x, y, "coset fft, log {log}");
            d.icoset_fft(&mut x, &mut scratch);
            d.icoset_fft_with(&mut y, &tw);
            assert_eq!(x, y, "inverse coset fft, log {log}");
            assert_eq!(y, coeffs);
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
