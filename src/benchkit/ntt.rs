//! The h stage's NTTs on the CPU: `Domain::quotient_in_place` (three vectors
//! to the coset side by side, `a b - c`, divided by z, back), exactly as `prove_start` runs
//! it, over two twiddle layouts and two backings, alternated rep by rep in one run.
//!
//! - Layouts: `strided` (the baseline: every stage reads the table `omega^k` at its stage's
//!   stride, the layout before the compact copy) and `compact` (the engine's: stages
//!   whose twiddles lie 16 or more entries apart read a side-by-side copy).
//! - Backings of the vectors and the table: `heap` (heap regions: 4 KiB pages unless the
//!   kernel's THP is `always`), `slab` (the engine's default regions: 2 MiB aligned,
//!   `MADV_HUGEPAGE`, pre-faulted) and `slab_4k` (the same without `MADV_HUGEPAGE`, as
//!   `--no-huge-pages` makes them), so a page-size effect shows apart from the layout.
//!
//! Every run starts from the same inputs (copied in untimed); the outputs of every
//! layout and backing are checked to be identical before any figure is reported.
//! [`bit_reversal`] times the NTT's first step alone: the serial permutation (baseline)
//! against the parallel one the NTT uses.

use std::sync::Arc;
use std::time::Instant;

use crate::arena::{Ledger, RegionConfig, SlabPool, SlabPoolConfig, SlabVec};
use crate::engine::deps::blstrs::Scalar;
use crate::engine::deps::ff::Field;
use crate::engine::deps::rand_chacha::ChaCha8Rng;
use crate::engine::deps::rand_core::SeedableRng;
use crate::engine::groth16::domain::{bit_reverse, bit_reverse_serial, twiddle_table_len, Domain};
use crate::engine::groth16::Twiddles;

/// Largest domain the bench takes (2^24: 3 x 512 MiB of vectors per backing, plus inputs).
pub const LOG_MAX: u32 = 24;

#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// log2 of the domain.
    pub log_size: u32,
    /// Measured reps per (backing, layout).
    pub reps: usize,
}

/// One (backing, layout) pair's times, ms.
#[derive(Clone, Debug)]
pub struct Row {
    pub backing: &'static str,
    pub layout: &'static str,
    pub samples_ms: Vec<f64>,
    pub median_ms: f64,
    /// strided's median over this row's, same backing (1.0 for strided itself).
    pub speedup_vs_strided: f64,
}

struct Backing {
    name: &'static str,
    vectors: [SlabVec<Scalar>; 3],
    layouts: [(&'static str, Twiddles); 2],
}

fn backing(name: &'static str, region: RegionConfig, d: &Domain) -> Result<Backing, String> {
    let ledger = Ledger::unlimited();
    let vec_bytes = d.size * 32;
    let tw_bytes = twiddle_table_len(d.size) * 32;
    let pool = |what, bytes, count, region: RegionConfig| {
        SlabPool::new(SlabPoolConfig::new(what, bytes, count).with_region(region), &ledger, None)
            .map_err(|e| format!("{name}: {e}"))
    };
    let vecs = pool("bench.ntt.abc", vec_bytes, 3, region.clone())?;
    let tws = pool("bench.ntt.twiddles", tw_bytes, 2, region)?;
    let lease = |p: &Arc<SlabPool>, b| p.try_lease(b).map(SlabVec::new).map_err(|e| format!("{name}: {e}"));
    let table = |t: Result<Twiddles, _>| t.map_err(|e| format!("{name}: {e}"));
    Ok(Backing {
        name,
        vectors: [lease(&vecs, vec_bytes)?, lease(&vecs, vec_bytes)?, lease(&vecs, vec_bytes)?],
        layouts: [
            ("strided", table(Twiddles::new_strided(d, lease(&tws, tw_bytes)?))?),
            ("compact", table(Twiddles::new(d, lease(&tws, tw_bytes)?))?),
        ],
    })
}

/// The sizes and rep counts both benches take.
fn check(cfg: &Config) -> Result<(), String> {
    if !(10..=LOG_MAX).contains(&cfg.log_size) {
        return Err(format!("--log-size {}: the bench takes 10 to {LOG_MAX}", cfg.log_size));
    }
    if cfg.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    Ok(())
}

/// Runs the bench; `progress` gets one line per measured run.
pub fn run(cfg: Config, mut progress: impl FnMut(&str)) -> Result<Vec<Row>, String> {
    check(&cfg)?;
    let d = Domain::new(1 << cfg.log_size).map_err(|e| e.to_string())?;
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let inputs: Vec<Vec<Scalar>> =
        (0..3).map(|_| (0..d.size).map(|_| Scalar::random(&mut rng)).collect()).collect();
    let mut backings = [
        backing("heap", RegionConfig::heap(), &d)?,
        backing("slab", RegionConfig::default(), &d)?,
        backing("slab_4k", RegionConfig { huge_pages: false, ..RegionConfig::default() }, &d)?,
    ];
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); 2 * backings.len()];
    let mut reference: Option<Vec<Scalar>> = None;
    // One unmeasured warm-up pass over every pair, then `reps` alternating passes.
    for rep in 0..=cfg.reps {
        for (bi, b) in backings.iter_mut().enumerate() {
            for li in 0..2 {
                for (v, x) in b.vectors.iter_mut().zip(&inputs) {
                    v.clear();
                    v.extend_from_slice(x).map_err(|e| e.to_string())?;
                }
                let [a, bb, c] = &mut b.vectors;
                let (layout, tw) = &b.layouts[li];
                let t0 = Instant::now();
                d.quotient_in_place(a, bb, c, tw);
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                match &reference {
                    None => reference = Some(a.to_vec()),
                    Some(r) if r[..] != a[..] => {
                        return Err(format!(
                            "{} / {layout}: the quotient differs from the first run's",
                            b.name
                        ))
                    }
                    Some(_) => {}
                }
                if rep > 0 {
                    samples[bi * 2 + li].push(ms);
                    progress(&format!("rep {rep} {} {layout}: {ms:.1} ms", b.name));
                }
            }
        }
    }
    let mut rows = Vec::new();
    for (bi, b) in backings.iter().enumerate() {
        let base = super::median(&samples[bi * 2]);
        for (li, (layout, _)) in b.layouts.iter().enumerate() {
            let s = &samples[bi * 2 + li];
            let median_ms = super::median(s);
            rows.push(Row {
                backing: b.name,
                layout,
                samples_ms: s.clone(),
                median_ms,
                speedup_vs_strided: base / median_ms,
            });
        }
    }
    Ok(rows)
}

/// The bit-reversal permutation alone, one vector of `2^log_size` on heap memory: the
/// serial walk (the baseline) against the parallel block rounds, alternated rep by rep.
/// Returns the medians (serial, parallel) in ms, after checking both give the same vector.
pub fn bit_reversal(cfg: Config) -> Result<(f64, f64), String> {
    check(&cfg)?;
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let x: Vec<Scalar> = (0..1usize << cfg.log_size).map(|_| Scalar::random(&mut rng)).collect();
    let (mut a, mut b) = (x.clone(), x);
    let (mut serial, mut parallel) = (Vec::new(), Vec::new());
    for rep in 0..=cfg.reps {
        let t0 = Instant::now();
        bit_reverse_serial(&mut a);
        let s = t0.elapsed().as_secs_f64() * 1e3;
        let t0 = Instant::now();
        bit_reverse(&mut b);
        let p = t0.elapsed().as_secs_f64() * 1e3;
        if a != b {
            return Err("parallel bit reversal differs from the serial one".into());
        }
        if rep > 0 {
            serial.push(s);
            parallel.push(p);
        }
    }
    Ok((super::median(&serial), super::median(&parallel)))
}
