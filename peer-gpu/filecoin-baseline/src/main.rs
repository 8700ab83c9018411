//! `filecoin-baseline (--c1 C1 --sector SECTOR_JSON | --request REQUEST) --runs N --out PROOF`:
//! filecoin-proofs 19.1.0 built with `cuda-supraseal` (what storage providers run on a
//! GPU), on the parameter cache in `FIL_PROOFS_PARAMETER_CACHE`. With `--c1`:
//! `seal_commit_phase2` on a C1 and its sector.json (`arenaprove filecoin bench --peer-exe`).
//! With `--request`: a PoSt or SnapDeals request file (`arenaprove_filecoin::request_file`)
//! proven by `generate_winning_post_with_vanilla` / `generate_single_window_post_with_vanilla`
//! / `generate_empty_sector_update_proof_with_vanilla` (`filecoin post-bench` and
//! `snap-bench --peer-exe`). One untimed warm-up (it loads and caches the parameters), then
//! N timed runs; prints one JSON object `{"seconds": [..]}` on stdout and writes the last
//! proof to PROOF. The caller checks the proof with filecoin-proofs' verifier.
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use arenaprove_filecoin::request_file::ProofRequest;
use arenaprove_filecoin::{C1Output, SectorInfo};

extern crate blst;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut c1, mut sector, mut request, mut out, mut runs) = (None, None, None, None, 1usize);
    while let Some(flag) = args.next() {
        let mut value = || args.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--c1" => c1 = Some(PathBuf::from(value()?)),
            "--sector" => sector = Some(PathBuf::from(value()?)),
            "--request" => request = Some(PathBuf::from(value()?)),
            "--out" => out = Some(PathBuf::from(value()?)),
            "--runs" => runs = value()?.parse().context("--runs")?,
            other => bail!("unknown argument {other} (expected --c1, --sector, --request, --out, --runs)"),
        }
    }
    let usage = "usage: filecoin-baseline (--c1 C1_JSON --sector SECTOR_JSON | --request REQUEST) --out PROOF [--runs N]";
    let Some(out) = out else { bail!(usage) };
    let prove: Box<dyn Fn() -> Result<Vec<u8>>> = match (c1, sector, request) {
        (Some(c1), Some(sector), None) => {
            let info = SectorInfo::read(&sector)?;
            let c1 = C1Output::read(&c1, None)?;
            Box::new(move || Ok(arenaprove_filecoin::c2::reference_c2(&c1, &info)?))
        }
        (None, None, Some(request)) => {
            let request = ProofRequest::read(&request)?;
            Box::new(move || Ok(request.reference()?))
        }
        _ => bail!(usage),
    };
    let mut proof = prove()?;
    let mut seconds = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        proof = prove()?;
        seconds.push(started.elapsed().as_secs_f64());
        eprintln!("filecoin-baseline: {:.3} s", seconds.last().unwrap());
    }
    std::fs::write(&out, &proof).with_context(|| format!("writing {}", out.display()))?;
    println!("{}", serde_json::json!({ "seconds": seconds, "proof_bytes": proof.len() }));
    Ok(())
}
