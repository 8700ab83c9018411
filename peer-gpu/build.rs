//! The link search of link.rs, and with our GPU backend (`ours-gpu`) sppark's own G1 MSM
//! (cuda/sppark_msm.cu), the baseline of `peer-gpu-bench --msm`.
mod link {
    include!("link.rs");
}

fn main() {
    link::link_cudart();
    println!("cargo:rerun-if-changed=cuda/sppark_msm.cu");
    if std::env::var_os("CARGO_FEATURE_OURS_GPU").is_some() {
        let mut nvcc = sppark::build::ccmd();
        nvcc.define("FEATURE_BLS12_381", None);
        // cc passes nvcc -G (unoptimized device code) when the profile has debug info.
        nvcc.debug(false);
        nvcc.file("cuda/sppark_msm.cu").compile("sppark_msm");
    }
}
