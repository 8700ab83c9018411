//! [`SlabPool`]: a fixed number of equal slabs carved out of one [`Region`] at construction,
//! lent out as [`Lease`] guards and handed back in O(1) when the guard drops.
//!
//! The free list is a bitmap held inside the pool (see `freemap`): `try_lease` clears the
//! lowest set bit with a CAS, handback is one wait-free `fetch_or`. A blocking
//! [`SlabPool::lease`] waits on a condition variable only when the pool is empty; handback
//! touches that mutex only when someone is waiting.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::freemap::FreeMap;
use crate::{ArenaError, Ledger, Region, RegionConfig, RegionHook, SLAB_ALIGN_BYTES};

/// Limit on slabs per pool (indices are u32; far above any real partition plan).
pub const SLAB_COUNT_MAX: usize = 1 << 20;

/// What a pool is made of.
#[derive(Clone, Debug)]
pub struct SlabPoolConfig {
    /// Names the pool in errors and in the ledger (`"abc"`, `"aux"`, ...).
    pub name: String,
    /// Usable bytes per slab; each slab starts on a `SLAB_ALIGN_BYTES` boundary.
    pub slab_bytes: usize,
    pub slab_count: usize,
    pub region: RegionConfig,
}

impl SlabPoolConfig {
    pub fn new(name: impl Into<String>, slab_bytes: usize, slab_count: usize) -> Self {
        SlabPoolConfig { name: name.into(), slab_bytes, slab_count, region: RegionConfig::default() }
    }
    pub fn with_region(mut self, region: RegionConfig) -> Self {
        self.region = region;
        self
    }
    /// Bytes between slab starts.
    pub fn stride_bytes(&self) -> usize {
        self.slab_bytes.next_multiple_of(SLAB_ALIGN_BYTES)
    }
    /// Bytes the pool's region reserves (before rounding to 2 MiB): the slabs, then the
    /// free map.
    pub fn region_bytes(&self) -> Option<usize> {
        self.stride_bytes().checked_mul(self.slab_count)?.checked_add(FreeMap::bytes_for(self.slab_count))
    }
}

/// A fixed set of equal slabs. Build it with [`SlabPool::new`]; share it as `Arc<SlabPool>`.
pub struct SlabPool {
    name: String,
    slab_bytes: usize,
    stride_bytes: usize,
    slab_count: usize,
    /// Lives in `region` (after the last slab): declared first so it is dropped first.
    free: FreeMap,
    waiters: AtomicUsize,
    wait_lock: Mutex<()>,
    wait_cv: Condvar,
    ledger: Arc<Ledger>,
    region: Region,
}

impl std::fmt::Debug for SlabPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlabPool")
            .field("name", &self.name)
            .field("slab_bytes", &self.slab_bytes)
            .field("slab_count", &self.slab_count)
            .field("free", &self.free.count())
            .finish()
    }
}

impl SlabPool {
    /// Reserves the pool's region (charged to `ledger`) and carves `slab_count` slabs.
    pub fn new(
        cfg: SlabPoolConfig,
        ledger: &Arc<Ledger>,
        hook: Option<Arc<dyn RegionHook>>,
    ) -> Result<Arc<SlabPool>, ArenaError> {
        let bad = |reason: &str| ArenaError::Config { what: cfg.name.clone(), reason: reason.into() };
        if cfg.slab_bytes == 0 {
            return Err(bad("slab_bytes is 0"));
        }
        if cfg.slab_count == 0 || cfg.slab_count > SLAB_COUNT_MAX {
            return Err(bad(&format!("slab_count {} not in 1..={SLAB_COUNT_MAX}", cfg.slab_count)));
        }
        let region_bytes = cfg.region_bytes().ok_or_else(|| bad("slab_bytes * slab_count overflows"))?;
        // An explicit hook wins; otherwise the region config's (how an engine's config
        // reaches every pool it builds).
        let hook = hook.or_else(|| cfg.region.hook.as_ref().map(|h| h.0.clone()));
        let region = Region::new(&cfg.name, region_bytes, &cfg.region, ledger, hook)?;
        let map_at = cfg.stride_bytes() * cfg.slab_count;
        // SAFETY: the region spans region_bytes() = map_at + bytes_for(slab_count); map_at is a
        // multiple of SLAB_ALIGN_BYTES (so 8-aligned); no slab reaches past map_at; the
        // region is dropped after the map (field order of SlabPool).
        let free = unsafe {
            FreeMap::new_full_in(cfg.slab_count, NonNull::new_unchecked(region.base().as_ptr().add(map_at)))
        };
        Ok(Arc::new(SlabPool {
            name: cfg.name.clone(),
            slab_bytes: cfg.slab_bytes,
            stride_bytes: cfg.stride_bytes(),
            slab_count: cfg.slab_count,
            free,
            waiters: AtomicUsize::new(0),
            wait_lock: Mutex::new(()),
            wait_cv: Condvar::new(),
            ledger: ledger.clone(),
            region,
        }))
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn slab_bytes(&self) -> usize {
        self.slab_bytes
    }
    pub fn slab_count(&self) -> usize {
        self.slab_count
    }
    /// Slabs free right now (a snapshot).
    pub fn free_count(&self) -> usize {
        self.free.count()
    }
    /// Slabs leased right now (a snapshot).
    pub fn outstanding(&self) -> usize {
        self.slab_count - self.free.count()
    }
    pub fn region(&self) -> &Region {
        &self.region
    }
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }

    fn check_size(&self, bytes: usize) -> Result<(), ArenaError> {
        if bytes > self.slab_bytes {
            return Err(ArenaError::LeaseTooLarge {
                pool: self.name.clone(),
                requested_bytes: bytes,
                slab_bytes: self.slab_bytes,
            });
        }
        Ok(())
    }

    fn make_lease(self: &Arc<Self>, index: u32, bytes: usize) -> Lease {
        debug_assert!((index as usize) < self.slab_count);
        self.ledger.on_lease(bytes);
        Lease { pool: self.clone(), index, len_bytes: bytes }
    }

    /// Leases a slab for `bytes` (at most `slab_bytes`) if one is free now.
    pub fn try_lease(self: &Arc<Self>, bytes: usize) -> Result<Lease, ArenaError> {
        self.check_size(bytes)?;
        match self.free.take() {
            Some(i) => Ok(self.make_lease(i, bytes)),
            None => Err(ArenaError::Exhausted { pool: self.name.clone(), slab_count: self.slab_count }),
        }
    }

    /// Leases a slab, waiting up to `timeout` for one to come back.
    pub fn lease(self: &Arc<Self>, bytes: usize, timeout: Duration) -> Result<Lease, ArenaError> {
        self.check_size(bytes)?;
        if let Some(i) = self.free.take() {
            return Ok(self.make_lease(i, bytes));
        }
        let deadline = Instant::now() + timeout;
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.wait_lock.lock().unwrap_or_else(|p| p.into_inner());
        let result = loop {
            if let Some(i) = self.free.take() {
                break Ok(i);
            }
            let now = Instant::now();
            if now >= deadline {
                break Err(ArenaError::LeaseTimeout {
                    pool: self.name.clone(),
                    slab_count: self.slab_count,
                    timeout,
                });
            }
            // Bounded wait: a handback between our pop and this wait is caught next round.
            let step = (deadline - now).min(Duration::from_millis(10));
            guard = self.wait_cv.wait_timeout(guard, step).unwrap_or_else(|p| p.into_inner()).0;
        };
        drop(guard);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        result.map(|i| self.make_lease(i, bytes))
    }

    fn slab_ptr(&self, index: u32) -> NonNull<u8> {
        assert!((index as usize) < self.slab_count, "slab index out of range");
        // SAFETY: index < slab_count, so index * stride + slab_bytes <= region length.
        unsafe { NonNull::new_unchecked(self.region.base().as_ptr().add(index as usize * self.stride_bytes)) }
    }

    fn hand_back(&self, index: u32, len_bytes: usize) {
        let t0 = Instant::now();
        #[cfg(feature = "verify")]
        {
            // SAFETY: the lease for `index` is being dropped; nobody else holds this slab.
            unsafe { std::ptr::write_bytes(self.slab_ptr(index).as_ptr(), 0xA5, self.slab_bytes) };
        }
        if self.free.put(index).is_err() {
            // Pair assertion: a slab can come back only once per lease.
            panic!("pool '{}': slab {index} handed back twice", self.name);
        }
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let _g = self.wait_lock.lock().unwrap_or_else(|p| p.into_inner());
            self.wait_cv.notify_one();
        }
        self.ledger.on_handback(len_bytes, t0.elapsed().as_nanos() as u64);
    }
}

/// A pool that still had slabs out when shutdown checked it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutstandingSlabs {
    pub pool: String,
    pub slabs_out: usize,
    pub slab_count: usize,
}

impl std::fmt::Display for OutstandingSlabs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pool '{}': {} of {} slabs still leased at shutdown",
            self.pool, self.slabs_out, self.slab_count
        )
    }
}

/// What [`deinit_check`] found at shutdown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeinitReport {
    /// Pools with slabs still out (empty when every slab came back).
    pub outstanding: Vec<OutstandingSlabs>,
    /// The ledger at the time of the check.
    pub ledger: crate::LedgerSnapshot,
}

impl DeinitReport {
    /// Every slab of every pool came back and the ledger is balanced.
    pub fn is_clean(&self) -> bool {
        self.outstanding.is_empty() && self.ledger.balanced()
    }
}

impl std::fmt::Display for DeinitReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_clean() {
            return write!(f, "every slab came back ({} leases in all)", self.ledger.leases_total);
        }
        for o in &self.outstanding {
            writeln!(f, "{o}")?;
        }
        write!(
            f,
            "ledger: {} leases out, {} bytes leased, {} leased / {} handed back in all",
            self.ledger.leases_out,
            self.ledger.leased_bytes,
            self.ledger.leases_total,
            self.ledger.handbacks_total
        )
    }
}

impl SlabPool {
    /// `Err` naming this pool when some of its slabs are still leased.
    pub fn check_all_returned(&self) -> Result<(), OutstandingSlabs> {
        let slabs_out = self.outstanding();
        if slabs_out == 0 {
            return Ok(());
        }
        Err(OutstandingSlabs { pool: self.name.clone(), slabs_out, slab_count: self.slab_count })
    }
}

/// The shutdown check (TigerBeetle's `deinit` assertion, as a report): which pools still
/// have slabs out, and whether the ledger balances. Each problem is also logged at
/// `error` level; the caller decides whether to fail (tests should assert
/// [`DeinitReport::is_clean`]).
pub fn deinit_check(pools: &[&SlabPool], ledger: &Ledger) -> DeinitReport {
    let outstanding: Vec<OutstandingSlabs> =
        pools.iter().filter_map(|p| p.check_all_returned().err()).collect();
    let report = DeinitReport { outstanding, ledger: ledger.snapshot() };
    if !report.is_clean() {
        tracing::error!(report = %report, "arena: leases outstanding at shutdown");
    }
    report
}

/// A leased slab. Dropping it hands the slab back: O(1), no unmap, no free, no memset.
pub struct Lease {
    pool: Arc<SlabPool>,
    index: u32,
    len_bytes: usize,
}

// SAFETY: a Lease is the unique owner of its slab's bytes until dropped.
unsafe impl Send for Lease {}
// SAFETY: shared access only hands out `&[u8]`.
unsafe impl Sync for Lease {}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Lease({}#{}, {} bytes)", self.pool.name, self.index, self.len_bytes)
    }
}

impl Lease {
    /// The bytes asked for when leasing (at most the slab size).
    pub fn len_bytes(&self) -> usize {
        self.len_bytes
    }
    pub fn slab_index(&self) -> u32 {
        self.index
    }
    pub fn pool(&self) -> &Arc<SlabPool> {
        &self.pool
    }
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.pool.slab_ptr(self.index)
    }
    /// The slab's bytes: whatever the previous tenant (or pre-faulting) left there. Always
    /// initialized: regions are zeroed when mapped (anonymous maps, `alloc_zeroed`).
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the lease owns this slab exclusively; len_bytes <= slab_bytes.
        unsafe { std::slice::from_raw_parts(self.as_ptr().as_ptr(), self.len_bytes) }
    }
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes this the only live view.
        unsafe { std::slice::from_raw_parts_mut(self.as_ptr().as_ptr(), self.len_bytes) }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.pool.hand_back(self.index, self.len_bytes);
    }
}
