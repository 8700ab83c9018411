//! Structure-aware fuzzing of the daemon's request parsing, as `SubmitProof` runs it: the
//! protobuf bytes (`prost` decode), then the kind, priority and proof checks and the payload
//! parse of whichever kind the request now names (`serve::request`: the PoRep envelope and
//! C1; a PoSt or SnapDeals payload, whose own fuzzing with real vanilla proofs is
//! `filecoin/tests/fuzz_vanilla.rs`). Requests are built as Curio builds them around
//! a C1 of the real 2 KiB shape, then mutated: protobuf bytes flipped or cut, fields set to
//! edge values, the envelope JSON's fields retyped or removed, Phase1Out not base64 or the
//! base64 of a cut C1. Nothing may panic: every outcome is a request or a typed status.
//! Runs for `ARENAPROVE_FUZZ_SECONDS` (default 3) in CI; longer by setting it.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use arenaprove::engine::deps::rand_core::RngCore;
use arenaprove::filecoin::random::random_c1;
use arenaprove::filecoin::{rng_from_seed, SectorSize};
use arenaprove_tools::serve::pb::*;
use arenaprove_tools::serve::request;
use base64::Engine as _;
use prost::Message;
use serde_json::Value;

fn fuzz_budget() -> Duration {
    let secs = std::env::var("ARENAPROVE_FUZZ_SECONDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3.0);
    Duration::from_secs_f64(secs)
}

/// Cases to run at least, whatever the time: `ARENAPROVE_FUZZ_CASES` (default 50), e.g.
/// `ARENAPROVE_FUZZ_SECONDS=0 ARENAPROVE_FUZZ_CASES=1000000` for a run of 10^6 inputs.
fn fuzz_min_cases() -> u64 {
    std::env::var("ARENAPROVE_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(50)
}

/// The mutations' seed: `ARENAPROVE_FUZZ_SEED` when set (parallel runs with different
/// seeds cover different inputs), else `default`.
fn fuzz_seed(default: u64) -> u64 {
    std::env::var("ARENAPROVE_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// What SubmitProof does with a request before it queues it; Err is the typed status, as
/// `code: message`.
fn parse(req: &SubmitProofRequest) -> Result<(), String> {
    let status = |s: tonic::Status| format!("{:?}: {}", s.code(), s.message());
    let kind = request::check_kind(req).map_err(status)?;
    request::priority(req).map_err(status)?;
    request::check(req, kind).map_err(status)?.parse(req).map(|_| ()).map_err(status)
}

fn edge_u64(rng: &mut impl RngCore) -> u64 {
    [0, 1, 2048, 8 << 20, 32 << 30, u64::MAX, rng.next_u64()][rng.next_u32() as usize % 7]
}

fn mutate(
    rng: &mut impl RngCore,
    base: &SubmitProofRequest,
    envelope: &Value,
    c1: &[u8],
) -> (Vec<u8>, &'static str) {
    let mut req = base.clone();
    let kind = match rng.next_u32() % 9 {
        8 => {
            // Only the priority: the request goes all the way to the vanilla check.
            req.priority = (rng.next_u32() % 4) as i32;
            "priority"
        }
        0 => {
            req.proof_kind = [0, 1, 2, 3, 4, 99, -1][rng.next_u32() as usize % 7];
            "proof_kind"
        }
        1 => {
            req.registered_proof = [0, 5, 8, 9, 13, 18, 19, 20, u64::MAX][rng.next_u32() as usize % 9];
            "registered_proof"
        }
        2 => {
            req.sector_size = edge_u64(rng);
            req.sector_number = edge_u64(rng);
            req.priority = rng.next_u32() as i32 % 6 - 1;
            "sizes, numbers, priority"
        }
        3 | 4 => {
            let mut env = envelope.clone();
            let key = ["SectorNum", "Phase1Out", "SectorSize"][rng.next_u32() as usize % 3];
            match rng.next_u32() % 5 {
                0 => {
                    env.as_object_mut().unwrap().remove(key);
                }
                1 => env[key] = Value::from(-1),
                2 => env[key] = Value::from("not base64 ***"),
                3 => env[key] = Value::Null,
                _ => env[key] = Value::from(u64::MAX),
            }
            req.vanilla_proof = serde_json::to_vec(&env).unwrap();
            "envelope field"
        }
        5 => {
            // Phase1Out: the base64 of a cut or bit-flipped C1.
            let mut bytes = c1[..rng.next_u64() as usize % c1.len()].to_vec();
            if rng.next_u32() % 2 == 0 && !bytes.is_empty() {
                let at = rng.next_u64() as usize % bytes.len();
                bytes[at] ^= 0x20;
            }
            let mut env = envelope.clone();
            env["Phase1Out"] = Value::from(base64::engine::general_purpose::STANDARD.encode(&bytes));
            req.vanilla_proof = serde_json::to_vec(&env).unwrap();
            "Phase1Out of a damaged C1"
        }
        6 => {
            let cut = rng.next_u64() as usize % req.vanilla_proof.len();
            req.vanilla_proof.truncate(cut);
            "envelope cut"
        }
        _ => {
            // The protobuf bytes themselves.
            let mut bytes = req.encode_to_vec();
            for _ in 0..1 + rng.next_u32() % 4 {
                let at = rng.next_u64() as usize % bytes.len();
                bytes[at] = rng.next_u32() as u8;
            }
            if rng.next_u32() % 3 == 0 {
                bytes.truncate(rng.next_u64() as usize % bytes.len());
            }
            return (bytes, "protobuf bytes");
        }
    };
    (req.encode_to_vec(), kind)
}

#[test]
fn mutated_requests_decode_and_parse_or_give_a_typed_status_never_a_panic() {
    let proof = SectorSize::Kib2.default_registered_proof();
    let c1 = random_c1(proof, &mut rng_from_seed(0x5ee)).unwrap().to_api_json().unwrap();
    let envelope = serde_json::json!({
        "SectorNum": 7,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&c1),
        "SectorSize": 2048,
    });
    let base = SubmitProofRequest {
        request_id: "fuzz".into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        registered_proof: proof.proof_id(),
        priority: Priority::Normal as i32,
        vanilla_proof: serde_json::to_vec(&envelope).unwrap(),
        sector_number: 7,
        miner_id: 1000,
        ..Default::default()
    };
    // The unmutated request reaches the vanilla check (a random C1's proofs do not verify).
    let status = parse(&base).unwrap_err();
    assert!(status.contains("vanilla proofs do not verify"), "{status}");
    let (budget, min_cases, started) = (fuzz_budget(), fuzz_min_cases(), Instant::now());
    let mut rng = rng_from_seed(fuzz_seed(0xf022));
    let (mut cases, mut decoded, mut refused, mut deep) = (0u64, 0u64, 0u64, 0u64);
    while cases < min_cases || started.elapsed() < budget {
        let (bytes, kind) = mutate(&mut rng, &base, &envelope, &c1);
        let outcome = catch_unwind(AssertUnwindSafe(|| match SubmitProofRequest::decode(&bytes[..]) {
            Err(e) => Err(e.to_string()),
            Ok(req) => parse(&req),
        }));
        match outcome {
            Ok(Ok(())) => decoded += 1,
            Ok(Err(why)) => {
                assert!(!why.is_empty(), "{kind}");
                deep += u64::from(why.contains("vanilla proofs do not verify"));
                refused += 1;
            }
            Err(_) => {
                let keep = std::env::temp_dir().join(format!("arenaprove-fuzz-request-{cases}.bin"));
                let _ = std::fs::write(&keep, &bytes);
                panic!("case {cases} ({kind}) panicked; the protobuf bytes are in {}", keep.display());
            }
        }
        cases += 1;
    }
    println!(
        "{cases} mutated requests: {decoded} accepted, {refused} refused with a typed status ({deep} after a \
         whole C1 parse, at the vanilla check)"
    );
    assert!(refused > 0 && deep > 0);
}
