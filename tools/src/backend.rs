//! The GPU backend's factory for the CLI and the daemon: the CUDA backend on named GPUs
//! (an error when one does not open: the daemon's choice), or on every visible one, or the
//! CPU backend (said once on stderr) where the binary or the host has none (the CLI's
//! `--backend gpu`).

use std::sync::Arc;
use std::time::Duration;

use arenaprove::engine::groth16::{
    CpuFixedBase, CpuSubgroupCheck, FixedBaseProducts, FixedBaseSource, FixedBaseTables, Groth16Error,
    SubgroupCheck, SubgroupCheckSource,
};
use arenaprove::engine::pipeline::WorkTag;
use arenaprove::engine::{BackendFactory, CpuBackend};

/// What one GPU is doing and has done, for status reports (a copy of the GPU backend's
/// report, so the daemon builds without the `cuda` feature too).
#[derive(Clone, Debug)]
pub struct GpuActivity {
    pub ordinal: u32,
    pub name: String,
    /// An operation (a partition's h stage, one MSM) holds the GPU now.
    pub busy: bool,
    /// The partition that operation works for (engine job id, kind, stage).
    pub working_for: Option<WorkTag>,
    /// Operations finished.
    pub operations: u64,
    /// Time held, the operation in flight included.
    pub busy_time: Duration,
}

/// Reads each GPU's activity (never waits for a device); `None` once the engine's backend
/// is gone.
pub type ActivityQuery = Arc<dyn Fn() -> Option<Vec<GpuActivity>> + Send + Sync>;
/// Reads each GPU's (free, total) device memory (waits for each one's operation in flight);
/// `None` once the engine's backend is gone.
pub type MemQuery = Arc<dyn Fn() -> Option<Vec<Option<(u64, u64)>>> + Send + Sync>;

/// The GPUs an engine proves on, for status reports. Holds the factory weakly, so the
/// device arenas go with the engine.
#[derive(Clone)]
pub struct GpusInfo {
    /// GPUs the engine's backend drives.
    pub count: usize,
    pub activity: ActivityQuery,
    pub mem: MemQuery,
}

/// Why GPUs do not open.
#[derive(Debug, thiserror::Error)]
pub enum GpuOpenError {
    #[error("this binary was built without the `cuda` feature")]
    NotBuilt,
    /// The driver's or the backend's reason (no driver, no such device, a driver call).
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Cuda(#[from] arenaprove::cuda::CudaError),
}

impl GpuOpenError {
    /// Whether it says there is no GPU to open at all (no `cuda` build, no kernels, no
    /// driver, no device), rather than a GPU that failed to open.
    pub fn no_gpu(&self) -> bool {
        match self {
            GpuOpenError::NotBuilt => true,
            #[cfg(feature = "cuda")]
            GpuOpenError::Cuda(e) => e.is_no_gpu(),
        }
    }
}

/// The GPU backend on GPUs `ordinals` (empty: every GPU the driver shows) and their
/// description, or why they do not open (the caller decides whether the CPU may stand
/// in: the daemon only with `gpus.fallback = "cpu"`, or when no GPU was named). With
/// `device_memory`, each GPU stays within that many bytes
/// (`CudaFactory::with_device_memory`).
#[cfg(feature = "cuda")]
pub fn open_gpus(
    ordinals: &[u32],
    device_memory: Option<usize>,
) -> Result<(Arc<dyn BackendFactory>, GpusInfo), GpuOpenError> {
    use arenaprove::cuda::CudaFactory;
    let factory = if ordinals.is_empty() {
        CudaFactory::open_all()?
    } else {
        CudaFactory::open_many(&ordinals.iter().map(|&o| o as usize).collect::<Vec<_>>())?
    };
    let factory = Arc::new(factory.with_device_memory(device_memory));
    tracing::info!(gpus = %factory.describe(), device_memory = ?device_memory, "GPU backend");
    let count = factory.ordinals().len();
    let weak = Arc::downgrade(&factory);
    let activity = move || {
        let f = weak.upgrade()?;
        Some(
            f.activity()
                .into_iter()
                .map(|a| GpuActivity {
                    ordinal: a.ordinal as u32,
                    name: a.name,
                    busy: a.busy,
                    working_for: a.working_for,
                    operations: a.operations,
                    busy_time: a.busy_time,
                })
                .collect(),
        )
    };
    let weak = Arc::downgrade(&factory);
    let mem = move || {
        let f = weak.upgrade()?;
        Some(
            f.mem_info_each()
                .into_iter()
                .map(|m| m.map(|(free, total)| (free as u64, total as u64)))
                .collect(),
        )
    };
    let info = GpusInfo { count, activity: Arc::new(activity), mem: Arc::new(mem) };
    let factory: Arc<dyn BackendFactory> = factory;
    Ok((factory, info))
}

#[cfg(not(feature = "cuda"))]
pub fn open_gpus(
    _ordinals: &[u32],
    _device_memory: Option<usize>,
) -> Result<(Arc<dyn BackendFactory>, GpusInfo), GpuOpenError> {
    Err(GpuOpenError::NotBuilt)
}

/// The CUDA backend on every GPU the driver shows (`CUDA_VISIBLE_DEVICES` picks them), or
/// the CPU backend, said once on stderr, where there is none.
#[cfg(feature = "cuda")]
pub fn all_gpus_factory() -> Arc<dyn BackendFactory> {
    match arenaprove::cuda::CudaFactory::open_all() {
        Ok(f) => {
            let budget = crate::common::device_memory();
            match budget {
                Some(b) => eprintln!(
                    "backend: GPU, {}, device memory budget {:.2} GiB",
                    f.describe(),
                    b as f64 / (1u64 << 30) as f64
                ),
                None => eprintln!("backend: GPU, {}", f.describe()),
            }
            Arc::new(f.with_device_memory(budget))
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

/// Who runs the subgroup half of a checked parameter load (`params verify --backend`): the
/// CPU, or GPU 0 (the CPU, said once on stderr, where there is none).
pub fn subgroup_check(choice: crate::common::BackendChoice) -> Box<dyn SubgroupCheck> {
    match choice {
        crate::common::BackendChoice::Cpu => Box::new(CpuSubgroupCheck),
        crate::common::BackendChoice::Gpu => gpu_subgroup_check(0),
    }
}

/// What a Filecoin load with `checked` hands its subgroup tests to (`LoadOptions`): GPU
/// `gpu`'s, opened for each load (the CPU's, said on stderr, where it does not open); with
/// no GPU, `None`: blst tests every point during the decode.
pub fn subgroup_check_source(gpu: Option<usize>) -> Option<SubgroupCheckSource> {
    let ordinal = gpu?;
    Some(Arc::new(move || gpu_subgroup_check(ordinal)))
}

/// Who makes a generated parameters file's points (`filecoin params --backend`, and the
/// commands that generate absent parameters with their `--backend`): `None` for the CPU;
/// with `gpu`, GPU 0's fixed-base products (the CPU's, said on stderr, where it does not
/// open).
pub fn fixed_base_source(choice: crate::common::BackendChoice) -> Option<FixedBaseSource> {
    match choice {
        crate::common::BackendChoice::Cpu => None,
        crate::common::BackendChoice::Gpu => Some(Arc::new(gpu_fixed_base)),
    }
}

#[cfg(feature = "cuda")]
mod sampled {
    use std::time::Instant;

    use arenaprove::engine::deps::blst::{blst_p1_affine, blst_p2_affine};
    use arenaprove::engine::deps::blstrs::Scalar;
    use arenaprove::engine::groth16::{CpuFixedBase, FixedBaseProducts, Groth16Error};

    /// Points of the first G1 call the CPU also makes, as the same-run baseline of the GPU's
    /// fixed-base products.
    const FIXED_BASE_CPU_SAMPLE: usize = 1 << 18;

    /// A backend's fixed-base products that, on the first G1 call, also makes the first
    /// [`FIXED_BASE_CPU_SAMPLE`] points with the CPU's: the baseline's rate in the same run
    /// (printed with the ratio), and a check at full size that both make the same points.
    pub(super) struct SampledAgainstCpu {
        pub(super) inner: Box<dyn FixedBaseProducts>,
        pub(super) cpu: Option<CpuFixedBase>,
    }

    impl FixedBaseProducts for SampledAgainstCpu {
        fn name(&self) -> String {
            self.inner.name()
        }
        fn chunk_points(&self) -> usize {
            self.inner.chunk_points()
        }
        fn g1(&mut self, scalars: &[Scalar], out: &mut [blst_p1_affine]) -> Result<(), Groth16Error> {
            let t = Instant::now();
            self.inner.g1(scalars, out)?;
            let ours = t.elapsed().as_secs_f64();
            let Some(mut cpu) = self.cpu.take() else { return Ok(()) };
            let n = FIXED_BASE_CPU_SAMPLE.min(scalars.len());
            let mut want = vec![blst_p1_affine::default(); n];
            let t = Instant::now();
            cpu.g1(&scalars[..n], &mut want)?;
            let base = t.elapsed().as_secs_f64();
            if let Some(i) = (0..n).find(|&i| want[i] != out[i]) {
                return Err(Groth16Error::Backend {
                    backend: "cuda",
                    source: format!("the GPU's fixed-base product {i} differs from the CPU's").into(),
                });
            }
            let rate = |points: usize, s: f64| points as f64 / s.max(1e-9) / 1e6;
            let (gpu_rate, cpu_rate) = (rate(scalars.len(), ours), rate(n, base));
            eprintln!(
                "params: baseline, same run: the CPU's products (every core) made the first {n} G1 points in {base:.2} s \
                 ({cpu_rate:.2} M/s), the same as {}'s; {} made {} in {ours:.2} s ({gpu_rate:.2} M/s, copies \
                 included): {:.1}x",
                self.inner.name(),
                self.inner.name(),
                scalars.len(),
                gpu_rate / cpu_rate
            );
            Ok(())
        }
        fn g2(&mut self, scalars: &[Scalar], out: &mut [blst_p2_affine]) -> Result<(), Groth16Error> {
            self.inner.g2(scalars, out)
        }
    }
}

#[cfg(feature = "cuda")]
fn gpu_fixed_base(tables: &FixedBaseTables) -> Result<Box<dyn FixedBaseProducts>, Groth16Error> {
    match arenaprove::cuda::GpuFixedBase::open(0, tables) {
        Ok(g) => Ok(Box::new(sampled::SampledAgainstCpu {
            inner: Box::new(g),
            cpu: Some(CpuFixedBase::new(tables)),
        })),
        Err(e) => {
            eprintln!("params: GPU 0 does not open ({e}); making the points on the CPU");
            tracing::warn!(reason = %e, "fixed-base products on the CPU: the GPU does not open");
            Ok(Box::new(CpuFixedBase::new(tables)))
        }
    }
}

#[cfg(not(feature = "cuda"))]
fn gpu_fixed_base(tables: &FixedBaseTables) -> Result<Box<dyn FixedBaseProducts>, Groth16Error> {
    eprintln!("params: built without the `cuda` feature; making the points on the CPU");
    Ok(Box::new(CpuFixedBase::new(tables)))
}

#[cfg(feature = "cuda")]
fn gpu_subgroup_check(ordinal: usize) -> Box<dyn SubgroupCheck> {
    match arenaprove::cuda::GpuSubgroupCheck::open(ordinal) {
        Ok(c) => Box::new(c),
        Err(e) => {
            eprintln!("subgroup check: GPU {ordinal} does not open ({e}); checking on the CPU");
            tracing::warn!(ordinal, reason = %e, "subgroup check on the CPU: the GPU does not open");
            Box::new(CpuSubgroupCheck)
        }
    }
}

#[cfg(not(feature = "cuda"))]
fn gpu_subgroup_check(_ordinal: usize) -> Box<dyn SubgroupCheck> {
    eprintln!("subgroup check: built without the `cuda` feature; checking on the CPU");
    Box::new(CpuSubgroupCheck)
}
