// supraseal-c2 links `cudart_static`; point the linker at the toolkit's libraries (the
// pinned nvcc wheels keep them in `$CUDA_HOME/lib`, which nothing else adds). The build
// script of the baselines' workspaces (baseline/, filecoin-baseline/), and part of peer-gpu's (build.rs).
#[allow(dead_code)]
pub fn main() {
    link_cudart();
}

pub fn link_cudart() {
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
    if let Some(home) = std::env::var_os("CUDA_HOME") {
        let home = std::path::PathBuf::from(home);
        for dir in ["lib", "lib64"] {
            if home.join(dir).join("libcudart_static.a").exists() {
                println!("cargo:rustc-link-search=native={}", home.join(dir).display());
                return;
            }
        }
    }
}
