//! The thin layer over cudarc's driver API: opening a device, loading the embedded
//! fatbins, launching kernels, async copies. Every `unsafe` block here is one driver call
//! whose preconditions are stated next to it.

use std::ffi::{c_void, CString};
use std::sync::Arc;

use cudarc::driver::{result, sys, CudaContext, CudaEvent, CudaStream};

use crate::error::{CudaError, DriverContext, Result};

mod embedded {
    #[cfg(feature = "kernels")]
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
    #[cfg(not(feature = "kernels"))]
    pub const FATBINS: &[(&str, &[u8])] = &[];
}

/// Whether this build carries compiled kernels (feature `kernels`).
pub fn kernels_built() -> bool {
    !embedded::FATBINS.is_empty()
}

/// Whether libcuda can be loaded on this host (no device is touched).
pub fn driver_present() -> bool {
    // SAFETY: `is_culib_present` only tries to dlopen libcuda and drops the handle.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// The names of the kernels the backend launches; each must be in one embedded module.
macro_rules! kernels {
    ($($name:ident),* $(,)?) => {
        /// Function handles of every kernel, resolved once at open.
        #[allow(non_snake_case)]
        pub(crate) struct Kernels { $(pub $name: sys::CUfunction,)* }
        impl Kernels {
            fn resolve(modules: &[sys::CUmodule]) -> Result<Kernels> {
                Ok(Kernels { $($name: find_function(modules, stringify!($name))?,)* })
            }
        }
    };
}

kernels!(
    fr_bitrev,
    fr_ntt_shared,
    fr_ntt_stage,
    fr_ntt_stage2,
    fr_powers_from_split,
    fr_scale_powers,
    fr_ab_minus_c_div_z,
    fr_to_canonical,
    msm_hist,
    msm_scan,
    msm_scatter,
    msm_pieces,
    msm_ones_g1,
    msm_reduce_g1,
    msm_accumulate_g1,
    msm_buckets_g1,
    msm_window_segments_g1,
    msm_window_sums_g1,
    msm_ones_g2,
    msm_reduce_g2,
    msm_accumulate_g2,
    msm_buckets_g2,
    msm_window_segments_g2,
    msm_window_sums_g2,
);

fn find_function(modules: &[sys::CUmodule], name: &'static str) -> Result<sys::CUfunction> {
    let c_name = CString::new(name).expect("kernel names have no NUL");
    for &m in modules {
        // SAFETY: `m` is a module loaded by `load_modules` and not unloaded while `Device`
        // lives; `get_function` only looks a name up.
        if let Ok(f) = unsafe { result::module::get_function(m, c_name.clone()) } {
            return Ok(f);
        }
    }
    Err(CudaError::NotPrepared(name))
}

/// A kernel argument, passed by value (device pointers travel as `u64`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arg {
    U32(u32),
    U64(u64),
}

/// Most arguments any kernel here takes.
const ARGS_MAX: usize = 8;

/// Events a pipeline can hand from the copy stream to the compute stream.
pub(crate) const COPY_EVENTS: usize = 3;

/// One opened device: its primary context, a compute stream, a copy stream (host-to-device
/// uploads that overlap compute, ordered by events), the loaded kernels.
pub(crate) struct Device {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    copy: Arc<CudaStream>,
    copy_done: [CudaEvent; COPY_EVENTS],
    /// Start and stop of an operation's device time (timing-enabled events, compute stream).
    timer: [CudaEvent; 2],
    modules: Vec<sys::CUmodule>,
    pub k: Kernels,
}

/// GPUs the driver shows (0 on a driver without one). Errors as [`Device::open`] without
/// kernels or a driver.
pub fn device_count() -> Result<usize> {
    if !kernels_built() {
        return Err(CudaError::NotBuilt);
    }
    if !driver_present() {
        return Err(CudaError::NoDriver);
    }
    match result::init() {
        // A driver without a GPU (or with every GPU hidden) refuses to initialize.
        Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => return Ok(0),
        r => r.op("cuInit")?,
    }
    Ok(result::device::get_count().op("cuDeviceGetCount")? as usize)
}

impl Device {
    pub fn open(ordinal: usize) -> Result<Device> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(CudaError::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).op("cuDevicePrimaryCtxRetain")?;
        let stream = ctx.new_stream().op("cuStreamCreate")?;
        let copy = ctx.new_stream().op("cuStreamCreate")?;
        let event = || ctx.new_event(None).op("cuEventCreate");
        let copy_done = [event()?, event()?, event()?];
        let timed = || ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).op("cuEventCreate");
        let timer = [timed()?, timed()?];
        let mut modules = Vec::with_capacity(embedded::FATBINS.len());
        for (_, image) in embedded::FATBINS {
            // The driver reads the fatbin header as 8-byte words: copy into aligned storage.
            let mut aligned = vec![0u64; image.len().div_ceil(8)];
            // SAFETY: `aligned` holds at least `image.len()` bytes; the ranges are disjoint.
            unsafe {
                std::ptr::copy_nonoverlapping(image.as_ptr(), aligned.as_mut_ptr().cast::<u8>(), image.len())
            };
            // SAFETY: the context is bound to this thread (CudaContext::new binds it) and
            // `aligned` is a complete fatbin produced by nvcc; the driver copies it.
            let m = unsafe { result::module::load_data(aligned.as_ptr().cast()) }.op("cuModuleLoadData")?;
            modules.push(m);
        }
        let k = Kernels::resolve(&modules)?;
        Ok(Device { ctx, stream, copy, copy_done, timer, modules, k })
    }

    /// Makes this device's context current on the calling thread.
    pub fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().op("cuCtxSetCurrent")
    }

    /// Launches `f` on the compute stream with a 1- or 2-D grid.
    pub fn launch(
        &self,
        f: sys::CUfunction,
        grid: (u32, u32),
        block: u32,
        smem_bytes: u32,
        args: &[Arg],
    ) -> Result<()> {
        assert!(args.len() <= ARGS_MAX, "a kernel here takes at most {ARGS_MAX} arguments");
        if grid.0 == 0 || grid.1 == 0 {
            return Ok(());
        }
        let mut vals = [Arg::U32(0); ARGS_MAX];
        vals[..args.len()].copy_from_slice(args);
        let mut ptrs = [std::ptr::null_mut::<c_void>(); ARGS_MAX];
        for (p, v) in ptrs.iter_mut().zip(vals.iter_mut()) {
            *p = match v {
                Arg::U32(x) => (x as *mut u32).cast(),
                Arg::U64(x) => (x as *mut u64).cast(),
            };
        }
        // SAFETY: `f` comes from a module this device keeps loaded; `ptrs[..len]` point at
        // values whose sizes match the kernel's parameters (u32 for uint32_t, u64 for
        // pointers and size_t: the kernels' signatures are mirrored by each caller), and
        // the driver copies them before returning. Device pointers in the arguments are
        // inside the device arena, which outlives the stream's work (callers synchronize
        // before the arena can go).
        unsafe {
            result::launch_kernel(
                f,
                (grid.0, grid.1, 1),
                (block, 1, 1),
                smem_bytes,
                self.stream.cu_stream(),
                &mut ptrs[..args.len()],
            )
        }
        .op("cuLaunchKernel")
    }

    /// Copies `src` to device address `dst` on the compute stream, then waits for it.
    ///
    /// # Safety
    /// `dst .. dst + size_of_val(src)` must be device memory owned by the caller.
    pub unsafe fn upload<T>(&self, dst: sys::CUdeviceptr, src: &[T]) -> Result<()> {
        // SAFETY: the caller owns the device range; `src` stays borrowed until the
        // synchronize below, so the async copy never reads freed host memory.
        unsafe { result::memcpy_htod_async(dst, src, self.stream.cu_stream()) }.op("cuMemcpyHtoDAsync")?;
        self.sync()
    }

    /// Enqueues a copy of `src` to device address `dst` without waiting.
    ///
    /// # Safety
    /// As [`Device::upload`], and `src` must stay alive and unchanged until the stream
    /// is synchronized.
    pub unsafe fn upload_async<T>(&self, dst: sys::CUdeviceptr, src: &[T]) -> Result<()> {
        // SAFETY: forwarded to the caller (see # Safety).
        unsafe { result::memcpy_htod_async(dst, src, self.stream.cu_stream()) }.op("cuMemcpyHtoDAsync")
    }

    /// Enqueues a copy of `src` to `dst` on the copy stream and makes the compute stream's
    /// later work wait for it (event `slot`), so the copy overlaps compute enqueued before.
    ///
    /// # Safety
    /// As [`Device::upload_async`].
    pub unsafe fn upload_overlapped<T>(&self, slot: usize, dst: sys::CUdeviceptr, src: &[T]) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { result::memcpy_htod_async(dst, src, self.copy.cu_stream()) }.op("cuMemcpyHtoDAsync")?;
        self.copy_done[slot].record(&self.copy).op("cuEventRecord")
    }

    /// Makes the compute stream wait for the upload recorded in event `slot`.
    pub fn wait_upload(&self, slot: usize) -> Result<()> {
        self.stream.wait(&self.copy_done[slot]).op("cuStreamWaitEvent")
    }

    /// Copies device address `src` into `dst` after the stream's earlier work, and waits.
    ///
    /// # Safety
    /// `src .. src + size_of_val(dst)` must be device memory owned by the caller, and
    /// every bit pattern must be a valid `T`.
    pub unsafe fn download<T>(&self, dst: &mut [T], src: sys::CUdeviceptr) -> Result<()> {
        // SAFETY: `dst` stays mutably borrowed until the synchronize below.
        unsafe { result::memcpy_dtoh_async(dst, src, self.stream.cu_stream()) }.op("cuMemcpyDtoHAsync")?;
        self.sync()
    }

    /// Copies `len_bytes` from device address `src` to `dst` on the compute stream.
    ///
    /// # Safety
    /// Both ranges must be device memory owned by the caller and must not overlap.
    pub unsafe fn copy_d2d(
        &self,
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        len_bytes: usize,
    ) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { result::memcpy_dtod_async(dst, src, len_bytes, self.stream.cu_stream()) }
            .op("cuMemcpyDtoDAsync")
    }

    /// Zeroes `len_bytes` at device address `dst` on the stream.
    ///
    /// # Safety
    /// The range must be device memory owned by the caller.
    pub unsafe fn zero(&self, dst: sys::CUdeviceptr, len_bytes: usize) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { result::memset_d8_async(dst, 0, len_bytes, self.stream.cu_stream()) }.op("cuMemsetD8Async")
    }

    pub fn sync(&self) -> Result<()> {
        self.stream.synchronize().op("cuStreamSynchronize")
    }

    /// Marks the start of an operation's device time on the compute stream (enqueue it
    /// before the operation's first copy or kernel).
    pub fn timer_start(&self) -> Result<()> {
        self.timer[0].record(&self.stream).op("cuEventRecord")
    }

    /// Marks the end of an operation's device time (after its last kernel).
    pub fn timer_stop(&self) -> Result<()> {
        self.timer[1].record(&self.stream).op("cuEventRecord")
    }

    /// Device time between the last `timer_start` and `timer_stop` (waits for the stop).
    pub fn timer_elapsed(&self) -> Result<std::time::Duration> {
        self.timer[1].synchronize().op("cuEventSynchronize")?;
        let ms = self.timer[0].elapsed_ms(&self.timer[1]).op("cuEventElapsedTime")?;
        Ok(std::time::Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        for &m in &self.modules {
            // SAFETY: each module was loaded once by `open`; no kernel of it is running
            // (all work is synchronized before returning to the caller) and the handles
            // in `k` die with `self`.
            let _ = unsafe { result::module::unload(m) };
        }
    }
}
