//! Structure-aware fuzzing of the precompiled-constraints file: a real recording is mutated
//! (header fields re-encoded with a valid checksum, section contents changed and their
//! checksums fixed, raw bytes flipped, the file cut or grown), then opened; whatever opens
//! is synthesized against. Nothing may panic: every outcome is a recording or a typed
//! error. Runs for `ARENAPROVE_FUZZ_SECONDS` (default 3) in CI; longer by setting it.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use arenaprove_arena::{Ledger, RegionConfig};
use arenaprove_circuits::circuits::ShaCircuit;
use arenaprove_circuits::precompiled::format::{checksum_par, Header, HEADER_BYTES, SECTIONS};
use arenaprove_circuits::{record, shape_of, synthesize_precompiled, AssignmentPools, Precompiled};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

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

/// An edge value or a random one for a header field.
fn field(rng: &mut ChaCha8Rng, old: u64) -> u64 {
    match rng.next_u32() % 8 {
        0 => 0,
        1 => 1,
        2 => u64::MAX,
        3 => old.wrapping_add(1),
        4 => old.wrapping_sub(1),
        5 => old.wrapping_mul(2),
        6 => 1 << (rng.next_u32() % 64),
        _ => rng.next_u64(),
    }
}

fn mutate(rng: &mut ChaCha8Rng, original: &[u8], header: &Header) -> (Vec<u8>, &'static str) {
    let mut bytes = original.to_vec();
    let mut h = header.clone();
    let kind = match rng.next_u32() % 6 {
        0 => {
            match rng.next_u32() % 5 {
                0 => h.rows = field(rng, h.rows),
                1 => h.inputs = field(rng, h.inputs),
                2 => h.aux = field(rng, h.aux),
                3 => {
                    let s = &mut h.sections[rng.next_u32() as usize % SECTIONS];
                    s.offset = field(rng, s.offset);
                }
                _ => {
                    let s = &mut h.sections[rng.next_u32() as usize % SECTIONS];
                    s.len = field(rng, s.len);
                }
            }
            "a header field (valid header checksum)"
        }
        1 | 2 => {
            // Section content changed, its checksum fixed: reaches the structural checks.
            let i = rng.next_u32() as usize % SECTIONS;
            let s = h.sections[i];
            let (start, len) = (s.offset as usize, s.len as usize);
            if len > 0 {
                for _ in 0..1 + rng.next_u32() % 4 {
                    let at = start + (rng.next_u64() as usize % len);
                    bytes[at] = match rng.next_u32() % 3 {
                        0 => 0xff,
                        1 => 0,
                        _ => rng.next_u32() as u8,
                    };
                }
                h.sections[i].checksum = checksum_par(&bytes[start..start + len]);
            }
            "section bytes (valid section checksum)"
        }
        3 => {
            let at = rng.next_u64() as usize % bytes.len();
            bytes[at] ^= 1 << (rng.next_u32() % 8);
            return (bytes, "a raw bit flip");
        }
        4 => {
            bytes.truncate(rng.next_u64() as usize % bytes.len());
            return (bytes, "truncated");
        }
        _ => {
            bytes.extend((0..rng.next_u32() % 10_000).map(|_| rng.next_u32() as u8));
            return (bytes, "grown");
        }
    };
    bytes[..HEADER_BYTES].copy_from_slice(&h.encode());
    (bytes, kind)
}

#[test]
fn mutated_recordings_open_as_recordings_or_typed_errors_never_a_panic() {
    let circuit = ShaCircuit::new(1, 3).bellpepper();
    let shape = shape_of(circuit).unwrap();
    let path = std::env::temp_dir().join(format!("arenaprove-fuzz-{}.arenaprove-pce", std::process::id()));
    record(circuit, "fuzz").unwrap().save(&path).unwrap();
    let original = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let header = Header::decode(&original, "original").unwrap();
    let ledger = Ledger::unlimited();
    let pools = AssignmentPools::for_shape(&shape, 1, &ledger, RegionConfig::heap()).unwrap();
    let (budget, min_cases, started) = (fuzz_budget(), fuzz_min_cases(), Instant::now());
    let mut rng = ChaCha8Rng::seed_from_u64(fuzz_seed(0xf022));
    let (mut cases, mut opened, mut refused) = (0u64, 0u64, 0u64);
    while cases < min_cases || started.elapsed() < budget {
        let (bytes, kind) = mutate(&mut rng, &original, &header);
        let outcome =
            catch_unwind(AssertUnwindSafe(|| match Precompiled::from_bytes(bytes.clone(), "fuzz") {
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    false
                }
                Ok(pc) => {
                    // Whatever opens is used: a synthesis against it is a result or an error.
                    let _ = synthesize_precompiled(circuit, &pc, &pools, &shape);
                    true
                }
            }));
        match outcome {
            Ok(true) => opened += 1,
            Ok(false) => refused += 1,
            Err(_) => {
                let keep = std::env::temp_dir().join(format!("arenaprove-fuzz-pce-{cases}.bin"));
                let _ = std::fs::write(&keep, &bytes);
                panic!("case {cases} ({kind}) panicked; the input is in {}", keep.display());
            }
        }
        cases += 1;
    }
    assert_eq!(pools.outstanding(), 0);
    println!("{cases} mutated recordings: {opened} opened, {refused} refused with a typed error");
    assert!(refused > 0);
}
