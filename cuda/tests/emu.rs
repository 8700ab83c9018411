//! Kernels compiled as host C++ against `emu/cuda_emu.hpp` and run on the CPU: no GPU and
//! no nvcc needed, so CI checks them on every run. The GPU tests (tests/gpu.rs) run the same
//! kernels on a device against blst and the CPU engine.
//!
//! - `emu/sort_check.cpp` runs the MSM's sort kernels (`kernels/msm_sort.cu`): the global
//!   sort (counts, scan, scatter) and the shared-histogram sort (signed and unsigned
//!   digits), then the pieces and their order, over random, 0/1-heavy, sparse-listed and
//!   skewed scalars, plain and fixed-base windows; it rebuilds every scalar from the sorted
//!   buckets and checks the pieces.
//! - `emu/ntt_check.cpp` runs the NTT kernels (`kernels/ntt.cu`) over a small NTT-friendly
//!   field (`emu/small_fr.hpp`, standing in for Fr through `emu/ntt_common.cuh`): every
//!   pass kernel (radix 2, 4, 8, and 8 with the twiddles read ahead), DIT and DIF, both
//!   directions, and the kernels before the passes, from 2^1 to 2^16, against a textbook
//!   transform.
//!
//! Needs a C++20 compiler: `$CXX`, else `c++`.

use std::path::Path;
use std::process::Command;

/// The kernel source with each `extern __shared__ T name[];` (the dynamic shared array,
/// which host C++ cannot declare that way) as `EMU_DYNAMIC_SHARED(T, name);`.
fn rewrite_dynamic_shared(src: &str) -> String {
    const DECL: &str = "extern __shared__ ";
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while let Some(at) = rest.find(DECL) {
        out.push_str(&rest[..at]);
        let after = &rest[at + DECL.len()..];
        let end = after.find("[];").expect("an extern __shared__ declaration ends in `[];`");
        let (ty, name) = after[..end].trim().rsplit_once(' ').expect("`type name`");
        out.push_str(&format!("EMU_DYNAMIC_SHARED({ty}, {name});"));
        rest = &after[end + 3..];
    }
    out.push_str(rest);
    out
}

#[test]
fn rewrite_turns_each_dynamic_shared_array_into_the_emulators() {
    let src = "a\n    extern __shared__ uint32_t hist[];\nb extern __shared__ unsigned int x[]; c";
    assert_eq!(
        rewrite_dynamic_shared(src),
        "a\n    EMU_DYNAMIC_SHARED(uint32_t, hist);\nb EMU_DYNAMIC_SHARED(unsigned int, x); c"
    );
}

/// Compiles `emu/CHECK.cpp` with the kernel file `kernels/KERNEL` (rewritten as
/// [`rewrite_dynamic_shared`] does) copied into a temporary directory, beside `extra`
/// files (`(name there, file in emu/)`), and passed as the macro `DEFINE`; runs it and
/// returns the number of cases it passed, after asserting that none failed and that at
/// least `min_cases` ran.
fn run_check(check: &str, kernel: &str, define: &str, extra: &[(&str, &str)], min_cases: usize) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(root.join("kernels").join(kernel)).expect("read the kernel source");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let unit = dir.path().join(kernel);
    std::fs::write(&unit, rewrite_dynamic_shared(&src)).expect("write the rewritten kernels");
    for (name, file) in extra {
        std::fs::copy(root.join("emu").join(file), dir.path().join(name)).expect("copy an emulator header");
    }
    let exe = dir.path().join(check);
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let built = Command::new(&cxx)
        .args(["-std=c++20", "-O2", "-pthread", "-Wall", "-Wno-unknown-pragmas"])
        .arg(format!("-I{}", root.join("emu").display()))
        .arg(format!("-I{}", root.join("kernels").display()))
        .arg(format!("-D{define}=\"{}\"", unit.display()))
        .arg(root.join("emu").join(format!("{check}.cpp")))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("run the C++ compiler {cxx:?} (set CXX to another): {e}"));
    assert!(
        built.status.success(),
        "{cxx} could not build emu/{check}.cpp:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = Command::new(&exe).output().expect("run the check");
    let stdout = String::from_utf8_lossy(&ran.stdout);
    println!("{stdout}");
    let last = stdout.lines().last().unwrap_or("");
    assert!(ran.status.success() && last.ends_with(" passed, 0 failed"), "{check} failed:\n{stdout}");
    let passed: usize = last.split(' ').next().and_then(|n| n.parse().ok()).expect("a count of passed cases");
    assert!(passed >= min_cases, "every case ran: {last}");
    passed
}

#[test]
fn sort_kernels_on_the_cpu_rebuild_every_scalar() {
    run_check("sort_check", "msm_sort.cu", "EMU_SORT_SOURCE", &[], 18);
}

#[test]
fn ntt_kernels_on_the_cpu_equal_a_textbook_transform() {
    // ntt.cu includes "common.cuh" from its own directory: there, the emulator's.
    run_check("ntt_check", "ntt.cu", "EMU_NTT_SOURCE", &[("common.cuh", "ntt_common.cuh")], 404);
}
