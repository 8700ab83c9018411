//! `arenaprove plan`, and the memory guard every proving command runs first: a request
//! that cannot fit is refused at once, naming the plan and the limit.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Longest any command here may run: what the guard refuses, it refuses in milliseconds,
/// and the old behaviour (synthesizing 10^12 constraints, silent) is killed and fails.
const RUN_S_MAX: u64 = 120;

fn arenaprove(cache: &Path, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_arenaprove"))
        .args(args)
        .env("ARENAPROVE_CACHE", cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running arenaprove");
    while child.try_wait().expect("polling arenaprove").is_none() {
        if started.elapsed() > Duration::from_secs(RUN_S_MAX) {
            child.kill().expect("killing arenaprove");
            panic!("arenaprove {args:?} still running after {RUN_S_MAX} s: killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("arenaprove's output");
    (out, started.elapsed())
}

fn stdout_ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn plan_json(cache: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["plan", "--json"];
    all.extend_from_slice(args);
    let stdout = stdout_ok(&arenaprove(cache, &all).0);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn u(v: &serde_json::Value, field: &str) -> u64 {
    v[field].as_u64().unwrap_or_else(|| panic!("{field} in {v}"))
}

/// Every field is there, the total is the sum of its terms plus the params, and more
/// slots cost more.
#[test]
fn plan_for_a_test_circuit_is_a_consistent_sum() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--circuit", "sector", "--constraints", "65536", "--memory-limit", "1TiB"];
    let two = plan_json(dir.path(), &[&args[..], &["--slots", "2"]].concat());
    let shape = &two["shape"];
    // 1 full challenge + 79 levels (circuits::sector's sizing table).
    assert_eq!(u(shape, "constraints"), 65_596, "{two}");
    assert_eq!(u(shape, "domain_size"), 1 << 17);
    assert!(u(shape, "inputs") >= 2 && u(shape, "aux") > 0);
    let terms = two["terms"].as_array().unwrap();
    assert!(!terms.is_empty());
    let (mut slabs, mut resident) = (0, 0);
    for t in terms {
        assert!(t["pool"].is_string() && t["what"].is_string(), "{t}");
        assert_eq!(u(t, "bytes"), u(t, "slab_bytes") * u(t, "count"), "{t}");
        match t["scope"].as_str().unwrap() {
            "PerSlot" | "Shared" => slabs += u(t, "bytes"),
            "Resident" => resident += u(t, "bytes"),
            "Heap" => assert_eq!(t["pool"], "heap", "{t}"), // in the predicted peak, not reserved
            other => panic!("scope {other} in a CPU plan: {t}"),
        }
    }
    assert_eq!(u(&two, "engine_bytes"), slabs);
    assert_eq!(u(&two, "params_bytes"), resident);
    assert_eq!(u(&two, "slots"), 2);
    assert!(u(&two, "slot_bytes") * 2 <= slabs && u(&two, "slot_bytes") > 0);
    // Regions are the slabs rounded to 2 MiB as pools carve them.
    let regions = u(&two, "region_bytes");
    assert!(regions >= slabs && regions < slabs + terms.len() as u64 * (4 << 20), "{two}");
    assert_eq!(u(&two, "total_bytes"), regions + resident);
    assert!(u(&two, "predicted_peak_rss_bytes") > u(&two, "total_bytes"));
    assert_eq!(two["params_source"], "estimate", "no params cached in a fresh cache: {two}");
    assert_eq!(u(&two, "params_generation_bytes"), 3 * u(&two, "params_bytes"));
    assert_eq!((u(&two, "memory_limit_bytes"), two["fits"].as_bool()), (1 << 40, Some(true)));
    assert!(two["cuzk"].is_null());

    let one = plan_json(dir.path(), &[&args[..], &["--slots", "1"]].concat());
    assert_eq!(one["shape"], two["shape"]);
    assert!(u(&one, "engine_bytes") < u(&two, "engine_bytes"));
    assert_eq!(one["params_bytes"], two["params_bytes"]);

    // A limit below the total: reported, not refused (plan reserves nothing).
    let small =
        plan_json(dir.path(), &["--circuit", "sector", "--constraints", "65536", "--memory-limit", "1MiB"]);
    assert_eq!(small["fits"].as_bool(), Some(false));
    // The human form names each part.
    let text = stdout_ok(&arenaprove(dir.path(), &["plan", "--circuit", "chain", "--constraints", "4096"]).0);
    for part in ["per slot", "engine slabs", "params", "total", "peak RSS", "limit"] {
        assert!(text.contains(part), "{part} in:\n{text}");
    }
}

/// The 2 KiB C2 partition's shape comes from the real blank circuit (ANCHORS.md:
/// 2,687,921 constraints + 40 input rows, 40 inputs, 2,685,673 aux), then from the cache.
#[cfg(feature = "filecoin")]
#[test]
fn plan_for_a_2kib_filecoin_partition() {
    let dir = tempfile::tempdir().unwrap();
    let first = plan_json(dir.path(), &["--filecoin", "2KiB", "--slots", "1"]);
    let shape = &first["shape"];
    assert_eq!((u(shape, "constraints"), u(shape, "inputs"), u(shape, "aux")), (2_687_961, 40, 2_685_673));
    assert_eq!(first["subject"], "stacked-drg-2KiB");
    assert_eq!(first["details"]["partitions"], 1);
    assert_eq!(first["details"]["registered_proof"], "StackedDrg2KiBV1_1");
    assert_eq!(first["details"]["shape_from_cache"], false);
    assert!(first["cuzk"].is_null(), "cuzk's figures are for 32 GiB");
    let (out, took) = arenaprove(dir.path(), &["plan", "--json", "--filecoin", "2KiB", "--slots", "1"]);
    let second: serde_json::Value = serde_json::from_str(stdout_ok(&out).trim()).unwrap();
    assert_eq!(second["details"]["shape_from_cache"], true);
    assert_eq!(second["shape"], first["shape"]);
    assert!(took < Duration::from_secs(2), "{took:?} from the cache");
    // The precompiled matrices' bytes (counted, and cached with the shape).
    let matrices = u(&first, "precompiled_matrices_bytes");
    assert!(matrices > 10 << 20, "{matrices} bytes of matrices for 2.7M constraints");
    assert_eq!(second["precompiled_matrices_bytes"], first["precompiled_matrices_bytes"]);
    assert_eq!(
        u(&first, "predicted_peak_rss_with_matrices_bytes"),
        u(&first, "predicted_peak_rss_bytes") + matrices
    );
}

/// The filecoin commands run the same guard before generating params or reserving.
#[cfg(feature = "filecoin")]
#[test]
fn filecoin_commands_are_guarded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let param_cache = d.join("filecoin-params");
    let param_cache = param_cache.to_str().unwrap();
    for cmd in ["soak", "bench", "seal"] {
        let mut args = vec!["filecoin", cmd, "--sector-size", "2KiB", "--param-cache", param_cache];
        args.extend_from_slice(&["--memory-limit", "1MiB"]);
        if cmd == "seal" {
            args.extend_from_slice(&["--out", d.to_str().unwrap()]);
        }
        let (out, took) = arenaprove(d, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains(&format!("refused: filecoin {cmd}"))
                && err.contains("(1048576 bytes, --memory-limit)"),
            "{err}"
        );
        assert!(took < Duration::from_secs(60), "{cmd}: {took:?}");
    }
    assert!(!Path::new(param_cache).exists() || std::fs::read_dir(param_cache).unwrap().count() == 0);
}

#[cfg(not(feature = "filecoin"))]
#[test]
fn plan_for_filecoin_names_the_feature_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = arenaprove(dir.path(), &["plan", "--filecoin", "2KiB"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`filecoin` feature"));
}

fn assert_refused_at_once(cache: &Path, args: &[&str], limit_source: &str) {
    let (out, took) = arenaprove(cache, args);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{args:?}\n{err}");
    assert!(took < Duration::from_secs(10), "{args:?} took {took:?}");
    assert!(err.contains("refused") && err.contains("memory limit") && err.contains(limit_source), "{err}");
    assert!(err.contains("engine slabs") && err.contains("slots"), "the plan is in the message: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let params = cache.join("params");
    let generated = std::fs::read_dir(&params).map(|d| d.count()).unwrap_or(0);
    assert_eq!(generated, 0, "nothing generated in {}", params.display());
}

/// What sat silent until killed before: refused in seconds with the plan and the limit.
#[test]
fn too_large_prove_and_soak_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_refused_at_once(d, &["prove", "--constraints", "1000000000000", "--quiet"], "MemAvailable");
    assert_refused_at_once(d, &["soak", "--constraints", "2000000000", "--json"], "MemAvailable");
    assert_refused_at_once(
        d,
        &["prove", "--circuit", "chain", "--constraints", "4096", "--memory-limit", "1MiB"],
        "(1048576 bytes, --memory-limit)",
    );
    assert_refused_at_once(
        d,
        &["bench-prove", "--circuit", "chain", "--constraints", "65536", "--memory-limit", "1MiB"],
        "--memory-limit",
    );
    let (out, _) = arenaprove(
        d,
        &[
            "params",
            "gen",
            "--circuit",
            "sector",
            "--constraints",
            "100000000",
            "--out",
            "/dev/null",
            "--memory-limit",
            "1GiB",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused: params gen") && err.contains("generating params"), "{err}");
}

/// `--constraints 0` is an error (it used to prove the smallest sector partition without
/// saying so); a valid target prints the size it chose before any work.
#[test]
fn constraints_zero_is_an_error_and_the_chosen_size_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for args in [&["prove", "--constraints", "0", "--quiet"][..], &["soak", "--constraints", "0", "--json"]] {
        let (out, took) = arenaprove(d, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(took < Duration::from_secs(10));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--constraints must be at least 1"), "{err}");
    }
    let out = arenaprove(
        d,
        &["prove", "--circuit", "chain", "--constraints", "1024", "--partitions", "1", "--quiet"],
    )
    .0;
    let stdout = stdout_ok(&out);
    let first = stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("circuit: chain partition nearest 1024 constraints: 1024 constraints"),
        "{stdout}"
    );
}
