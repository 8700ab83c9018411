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

    /// A bump allocator over the scratch part; call [`DeviceArena::note_scratch`] after.
    pub(crate) fn scratch(&self) -> Bump {
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

/// Lays an operation's buffers out in the scratch part of the arena.
#[derive(Debug)]
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
}
