//! [`DeviceArena`]: one device allocation per GPU, made once, sub-allocated forever after.
//!
//! Layout: `[ persistent | scratch ]`. Persistent spans (NTT twiddles, resident bases) are
//! carved from the bottom and live as long as the arena; each operation lays its buffers
//! out in the scratch above them with a [`Bump`], and the next operation reuses the same
//! bytes. So after start-up nothing is allocated or freed on the device; the arena counts
//! its driver allocations (always 1) and the scratch high-water mark so a test can say so.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cudarc::driver::{result, sys, CudaContext};

use crate::error::{CudaError, DriverContext, Result};

/// Alignment of every span (the driver's own allocation granule for coalesced access).
pub const SPAN_ALIGN_BYTES: usize = 256;

static NEXT_ARENA_ID: AtomicU64 = AtomicU64::new(1);

/// A span of the arena: `len_bytes` at `ptr` (device address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevSpan {
    pub ptr: sys::CUdeviceptr,
    pub len_bytes: usize,
}

impl DevSpan {
    /// The span's start, as a kernel's pointer argument.
    pub(crate) fn dev_ptr(&self) -> DevPtr {
        DevPtr(self.ptr)
    }

    /// The address `offset_bytes` into the span (`offset_bytes < len_bytes`).
    pub(crate) fn at(&self, offset_bytes: usize) -> DevPtr {
        assert!(
            offset_bytes < self.len_bytes,
            "offset {offset_bytes} inside a span of {} bytes",
            self.len_bytes
        );
        DevPtr(self.ptr + offset_bytes as u64)
    }
}

/// A device address passed to a kernel's pointer parameter (`T*` in the .cu source). Made
/// only from a [`DevSpan`] of an arena (or [`DevPtr::NULL`]), so a kernel argument cannot
/// be a count or a host address by mistake: the typed launch wrappers (`kernels.rs`) take
/// `DevPtr` where the kernel takes a pointer, `usize` for `size_t`, `u32` for `uint32_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct DevPtr(sys::CUdeviceptr);

const _: () = assert!(std::mem::size_of::<DevPtr>() == 8, "a device pointer parameter is 8 bytes");

impl DevPtr {
    /// `nullptr`, for a kernel that reads "absent" from it.
    pub const NULL: DevPtr = DevPtr(0);

    /// The raw address, for the driver's copy calls.
    pub fn addr(self) -> sys::CUdeviceptr {
        self.0
    }
}

/// Sizes of the arena, for the memory plan and for tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArenaStats {
    pub reserved_bytes: usize,
    pub persistent_bytes: usize,
    /// Largest scratch any operation has used so far.
    pub scratch_high_bytes: usize,
    /// `cuMemAlloc` calls made by this arena (1 once reserved, never more).
    pub device_allocs: u64,
}

/// One reservation of device memory, sub-allocated.
pub struct DeviceArena {
    ctx: Arc<CudaContext>,
    base: sys::CUdeviceptr,
    reserved_bytes: usize,
    persistent_bytes: usize,
    scratch_high_bytes: usize,
    id: u64,
    /// Counts scratch layouts ([`DeviceArena::scratch`]), so a handle into the scratch
    /// ([`crate::DeviceH`]) is refused once a later operation may have overwritten it.
    scratch_epoch: std::cell::Cell<u64>,
}

impl std::fmt::Debug for DeviceArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceArena").field("id", &self.id).field("stats", &self.stats()).finish()
    }
}

impl DeviceArena {
    /// Reserves `bytes` of device memory on `ctx`'s device (one `cuMemAlloc`).
    pub(crate) fn reserve(ctx: &Arc<CudaContext>, bytes: usize) -> Result<DeviceArena> {
        if bytes == 0 {
            return Err(CudaError::Limit { what: "device arena bytes", value: 0, limit: usize::MAX });
        }
        ctx.bind_to_thread().op("cuCtxSetCurrent")?;
        let reserved_bytes = bytes.next_multiple_of(SPAN_ALIGN_BYTES);
        // SAFETY: the context is current on this thread; the pointer is freed once, in Drop.
        let base = unsafe { result::malloc_sync(reserved_bytes) }.op("cuMemAlloc")?;
        Ok(DeviceArena {
            ctx: ctx.clone(),
            base,
            reserved_bytes,
            persistent_bytes: 0,
            scratch_high_bytes: 0,
            scratch_epoch: std::cell::Cell::new(0),
            id: NEXT_ARENA_ID.fetch_add(1, Ordering::Relaxed),
        })
    }

    pub fn stats(&self) -> ArenaStats {
        ArenaStats {
            reserved_bytes: self.reserved_bytes,
            persistent_bytes: self.persistent_bytes,
            scratch_high_bytes: self.scratch_high_bytes,
            device_allocs: 1,
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Carves `len_bytes` for the arena's lifetime.
    pub(crate) fn carve_persistent(&mut self, what: &'static str, len_bytes: usize) -> Result<DevSpan> {
        let mut b = self.scratch();
        let span = b.take(what, len_bytes)?;
        self.persistent_bytes = b.used_bytes();
        Ok(span)
    }

    /// The current scratch epoch: how many scratch layouts have been handed out.
    pub(crate) fn scratch_epoch(&self) -> u64 {
        self.scratch_epoch.get()
    }

    /// A bump allocator over the scratch part (a new scratch epoch); call
    /// [`DeviceArena::note_scratch`] after.
    pub(crate) fn scratch(&self) -> Bump {
        self.scratch_epoch.set(self.scratch_epoch.get() + 1);
        Bump {
            base: self.base,
            cursor_bytes: self.persistent_bytes,
            end_bytes: self.reserved_bytes,
            start_bytes: self.persistent_bytes,
        }
    }

    /// Records the scratch an operation used (for [`ArenaStats::scratch_high_bytes`]).
    pub(crate) fn note_scratch(&mut self, b: &Bump) {
        self.scratch_high_bytes = self.scratch_high_bytes.max(b.cursor_bytes - b.start_bytes);
    }
}

impl Drop for DeviceArena {
    fn drop(&mut self) {
        // Errors are dropped: a Drop never panics, and a failed free only leaks device
        // memory that the context's destruction returns anyway.
        let _ = self.ctx.bind_to_thread();
        let _ = self.ctx.synchronize();
        // SAFETY: `base` came from cuMemAlloc in `reserve` and is freed exactly once; the
        // context's work is synchronized above, so no kernel still reads it.
        let _ = unsafe { result::free_sync(self.base) };
    }
}

/// Lays an operation's buffers out in the scratch part of the arena. A clone continues
/// from the same point (a streamed MSM lays each chunk out afresh above its buffers).
#[derive(Clone, Debug)]
pub(crate) struct Bump {
    base: sys::CUdeviceptr,
    cursor_bytes: usize,
    end_bytes: usize,
    start_bytes: usize,
}

impl Bump {
    /// A layout with no memory behind it: sizes an operation's scratch for the memory
    /// plan by running its real layout code.
    pub fn dry() -> Bump {
        Bump { base: 0, cursor_bytes: 0, end_bytes: usize::MAX, start_bytes: 0 }
    }

    /// The next `len_bytes` (aligned to [`SPAN_ALIGN_BYTES`]), or a typed error naming
    /// `what` when the arena is too small.
    pub fn take(&mut self, what: &'static str, len_bytes: usize) -> Result<DevSpan> {
        let need = len_bytes.max(1).next_multiple_of(SPAN_ALIGN_BYTES);
        let free = self.end_bytes - self.cursor_bytes;
        if need > free {
            return Err(CudaError::ArenaTooSmall {
                what,
                need_bytes: need,
                free_bytes: free,
                reserved_bytes: self.end_bytes,
            });
        }
        let span = DevSpan { ptr: self.base + self.cursor_bytes as u64, len_bytes };
        self.cursor_bytes += need;
        Ok(span)
    }

    pub fn used_bytes(&self) -> usize {
        self.cursor_bytes
    }

    /// The bytes a layout may still take.
    pub fn free_bytes(&self) -> usize {
        self.end_bytes - self.cursor_bytes
    }

    /// This layout ending at `ptr` (where a span that must outlive it starts): a request
    /// past it fails as a request past the arena's end does.
    pub fn ending_at(mut self, ptr: sys::CUdeviceptr) -> Bump {
        let end = usize::try_from(ptr.saturating_sub(self.base)).unwrap_or(usize::MAX);
        self.end_bytes = self.end_bytes.min(end.max(self.cursor_bytes));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bump(persistent_bytes: usize, reserved_bytes: usize) -> Bump {
        Bump {
            base: 0x1000_0000,
            cursor_bytes: persistent_bytes,
            end_bytes: reserved_bytes,
            start_bytes: persistent_bytes,
        }
    }

    #[test]
    fn spans_are_aligned_disjoint_and_above_the_persistent_part() {
        let mut b = bump(512, 4096);
        let x = b.take("x", 1).unwrap();
        let y = b.take("y", 300).unwrap();
        let z = b.take("z", 0).unwrap();
        assert_eq!(x.ptr, 0x1000_0000 + 512);
        assert_eq!(y.ptr, x.ptr + SPAN_ALIGN_BYTES as u64);
        assert_eq!(z.ptr, y.ptr + 2 * SPAN_ALIGN_BYTES as u64);
        assert_eq!((x.len_bytes, y.len_bytes, z.len_bytes), (1, 300, 0));
        for s in [x, y, z] {
            assert_eq!(s.ptr % SPAN_ALIGN_BYTES as u64, 0);
        }
        assert_eq!(b.used_bytes(), 512 + 4 * SPAN_ALIGN_BYTES);
    }

    #[test]
    fn a_request_past_the_end_names_itself_and_takes_nothing() {
        let mut b = bump(0, 1024);
        b.take("first", 700).unwrap();
        match b.take("msm: buckets", 300) {
            Err(CudaError::ArenaTooSmall { what, need_bytes, free_bytes, reserved_bytes }) => {
                assert_eq!((what, need_bytes, free_bytes, reserved_bytes), ("msm: buckets", 512, 256, 1024));
            }
            other => panic!("expected ArenaTooSmall, got {other:?}"),
        }
        assert_eq!(b.used_bytes(), 768, "a refused request leaves the cursor");
        b.take("fits", 256).unwrap();
    }

    #[test]
    fn a_layout_ending_at_a_span_stays_below_it() {
        let kept = bump(0, 4096);
        let top = {
            let mut t = kept.clone();
            t.take("below", 1024).unwrap();
            t.take("kept", 512).unwrap()
        };
        let mut capped = kept.ending_at(top.ptr);
        capped.take("fits", 1024).unwrap();
        assert!(matches!(capped.take("one more", 1), Err(CudaError::ArenaTooSmall { free_bytes: 0, .. })));
        // A cap above the arena's end leaves the end as it was.
        let mut wide = bump(0, 4096).ending_at(u64::MAX);
        wide.take("whole", 4096).unwrap();
        assert!(wide.take("past", 1).is_err());
    }
}
