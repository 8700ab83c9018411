//! The thin layer over cudarc's driver API: opening a device (its streams, events and
//! kernels, `kernels.rs`), async copies, device timers. Every `unsafe` block here is one
//! driver call whose preconditions are stated next to it.

use std::cell::OnceCell;
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{result, sys, CudaContext, CudaEvent, CudaStream, PinnedHostSlice};
use rayon::prelude::*;

use crate::error::{CudaError, DriverContext, Result};
use crate::kernels::{kernels_built, Kernels};

/// Whether libcuda can be loaded on this host (no device is touched).
pub fn driver_present() -> bool {
    // SAFETY: `is_culib_present` only tries to dlopen libcuda and drops the handle.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Events a pipeline can hand from the copy stream to the compute stream.
pub(crate) const COPY_EVENTS: usize = 3;

/// Stage marks one operation records: one before its first stage and one after each of
/// its stages (an MSM's five: `msm::MsmStageTimes`).
pub(crate) const STAGE_MARKS: usize = 6;

/// Bytes in each of the two page-locked buffers that an upload from pageable memory passes
/// through ([`Device::upload_chunks`]): 32 MiB of pinned host memory in all, made on the
/// first such upload and kept until [`Device::release_staging`] (an engine's backend frees
/// them once its parameters' bases are up; a proof's uploads come from registered memory
/// and never make them).
pub(crate) const STAGING_BYTES: usize = 16 << 20;

/// Smaller pageable uploads go to the driver as they are (its own path costs little there,
/// and they make no staging buffers).
pub(crate) const STAGING_MIN_BYTES: usize = 1 << 20;

/// Bytes one host thread copies into a staging buffer at a time: a chunk's share of the
/// threads, within these bounds.
const STAGING_PIECE_BYTES: usize = 1 << 20;
const STAGING_PIECE_MIN_BYTES: usize = 64 << 10;

/// The two staging buffers and their addresses.
struct Staging {
    bufs: [PinnedHostSlice<u8>; 2],
    ptrs: [*mut u8; 2],
}

/// One opened device: its primary context, a compute stream, a copy stream (host-to-device
/// uploads that overlap compute, ordered by events), the loaded kernels.
pub(crate) struct Device {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    copy: Arc<CudaStream>,
    copy_done: [CudaEvent; COPY_EVENTS],
    /// The compute stream's work so far, for the copy stream to wait on.
    compute_mark: CudaEvent,
    /// Start and stop of an operation's device time (timing-enabled events, compute stream).
    timer: [CudaEvent; 2],
    /// Marks between the stages of one operation (timing-enabled, compute stream), recorded
    /// and read only when a caller asked for a stage split.
    stage_marks: [CudaEvent; STAGE_MARKS],
    /// Every kernel, launched on `stream`.
    pub k: Kernels,
    /// Whether uploads from pageable memory pass through `staging` ([`Device::upload_chunks`];
    /// on by default, off: the driver's own pageable path, for a bench's baseline).
    pub staging_on: bool,
    staging: OnceCell<Staging>,
}

/// GPUs the driver shows (0 on a driver without one). Errors as [`crate::Gpu::open`]
/// without kernels or a driver.
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
        let compute_mark = event()?;
        let timed = || ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).op("cuEventCreate");
        let timer = [timed()?, timed()?];
        let stage_marks = [timed()?, timed()?, timed()?, timed()?, timed()?, timed()?];
        let k = Kernels::load(&ctx, &stream)?;
        Ok(Device {
            ctx,
            stream,
            copy,
            copy_done,
            compute_mark,
            timer,
            stage_marks,
            k,
            staging_on: true,
            staging: OnceCell::new(),
        })
    }

    /// Makes this device's context current on the calling thread.
    pub fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().op("cuCtxSetCurrent")
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

    /// Whether `src` lies in page-locked host memory (registered with or allocated by the
    /// driver), judged by its first and last bytes: what the driver copies at full bus speed.
    pub fn is_page_locked<T>(&self, src: &[T]) -> bool {
        let len = std::mem::size_of_val(src);
        if len == 0 {
            return true;
        }
        let first = src.as_ptr() as usize;
        [first, first + len - 1].into_iter().all(|addr| {
            let mut ty = 0u32;
            // SAFETY: the driver writes one CUmemorytype (a 32-bit enum) into `ty`; any
            // address may be asked about (unknown host memory is an error, not a fault).
            let r = unsafe {
                sys::cuPointerGetAttribute(
                    (&mut ty as *mut u32).cast(),
                    sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                    addr as sys::CUdeviceptr,
                )
            };
            r.result().is_ok() && ty == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32
        })
    }

    /// Pinned host bytes the staging buffers hold (0 until the first staged upload).
    pub fn staging_bytes(&self) -> usize {
        self.staging.get().map_or(0, |s| s.bufs.iter().map(PinnedHostSlice::num_bytes).sum())
    }

    /// Frees the staging buffers (after waiting for both streams, so no copy still reads
    /// them); the next staged upload makes them again.
    pub fn release_staging(&mut self) -> Result<()> {
        if self.staging.get().is_some() {
            self.sync_all()?;
            self.staging.take();
        }
        Ok(())
    }

    /// The staging buffers, made on first use.
    fn staging(&self) -> Result<&Staging> {
        if let Some(s) = self.staging.get() {
            return Ok(s);
        }
        let alloc = || {
            // SAFETY: the memory starts uninitialized; it is only written by the host
            // (`upload_chunks`) before a copy reads it, never read as a `u8` before that.
            let mut b =
                unsafe { self.ctx.alloc_pinned_with_flags::<u8>(STAGING_BYTES, 0) }.op("cuMemHostAlloc")?;
            let p = b.as_mut_ptr().op("cuEventSynchronize")?;
            Ok::<_, CudaError>((b, p))
        };
        let ((b0, p0), (b1, p1)) = (alloc()?, alloc()?);
        Ok(self.staging.get_or_init(|| Staging { bufs: [b0, b1], ptrs: [p0, p1] }))
    }

    /// Uploads `src` to device address `dst` on the copy stream in chunks of at most
    /// `chunk` elements, after the compute stream's work enqueued so far. After each chunk
    /// the compute stream is made to wait for it and `each` gets its range, so work `each`
    /// enqueues runs as soon as that chunk has landed, under the copies of the later ones.
    ///
    /// Page-locked `src` is copied in place. Pageable `src` of at least
    /// [`STAGING_MIN_BYTES`] (with `staging_on`) passes
    /// through the two staging buffers, a chunk being at most one buffer: the host's
    /// threads copy chunk `j` into buffer `j % 2` while chunk `j - 1` is on the bus, so the
    /// upload runs at the slower of the host's copy and the bus instead of the driver's
    /// single-threaded pageable path (7.5 GB/s on the H200 machine, ANCHORS.md). With
    /// staging off, pageable `src` goes to the driver as it is.
    ///
    /// # Safety
    /// `dst .. dst + size_of_val(src)` must be device memory owned by the caller, and `src`
    /// must stay alive and unchanged until the compute stream is synchronized (or, on an
    /// error, both streams: [`Device::sync_all`]). `T` must have no padding bytes.
    pub unsafe fn upload_chunks<T: Copy + Send + Sync>(
        &self,
        dst: sys::CUdeviceptr,
        src: &[T],
        chunk: usize,
        mut each: impl FnMut(Range<usize>) -> Result<()>,
    ) -> Result<()> {
        self.copy_after_compute()?;
        let elem = std::mem::size_of::<T>().max(1);
        let staged =
            self.staging_on && std::mem::size_of_val(src) >= STAGING_MIN_BYTES && !self.is_page_locked(src);
        let staging = if staged { Some(self.staging()?) } else { None };
        let chunk = match staging {
            Some(_) => chunk.min(STAGING_BYTES / elem),
            None => chunk,
        }
        .max(1);
        for (j, lo) in (0..src.len()).step_by(chunk).enumerate() {
            let r = lo..lo.saturating_add(chunk).min(src.len());
            let at = dst + (lo * elem) as sys::CUdeviceptr;
            let slot = j % 2;
            match staging {
                Some(st) => {
                    // The copy that last read buffer `slot` (event `slot`'s latest record,
                    // this call's chunk j - 2 or an earlier, finished call's) must be done
                    // before the host overwrites it.
                    self.copy_done[slot].synchronize().op("cuEventSynchronize")?;
                    // SAFETY: the buffer holds STAGING_BYTES >= chunk * size_of::<T>()
                    // bytes, page-aligned (so aligned for `T`); no copy reads it now (waited
                    // for above) and nothing else refers to it (`&self` of a `Device` that is
                    // not `Sync`; `Gpu` runs one operation at a time). Every `T` written is a
                    // copy of a valid `T`.
                    let buf = unsafe { std::slice::from_raw_parts_mut(st.ptrs[slot].cast::<T>(), r.len()) };
                    // Every host thread takes a share of the chunk (a 2^18-scalar chunk
                    // is 8 MiB: 1 MiB pieces would leave half of 16 threads idle).
                    let share = (r.len() * elem).div_ceil(rayon::current_num_threads());
                    let piece = (share.clamp(STAGING_PIECE_MIN_BYTES, STAGING_PIECE_BYTES) / elem).max(1);
                    buf.par_chunks_mut(piece)
                        .zip(src[r.clone()].par_chunks(piece))
                        .for_each(|(d, s)| d.copy_from_slice(s));
                    // SAFETY: the caller owns the device range; the buffer is the driver's
                    // page-locked memory, refilled only after this copy's event (above).
                    unsafe { self.upload_overlapped(slot, at, &*buf) }?;
                }
                // SAFETY: forwarded to the caller.
                None => unsafe { self.upload_overlapped(slot, at, &src[r.clone()]) }?,
            }
            self.wait_upload(slot)?;
            each(r)?;
        }
        Ok(())
    }

    /// Copies `src` to `dst` as [`Device::upload_chunks`] does (through the staging buffers
    /// from pageable memory), then waits for it (for both streams on an error).
    ///
    /// # Safety
    /// `dst .. dst + size_of_val(src)` must be device memory owned by the caller; `T` must
    /// have no padding bytes.
    pub unsafe fn upload_wait<T: Copy + Send + Sync>(&self, dst: sys::CUdeviceptr, src: &[T]) -> Result<()> {
        // SAFETY: forwarded to the caller; `src` stays borrowed until the waits below.
        match unsafe { self.upload_chunks(dst, src, usize::MAX, |_| Ok(())) } {
            Ok(()) => self.sync(),
            Err(e) => {
                let _ = self.sync_all();
                Err(e)
            }
        }
    }

    /// Makes the copy stream's later copies wait for the compute stream's work enqueued so
    /// far, so that an upload overlapping compute cannot overwrite memory an earlier kernel
    /// still reads.
    pub fn copy_after_compute(&self) -> Result<()> {
        self.compute_mark.record(&self.stream).op("cuEventRecord")?;
        self.copy.wait(&self.compute_mark).op("cuStreamWaitEvent")
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

    /// Waits for both streams (the copy stream's uploads too): the way out of an operation
    /// that failed after queueing copies from host memory its caller will free.
    pub fn sync_all(&self) -> Result<()> {
        self.copy.synchronize().op("cuStreamSynchronize (copy)")?;
        self.sync()
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

    /// Records stage mark `i` (< [`STAGE_MARKS`]) after the compute stream's work so far.
    pub fn stage_mark(&self, i: usize) -> Result<()> {
        self.stage_marks[i].record(&self.stream).op("cuEventRecord")
    }

    /// Device time between consecutive stage marks, in ms: the stages' durations (waits
    /// for the last mark).
    pub fn stage_ms(&self) -> Result<[f64; STAGE_MARKS - 1]> {
        self.stage_marks[STAGE_MARKS - 1].synchronize().op("cuEventSynchronize")?;
        let mut out = [0.0; STAGE_MARKS - 1];
        for (o, w) in out.iter_mut().zip(self.stage_marks.windows(2)) {
            *o = f64::from(w[0].elapsed_ms(&w[1]).op("cuEventElapsedTime")?.max(0.0));
        }
        Ok(out)
    }
}
