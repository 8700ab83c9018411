//! Page-locking host memory for the GPU (`cuMemHostRegister`), once per region: the
//! arena's regions are registered at engine start through [`CudaRegionHook`] and
//! unregistered at shutdown, never per proof (registering 12 GiB takes ~651 ms on the
//! H200 machine, ANCHORS.md). Copies from registered memory run at ~55 GB/s there
//! against ~7.5 GB/s from pageable memory.

use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arenaprove_arena::RegionHook;
use cudarc::driver::{sys, CudaContext};

use crate::error::{CudaError, DriverContext, Result};
use crate::gpu::Gpu;

/// Registers `len_bytes` at `base` with the driver (portable: visible to every context).
///
/// # Safety
/// The range must be mapped host memory that stays mapped until it is unregistered.
unsafe fn register(ctx: &CudaContext, base: NonNull<u8>, len_bytes: usize) -> Result<()> {
    ctx.bind_to_thread().op("cuCtxSetCurrent")?;
    // SAFETY: the caller keeps the range mapped until `unregister`; the driver only pins
    // and maps its pages.
    unsafe { sys::cuMemHostRegister_v2(base.as_ptr().cast(), len_bytes, sys::CU_MEMHOSTREGISTER_PORTABLE) }
        .result()
        .map_err(|source| CudaError::Register { addr: base.as_ptr() as usize, len_bytes, source })
}

/// # Safety
/// `base` must have been registered by [`register`] and not unregistered since.
unsafe fn unregister(ctx: &CudaContext, base: NonNull<u8>) -> Result<()> {
    ctx.bind_to_thread().op("cuCtxSetCurrent")?;
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuMemHostUnregister(base.as_ptr().cast()) }.result().op("cuMemHostUnregister")
}

/// A host range registered with the driver; unregistered on drop.
pub struct HostRegistration {
    ctx: Arc<CudaContext>,
    base: NonNull<u8>,
    len_bytes: usize,
}

// SAFETY: the registration is a token for a driver-side pinning; it is not a reference
// to the memory, and unregistering from any thread (with the context bound) is allowed.
unsafe impl Send for HostRegistration {}
// SAFETY: as Send: a shared reference only reads the length; nothing reaches the memory.
unsafe impl Sync for HostRegistration {}

impl HostRegistration {
    pub fn len_bytes(&self) -> usize {
        self.len_bytes
    }
}

impl Drop for HostRegistration {
    fn drop(&mut self) {
        // SAFETY: registered in `Gpu::register_host`, unregistered only here. Errors are
        // ignored: a Drop never panics, and the pinning ends with the process anyway.
        let _ = unsafe { unregister(&self.ctx, self.base) };
    }
}

impl Gpu {
    /// Page-locks `len_bytes` at `base` for fast copies to this GPU.
    ///
    /// # Safety
    /// The range must be mapped host memory that stays mapped until the returned
    /// registration is dropped.
    pub unsafe fn register_host(&self, base: NonNull<u8>, len_bytes: usize) -> Result<HostRegistration> {
        // SAFETY: forwarded to the caller.
        unsafe { register(&self.dev.ctx, base, len_bytes) }?;
        Ok(HostRegistration { ctx: self.dev.ctx.clone(), base, len_bytes })
    }

    /// A [`RegionHook`] that registers arena regions with this GPU's driver context.
    pub fn region_hook(&self) -> Arc<CudaRegionHook> {
        Arc::new(CudaRegionHook {
            ctx: self.dev.ctx.clone(),
            live: Mutex::new(HashMap::new()),
            calls: AtomicU64::new(0),
        })
    }
}

/// Registers each arena region once when it is made and unregisters it when it goes,
/// counting registrations so a test can show none happen per proof.
pub struct CudaRegionHook {
    ctx: Arc<CudaContext>,
    /// Registered base address -> length.
    live: Mutex<HashMap<usize, usize>>,
    calls: AtomicU64,
}

impl CudaRegionHook {
    /// `cuMemHostRegister` calls made so far.
    pub fn registrations(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Bytes registered now.
    pub fn registered_bytes(&self) -> usize {
        self.live.lock().unwrap_or_else(|e| e.into_inner()).values().sum()
    }
}

impl RegionHook for CudaRegionHook {
    fn register(&self, name: &str, base: NonNull<u8>, len_bytes: usize) -> Result<(), String> {
        // SAFETY: the arena calls `register` after mapping the region and `unregister`
        // before unmapping it (RegionHook's contract), so the range stays mapped while
        // registered.
        unsafe { register(&self.ctx, base, len_bytes) }.map_err(|e| format!("region {name}: {e}"))?;
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.live.lock().unwrap_or_else(|e| e.into_inner()).insert(base.as_ptr() as usize, len_bytes);
        Ok(())
    }

    fn unregister(&self, name: &str, base: NonNull<u8>, _len_bytes: usize) {
        let was = self.live.lock().unwrap_or_else(|e| e.into_inner()).remove(&(base.as_ptr() as usize));
        if was.is_some() {
            // SAFETY: `base` is in `live`, so `register` succeeded for it and it was not
            // unregistered since.
            if let Err(e) = unsafe { unregister(&self.ctx, base) } {
                eprintln!("arenaprove-cuda: unregistering region {name}: {e}");
            }
        }
    }
}
