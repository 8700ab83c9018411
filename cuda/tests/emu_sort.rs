//! The MSM's sort kernels (`kernels/msm_sort.cu`) compiled as host C++ against
//! `emu/cuda_emu.hpp` and run on the CPU: no GPU and no nvcc needed, so CI checks them on
//! every run. `emu/sort_check.cpp` runs the global sort (counts, scan, scatter) and the
//! shared-histogram sort (signed and unsigned digits), then the
//! pieces and their order, over random, 0/1-heavy, sparse-listed and skewed scalars, plain
//! and fixed-base windows; it rebuilds every scalar from the sorted buckets and checks the
//! pieces. The GPU tests (tests/gpu.rs) run the same kernels on a device against blst.
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

#[test]
fn sort_kernels_on_the_cpu_rebuild_every_scalar() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(root.join("kernels/msm_sort.cu")).expect("read msm_sort.cu");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let unit = dir.path().join("msm_sort_emu.cu");
    std::fs::write(&unit, rewrite_dynamic_shared(&src)).expect("write the rewritten kernels");
    let exe = dir.path().join("sort_check");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let built = Command::new(&cxx)
        .args(["-std=c++20", "-O2", "-pthread", "-Wall", "-Wno-unknown-pragmas"])
        .arg(format!("-I{}", root.join("emu").display()))
        .arg(format!("-I{}", root.join("kernels").display()))
        .arg(format!("-DEMU_SORT_SOURCE=\"{}\"", unit.display()))
        .arg(root.join("emu/sort_check.cpp"))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("run the C++ compiler {cxx:?} (set CXX to another): {e}"));
    assert!(
        built.status.success(),
        "{cxx} could not build emu/sort_check.cpp:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = Command::new(&exe).output().expect("run sort_check");
    let stdout = String::from_utf8_lossy(&ran.stdout);
    println!("{stdout}");
    let last = stdout.lines().last().unwrap_or("");
    assert!(ran.status.success() && last.ends_with(" passed, 0 failed"), "sort_check failed:\n{stdout}");
    let passed: usize = last.split(' ').next().and_then(|n| n.parse().ok()).expect("a count of passed cases");
    assert!(passed >= 18, "every case ran: {last}");
}
