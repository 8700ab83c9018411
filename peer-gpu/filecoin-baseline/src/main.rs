//! `filecoin-baseline --c1 C1 --sector SECTOR_JSON --runs N --out PROOF`: filecoin-proofs
//! 19.1.0's `seal_commit_phase2` built with `cuda-supraseal` (what storage providers run on a
//! GPU), on a C1 and the parameter cache in `FIL_PROOFS_PARAMETER_CACHE`. One untimed
//! warm-up (it loads and caches the parameters), then N timed runs; prints one JSON object
//! `{"seconds": [..]}` on stdout and writes the last proof to PROOF. The caller
//! (`arenaprove filecoin bench --peer-exe`) checks the proof with `verify_seal`.
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use arenaprove_filecoin::{C1Output, SectorInfo};

extern crate blst;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut c1, mut sector, mut out, mut runs) = (None, None, None, 1usize);
    while let Some(flag) = args.next() {
        let mut value = || args.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--c1" => c1 = Some(PathBuf::from(value()?)),
            "--sector" => sector = Some(PathBuf::from(value()?)),
            "--out" => out = Some(PathBuf::from(value()?)),
            "--runs" => runs = value()?.parse().context("--runs")?,
            other => bail!("unknown argument {other} (expected --c1, --sector, --out, --runs)"),
        }
    }
    let (Some(c1), Some(sector), Some(out)) = (c1, sector, out) else {
        bail!("usage: filecoin-baseline --c1 C1_JSON --sector SECTOR_JSON --out PROOF [--runs N]");
    };
    let info = SectorInfo::read(&sector)?;
    let c1 = C1Output::read(&c1, None)?;
    let mut proof = arenaprove_filecoin::c2::reference_c2(&c1, &info)?;
    let mut seconds = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        proof = arenaprove_filecoin::c2::reference_c2(&c1, &info)?;
        seconds.push(started.elapsed().as_secs_f64());
        eprintln!("filecoin-baseline: seal_commit_phase2 {:.3} s", seconds.last().unwrap());
    }
    std::fs::write(&out, &proof).with_context(|| format!("writing {}", out.display()))?;
    println!("{}", serde_json::json!({ "seconds": seconds, "proof_bytes": proof.len() }));
    Ok(())
}
