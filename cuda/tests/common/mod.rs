//! Shared helpers of the GPU tests: open the device or say why the test skips, and make
//! inputs (random scalars, cheap distinct G1 bases) reproducibly.
#![allow(dead_code)]

use arenaprove_cuda::Gpu;
use arenaprove_engine::deps::blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use arenaprove_engine::deps::ff::Field;
use arenaprove_engine::deps::group::{prime::PrimeCurveAffine, Curve, Group};
use blst::{blst_p1_affine, blst_p2_affine};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use rayon::prelude::*;

/// Device arena for the tests: 2^20-point MSMs and h pipelines with room to spare.
pub const TEST_ARENA_BYTES: usize = 3 << 30;

/// The GPU with an arena and NTT tables up to `2^max_log`, or `None` after printing why
/// the test is skipped (no kernels built in, no driver, no device).
pub fn gpu(max_log: u32) -> Option<Gpu> {
    match Gpu::open(0) {
        Ok(mut g) => {
            g.reserve_arena(TEST_ARENA_BYTES).expect("reserve the test arena");
            g.prepare_ntt(max_log).expect("prepare NTT tables");
            Some(g)
        }
        Err(e) => {
            println!("SKIP: {e}");
            None
        }
    }
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

/// `n` distinct bases `R + i*Q` for random R, Q (cheap: one addition per point).
pub fn bases(n: usize, seed: u64) -> Vec<blst_p1_affine> {
    let mut r = rng(seed);
    let start = G1Projective::random(&mut r);
    let step = G1Projective::random(&mut r);
    const CHUNK: usize = 1 << 12;
    let proj: Vec<G1Projective> = (0..n.div_ceil(CHUNK))
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
    let mut aff = vec![G1Affine::identity(); n];
    proj.par_chunks(CHUNK)
        .zip(aff.par_chunks_mut(CHUNK))
        .for_each(|(p, a)| G1Projective::batch_normalize(p, a));
    aff.iter().map(|a| *a.as_ref()).collect()
}

pub fn to_bytes(s: &[Scalar]) -> Vec<[u8; 32]> {
    s.par_iter().map(|x| x.to_bytes_le()).collect()
}

/// `n` distinct G2 bases `R + i*Q`.
pub fn bases_g2(n: usize, seed: u64) -> Vec<blst_p2_affine> {
    let mut r = rng(seed);
    let start = G2Projective::random(&mut r);
    let step = G2Projective::random(&mut r);
    const CHUNK: usize = 1 << 12;
    let proj: Vec<G2Projective> = (0..n.div_ceil(CHUNK))
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
    let mut aff = vec![G2Affine::identity(); n];
    proj.par_chunks(CHUNK)
        .zip(aff.par_chunks_mut(CHUNK))
        .for_each(|(p, a)| G2Projective::batch_normalize(p, a));
    aff.iter().map(|a| *a.as_ref()).collect()
}
