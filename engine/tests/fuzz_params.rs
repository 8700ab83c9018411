//! Structure-aware fuzzing of the Groth16 parameter reader (bellperson's file format): a
//! real parameters file of a small circuit is mutated (a section's point count set to an
//! edge value, a point's bytes changed, raw bit flips, cuts, growth), then read checked and
//! unchecked. Nothing may panic or allocate past the file: every outcome is parameters or a
//! typed error. Runs for `ARENAPROVE_FUZZ_SECONDS` (default 3) in CI; longer by setting it.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use arenaprove_circuits::circuits::ChainCircuit;
use arenaprove_engine::groth16::generator::generate_random_parameters;
use arenaprove_engine::{Parameters, ParamsMemory};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

const G1: usize = 96;
const G2: usize = 192;

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

/// Offsets of the six count fields (ic, h, l, a, b_g1, b_g2) and the point size after each.
fn count_fields(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut fields = Vec::new();
    // alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2: then ic.
    let mut off = 3 * G1 + 3 * G2;
    for point in [G1, G1, G1, G1, G1, G2] {
        let count = u32::from_be_bytes(bytes[off..off + 4].try_into().unwrap()) as usize;
        fields.push((off, point));
        off += 4 + count * point;
    }
    assert_eq!(off, bytes.len(), "the walk covers the file");
    fields
}

fn mutate(rng: &mut ChaCha8Rng, original: &[u8], fields: &[(usize, usize)]) -> (Vec<u8>, &'static str) {
    let mut bytes = original.to_vec();
    let kind = match rng.next_u32() % 5 {
        0 => {
            let (off, _) = fields[rng.next_u32() as usize % fields.len()];
            let old = u32::from_be_bytes(bytes[off..off + 4].try_into().unwrap());
            let new = match rng.next_u32() % 6 {
                0 => 0,
                1 => u32::MAX,
                2 => old.wrapping_add(1),
                3 => old.wrapping_sub(1),
                4 => 1 << (rng.next_u32() % 32),
                _ => rng.next_u32(),
            };
            bytes[off..off + 4].copy_from_slice(&new.to_be_bytes());
            "a section's point count"
        }
        1 => {
            // A byte inside some point (a coordinate off the curve, a flag bit, infinity).
            let (off, point) = fields[rng.next_u32() as usize % fields.len()];
            let count = u32::from_be_bytes(bytes[off..off + 4].try_into().unwrap()) as usize;
            if count > 0 {
                let at = off + 4 + (rng.next_u64() as usize % (count * point));
                bytes[at] = if rng.next_u32() % 2 == 0 { 0 } else { rng.next_u32() as u8 };
            }
            "a point's byte"
        }
        2 => {
            let at = rng.next_u64() as usize % bytes.len();
            bytes[at] ^= 1 << (rng.next_u32() % 8);
            "a raw bit flip"
        }
        3 => {
            bytes.truncate(rng.next_u64() as usize % bytes.len());
            "truncated"
        }
        _ => {
            bytes.extend((0..1 + rng.next_u32() % 500).map(|_| rng.next_u32() as u8));
            "grown"
        }
    };
    (bytes, kind)
}

#[test]
fn mutated_parameter_files_read_as_parameters_or_typed_errors_never_a_panic() {
    let mem = ParamsMemory::heap();
    let params =
        generate_random_parameters(ChainCircuit::new(64, 3), &mut ChaCha8Rng::seed_from_u64(7), &mem)
            .unwrap();
    let mut original = Vec::new();
    params.write(&mut original).unwrap();
    let fields = count_fields(&original);
    assert!(Parameters::from_bytes(&original, "original", true, &mem).is_ok());
    let (budget, min_cases, started) = (fuzz_budget(), fuzz_min_cases(), Instant::now());
    let mut rng = ChaCha8Rng::seed_from_u64(fuzz_seed(0xf022));
    let (mut cases, mut read, mut refused) = (0u64, 0u64, 0u64);
    while cases < min_cases || started.elapsed() < budget {
        let (bytes, kind) = mutate(&mut rng, &original, &fields);
        let checked = rng.next_u32() % 2 == 0;
        match catch_unwind(AssertUnwindSafe(|| Parameters::from_bytes(&bytes, "fuzz", checked, &mem).is_ok()))
        {
            Ok(true) => read += 1,
            Ok(false) => refused += 1,
            Err(_) => {
                let keep = std::env::temp_dir().join(format!("arenaprove-fuzz-params-{cases}.bin"));
                let _ = std::fs::write(&keep, &bytes);
                panic!(
                    "case {cases} ({kind}, checked {checked}) panicked; the input is in {}",
                    keep.display()
                );
            }
        }
        cases += 1;
    }
    println!("{cases} mutated parameter files: {read} read, {refused} refused with a typed error");
    assert!(refused > 0);
}
