//! Shared helpers of the GPU tests: open the device or decide whether the test skips or
//! fails (the one skip rule, [`decide`]), and make inputs (random scalars, cheap distinct
//! G1 bases) reproducibly.
#![allow(dead_code)]

use std::fmt::Display;

use arenaprove_cuda::{device_count, CudaError, Gpu, NttKernels};
use arenaprove_engine::deps::blstrs::{G1Projective, G2Projective, Scalar};
use arenaprove_engine::deps::ff::Field;
use arenaprove_engine::deps::group::{prime::PrimeCurveAffine, Curve, Group};
use blst::{blst_p1_affine, blst_p2_affine};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use rayon::prelude::*;

/// Device arena for the tests: 2^20-point MSMs and h pipelines with room to spare.
pub const TEST_ARENA_BYTES: usize = 3 << 30;

/// The number of GPUs the host must have for the GPU tests to run rather than skip:
/// `ARENAPROVE_REQUIRE_GPU=1` on the GPU machine (scripts/gpu-test.sh's run command sets
/// it; `2` for the two-GPU test). Unset, empty or `0`: skipping on a host without a GPU
/// is allowed (CI).
pub const REQUIRE_GPU_VAR: &str = "ARENAPROVE_REQUIRE_GPU";

/// The GPUs [`REQUIRE_GPU_VAR`] requires (0 when unset); panics on a value that is not a
/// count, so a typo cannot turn the requirement off.
pub fn gpus_required() -> usize {
    match std::env::var(REQUIRE_GPU_VAR) {
        Err(std::env::VarError::NotPresent) => 0,
        Ok(v) if v.trim().is_empty() => 0,
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{REQUIRE_GPU_VAR}={v:?}: expected a GPU count (1 on a GPU host)")),
        Err(e) => panic!("{REQUIRE_GPU_VAR}: {e}"),
    }
}

/// What a GPU test does when it cannot have its GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoGpu {
    Skip,
    Fail,
}

/// The skip rule of every GPU test: skip only when the GPUs are `absent` (the error is
/// [`CudaError::is_no_gpu`]: not built, no driver, no device; or the host has fewer GPUs
/// than the `needed`) and the environment requires fewer than `needed`
/// ([`gpus_required`]). Any other failure to open fails the test.
pub fn decide(absent: bool, needed: usize, required: usize) -> NoGpu {
    if absent && required < needed {
        NoGpu::Skip
    } else {
        NoGpu::Fail
    }
}

/// Prints `SKIP: why` when [`decide`] allows it, panics with `why` otherwise.
pub fn skip_or_fail(absent: bool, needed: usize, why: &dyn Display) {
    let required = gpus_required();
    match decide(absent, needed, required) {
        NoGpu::Skip => println!("SKIP: {why}"),
        NoGpu::Fail if absent => panic!("{why}; {REQUIRE_GPU_VAR}={required} requires {needed} GPU(s)"),
        NoGpu::Fail => panic!("the GPU does not open: {why}"),
    }
}

/// `Some` of what opened, or `None` after a skip, for a test on one GPU (panics where
/// [`decide`] says fail).
pub fn opened_or_skip<T>(opened: Result<T, CudaError>) -> Option<T> {
    match opened {
        Ok(x) => Some(x),
        Err(e) => {
            skip_or_fail(e.is_no_gpu(), 1, &e);
            None
        }
    }
}

/// Whether a test on `needed` GPUs runs: `false` after a skip (panics where [`decide`]
/// says fail).
pub fn gpus_or_skip(needed: usize) -> bool {
    match device_count() {
        Ok(n) if n >= needed => true,
        Ok(n) => {
            skip_or_fail(true, needed, &format!("{n} GPU(s), this test needs {needed}"));
            false
        }
        Err(e) => {
            skip_or_fail(e.is_no_gpu(), needed, &e);
            false
        }
    }
}

/// The GPU with an arena and NTT tables up to `2^max_log`, or `None` after a skip
/// ([`opened_or_skip`]).
pub fn gpu(max_log: u32) -> Option<Gpu> {
    let mut g = opened_or_skip(Gpu::open(0))?;
    g.reserve_arena(TEST_ARENA_BYTES).expect("reserve the test arena");
    g.prepare_ntt(max_log).expect("prepare NTT tables");
    Some(g)
}

/// Every distinct NTT kernel: the kind, and whether radix 8 reads its twiddles ahead (the
/// flag changes only radix 8's kernel).
pub const NTT_CHOICES: [(NttKernels, bool); 5] = [
    (NttKernels::Stages, true),
    (NttKernels::PassesRadix2, true),
    (NttKernels::Passes, true),
    (NttKernels::Passes8, false),
    (NttKernels::Passes8, true),
];

/// The `Gpu`'s NTT defaults (`Auto`, twiddles ahead).
pub const NTT_DEFAULT: (NttKernels, bool) = (NttKernels::Auto, true);

/// Chooses the NTT kernels and whether radix 8 reads its twiddles ahead.
pub fn set_ntt(g: &mut Gpu, (kernels, ahead): (NttKernels, bool)) {
    g.set_ntt_kernels(kernels);
    g.set_ntt_twiddles_ahead(ahead);
}

pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

pub fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    (0..n)
        .into_par_iter()
        .chunks(4096)
        .flat_map_iter(|ch| {
            let mut r = rng(seed ^ (ch[0] as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            ch.into_iter().map(move |_| Scalar::random(&mut r))
        })
        .collect()
}

/// `n` distinct points `R + i*Q` for random R, Q (cheap: one addition per point), as blst
/// affine points `B` of the curve `P`.
fn progression<P, B>(n: usize, seed: u64) -> Vec<B>
where
    P: Curve + Group<Scalar = Scalar> + Send + Sync,
    P::AffineRepr: PrimeCurveAffine + AsRef<B> + Send + Sync,
    B: Copy,
{
    let mut r = rng(seed);
    let start = P::random(&mut r);
    let step = P::random(&mut r);
    const CHUNK: usize = 1 << 12;
    let proj: Vec<P> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|k| {
            let mut p = start + step * Scalar::from((k * CHUNK) as u64);
            let len = CHUNK.min(n - k * CHUNK);
            (0..len).map(move |_| {
                let v = p;
                p += step;
                v
            })
        })
        .collect();
    let mut aff = vec![P::AffineRepr::identity(); n];
    proj.par_chunks(CHUNK).zip(aff.par_chunks_mut(CHUNK)).for_each(|(p, a)| P::batch_normalize(p, a));
    aff.iter().map(|a| *a.as_ref()).collect()
}

/// `n` distinct G1 bases `R + i*Q` for random R, Q.
pub fn bases(n: usize, seed: u64) -> Vec<blst_p1_affine> {
    progression::<G1Projective, _>(n, seed)
}

/// `n` distinct G2 bases `R + i*Q`.
pub fn bases_g2(n: usize, seed: u64) -> Vec<blst_p2_affine> {
    progression::<G2Projective, _>(n, seed)
}

pub fn to_bytes(s: &[Scalar]) -> Vec<[u8; 32]> {
    s.par_iter().map(|x| x.to_bytes_le()).collect()
}
