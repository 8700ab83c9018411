//! The GPU backend's factory for the CLI and the daemon: the CUDA backend on a named GPU
//! (an error when it does not open: the daemon's choice), or on every visible one, or the
//! CPU backend (said once on stderr) where the binary or the host has none (the CLI's
//! `--backend gpu`).

use std::sync::Arc;

use arenaprove::engine::{BackendFactory, CpuBackend};

/// The GPU an engine proves on, for status reports.
#[derive(Clone)]
pub struct GpuInfo {
    pub ordinal: u32,
    pub name: String,
    /// (free, total) device memory now; `None` once the engine's backend is gone. Holds
    /// the factory weakly, so the device arena goes with the engine.
    #[allow(clippy::type_complexity)]
    pub mem: Arc<dyn Fn() -> Option<(u64, u64)> + Send + Sync>,
}

/// Why a GPU does not open.
#[derive(Debug, thiserror::Error)]
pub enum GpuOpenError {
    #[error("this binary was built without the `cuda` feature")]
    NotBuilt,
    /// The driver's or the backend's reason (no driver, no such device, a driver call).
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Cuda(#[from] arenaprove::cuda::CudaError),
}

/// GPU `ordinal`'s backend and its description, or why it does not open (the caller
/// decides whether the CPU may stand in: the daemon only with `gpus.fallback = "cpu"`).
#[cfg(feature = "cuda")]
pub fn open_gpu(ordinal: u32) -> Result<(Arc<dyn BackendFactory>, GpuInfo), GpuOpenError> {
    let factory = Arc::new(arenaprove::cuda::CudaFactory::open(ordinal as usize)?);
    tracing::info!(ordinal, gpu = %factory.describe(), "GPU backend");
    let weak = Arc::downgrade(&factory);
    let mem =
        move || weak.upgrade().and_then(|f| f.mem_info()).map(|(free, total)| (free as u64, total as u64));
    let info = GpuInfo { ordinal, name: factory.name(), mem: Arc::new(mem) };
    let factory: Arc<dyn BackendFactory> = factory;
    Ok((factory, info))
}

#[cfg(not(feature = "cuda"))]
pub fn open_gpu(_ordinal: u32) -> Result<(Arc<dyn BackendFactory>, GpuInfo), GpuOpenError> {
    Err(GpuOpenError::NotBuilt)
}

/// The CUDA backend on every GPU the driver shows (`CUDA_VISIBLE_DEVICES` picks them), or
/// the CPU backend, said once on stderr, where there is none.
#[cfg(feature = "cuda")]
pub fn all_gpus_factory() -> Arc<dyn BackendFactory> {
    match arenaprove::cuda::CudaFactory::open_all() {
        Ok(f) => {
            eprintln!("backend: GPU, {}", f.describe());
            Arc::new(f)
        }
        Err(e) => {
            eprintln!("backend: no GPU ({e}); using the CPU backend");
            Arc::new(CpuBackend)
        }
    }
}

#[cfg(not(feature = "cuda"))]
pub fn all_gpus_factory() -> Arc<dyn BackendFactory> {
    eprintln!("backend: built without the `cuda` feature; using the CPU backend");
    Arc::new(CpuBackend)
}
