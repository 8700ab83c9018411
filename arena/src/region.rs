//! [`Region`]: one large anonymous mapping, reserved once at start-up.
//!
//! A region is 2 MiB aligned, advised `MADV_HUGEPAGE`, pre-faulted in parallel (one write
//! per 4 KiB page) so that no page fault happens on the hot path, and optionally `mlock`ed.
//! Under Miri (or with [`Backing::Heap`]) it is an aligned heap allocation instead, so the
//! slab logic can be checked by Miri without system calls.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::{ArenaError, Ledger, HUGE_PAGE_BYTES};

/// Page size used for pre-faulting (the smallest page the kernel may hand out).
const PAGE_BYTES: usize = 4096;

/// Lets a backend (the CUDA driver) register a region once at start and unregister it at
/// shutdown, e.g. `cuMemHostRegister` so host-to-device copies run at full PCIe speed.
/// Anchor (ANCHORS.md): registering 12 GiB takes ~651 ms, so it is done once, never per proof.
pub trait RegionHook: Send + Sync {
    /// Called once after the region is mapped and pre-faulted.
    fn register(&self, name: &str, base: NonNull<u8>, len_bytes: usize) -> Result<(), String>;
    /// Called once before the region is unmapped. Errors are logged, never panicked.
    fn unregister(&self, name: &str, base: NonNull<u8>, len_bytes: usize);
}

/// Where a region's memory comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// Anonymous private mapping (the production path).
    Mmap,
    /// An aligned heap allocation (for Miri and tiny test pools).
    Heap,
}

/// How a region is reserved.
#[derive(Clone, Debug)]
pub struct RegionConfig {
    pub backing: Backing,
    /// `madvise(MADV_HUGEPAGE)` (mmap backing only).
    pub huge_pages: bool,
    /// Touch every page at creation, in parallel, so the hot path never faults.
    pub prefault: bool,
    /// `mlock` the region; when the limit refuses, warn once and go on unlocked.
    pub mlock: bool,
    /// Called once per region at reservation and once at unmap (the GPU backend pins
    /// here). Carried by the config so that every pool built from it gets the hook.
    pub hook: Option<SharedHook>,
}

/// A [`RegionHook`] shared by every region a config builds.
#[derive(Clone)]
pub struct SharedHook(pub Arc<dyn RegionHook>);

impl std::fmt::Debug for SharedHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RegionHook")
    }
}

impl Default for RegionConfig {
    fn default() -> Self {
        RegionConfig {
            backing: if cfg!(miri) { Backing::Heap } else { Backing::Mmap },
            huge_pages: true,
            prefault: true,
            mlock: false,
            hook: None,
        }
    }
}

impl RegionConfig {
    /// A heap-backed, not pre-faulted region: for unit tests and Miri.
    pub fn heap() -> Self {
        RegionConfig { backing: Backing::Heap, huge_pages: false, prefault: false, mlock: false, hook: None }
    }
}

static MLOCK_WARNED: AtomicBool = AtomicBool::new(false);

enum Storage {
    Mmap(memmap2::MmapMut),
    Heap { ptr: NonNull<u8>, layout: Layout },
}

/// One reserved span of memory. Dropping it unmaps it (only ever at shutdown).
pub struct Region {
    name: String,
    storage: Storage,
    base: NonNull<u8>,
    len_bytes: usize,
    locked: bool,
    hook: Option<Arc<dyn RegionHook>>,
    ledger: Arc<Ledger>,
}

// SAFETY: a Region is a plain span of memory; the raw pointer is only dereferenced by
// owners of disjoint slabs (see `slab.rs`), which provide their own synchronization.
unsafe impl Send for Region {}
// SAFETY: as above; `&Region` only exposes the base pointer and length.
unsafe impl Sync for Region {}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("name", &self.name)
            .field("len_bytes", &self.len_bytes)
            .field("heap", &matches!(self.storage, Storage::Heap { .. }))
            .field("locked", &self.locked)
            .finish()
    }
}

impl Region {
    /// Reserves `len_bytes` (rounded up to 2 MiB) for `name`, charging the ledger first.
    pub fn new(
        name: &str,
        len_bytes: usize,
        cfg: &RegionConfig,
        ledger: &Arc<Ledger>,
        hook: Option<Arc<dyn RegionHook>>,
    ) -> Result<Region, ArenaError> {
        if len_bytes == 0 {
            return Err(ArenaError::Config { what: name.into(), reason: "a region of 0 bytes".into() });
        }
        let len_bytes = len_bytes
            .checked_next_multiple_of(HUGE_PAGE_BYTES)
            .ok_or_else(|| ArenaError::Config { what: name.into(), reason: "size overflows".into() })?;
        ledger.try_reserve_region(name, len_bytes)?;
        let made = Self::map(name, len_bytes, cfg);
        let (storage, base) = match made {
            Ok(x) => x,
            Err(e) => {
                ledger.release_region(len_bytes);
                return Err(e);
            }
        };
        let mut region = Region {
            name: name.into(),
            storage,
            base,
            len_bytes,
            locked: false,
            hook: None,
            ledger: ledger.clone(),
        };
        if cfg.prefault {
            region.prefault();
        }
        if cfg.mlock && cfg.backing == Backing::Mmap {
            region.try_mlock();
        }
        if let Some(h) = hook {
            h.register(name, base, len_bytes)
                .map_err(|reason| ArenaError::Hook { what: name.into(), reason })?;
            region.hook = Some(h);
        }
        Ok(region)
    }

    fn map(name: &str, len_bytes: usize, cfg: &RegionConfig) -> Result<(Storage, NonNull<u8>), ArenaError> {
        match cfg.backing {
            Backing::Heap => {
                let layout = Layout::from_size_align(len_bytes, HUGE_PAGE_BYTES)
                    .map_err(|e| ArenaError::Config { what: name.into(), reason: e.to_string() })?;
                // Zeroed, like an anonymous mapping: slab bytes are always initialized, so
                // `Lease::bytes` and `SlabVec::extend_stale` never expose uninitialized memory.
                // SAFETY: layout has non-zero size (checked in `new`).
                let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
                let ptr = NonNull::new(ptr).ok_or_else(|| ArenaError::Map {
                    what: name.into(),
                    bytes: len_bytes,
                    reason: "heap allocation failed".into(),
                })?;
                Ok((Storage::Heap { ptr, layout }, ptr))
            }
            Backing::Mmap => {
                // Over-map by one huge page so the base can be 2 MiB aligned.
                let map_bytes = len_bytes + HUGE_PAGE_BYTES;
                let mut mmap = memmap2::MmapOptions::new().len(map_bytes).map_anon().map_err(|e| {
                    ArenaError::Map { what: name.into(), bytes: len_bytes, reason: e.to_string() }
                })?;
                let raw = mmap.as_mut_ptr();
                let offset = raw.align_offset(HUGE_PAGE_BYTES);
                debug_assert!(offset < HUGE_PAGE_BYTES);
                // SAFETY: offset < HUGE_PAGE_BYTES, so base..base+len_bytes lies inside the map.
                let base = unsafe { raw.add(offset) };
                if cfg.huge_pages {
                    #[cfg(target_os = "linux")]
                    if let Err(e) = mmap.advise_range(memmap2::Advice::HugePage, offset, len_bytes) {
                        tracing::debug!(region = name, error = %e, "MADV_HUGEPAGE refused; using 4 KiB pages");
                    }
                }
                Ok((Storage::Mmap(mmap), NonNull::new(base).expect("mmap base is non-null")))
            }
        }
    }

    /// Writes one byte per page, in parallel, so every page is resident before use.
    fn prefault(&mut self) {
        use rayon::prelude::*;
        let base = self.base.as_ptr() as usize;
        let pages = self.len_bytes / PAGE_BYTES;
        // Chunks of 2 MiB keep rayon's overhead negligible next to the faults themselves.
        let pages_per_chunk = HUGE_PAGE_BYTES / PAGE_BYTES;
        (0..pages.div_ceil(pages_per_chunk)).into_par_iter().for_each(|chunk| {
            let first = chunk * pages_per_chunk;
            let last = (first + pages_per_chunk).min(pages);
            for page in first..last {
                // SAFETY: page < pages, so the byte lies inside the region; no lease exists
                // yet (the region is being built), so nothing else reads or writes it.
                unsafe { std::ptr::write_volatile((base + page * PAGE_BYTES) as *mut u8, 0) };
            }
        });
    }

    fn try_mlock(&mut self) {
        if let Storage::Mmap(m) = &self.storage {
            match m.lock() {
                Ok(()) => self.locked = true,
                Err(e) => {
                    if !MLOCK_WARNED.swap(true, Ordering::Relaxed) {
                        tracing::warn!(region = %self.name, error = %e,
                            "mlock refused (raise RLIMIT_MEMLOCK to lock); continuing unlocked");
                    }
                }
            }
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }
    pub fn len_bytes(&self) -> usize {
        self.len_bytes
    }
    pub fn is_locked(&self) -> bool {
        self.locked
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if let Some(h) = self.hook.take() {
            h.unregister(&self.name, self.base, self.len_bytes);
        }
        if let Storage::Heap { ptr, layout } = self.storage {
            // SAFETY: allocated in `map` with exactly this layout, freed once here.
            unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
        }
        // Mmap storage unmaps itself when the field drops.
        self.ledger.release_region(self.len_bytes);
    }
}
