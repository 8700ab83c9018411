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
        // As supraseal-c2's build: blst's host Montgomery calls are the ADX ones where the
        // build host has ADX (blst itself was built so).
        #[cfg(target_arch = "x86_64")]
        if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64")
            && std::is_x86_feature_detected!("adx")
        {
            nvcc.define("__ADX__", None);
        }
        // cc passes nvcc -G (unoptimized device code) when the profile has debug info.
        nvcc.debug(false);
        nvcc.file("cuda/sppark_msm.cu").compile("sppark_msm");
    }
}
