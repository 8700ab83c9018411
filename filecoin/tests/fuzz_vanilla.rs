//! Structure-aware fuzzing of the PoSt and SnapDeals vanilla-proof parsers and checks, as
//! the daemon runs them before queueing (`PostRequest::from_bincode` + `PostJob::new`,
//! `SnapRequest::from_bincode` + `SnapJob::new`): real bincode blobs of 2 KiB sectors
//! (WinningPoSt, a WindowPoSt partition of two sectors, a SnapDeals partition proof), then
//! mutated: cut, bytes flipped or overwritten, bincode length prefixes (u64 LE) set to edge
//! values, blobs spliced, dropped or duplicated, commitments and randomness changed.
//! Nothing may panic: every outcome is a checked request or a typed error.
//! Runs for `ARENAPROVE_FUZZ_SECONDS` (default 3) and at least `ARENAPROVE_FUZZ_CASES`
//! (default 50) cases; e.g. `ARENAPROVE_FUZZ_SECONDS=0 ARENAPROVE_FUZZ_CASES=1000000`.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use arenaprove_filecoin::post::{vanilla_request, PostJob, PostRequest, RegisteredPoStProof, Replica};
use arenaprove_filecoin::seal::seal_sector_keep;
use arenaprove_filecoin::snap::{encode_update, RegisteredUpdateProof, SnapJob, SnapRequest};
use arenaprove_filecoin::{rng_from_seed, SealRequest, SectorSize};
use rand_core::RngCore;

fn fuzz_budget() -> Duration {
    let secs = std::env::var("ARENAPROVE_FUZZ_SECONDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3.0);
    Duration::from_secs_f64(secs)
}

fn fuzz_min_cases() -> u64 {
    std::env::var("ARENAPROVE_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(50)
}

/// The mutations' seed: `ARENAPROVE_FUZZ_SEED` when set (parallel runs with different
/// seeds cover different inputs), else `default`.
fn fuzz_seed(default: u64) -> u64 {
    std::env::var("ARENAPROVE_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One blob mutated the way a damaged or hostile message would be.
fn mutate_blob(rng: &mut impl RngCore, blob: &mut Vec<u8>) -> &'static str {
    if blob.is_empty() {
        blob.push(rng.next_u32() as u8);
        return "empty grown";
    }
    let at = rng.next_u64() as usize % blob.len();
    match rng.next_u32() % 6 {
        0 => {
            blob.truncate(at);
            "cut"
        }
        1 => {
            blob[at] ^= 1 << (rng.next_u32() % 8);
            "bit flipped"
        }
        2 => {
            for _ in 0..1 + rng.next_u32() % 8 {
                let i = rng.next_u64() as usize % blob.len();
                blob[i] = rng.next_u32() as u8;
            }
            "bytes overwritten"
        }
        3 => {
            // A bincode length prefix (u64 LE) at a random offset set to an edge value.
            let edge =
                [0u64, 1, 2, 65, 66, 67, u32::MAX as u64, u64::MAX, 1 << 40][rng.next_u32() as usize % 9];
            let at = at.min(blob.len().saturating_sub(8));
            let end = (at + 8).min(blob.len());
            blob[at..end].copy_from_slice(&edge.to_le_bytes()[..end - at]);
            "length prefix"
        }
        4 => {
            let extra: Vec<u8> = (0..1 + rng.next_u32() % 64).map(|_| rng.next_u32() as u8).collect();
            blob.splice(at..at, extra);
            "bytes inserted"
        }
        _ => {
            let end = (at + 1 + rng.next_u64() as usize % 64).min(blob.len());
            blob.drain(at..end);
            "bytes removed"
        }
    }
}

/// The blobs of one request mutated: one blob, or the list itself.
fn mutate_list(rng: &mut impl RngCore, blobs: &[Vec<u8>]) -> (Vec<Vec<u8>>, &'static str) {
    let mut out = blobs.to_vec();
    let what = match rng.next_u32() % 5 {
        0 if !out.is_empty() => {
            out.remove(rng.next_u64() as usize % out.len());
            "blob dropped"
        }
        1 if !out.is_empty() => {
            let i = rng.next_u64() as usize % out.len();
            out.push(out[i].clone());
            "blob duplicated"
        }
        2 if out.len() > 1 => {
            let cut = rng.next_u64() as usize % out[0].len();
            let tail = out[1][cut.min(out[1].len())..].to_vec();
            out[0].truncate(cut);
            out[0].extend(tail);
            "blobs spliced"
        }
        _ if !out.is_empty() => {
            let i = rng.next_u64() as usize % out.len();
            mutate_blob(rng, &mut out[i])
        }
        _ => "unchanged",
    };
    (out, what)
}

fn replicas(dir: &std::path::Path) -> Vec<Replica> {
    let mut rng = rng_from_seed(0xf022);
    let prover = SealRequest::random(SectorSize::Kib2, &mut rng).prover_id;
    (0..2)
        .map(|i| {
            let mut request = SealRequest::random(SectorSize::Kib2, &mut rng);
            request.prover_id = prover;
            seal_sector_keep(&request, &mut rng, &dir.join(format!("s{i}"))).expect("seal").1
        })
        .collect()
}

#[test]
fn vanilla_proof_parsers_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let replicas = replicas(dir.path());
    let mut randomness = [7u8; 32];
    randomness[31] &= 0x3f;
    let prover = {
        // The sectors' prover id (vanilla proofs do not bind it; any scalar will do).
        let mut p = [1u8; 32];
        p[31] = 0;
        p
    };
    let winning = RegisteredPoStProof::StackedDrgWinning2KiBV1;
    let window = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
    let posts = [
        (winning, vanilla_request(winning, randomness, prover, 0, &replicas[..1]).unwrap()),
        (window, vanilla_request(window, randomness, prover, 0, &replicas).unwrap()),
    ];
    let post_blobs: Vec<_> = posts.iter().map(|(p, r)| (*p, r.vanilla_bincode().unwrap())).collect();
    let update = encode_update(&replicas[1], &dir.path().join("s1"), &mut rng_from_seed(3)).unwrap();
    let snap_blobs = update.vanilla_bincode().unwrap();
    let snap_proof = RegisteredUpdateProof::StackedDrg2KiBV1;
    // The unmutated inputs pass both stages.
    for (proof, blobs) in &post_blobs {
        let r = PostRequest::from_bincode(*proof, randomness, prover, 0, blobs).unwrap();
        PostJob::new(&r).unwrap();
    }
    let r = SnapRequest::from_bincode(
        snap_proof,
        update.comm_r_old,
        update.comm_r_new,
        update.comm_d_new,
        &snap_blobs,
    )
    .unwrap();
    SnapJob::new(&r).unwrap();

    let mut rng = rng_from_seed(fuzz_seed(0xf022_5eed));
    let (budget, min_cases) = (fuzz_budget(), fuzz_min_cases());
    let started = Instant::now();
    let (mut cases, mut accepted) = (0u64, 0u64);
    let mut kinds = std::collections::BTreeMap::<&str, u64>::new();
    while cases < min_cases || started.elapsed() < budget {
        cases += 1;
        let which = rng.next_u32() % 3;
        let (blobs, what) = match which {
            0 | 1 => mutate_list(&mut rng, &post_blobs[which as usize].1),
            _ => mutate_list(&mut rng, &snap_blobs),
        };
        *kinds.entry(what).or_default() += 1;
        let mut commitment = |c: [u8; 32]| {
            if rng.next_u32() % 8 == 0 {
                let mut c = c;
                c[rng.next_u32() as usize % 32] ^= 0x01;
                c
            } else {
                c
            }
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
            if which < 2 {
                let proof = post_blobs[which as usize].0;
                let r = PostRequest::from_bincode(proof, commitment(randomness), prover, 0, &blobs)
                    .map_err(|e| e.to_string())?;
                PostJob::new(&r).map(|_| ()).map_err(|e| e.to_string())
            } else {
                let (o, n, d) =
                    (commitment(update.comm_r_old), commitment(update.comm_r_new), update.comm_d_new);
                let r = SnapRequest::from_bincode(snap_proof, o, n, d, &blobs).map_err(|e| e.to_string())?;
                SnapJob::new(&r).map(|_| ()).map_err(|e| e.to_string())
            }
        }));
        match outcome {
            Ok(Ok(())) => accepted += 1,
            Ok(Err(message)) => {
                assert!(!message.is_empty(), "case {cases} ({what}): an error without a message")
            }
            Err(_) => panic!("case {cases} ({what}): a panic (see above) instead of a typed error"),
        }
    }
    eprintln!(
        "{cases} mutated vanilla-proof requests in {:.1} s: {accepted} still valid (mutations that change \
         nothing checked), the rest typed errors; by mutation: {kinds:?}",
        started.elapsed().as_secs_f64()
    );
}
