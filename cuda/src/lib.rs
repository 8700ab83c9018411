//! # arenaprove-cuda
//! The GPU backend's kernels and driver layer: BLS12-381 NTTs, the Groth16 h pipeline and
//! G1/G2 MSMs on NVIDIA GPUs, a [`DeviceArena`] reserved once per GPU, and page-locked host
//! regions ([`CudaRegionHook`] for the arena's `RegionHook`).
//!
//! What it owns and its invariants:
//! - **One binary for every host.** The driver (libcuda) is loaded at run time through
//!   cudarc; kernels are compiled by `build.rs` with nvcc only when the `kernels` feature
//!   is on, embedded as fatbins (SASS sm_90 + compute_90 PTX). Without the feature, or on
//!   a host without a driver or GPU, [`Gpu::open`] returns a typed error
//!   ([`CudaError::NotBuilt`], [`CudaError::NoDriver`], [`CudaError::NoDevice`]) and
//!   nothing panics; [`backend_status`] says which in one line.
//! - **No device allocation after start.** [`Gpu::reserve_arena`] makes the one
//!   `cuMemAlloc`, sized by [`DevicePlan`]; tables and resident bases are carved from its
//!   bottom, each operation lays its scratch out above them and reuses it on the next call.
//! - **Bit-exact with the CPU engine.** Scalars and points cross the FFI edge in blst's
//!   memory layout (Montgomery limbs, R = 2^256 / 2^384, the same as sppark's field
//!   types), every kernel result is fully reduced, and the NTTs use the CPU domain's
//!   roots, so outputs are identical (tests/gpu.rs).
//! - `unsafe` is confined to driver calls, each with its `SAFETY:` reasoning.
//!
//! Sharp edges: a `Gpu` runs one operation at a time (`&mut self`); host slices passed in
//! are copied in place when they lie in a registered region, an MSM's pageable host
//! scalars and bases of 1 MiB or more through the `Gpu`'s two page-locked staging buffers
//! (`Gpu::set_host_staging`), and other pageable host slices (the h pipeline's inputs,
//! the products' vectors, small ones) by the driver's own pageable path.

mod arena;
mod aux_pack;
mod backend;
mod device;
mod error;
pub mod fault;
mod fixed_base;
mod gpu;
mod kernels;
mod msm;
mod ntt;
mod ntt_passes;
mod ntt_tables;
mod pinned;
mod plan;
mod products;
mod subgroup;

// Unit tests that need a GPU share the integration tests' helpers (and their one skip
// rule), which name this crate as `arenaprove_cuda`.
#[cfg(test)]
extern crate self as arenaprove_cuda;
#[cfg(test)]
#[path = "../tests/common/mod.rs"]
mod test_common;

pub use arena::{ArenaStats, DevSpan, DeviceArena, SPAN_ALIGN_BYTES};
pub use aux_pack::{aux_pack_bytes, AuxPack, PACK_OTHERS_ONE_IN};
pub use backend::{
    device_plan, device_plan_sized, device_plan_within, device_shape, device_terms, CudaBackend, CudaFactory,
    CudaOps, GpuActivity, GpuQuotient,
};
pub use device::{device_count, driver_present};
pub use error::{CudaError, Result};
pub use fixed_base::{fixed_base_arena_bytes, GpuFixedBase, FIXED_BASE_CHUNK_POINTS};
pub use gpu::Gpu;
pub use kernels::kernels_built;
pub use msm::{
    bucket_bits_max_for, fixed_msm_scratch_bytes, hist_overlap_chunk, msm_auto_scratch_bytes,
    msm_scratch_bytes, scalars_look_dense, streamed_scratch_bytes, BaseSet, Bases, Curve, FixedWindows,
    G1Bases, G2Bases, MsmKernels, MsmPlan, MsmStageTimes, BUCKET_BITS_MAX_DEFAULT, DENSE_SAMPLE_MIN,
    FIXED_INDEX_MAX, HIST_OVERLAP_CHUNKS, HIST_OVERLAP_CHUNK_MIN, MSM_POINTS_MAX, SCALAR_BYTES,
};
pub use ntt::{h_scratch_bytes, DeviceH, NttKernels, PASSES8_FROM_LOG};
pub use ntt_tables::{ntt_tables_bytes, omega, NTT_LOG_MAX};
pub use pinned::{CudaRegionHook, HostRegistration};
pub use plan::{DevicePlan, DeviceShape, BASE_SETS};
pub use products::{
    h_rows_scratch_bytes, products_scratch_bytes, rows_resident_bytes, witness_scratch_bytes, DeviceRows,
    DeviceWitness, WitnessMsm,
};
pub use subgroup::{subgroup_scratch_bytes, GpuSubgroupCheck, SUBGROUP_CHUNK_POINTS};

/// One line on whether the CUDA backend can run here, and why not: for the engine's
/// "uses the CPU backend" log line and for tests that skip.
pub fn backend_status(ordinal: usize) -> std::result::Result<String, CudaError> {
    let gpu = Gpu::open(ordinal)?;
    let (free, total) = gpu.mem_info()?;
    Ok(format!("CUDA device {ordinal}: {} ({} MiB free of {} MiB)", gpu.name(), free >> 20, total >> 20))
}
