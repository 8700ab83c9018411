//! Typed errors of the CUDA backend. Every error names what failed; none panics.

use cudarc::driver::DriverError;

/// Result of a CUDA backend call.
pub type Result<T, E = CudaError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    /// The crate was compiled without its `kernels` feature (no nvcc at build time).
    #[error("CUDA backend not built in (compile arenaprove-cuda with feature `kernels`)")]
    NotBuilt,
    /// No `libcuda.so` on this host: no NVIDIA driver.
    #[error("no CUDA driver on this host (libcuda not found)")]
    NoDriver,
    /// The driver is there but has no device of this ordinal.
    #[error("no CUDA device {ordinal} (the driver reports {count})")]
    NoDevice { ordinal: usize, count: usize },
    /// A list of GPUs that cannot be opened as given (empty, a GPU twice).
    #[error("GPU list: {0}")]
    Devices(String),
    /// A driver call failed.
    #[error("CUDA driver call {op} failed: {source}")]
    Driver {
        op: &'static str,
        #[source]
        source: DriverError,
    },
    /// The device arena cannot hold a request.
    #[error("device arena: {what} needs {need_bytes} bytes, {free_bytes} free of {reserved_bytes}")]
    ArenaTooSmall { what: &'static str, need_bytes: usize, free_bytes: usize, reserved_bytes: usize },
    /// An operation needs the device arena, which was not reserved.
    #[error("device arena not reserved (call Gpu::reserve_arena first)")]
    NoArena,
    /// A second reservation was asked for: the arena is reserved once.
    #[error("device arena already reserved ({reserved_bytes} bytes)")]
    ArenaReserved { reserved_bytes: usize },
    /// Slice lengths disagree with each other or with the domain.
    #[error("{what}: length {got}, expected {want}")]
    Length { what: &'static str, got: usize, want: usize },
    /// A size beyond a fixed limit of the kernels.
    #[error("{what} is {value}, the limit is {limit}")]
    Limit { what: &'static str, value: usize, limit: usize },
    /// An operation that needs a preparation step (NTT tables) that did not happen.
    #[error("{0} not prepared")]
    NotPrepared(&'static str),
    /// A handle made by another arena or GPU.
    #[error("{0} belongs to another device arena")]
    ForeignHandle(&'static str),
    /// A handle into the scratch after another operation may have overwritten it.
    #[error("{0}: the device scratch was reused since it was written")]
    StaleScratch(&'static str),
    /// A device-memory budget below what a proof of this shape needs at the least.
    #[error(
        "device memory budget of {budget_bytes} bytes ({:.2} GiB) is below the {need_bytes} bytes ({:.2} GiB) \
         these proofs need at the least ({least}); raise the budget",
        *budget_bytes as f64 / (1u64 << 30) as f64,
        *need_bytes as f64 / (1u64 << 30) as f64
    )]
    Budget { budget_bytes: usize, need_bytes: usize, least: &'static str },
    /// Host memory registration (page-locking) failed.
    #[error("cuMemHostRegister of {len_bytes} bytes at {addr:#x}: {source}")]
    Register {
        addr: usize,
        len_bytes: usize,
        #[source]
        source: DriverError,
    },
}

impl CudaError {
    /// Whether this error says that the host has no GPU to offer this build (no kernels
    /// built in, no driver, no such device) rather than that something failed: the only
    /// errors on which a GPU test may skip (tests/common) or a caller may choose the CPU.
    pub fn is_no_gpu(&self) -> bool {
        matches!(self, CudaError::NotBuilt | CudaError::NoDriver | CudaError::NoDevice { .. })
    }
}

/// Attaches the driver call's name to a [`DriverError`].
pub(crate) trait DriverContext<T> {
    fn op(self, op: &'static str) -> Result<T>;
}

impl<T> DriverContext<T> for std::result::Result<T, DriverError> {
    fn op(self, op: &'static str) -> Result<T> {
        self.map_err(|source| CudaError::Driver { op, source })
    }
}
