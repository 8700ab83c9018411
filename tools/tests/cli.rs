//! The `arenaprove` program as a newcomer runs it: `prove` writes proofs, a verifying key
//! and inputs that bellperson's own verifier accepts; `soak` proves sectors with memory
//! flat; bad input gives a clear error and exit code 1.

use std::path::Path;
use std::process::{Command, Output};

use bellperson::groth16::{prepare_verifying_key, verify_proof, Proof, VerifyingKey};
use blstrs::{Bls12, Scalar};

fn arenaprove(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arenaprove"))
        .args(args)
        .env("ARENAPROVE_CACHE", cache)
        .output()
        .expect("running arenaprove")
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn scalar(hex: &str) -> Scalar {
    let digits = hex.strip_prefix("0x").expect("0x prefix");
    assert_eq!(digits.len(), 64, "64 hex digits: {hex}");
    let mut le = [0u8; 32];
    for (i, b) in le.iter_mut().enumerate() {
        *b = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16).unwrap();
    }
    Option::from(Scalar::from_bytes_le(&le)).expect("a canonical scalar")
}

fn check_with_bellperson(dir: &Path, partitions: usize) {
    let vk = VerifyingKey::<Bls12>::read(&std::fs::read(dir.join("vk.bin")).unwrap()[..])
        .expect("bellperson reads the vk");
    let pvk = prepare_verifying_key(&vk);
    let proofs = std::fs::read(dir.join("proof.bin")).unwrap();
    assert_eq!(proofs.len(), 192 * partitions);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("inputs.json")).unwrap()).unwrap();
    let per: Vec<Vec<Scalar>> = if partitions == 1 {
        vec![json.as_array().unwrap().iter().map(|v| scalar(v.as_str().unwrap())).collect()]
    } else {
        json.as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_array().unwrap().iter().map(|v| scalar(v.as_str().unwrap())).collect())
            .collect()
    };
    assert_eq!(per.len(), partitions);
    for (k, inputs) in per.iter().enumerate() {
        let proof =
            Proof::<Bls12>::read(&proofs[192 * k..192 * (k + 1)]).expect("bellperson reads the proof");
        assert!(verify_proof(&pvk, &proof, inputs).unwrap(), "partition {k} verifies with bellperson");
        // A wrong input must not verify.
        let mut bad = inputs.clone();
        bad[0] += Scalar::from(1u64);
        assert!(!verify_proof(&pvk, &proof, &bad).unwrap());
    }
}

#[test]
fn prove_writes_what_bellperson_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (p, v, i) = (d.join("proof.bin"), d.join("vk.bin"), d.join("inputs.json"));
    for (circuit, partitions) in [("sector", 3usize), ("chain", 1)] {
        let out = arenaprove(
            d,
            &[
                "prove",
                "--circuit",
                circuit,
                "--constraints",
                "1024",
                "--partitions",
                &partitions.to_string(),
                "--quiet",
                "--proof-out",
                p.to_str().unwrap(),
                "--vk-out",
                v.to_str().unwrap(),
                "--inputs-out",
                i.to_str().unwrap(),
                "--trace",
                d.join("trace.json").to_str().unwrap(),
            ],
        );
        let stdout = ok(&out);
        assert!(
            stdout.contains(&format!("{partitions} of {partitions} partition proofs verified")),
            "{stdout}"
        );
        assert!(stdout.contains("prove_start") && stdout.contains("msm_b_g2"), "timeline printed: {stdout}");
        check_with_bellperson(d, partitions);
        let trace: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.join("trace.json")).unwrap()).unwrap();
        assert!(trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "finalize" && e["ph"] == "X"));
    }
    // The second run of the same circuit reuses the cached params.
    let out = arenaprove(
        d,
        &["prove", "--circuit", "chain", "--constraints", "1024", "--partitions", "1", "--quiet"],
    );
    assert!(ok(&out).contains("(loaded;"));
}

#[test]
fn soak_keeps_memory_flat_and_verifies_every_proof() {
    let dir = tempfile::tempdir().unwrap();
    // The arena on 4 KiB pages (`--no-huge-pages`, the A/B switch for its page size) too.
    for (alloc, pages) in [("slab", None), ("fresh", None), ("slab", Some("--no-huge-pages"))] {
        let mut args = vec![
            "soak",
            "--sectors",
            "8",
            "--partitions",
            "2",
            "--constraints",
            "1024",
            "--alloc",
            alloc,
            "--json",
        ];
        args.extend(pages);
        let out = arenaprove(dir.path(), &args);
        let stdout = ok(&out);
        let r: serde_json::Value = serde_json::from_str(stdout.trim().lines().last().unwrap()).unwrap();
        assert_eq!(r["proofs_ok"], 16, "{r}");
        assert_eq!(r["proofs_failed"], 0);
        assert_eq!(r["regions_after_freeze"], 0);
        for field in [
            "rss_warm_bytes",
            "rss_end_bytes",
            "rss_peak_bytes",
            "setup_peak_rss_bytes",
            "partition_release_ns_p99",
            "throughput_first_tenth",
            "throughput_last_tenth",
            "minflt_per_partition",
        ] {
            assert!(r[field].is_number(), "{field} in {r}");
        }
        // Where the time went: each pipeline stage's median.
        for stage in ["synthesize", "prove_start", "finalize", "handback"] {
            assert!(r["stage_p50_ms"][stage].as_f64().is_some_and(|ms| ms >= 0.0), "{stage} in {r}");
        }
        // Per-slab handback: measured in slab mode; fresh mode has no pool to hand back to.
        assert_eq!(r["handback_ns_p99"].is_number(), alloc == "slab", "{r}");
        // The measured phase's peak is its own: reset after setup where /proc allows it.
        assert!(r["peak_reset"].is_boolean(), "{r}");
        if r["peak_reset"] == true {
            assert!(r["rss_peak_bytes"].as_f64() >= r["rss_end_bytes"].as_f64(), "{r}");
        }
        if alloc == "slab" {
            // Memory flat after warm-up (generous bound for a noisy CI machine).
            let (warm, end) = (r["rss_warm_bytes"].as_f64().unwrap(), r["rss_end_bytes"].as_f64().unwrap());
            assert!(end <= warm * 1.05, "RSS grew from {warm} to {end}");
        }
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let truncated = d.join("truncated.params");
    std::fs::write(&truncated, [0u8; 100]).unwrap();
    // A 1,024-constraint chain proof from the given params file.
    let prove_chain_with = |params: &Path| {
        arenaprove(
            d,
            &[
                "prove",
                "--circuit",
                "chain",
                "--constraints",
                "1024",
                "--params",
                params.to_str().unwrap(),
                "--quiet",
            ],
        )
    };
    let out = prove_chain_with(&truncated);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("truncated.params") && err.contains("truncated"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let out = arenaprove(d, &["prove", "--circuit", "nope"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));

    let out = arenaprove(d, &["prove", "--partitions", "0", "--quiet"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--partitions"));

    // The daemon's engine does not take the CLI's region flags: said, not ignored.
    #[cfg(feature = "serve")]
    {
        let out = arenaprove(d, &["--no-huge-pages", "serve"]);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("serve does not take them"));
    }

    // Params for another circuit size are refused, naming both shapes.
    let other = d.join("other.params");
    ok(&arenaprove(
        d,
        &["params", "gen", "--circuit", "chain", "--constraints", "2048", "--out", other.to_str().unwrap()],
    ));
    let out = prove_chain_with(&other);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("do not fit"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `params verify`: both backends accept a good file (`--backend gpu` checks on the CPU,
/// saying so, where there is no GPU) and name the point of a tampered one.
#[test]
fn params_verify_checks_every_point_on_either_backend() {
    let d = &std::env::temp_dir().join(format!("arenaprove-cli-verify-{}", std::process::id()));
    std::fs::create_dir_all(d).unwrap();
    let file = d.join("chain.params");
    let path = file.to_str().unwrap();
    ok(&arenaprove(d, &["params", "gen", "--circuit", "chain", "--constraints", "1024", "--out", path]));
    for backend in ["cpu", "gpu"] {
        let out =
            ok(&arenaprove(d, &["params", "verify", path, "--backend", backend, "--cpu-sample", "100"]));
        assert!(out.contains("every point valid"), "{backend}: {out}");
        if backend == "gpu" {
            assert!(out.contains("subgroup check G1") && out.contains("ratio"), "{out}");
        }
    }
    // The first point of h (after the verifying key and h's count) replaced by a point on the
    // curve outside the subgroup.
    let mut bytes = std::fs::read(&file).unwrap();
    let p = arenaprove::engine::groth16::Parameters::from_bytes(
        &bytes,
        "x",
        false,
        &arenaprove::engine::groth16::ParamsMemory::heap(),
    )
    .unwrap();
    let at = p.vk.encoded_bytes() + 4;
    bytes[at..at + 96].copy_from_slice(&arenaprove::engine::groth16::params::g1_outside_subgroup_bytes());
    std::fs::write(&file, &bytes).unwrap();
    for backend in ["cpu", "gpu"] {
        let out = arenaprove(d, &["params", "verify", path, "--backend", backend]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{backend}: {err}");
        assert!(
            err.contains("section 'h', point 0") && err.contains("not in the prime-order subgroup"),
            "{backend}: {err}"
        );
    }
    std::fs::remove_dir_all(d).unwrap();
}

/// `filecoin params --backend gpu` writes the file `--backend cpu` writes for the same seed:
/// the GPU's fixed-base products where there is one (checked against the CPU's on a sample
/// in the same run), the CPU's, said on stderr, where there is none. Ignored in CI: each
/// 2 KiB file is 1.1 GB and ~65 s of CPU products on the 2-core VM (the engine's
/// `parameters_from_the_recording_are_byte_identical_to_the_generator` checks the seam in CI,
/// and the GPU test the GPU's file).
#[cfg(feature = "filecoin")]
#[test]
#[ignore]
fn filecoin_params_are_the_same_file_whoever_makes_the_points() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for backend in ["cpu", "gpu"] {
        let cache = dir.path().join(backend);
        let c = cache.to_str().unwrap();
        let out = arenaprove(
            dir.path(),
            &["filecoin", "--param-cache", c, "params", "--sector-size", "2KiB", "--backend", backend],
        );
        ok(&out);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("points made by"), "{backend}: {err}");
        let params = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "params"))
            .expect("a .params file");
        files.push(std::fs::read(params).unwrap());
    }
    assert!(files[0] == files[1], "the two backends' files differ");
}

/// `soak --precompiled`: the circuit recorded once (and mapped from the cache on the next
/// run), parameters written from the recording, every partition's witness alone through
/// it; every proof verified, as without.
#[test]
fn soak_precompiled_records_once_and_verifies_every_proof() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "soak",
        "--precompiled",
        "--circuit",
        "sector",
        "--constraints",
        "4096",
        "--sectors",
        "2",
        "--partitions",
        "2",
        "--json",
    ];
    for (run, origin) in [(1, "Recorded"), (2, "Mapped")] {
        let out = arenaprove(d, &args);
        let stdout = ok(&out);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("recording: ") && err.contains(origin), "run {run}: {err}");
        assert_eq!(
            err.contains("from the recording"),
            run == 1,
            "params written on the first run only: {err}"
        );
        let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(report["proofs_ok"], 4, "run {run}: {stdout}");
        assert_eq!(report["proofs_failed"], 0, "run {run}: {stdout}");
    }
    // `plan --precompiled` plans that run: the recording's file is its term, and on the GPU
    // a slot holds the witness alone (no a, b, c on the host).
    let plan = [
        "plan",
        "--precompiled",
        "--circuit",
        "sector",
        "--constraints",
        "4096",
        "--backend",
        "gpu",
        "--json",
    ];
    let json: serde_json::Value = serde_json::from_str(ok(&arenaprove(d, &plan)).trim()).unwrap();
    let recording = std::fs::read_dir(d.join("params"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "arenaprove-pce"))
        .expect("the recording in the cache");
    assert_eq!(json["precompiled_matrices_bytes"], std::fs::metadata(&recording).unwrap().len(), "{json}");
    let pools: Vec<&str> =
        json["terms"].as_array().unwrap().iter().map(|t| t["pool"].as_str().unwrap()).collect();
    assert!(!pools.contains(&"abc") && pools.contains(&"aux"), "{pools:?}");
    assert_eq!(json["device_sizes_from"], "the parameters file's sections", "{json}");
    // Another size has no recording yet: the error says how to make one.
    let other = ["plan", "--precompiled", "--circuit", "sector", "--constraints", "8192"];
    let out = arenaprove(d, &other);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no recording of sector") && err.contains("soak --precompiled"), "{err}");
}
