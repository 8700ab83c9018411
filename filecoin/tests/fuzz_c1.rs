//! Structure-aware fuzzing of the C1 parser (`C1Output::from_json`, filecoin-proofs-api's
//! format): a C1 of the real 2 KiB shape is mutated in its JSON tree (a node replaced by
//! another type, an edge number, an empty or longer array, a key removed, the registered
//! proof or the vanilla tag renamed) or in its bytes (cut, a byte changed), then parsed.
//! Nothing may panic: every outcome is a C1 or a typed error. Runs for
//! `ARENAPROVE_FUZZ_SECONDS` (default 3) in CI; longer by setting it.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use arenaprove_filecoin::random::random_c1;
use arenaprove_filecoin::{rng_from_seed, C1Output, SectorSize};
use rand_core::RngCore;
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

/// JSON pointers of every node below `v`.
fn paths(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                paths(child, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                paths(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

fn replacement(rng: &mut impl RngCore, old: &Value) -> Value {
    match rng.next_u32() % 12 {
        0 => Value::Null,
        1 => Value::Bool(true),
        2 => Value::from(-1),
        3 => Value::from(u64::MAX),
        4 => Value::from(256),
        5 => Value::from(1.5),
        6 => Value::from("StackedDrg32GiBV1_1"),
        7 => Value::Array(Vec::new()),
        8 => Value::Object(Default::default()),
        9 => match old {
            Value::Array(items) if !items.is_empty() => {
                let mut longer = items.clone();
                longer.push(items[0].clone());
                Value::Array(longer)
            }
            _ => Value::from(0),
        },
        10 => match old {
            Value::Array(items) if !items.is_empty() => Value::Array(items[..items.len() - 1].to_vec()),
            _ => Value::from("x"),
        },
        _ => Value::from(rng.next_u32()),
    }
}

fn mutate(rng: &mut impl RngCore, original: &Value, nodes: &[String], text: &[u8]) -> (Vec<u8>, String) {
    match rng.next_u32() % 10 {
        0 => {
            let cut = rng.next_u64() as usize % text.len();
            (text[..cut].to_vec(), format!("cut at {cut}"))
        }
        1 => {
            let mut bytes = text.to_vec();
            let at = rng.next_u64() as usize % bytes.len();
            bytes[at] = b"{}[],:\"0-e9 "[rng.next_u32() as usize % 12];
            (bytes, format!("byte {at} changed"))
        }
        2 => {
            let mut v = original.clone();
            let names = [
                "StackedDrg2KiBV1",
                "StackedDrg8MiBV1_1",
                "StackedDrg64GiBV1_1",
                "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep",
                "nope",
            ];
            let name = names[rng.next_u32() as usize % names.len()];
            v["registered_proof"] = Value::from(name);
            if rng.next_u32() % 2 == 0 {
                if let Some(Value::Object(map)) = v.get_mut("vanilla_proofs") {
                    let proofs = map.values().next().cloned().unwrap_or(Value::Null);
                    map.clear();
                    map.insert(name.trim_end_matches("_1").to_string(), proofs);
                }
            }
            (serde_json::to_vec(&v).unwrap(), format!("registered proof {name}"))
        }
        _ => {
            let mut v = original.clone();
            let path = &nodes[rng.next_u64() as usize % nodes.len()];
            let (parent, key) = path.rsplit_once('/').unwrap_or(("", ""));
            let removed = rng.next_u32() % 5 == 0
                && match v.pointer_mut(parent) {
                    Some(Value::Object(map)) => map.remove(key).is_some(),
                    _ => false,
                };
            if !removed {
                if let Some(node) = v.pointer_mut(path) {
                    *node = replacement(rng, node);
                }
            }
            (
                serde_json::to_vec(&v).unwrap(),
                format!("{} {path}", if removed { "removed" } else { "replaced" }),
            )
        }
    }
}

#[test]
fn mutated_c1_outputs_parse_or_give_a_typed_error_never_a_panic() {
    let proof = SectorSize::Kib2.default_registered_proof();
    let c1 = random_c1(proof, &mut rng_from_seed(0xc1)).unwrap();
    let text = c1.to_api_json().unwrap();
    let original: Value = serde_json::from_slice(&text).unwrap();
    assert!(C1Output::from_json(&text, None).is_ok(), "the unmutated C1 parses");
    let mut nodes = Vec::new();
    paths(&original, String::new(), &mut nodes);
    let (budget, min_cases, started) = (fuzz_budget(), fuzz_min_cases(), Instant::now());
    let mut rng = rng_from_seed(fuzz_seed(0xf022));
    let (mut cases, mut parsed, mut refused) = (0u64, 0u64, 0u64);
    while cases < min_cases || started.elapsed() < budget {
        let (bytes, what) = mutate(&mut rng, &original, &nodes, &text);
        match catch_unwind(AssertUnwindSafe(|| C1Output::from_json(&bytes, None).map(|c1| c1.partitions()))) {
            Ok(Ok(_)) => parsed += 1,
            Ok(Err(e)) => {
                assert!(!e.to_string().is_empty(), "{what}");
                refused += 1;
            }
            Err(_) => {
                let keep = std::env::temp_dir().join(format!("arenaprove-fuzz-c1-{cases}.json"));
                let _ = std::fs::write(&keep, &bytes);
                panic!("case {cases} ({what}) panicked; the input is in {}", keep.display());
            }
        }
        cases += 1;
    }
    println!(
        "{cases} mutated C1 outputs ({} nodes): {parsed} parsed, {refused} refused with a typed error",
        nodes.len()
    );
    assert!(refused > 0 && parsed > 0);
}
