//! `peer-gpu-bench --msm 20,22,24`: our G1 MSM against sppark's own (msm/pippenger.cuh, the
//! MSM supraseal-c2 runs), both with resident bases, the same bases and random scalars
//! (canonical bytes in pageable host memory, copied in by each call), alternating in one
//! process; both results checked against blst's CPU MSM. Ours runs twice per round with
//! its defaults: the scalars through its page-locked staging buffers ("ours") and through
//! the driver's own pageable copy ("ours, driver copy": `Gpu::set_host_staging(false)`),
//! so the three alternate. With `--msm-fixed-gib G` ours also runs over fixed-base windows
//! (the cost model's copies of the bases within G GiB, made once on the device: the
//! issue's precomputation for parameters' bases, which never change), a fourth side. One
//! line per size, then one JSON object.

use std::time::Instant;

use arenaprove::cuda::{fixed_msm_scratch_bytes, Curve as CurveId, FixedWindows, Gpu};
use arenaprove::engine::deps::blstrs::{G1Affine, G1Projective, Scalar};
use arenaprove::engine::deps::ff::Field;
use arenaprove::engine::deps::group::prime::PrimeCurveAffine;
use arenaprove::engine::deps::group::{Curve, Group};
use arenaprove::engine::groth16::msm::msm_g1;
use blst::{blst_p1, blst_p1_affine};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

#[repr(C)]
struct SpparkMsm {
    _opaque: [u8; 0],
}

extern "C" {
    fn sppark_g1_new(points: *const blst_p1_affine, n: usize, out: *mut *mut SpparkMsm) -> sppark::Error;
    fn sppark_g1_invoke(
        msm: *mut SpparkMsm,
        out: *mut blst_p1,
        scalars: *const [u8; 32],
        n: usize,
    ) -> sppark::Error;
    fn sppark_g1_drop(msm: *mut SpparkMsm);
}

/// sppark's MSM with its `n` bases on the device (freed on drop).
struct Sppark {
    msm: *mut SpparkMsm,
    n: usize,
}

impl Sppark {
    fn new(bases: &[blst_p1_affine]) -> Result<Sppark, String> {
        let mut m = std::ptr::null_mut();
        // SAFETY: `bases` is a live slice of blst_p1_affine, the layout of sppark's affine_t
        // (x, y in Montgomery form); sppark copies it to the device before returning.
        let e = unsafe { sppark_g1_new(bases.as_ptr(), bases.len(), &mut m) };
        if e.code != 0 || m.is_null() {
            return Err(format!("sppark msm_t: {e}"));
        }
        Ok(Sppark { msm: m, n: bases.len() })
    }

    fn msm(&self, scalars: &[[u8; 32]]) -> Result<G1Projective, String> {
        if scalars.len() > self.n {
            return Err(format!("sppark msm: {} scalars for {} bases", scalars.len(), self.n));
        }
        let mut out = blst_p1::default();
        // SAFETY: `self.msm` is a live msm_t holding `self.n >= scalars.len()` bases (checked
        // above); the scalars are 32-byte canonical little-endian values (sppark's fr_t with
        // mont = false); `out` is a blst_p1, sppark's jacobian_t<fp_t>.
        let e = unsafe { sppark_g1_invoke(self.msm, &mut out, scalars.as_ptr(), scalars.len()) };
        if e.code != 0 {
            return Err(format!("sppark msm: {e}"));
        }
        let mut p = G1Projective::identity();
        *p.as_mut() = out;
        Ok(p)
    }
}

impl Drop for Sppark {
    fn drop(&mut self) {
        // SAFETY: made by sppark_g1_new, dropped once.
        unsafe { sppark_g1_drop(self.msm) }
    }
}

/// `n` distinct bases `R + i*Q` (one addition each), in parallel chunks.
fn bases(n: usize, seed: u64) -> Vec<blst_p1_affine> {
    use rayon::prelude::*;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (start, step) = (G1Projective::random(&mut rng), G1Projective::random(&mut rng));
    const CHUNK: usize = 1 << 12;
    let proj: Vec<G1Projective> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|k| {
            let mut p = start + step * Scalar::from((k * CHUNK) as u64);
            (0..CHUNK.min(n - k * CHUNK)).map(move |_| {
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
    aff.iter().map(|a| *AsRef::<blst_p1_affine>::as_ref(a)).collect()
}

fn scalars(n: usize, seed: u64) -> Vec<[u8; 32]> {
    use rayon::prelude::*;
    (0..n)
        .into_par_iter()
        .chunks(1 << 12)
        .flat_map_iter(|ch| {
            let mut r = ChaCha8Rng::seed_from_u64(seed ^ (ch[0] as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            ch.into_iter().map(move |_| Scalar::random(&mut r).to_bytes_le())
        })
        .collect()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the comparison at `2^log` for each of `logs`, `reps` timed calls per side per size
/// (alternating, after one warm-up each). `fixed_gib > 0`: ours also runs over fixed-base
/// windows (`Gpu::upload_g1_bases_fixed`), the cost model's shape within that many GiB of
/// copies (`FixedWindows::choose`), as a fourth side.
pub fn run(logs: &[u32], reps: usize, fixed_gib: usize) -> Result<(), String> {
    let mut g = Gpu::open(0).map_err(|e| e.to_string())?;
    let max = 1usize << logs.iter().copied().max().unwrap_or(10);
    let fixed = |n: usize| (fixed_gib > 0).then(|| FixedWindows::choose(CurveId::G1, n, fixed_gib << 30));
    // Every size's bases and copies (the arena frees nothing) and the MSM scratch of the
    // largest (with room for the dense kernels, which random scalars get, and for the
    // fixed-base plan), plus room for alignment.
    let bases_bytes: usize = logs
        .iter()
        .map(|&l| (96usize << l) + 4096 + fixed(1 << l).map_or(0, |f| f.bytes(CurveId::G1, 1 << l) + 4096))
        .sum();
    let scratch = arenaprove::cuda::msm_auto_scratch_bytes(CurveId::G1, max, None)
        .max(fixed(max).map_or(0, |f| fixed_msm_scratch_bytes(max, f)));
    let arena = bases_bytes + scratch + (256 << 20);
    g.reserve_arena(arena).map_err(|e| e.to_string())?;
    println!("device {}; arena {} MiB", g.name(), arena >> 20);
    let mut rows = Vec::new();
    for &log in logs {
        let n = 1usize << log;
        let t = Instant::now();
        let (b, s) = (bases(n, 5 + log as u64), scalars(n, 77 + log as u64));
        let made_ms = t.elapsed().as_secs_f64() * 1e3;
        let ours_bases = g.upload_g1_bases(&b).map_err(|e| e.to_string())?;
        // The fixed-base side: its shape and its copies of the bases.
        let fixed_side = fixed(n)
            .map(|f| g.upload_g1_bases_fixed(&b, f).map(|h| (f, h)))
            .transpose()
            .map_err(|e| e.to_string())?;
        let theirs = Sppark::new(&b)?;
        g.set_host_staging(false);
        let before_r = g.msm_g1_resident(&ours_bases, &s).map_err(|e| e.to_string())?;
        g.set_host_staging(true);
        let ours_r = g.msm_g1_resident(&ours_bases, &s).map_err(|e| e.to_string())?;
        // The kernels ours ran over plain bases (a fixed-base MSM runs its own).
        let kernels = g.last_msm_kernels();
        let fixed_r = fixed_side
            .as_ref()
            .map(|(_, h)| g.msm_g1_resident(h, &s))
            .transpose()
            .map_err(|e| e.to_string())?;
        let theirs_r = theirs.msm(&s)?;
        let (mut ours_ms, mut before_ms, mut theirs_ms, mut fixed_ms) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            g.msm_g1_resident(&ours_bases, &s).map_err(|e| e.to_string())?;
            ours_ms.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            theirs.msm(&s)?;
            theirs_ms.push(t.elapsed().as_secs_f64() * 1e3);
            g.set_host_staging(false);
            let t = Instant::now();
            let r = g.msm_g1_resident(&ours_bases, &s);
            before_ms.push(t.elapsed().as_secs_f64() * 1e3);
            g.set_host_staging(true);
            r.map_err(|e| e.to_string())?;
            if let Some((_, h)) = &fixed_side {
                let t = Instant::now();
                g.msm_g1_resident(h, &s).map_err(|e| e.to_string())?;
                fixed_ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        let t = Instant::now();
        let cpu = msm_g1(&b, &s);
        let cpu_ms = t.elapsed().as_secs_f64() * 1e3;
        let (o, th, before) = (median(&mut ours_ms), median(&mut theirs_ms), median(&mut before_ms));
        // The fixed-base side's shape and median, when it ran.
        let fixed = fixed_side.as_ref().map(|&(f, _)| (f, median(&mut fixed_ms)));
        let fixed_ok = fixed_r.is_none_or(|r| r == cpu);
        let (ours_ok, theirs_ok) = (ours_r == cpu && before_r == cpu && fixed_ok, theirs_r == cpu);
        let fixed_text = fixed.map_or(String::new(), |(f, ms)| {
            format!(
                " | ours over fixed-base windows (c {} x {} copies, {:.2} GiB) {ms:.2} ms, sppark/that {:.2}x",
                f.c,
                f.copies,
                f.bytes(CurveId::G1, n) as f64 / (1u64 << 30) as f64,
                th / ms
            )
        });
        println!(
            "msm_g1 2^{log}: ours {o:.2} ms | sppark {th:.2} ms | sppark/ours {:.2}x | ours with the driver's pageable copy {before:.2} ms, sppark/that {:.2}x{fixed_text} | blst cpu {cpu_ms:.0} ms | equal to blst: ours (every copy and base set) {ours_ok}, sppark {theirs_ok} (inputs made in {made_ms:.0} ms; medians of {reps}, alternating, scalars in pageable memory in all; ours: {:?})",
            th / o,
            th / before,
            kernels
        );
        drop(theirs);
        rows.push(serde_json::json!({
            "log": log, "ours_ms": o, "sppark_ms": th, "ratio": th / o, "ours_driver_copy_ms": before, "blst_ms": cpu_ms,
            "ours_fixed_ms": fixed.map(|(_, ms)| ms), "fixed_c": fixed.map(|(f, _)| f.c),
            "fixed_copies": fixed.map(|(f, _)| f.copies),
            "ours_equal": ours_ok, "sppark_equal": theirs_ok,
        }));
        if !(ours_ok && theirs_ok) {
            return Err(format!("2^{log}: a result differs from blst (ours {ours_ok}, sppark {theirs_ok})"));
        }
    }
    println!("{}", serde_json::json!({ "msm_g1": rows }));
    Ok(())
}
