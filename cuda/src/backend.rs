//! [`CudaOps`]: the GPU's device operations for the engine's one Groth16 prover
//! ([`CudaBackend`] = `Prover<CudaOps>`), and [`CudaFactory`], the [`BackendFactory`] an
//! engine is configured with (`EngineConfig::backend`).
//!
//! The prover (in the engine) owns the algorithm, its spans and its timings; these are only
//! the heavy steps on the device, so proofs are byte-identical to the CPU's for the same r
//! and s:
//!
//! * `h_quotient`: a, b, c go to the device (from pinned regions: the factory's
//!   [`CudaRegionHook`] registered them at engine start), the h pipeline runs there, h's
//!   canonical bytes stay there; `msm_h` runs the h MSM over the resident h bases without
//!   h leaving the device (the GPU stays held between the two calls).
//! * `msm_g1` / `msm_g2`: the L, A, B_G1 and B_G2 MSMs over resident bases, on scalars the
//!   prover built on the CPU (density filtering stays there).
//!
//! What it owns: the factory opens the device once, reserves its [`DeviceArena`] once at
//! the first `build` (sized by [`DevicePlan`] for every shape the engine planned), computes
//! the NTT tables and uploads each parameter set's bases once. After that no device memory
//! is allocated and no host memory registered per proof ([`CudaFactory::arena_stats`],
//! [`CudaRegionHook::registrations`]).
//!
//! Sharp edges: each `Gpu` serves every kind built by one factory, one operation at a time
//! (a mutex): the engine's prover and finalizer threads take turns on the devices. Each
//! MSM is one lock hold, so the finalizer's CPU filtering overlaps the next partition's h.
//! With several GPUs every operation takes the first free one (a partition's h stage and
//! its MSMs may run on different GPUs: only the h sum, a host value, passes between them;
//! the four witness MSMs run on one, which holds the aux they share),
//! and each GPU holds its own arena, tables and copy of the bases.
//!
//! [`DeviceArena`]: crate::DeviceArena

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use arenaprove_arena::SharedHook;
use arenaprove_circuits::Precompiled;
use arenaprove_engine::deps::blstrs::{G1Projective, G2Projective, Scalar};
use arenaprove_engine::groth16::domain::Domain;
use arenaprove_engine::groth16::ops::same_len;
use arenaprove_engine::groth16::{
    G1Query, G2Query, Groth16Error, Parameters, ProofShape, Prover, ProverMemory, ProverOps, ScalarBytes,
    WitnessScalars,
};
use arenaprove_engine::pipeline::{current_work, PlanTerm, Scope, WorkTag};
use arenaprove_engine::{Backend, BackendFactory};

use crate::arena::ArenaStats;
use crate::aux_pack::{aux_pack_bytes, AuxPack};
use crate::error::CudaError;
use crate::gpu::Gpu;
use crate::msm::{BaseSet, Curve, G1Bases, G2Bases};
use crate::ntt::DeviceH;
use crate::pinned::{CudaRegionHook, HostRegistration};
use crate::plan::{DevicePlan, DeviceShape, BASE_SETS};
use crate::products::{DeviceRows, DeviceWitness, WitnessMsm};

type Result<T, E = Groth16Error> = std::result::Result<T, E>;

/// Packed-aux buffers per GPU for a kind proving from its recording: its prover thread
/// (the h stage) and its finalizer (the witness MSMs) each pack before taking a GPU.
const AUX_PACKS_PER_GPU: usize = 2;

pub(crate) fn backend_err(e: CudaError) -> Groth16Error {
    Groth16Error::Backend { backend: "cuda", source: Box::new(e) }
}

/// The device memory one parameter set of `shape` needs: NTT tables for its domain, its
/// five base sets resident (H, L, A, B_G1 in G1; B_G2 in G2), the kind's recording when a,
/// b, c are computed on the device from it, and the largest operation's scratch (the h
/// pipeline, from a, b, c or from the recording; an MSM over the longest base set; a
/// witness MSM with its staged aux).
pub fn device_plan(shape: &ProofShape, rows: Option<&Precompiled>) -> DevicePlan {
    device_plan_sized(shape, rows.map(rows_bytes))
}

/// A recording's bytes when resident ([`crate::rows_resident_bytes`]).
fn rows_bytes(pc: &Precompiled) -> usize {
    crate::products::rows_resident_bytes(&pc.row_stream())
}

/// [`device_plan`] with the resident recording given by its size (`rows_bytes`, e.g. an
/// estimate from the recording file's size, for `arenaprove plan` before one exists).
pub fn device_plan_sized(shape: &ProofShape, rows_bytes: Option<usize>) -> DevicePlan {
    DevicePlan::for_proofs(&device_shape(shape, rows_bytes), [true; 5], 0, true)
}

/// [`device_plan_sized`] within a device-memory budget ([`DevicePlan::within_budget`]:
/// base sets that do not fit stream from page-locked host memory; a, b, c from the host
/// when the recording does not fit either), or why no plan fits.
pub fn device_plan_within(
    shape: &ProofShape,
    rows_bytes: Option<usize>,
    budget_bytes: Option<usize>,
) -> std::result::Result<DevicePlan, CudaError> {
    DevicePlan::within_budget(&device_shape(shape, rows_bytes), budget_bytes)
}

/// The device's view of a proof shape: the h domain, the five base sets' lengths (H has
/// `domain - 1` points), the witness sizes and the recording's resident bytes.
pub fn device_shape(shape: &ProofShape, rows_bytes: Option<usize>) -> DeviceShape {
    let domain = shape.domain_size.max(2);
    DeviceShape {
        domain_log: domain.trailing_zeros(),
        lens: [domain - 1, shape.aux, shape.a_points, shape.b_points, shape.b_points],
        inputs: shape.inputs,
        aux: shape.aux,
        rows_bytes,
    }
}

/// The arena for several shapes on one device: the largest NTT tables (they serve every
/// smaller domain), every shape's bases, and the largest scratch (operations run one at
/// a time).
fn arena_bytes(plans: &[DevicePlan]) -> usize {
    let tables = plans.iter().map(|p| p.ntt_tables_bytes).max().unwrap_or(0);
    let bases: usize =
        plans.iter().map(|p| p.g1_bases_bytes + p.g2_bases_bytes + p.rows_bytes + p.h_copies_bytes).sum();
    let scratch = plans.iter().map(DevicePlan::scratch_bytes).max().unwrap_or(0);
    tables + bases + scratch
}

/// The plans a kind of `shape` is planned beside: those noted before its own first plan
/// (other shapes only). Every later plan of the kind sees the same ones, so planning it
/// again (the engine plans once per candidate slot count) gives the same plan, which
/// `note_planned` then holds once.
fn planned_before(planned: &[(ProofShape, DevicePlan)], shape: &ProofShape) -> Vec<DevicePlan> {
    let first = planned.iter().position(|(s, _)| s == shape).unwrap_or(planned.len());
    planned[..first].iter().map(|(_, p)| *p).collect()
}

/// The device terms of a plan, for the engine's memory plan.
pub fn device_terms(ordinal: usize, plan: &DevicePlan) -> Vec<PlanTerm> {
    let term = |what: String, bytes: usize| PlanTerm {
        pool: "device",
        what: format!("cuda:{ordinal} {what}"),
        slab_bytes: bytes,
        count: 1,
        scope: Scope::Device,
    };
    let sets = |g2: bool, resident: bool| -> Vec<&str> {
        BASE_SETS
            .iter()
            .zip(plan.resident)
            .filter(|((_, c), r)| (*c == crate::msm::Curve::G2) == g2 && *r == resident)
            .map(|((name, _), _)| *name)
            .collect()
    };
    let named = |g2: bool| match sets(g2, true) {
        v if v.is_empty() => "none".to_string(),
        v => v.join(", "),
    };
    let mut terms = vec![
        term("NTT tables (persistent)".into(), plan.ntt_tables_bytes),
        term(format!("G1 bases resident: {}", named(false)), plan.g1_bases_bytes),
        term(format!("G2 bases resident: {}", named(true)), plan.g2_bases_bytes),
    ];
    if let Some(f) = plan.h_fixed {
        terms.push(term(
            format!(
                "H fixed-base windows: {} copies of its bases, {}-bit windows in {} sets of buckets \
                 (the budget's room; persistent)",
                f.copies,
                f.c,
                f.sets()
            ),
            plan.h_copies_bytes,
        ));
    }
    if plan.rows_bytes > 0 {
        terms.push(term(
            "precompiled rows: stream, blocks, row offsets, coefficients (resident)".into(),
            plan.rows_bytes,
        ));
    }
    terms.push(term(
        format!(
            "scratch: max(h pipeline {} MiB, h from rows {} MiB, MSM {} MiB, witness MSM {} MiB)",
            plan.h_scratch_bytes >> 20,
            plan.h_rows_scratch_bytes >> 20,
            plan.msm_scratch_bytes >> 20,
            plan.witness_scratch_bytes >> 20,
        ),
        plan.scratch_bytes(),
    ));
    if plan.streamed_bytes > 0 {
        let mut streamed = sets(false, false);
        streamed.extend(sets(true, false));
        // Not device memory: what crosses the bus per proof, from the params' host pages.
        terms.push(PlanTerm {
            pool: "device",
            what: format!(
                "cuda:{ordinal} streamed per proof from page-locked host params ({}; chunks of 2^{} points), \
                 within a {:.2} GiB budget: host bytes already counted, not device memory",
                streamed.join(", "),
                plan.chunk_points.trailing_zeros(),
                plan.budget_bytes.unwrap_or(0) as f64 / (1u64 << 30) as f64,
            ),
            slab_bytes: 0,
            count: 1,
            scope: Scope::Device,
        });
    }
    terms
}

/// One GPU of a factory: its ordinal and the device, one operation at a time, and what it
/// has done.
struct Slot {
    ordinal: usize,
    name: String,
    gpu: Mutex<Gpu>,
    /// Kept apart from `gpu` so that a status query never waits for the device.
    activity: Mutex<Activity>,
}

/// A GPU's operations so far and the one in flight.
#[derive(Debug, Default)]
struct Activity {
    /// The partition the operation in flight works for, and since when.
    current: Option<(Option<WorkTag>, Instant)>,
    operations: u64,
    busy: Duration,
}

/// What one GPU of a [`CudaFactory`] is doing and has done ([`CudaFactory::activity`]).
#[derive(Clone, Debug)]
pub struct GpuActivity {
    pub ordinal: usize,
    /// The device's name, e.g. `"NVIDIA H200"`.
    pub name: String,
    /// Whether an operation (a partition's h stage, one MSM) holds the GPU now.
    pub busy: bool,
    /// The partition that operation works for, when the engine's pipeline runs it.
    pub working_for: Option<WorkTag>,
    /// Operations finished.
    pub operations: u64,
    /// Time the GPU was held, the operation in flight included.
    pub busy_time: Duration,
}

/// A GPU held for one operation: its slot records the operation (and the partition it
/// works for) from the moment it is taken until the guard drops.
struct Held<'a> {
    slot: &'a Slot,
    gpu: MutexGuard<'a, Gpu>,
}

impl<'a> Held<'a> {
    fn new(slot: &'a Slot, gpu: MutexGuard<'a, Gpu>) -> Held<'a> {
        lock_any(&slot.activity).current = Some((current_work(), Instant::now()));
        Held { slot, gpu }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut a = lock_any(&self.slot.activity);
        if let Some((_, since)) = a.current.take() {
            a.operations += 1;
            a.busy += since.elapsed();
        }
    }
}

impl std::ops::Deref for Held<'_> {
    type Target = Gpu;
    fn deref(&self) -> &Gpu {
        &self.gpu
    }
}

impl std::ops::DerefMut for Held<'_> {
    fn deref_mut(&mut self) -> &mut Gpu {
        &mut self.gpu
    }
}

/// Opens one or more GPUs for an engine and makes a [`CudaBackend`] per circuit kind on
/// them. With several GPUs each device operation (a partition's h stage, one MSM) runs on
/// whichever GPU is free, and the engine runs one prover thread per GPU
/// ([`BackendFactory::prover_workers`]).
pub struct CudaFactory {
    gpus: Arc<[Slot]>,
    /// Page-locks the engine's regions once, for every GPU (`CU_MEMHOSTREGISTER_PORTABLE`).
    hook: Arc<CudaRegionHook>,
    /// Shapes the engine planned (`plan_terms`) with their device plans, so each GPU's one
    /// arena holds them all.
    planned: Mutex<Vec<(ProofShape, DevicePlan)>>,
    /// Bases already resident, per parameter set (one copy per GPU): a second `build` over
    /// the same params (fresh mode builds one prover per partition; an engine rebuilt over
    /// the same factory) shares them instead of uploading them again into the arenas,
    /// which free nothing. The `Weak` keeps the `Arc`'s allocation, so its address is
    /// never reused by another parameter set while the entry exists.
    resident: Mutex<Vec<(Weak<Parameters>, PerGpuBases)>>,
    /// Recordings already resident, per recording (one copy per GPU), as `resident`.
    resident_rows: Mutex<Vec<(Weak<Precompiled>, PerGpuRows)>>,
    /// Device memory each GPU may use (`None`: what the shapes need, every base set
    /// resident): [`CudaFactory::with_device_memory`].
    budget_bytes: Option<usize>,
}

/// One recording on each GPU of a factory, in the factory's order.
type PerGpuRows = Arc<[DeviceRows]>;

/// One parameter set's bases: resident on each GPU of a factory, or streamed from the
/// parameters' page-locked host memory.
type PerGpuBases = Arc<ParamsBases>;

impl std::fmt::Debug for CudaFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaFactory").field("ordinals", &self.ordinals()).finish()
    }
}

impl CudaFactory {
    /// Opens device `ordinal`. Errors (never panics) as [`Gpu::open`]: no kernels built
    /// in, no driver, no such device; the caller decides whether the CPU may stand in.
    pub fn open(ordinal: usize) -> std::result::Result<CudaFactory, CudaError> {
        Self::open_many(&[ordinal])
    }

    /// Opens every GPU the driver shows (`CUDA_VISIBLE_DEVICES` limits them); errors as
    /// [`CudaFactory::open`], [`CudaError::NoDevice`] when there is none.
    pub fn open_all() -> std::result::Result<CudaFactory, CudaError> {
        let count = crate::device::device_count()?;
        if count == 0 {
            return Err(CudaError::NoDevice { ordinal: 0, count });
        }
        Self::open_many(&(0..count).collect::<Vec<_>>())
    }

    /// Opens the GPUs `ordinals` (distinct, at least one).
    pub fn open_many(ordinals: &[usize]) -> std::result::Result<CudaFactory, CudaError> {
        if ordinals.is_empty() {
            return Err(CudaError::Devices("no GPU named".into()));
        }
        if let Some(d) = ordinals.iter().enumerate().find(|(i, o)| ordinals[..*i].contains(o)) {
            return Err(CudaError::Devices(format!("GPU {} named twice in {ordinals:?}", d.1)));
        }
        let mut gpus = Vec::with_capacity(ordinals.len());
        for &ordinal in ordinals {
            let gpu = Gpu::open(ordinal)?;
            let name = gpu.name().to_string();
            gpus.push(Slot { ordinal, name, gpu: Mutex::new(gpu), activity: Mutex::default() });
        }
        let hook = lock(&gpus[0].gpu).region_hook();
        Ok(CudaFactory {
            gpus: gpus.into(),
            hook,
            planned: Mutex::new(Vec::new()),
            resident: Mutex::new(Vec::new()),
            resident_rows: Mutex::new(Vec::new()),
            budget_bytes: None,
        })
    }

    /// Limits each GPU's device memory to `bytes` (`None`: no limit), as on a card smaller
    /// than the proofs' resident bases: the plan ([`DevicePlan::within_budget`]) keeps what
    /// fits resident and streams the other base sets from page-locked host memory for each
    /// MSM; when the recording does not fit either, a, b, c come from the host. Set before
    /// the engine plans (the first `plan_terms` or `build`).
    pub fn with_device_memory(mut self, bytes: Option<usize>) -> CudaFactory {
        self.budget_bytes = bytes;
        self
    }

    /// The device-memory budget per GPU, if one was set.
    pub fn device_memory(&self) -> Option<usize> {
        self.budget_bytes
    }

    /// The plan for `shape` on this factory's GPUs, or why none fits. Within a budget, the
    /// arena the GPU reserves must hold every kind planned before this one too (their
    /// resident sets and recordings; tables and scratch are shared): this kind streams what
    /// does not fit beside them.
    pub fn plan_for(
        &self,
        shape: &ProofShape,
        rows: Option<&Precompiled>,
    ) -> std::result::Result<DevicePlan, CudaError> {
        let Some(budget) = self.budget_bytes else { return Ok(device_plan(shape, rows)) };
        let others = planned_before(&lock_any(&self.planned), shape);
        let fits = |p: &DevicePlan| {
            let mut all = others.clone();
            all.push(*p);
            arena_bytes(&all) <= budget
        };
        DevicePlan::within_budget_where(&device_shape(shape, rows.map(rows_bytes)), Some(budget), fits)
    }

    /// The GPUs' ordinals, in the order given.
    pub fn ordinals(&self) -> Vec<usize> {
        self.gpus.iter().map(|s| s.ordinal).collect()
    }

    /// The hook that page-locks the engine's regions (registration counts for tests).
    pub fn hook(&self) -> &Arc<CudaRegionHook> {
        &self.hook
    }

    /// The first device's name, e.g. `"NVIDIA H200"`.
    pub fn name(&self) -> String {
        self.gpus[0].name.clone()
    }

    /// What each GPU is doing and has done, in the order of [`CudaFactory::ordinals`].
    /// Never waits for a device.
    pub fn activity(&self) -> Vec<GpuActivity> {
        self.gpus
            .iter()
            .map(|s| {
                let a = lock_any(&s.activity);
                let in_flight = a.current.as_ref().map(|(_, since)| since.elapsed());
                GpuActivity {
                    ordinal: s.ordinal,
                    name: s.name.clone(),
                    busy: a.current.is_some(),
                    working_for: a.current.as_ref().and_then(|(tag, _)| tag.clone()),
                    operations: a.operations,
                    busy_time: a.busy + in_flight.unwrap_or_default(),
                }
            })
            .collect()
    }

    /// Witness auxes the GPUs took so far, summed: (packed, whole) ([`Gpu::aux_uploads`];
    /// waits for each GPU's operation in flight).
    pub fn aux_uploads(&self) -> (u64, u64) {
        self.gpus.iter().map(|s| lock(&s.gpu).aux_uploads()).fold((0, 0), |(p, w), (a, b)| (p + a, w + b))
    }

    /// (free, total) device memory of each GPU now, in the order of
    /// [`CudaFactory::ordinals`] (waits for each GPU's operation in flight).
    pub fn mem_info_each(&self) -> Vec<Option<(usize, usize)>> {
        self.gpus.iter().map(|s| lock(&s.gpu).mem_info().ok()).collect()
    }

    /// (free, total) device memory now, summed over the GPUs (waits for the operations in
    /// flight).
    pub fn mem_info(&self) -> Option<(usize, usize)> {
        self.gpus.iter().try_fold((0, 0), |(f, t), s| {
            let (free, total) = lock(&s.gpu).mem_info().ok()?;
            Some((f + free, t + total))
        })
    }

    /// Pinned host bytes held by the GPUs' staging buffers (`Gpu::host_staging_bytes`): 0
    /// outside a `build`, which frees them once the parameters' bases are up.
    pub fn host_staging_bytes(&self) -> usize {
        self.gpus.iter().map(|s| lock(&s.gpu).host_staging_bytes()).sum()
    }

    /// The device arenas' sizes summed over the GPUs (`None` before the first `build`);
    /// `device_allocs` counts every GPU's `cuMemAlloc` calls.
    pub fn arena_stats(&self) -> Option<ArenaStats> {
        let each = self.arena_stats_each();
        let mut sum =
            ArenaStats { reserved_bytes: 0, persistent_bytes: 0, scratch_high_bytes: 0, device_allocs: 0 };
        for st in each {
            let st = st?;
            sum.reserved_bytes += st.reserved_bytes;
            sum.persistent_bytes += st.persistent_bytes;
            sum.scratch_high_bytes += st.scratch_high_bytes;
            sum.device_allocs += st.device_allocs;
        }
        Some(sum)
    }

    /// Each GPU's arena sizes, in the order of [`CudaFactory::ordinals`].
    pub fn arena_stats_each(&self) -> Vec<Option<ArenaStats>> {
        self.gpus.iter().map(|s| lock(&s.gpu).arena_stats()).collect()
    }

    /// `"NVIDIA H200 (cuda:0)"`; with several GPUs `"2 x NVIDIA H200 (cuda:0, cuda:1)"`.
    pub fn describe(&self) -> String {
        let names: Vec<String> = self.gpus.iter().map(|s| format!("cuda:{}", s.ordinal)).collect();
        match self.gpus.len() {
            1 => format!("{} ({})", self.name(), names[0]),
            n => format!("{n} x {} ({})", self.name(), names.join(", ")),
        }
    }
}

fn lock(gpu: &Mutex<Gpu>) -> MutexGuard<'_, Gpu> {
    // A panic while holding the device leaves no Rust invariant broken (every operation
    // re-lays its scratch), so a poisoned lock is still usable.
    lock_any(gpu)
}

fn lock_any<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The GPU if no operation holds it now.
fn try_lock(gpu: &Mutex<Gpu>) -> Option<MutexGuard<'_, Gpu>> {
    match gpu.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

impl BackendFactory for CudaFactory {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn plan_terms(&self, shape: &ProofShape, rows: Option<&Precompiled>, _slots: usize) -> Vec<PlanTerm> {
        // A budget no plan fits: the whole set's terms here, and `build` refuses with the
        // budget's error (the engine does not start).
        let plan = self.plan_for(shape, rows).unwrap_or_else(|_| device_plan(shape, rows));
        self.note_planned(shape, plan);
        // One prover per GPU: the device terms do not scale with the slots; each GPU holds
        // its own copy.
        let mut terms: Vec<PlanTerm> =
            self.gpus.iter().flat_map(|s| device_terms(s.ordinal, &plan)).collect();
        if rows.is_some_and(|r| self.proves_from_witness_for(shape, r)) {
            terms.push(PlanTerm {
                pool: "cuda",
                what: "cuda: packed aux for the bus (page-locked)".into(),
                slab_bytes: aux_pack_bytes(shape.aux),
                count: AUX_PACKS_PER_GPU * self.gpus.len(),
                scope: Scope::Resident,
            });
        }
        terms
    }

    /// a, b, c from a kind's recording, split vectors from the assignment: the engine
    /// plans no a, b, c slabs on the host for precompiled kinds.
    fn proves_from_witness(&self) -> bool {
        true
    }

    /// Not when a device-memory budget leaves no room for the recording: a, b, c then come
    /// from the host.
    fn proves_from_witness_for(&self, shape: &ProofShape, rows: &Precompiled) -> bool {
        self.budget_bytes.is_none() || self.plan_for(shape, Some(rows)).is_ok_and(|p| p.rows_resident())
    }

    fn region_hook(&self) -> Option<SharedHook> {
        Some(SharedHook(self.hook.clone()))
    }

    /// The NTT tables are in each GPU's arena (`DevicePlan`): no host twiddle table.
    fn host_twiddles(&self) -> bool {
        false
    }

    fn prover_workers(&self) -> usize {
        self.gpus.len()
    }

    /// One finalizer per GPU: with two GPUs and one finalizer, chain 2^20 waited on the
    /// finalizer (0.2115 s per partition against 0.1346 with two, BENCHMARKS.md). With
    /// one GPU a second finalizer only queued on the device (sha +4.6%, within noise).
    fn finalize_workers(&self) -> usize {
        self.gpus.len()
    }

    fn build(
        &self,
        params: Arc<Parameters>,
        rows: Option<Arc<Precompiled>>,
        memory: ProverMemory,
    ) -> Result<Arc<dyn Backend>> {
        let shape = ProofShape::of_params(&params);
        let plan = self.plan_for(&shape, rows.as_deref()).map_err(backend_err)?;
        if rows.is_some() && !plan.rows_resident() {
            // The engine asks `proves_from_witness_for` first; a caller that did not gets
            // the reason rather than products from a recording that is not there.
            return Err(backend_err(CudaError::Devices(
                "the device-memory budget leaves no room for the recording: build this kind without it \
                 (a, b, c from the host)"
                    .into(),
            )));
        }
        self.note_planned(&shape, plan);
        let mut resident = self.resident.lock().unwrap_or_else(|e| e.into_inner());
        let key = Arc::downgrade(&params);
        let bases = match resident.iter().find(|(w, _)| Weak::ptr_eq(w, &key)) {
            Some((_, bases)) => bases.clone(),
            None => {
                let mut each = Vec::with_capacity(self.gpus.len());
                for slot in self.gpus.iter() {
                    let mut gpu = lock(&slot.gpu);
                    self.prepare(&mut gpu, &shape).map_err(backend_err)?;
                    each.push(GpuBases::upload(&mut gpu, &params, &plan).map_err(backend_err)?);
                    // The bases came from the parameters' pageable memory through the
                    // staging buffers; a proof's uploads come from registered memory.
                    gpu.release_host_staging().map_err(backend_err)?;
                }
                // Every set resident: nothing to pin.
                let host = HostSets::pin(&lock(&self.gpus[0].gpu), &params, plan.resident, plan.chunk_points)
                    .map_err(backend_err)?;
                let bases: PerGpuBases = Arc::new(ParamsBases { each, host });
                resident.push((key, bases.clone()));
                bases
            }
        };
        drop(resident);
        let rows = match rows {
            Some(pc) => Some((self.resident_rows(&pc, &shape)?, pc)),
            None => None,
        };
        let packs = match &rows {
            Some(_) => self.aux_packs(shape.aux)?,
            None => Vec::new(),
        };
        let ops = CudaOps {
            gpus: self.gpus.clone(),
            bases,
            rows,
            next: AtomicUsize::new(0),
            packs: Mutex::new(packs),
        };
        Ok(Arc::new(Prover::from_ops(params, memory, ops)?))
    }
}

impl CudaFactory {
    /// Packed-aux buffers of a kind proving from its recording: one per prover and
    /// finalizer thread ([`AUX_PACKS_PER_GPU`] per GPU), page-locked (registrations are
    /// portable, so one GPU's driver pins them for all).
    fn aux_packs(&self, aux: usize) -> Result<Vec<AuxPack>> {
        let gpu = lock(&self.gpus[0].gpu);
        (0..AUX_PACKS_PER_GPU * self.gpus.len())
            .map(|_| {
                let mut p = AuxPack::new(aux);
                p.register(&gpu).map_err(backend_err)?;
                Ok(p)
            })
            .collect()
    }

    /// Records a shape's device plan for the arenas reserved at the first build.
    fn note_planned(&self, shape: &ProofShape, plan: DevicePlan) {
        let mut planned = self.planned.lock().unwrap_or_else(|e| e.into_inner());
        if !planned.contains(&(*shape, plan)) {
            planned.push((*shape, plan));
        }
    }

    /// The recording `pc` on every GPU, uploaded at its first use.
    fn resident_rows(&self, pc: &Arc<Precompiled>, shape: &ProofShape) -> Result<PerGpuRows> {
        let mut resident = self.resident_rows.lock().unwrap_or_else(|e| e.into_inner());
        let key = Arc::downgrade(pc);
        if let Some((_, rows)) = resident.iter().find(|(w, _)| Weak::ptr_eq(w, &key)) {
            return Ok(rows.clone());
        }
        let mut each = Vec::with_capacity(self.gpus.len());
        for slot in self.gpus.iter() {
            let mut gpu = lock(&slot.gpu);
            self.prepare(&mut gpu, shape).map_err(backend_err)?;
            each.push(gpu.upload_rows(pc).map_err(backend_err)?);
        }
        let rows: PerGpuRows = each.into();
        resident.push((key, rows.clone()));
        Ok(rows)
    }

    /// Reserves `gpu`'s arena at its first build (for every planned shape) and its NTT
    /// tables for `shape`'s domain.
    fn prepare(&self, gpu: &mut Gpu, shape: &ProofShape) -> std::result::Result<(), CudaError> {
        if gpu.arena_stats().is_none() {
            let planned = self.planned.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let plans: Vec<DevicePlan> = planned.iter().map(|(_, p)| *p).collect();
            gpu.reserve_arena(arena_bytes(&plans))?;
            let max_log = planned
                .iter()
                .map(|(s, _)| s.domain_size.max(2).trailing_zeros())
                .chain([shape.domain_size.max(2).trailing_zeros()])
                .max()
                .unwrap_or(1);
            gpu.prepare_ntt(max_log)?;
        }
        gpu.prepare_ntt(shape.domain_size.max(2).trailing_zeros())
    }
}

/// One parameter set's resident base sets in one device arena (`None`: streamed).
#[derive(Debug)]
struct GpuBases {
    /// H, L, A, B_G1 ([`BASE_SETS`] order).
    g1: [Option<G1Bases>; 4],
    b_g2: Option<G2Bases>,
}

impl GpuBases {
    /// Uploads the sets `plan` keeps resident ([`BASE_SETS`] order) into `gpu`'s arena, H
    /// with the plan's fixed-base windows where it has them.
    fn upload(
        gpu: &mut Gpu,
        params: &Parameters,
        plan: &DevicePlan,
    ) -> std::result::Result<GpuBases, CudaError> {
        let resident = plan.resident;
        let mut g1: [Option<G1Bases>; 4] = Default::default();
        for (i, set) in g1.iter_mut().enumerate() {
            if resident[i] {
                *set = Some(match (i, plan.h_fixed) {
                    (0, Some(f)) => gpu.upload_g1_bases_fixed(g1_host(params, i), f)?,
                    _ => gpu.upload_g1_bases(g1_host(params, i))?,
                });
            }
        }
        let b_g2 = if resident[4] { Some(gpu.upload_g2_bases(params.b_g2())?) } else { None };
        Ok(GpuBases { g1, b_g2 })
    }
}

/// G1 set `i` ([`BASE_SETS`] order) of `params`, in host memory.
fn g1_host(params: &Parameters, i: usize) -> &[blst::blst_p1_affine] {
    match i {
        0 => params.h(),
        1 => params.l(),
        2 => params.a(),
        _ => params.b_g1(),
    }
}

/// The index of a G1 query's set in [`BASE_SETS`].
fn g1_index(query: G1Query) -> usize {
    match query {
        G1Query::L => 1,
        G1Query::A => 2,
        G1Query::BG1 => 3,
    }
}

/// The parameters whose streamed sets are read from host memory, page-locked once.
/// Field order matters: the pins are dropped (unregistered) before the parameters can go.
struct HostSets {
    pins: Vec<HostRegistration>,
    params: Arc<Parameters>,
    /// Points per streamed chunk.
    chunk: usize,
}

impl HostSets {
    /// Page-locks every streamed set of `params` (`resident` false), once for every GPU
    /// (portable registration). Memory someone else registered already is used as it is.
    fn pin(
        gpu: &Gpu,
        params: &Arc<Parameters>,
        resident: [bool; 5],
        chunk: usize,
    ) -> std::result::Result<HostSets, CudaError> {
        fn bytes_of<T>(s: &[T]) -> Option<(std::ptr::NonNull<u8>, usize)> {
            let len = std::mem::size_of_val(s);
            (len > 0).then(|| (std::ptr::NonNull::from(s).cast::<u8>(), len))
        }
        let mut ranges = Vec::new();
        for (i, _) in resident[..4].iter().enumerate().filter(|(_, r)| !**r) {
            ranges.extend(bytes_of(g1_host(params, i)));
        }
        if !resident[4] {
            ranges.extend(bytes_of(params.b_g2()));
        }
        let mut pins = Vec::with_capacity(ranges.len());
        for (base, len) in ranges {
            // SAFETY: the range is a parameter set's slab, which stays mapped while the
            // `Arc<Parameters>` held next to the registration lives; the registration is
            // dropped first (field order).
            match unsafe { gpu.register_host(base, len) } {
                Ok(pin) => pins.push(pin),
                Err(CudaError::Register { source, .. })
                    if source.0
                        == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => {
                }
                Err(e) => return Err(e),
            }
        }
        Ok(HostSets { pins, params: params.clone(), chunk })
    }
}

/// One parameter set's bases for every GPU of a factory.
struct ParamsBases {
    /// Each GPU's resident sets, in the factory's order.
    each: Vec<GpuBases>,
    host: HostSets,
}

impl std::fmt::Debug for ParamsBases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParamsBases")
            .field("each", &self.each)
            .field("pinned_sets", &self.host.pins.len())
            .field("chunk", &self.host.chunk)
            .finish()
    }
}

impl ParamsBases {
    /// G1 set `i` ([`BASE_SETS`] order) as GPU `gpu` reads it.
    fn g1(&self, gpu: usize, i: usize) -> BaseSet<'_, blst::blst_p1_affine> {
        match &self.each[gpu].g1[i] {
            Some(b) => BaseSet::Resident(b),
            None => BaseSet::Streamed { bases: g1_host(&self.host.params, i), chunk: self.host.chunk },
        }
    }

    /// B_G2 as GPU `gpu` reads it.
    fn b_g2(&self, gpu: usize) -> BaseSet<'_, blst::blst_p2_affine> {
        match &self.each[gpu].b_g2 {
            Some(b) => BaseSet::Resident(b),
            None => BaseSet::Streamed { bases: self.host.params.b_g2(), chunk: self.host.chunk },
        }
    }

    /// Points of G1 set `i` (the same on every GPU).
    fn g1_len(&self, i: usize) -> usize {
        g1_host(&self.host.params, i).len()
    }
}

/// The GPU's device operations for one parameter set (see the module docs).
pub struct CudaOps {
    gpus: Arc<[Slot]>,
    /// The parameter set's bases on each GPU (same order as `gpus`).
    bases: PerGpuBases,
    /// The kind's recording on each GPU, when a, b, c are computed from it, and the
    /// recording itself (a partition must bring this very one).
    rows: Option<(PerGpuRows, Arc<Precompiled>)>,
    /// Where the next operation starts looking for a free GPU (round robin).
    next: AtomicUsize,
    /// Packed-aux buffers (with a recording: one per prover and finalizer thread), taken
    /// for a packing before the GPU is and given back after its copy is waited for.
    packs: Mutex<Vec<AuxPack>>,
}

/// An [`AuxPack`] out of [`CudaOps::packs`], back there on drop.
struct PackLease<'a> {
    pool: &'a Mutex<Vec<AuxPack>>,
    pack: Option<AuxPack>,
}

impl PackLease<'_> {
    /// The pack, holding the aux it was leased for (`pack` is only taken by the drop).
    fn get(&self) -> &AuxPack {
        self.pack.as_ref().expect("a lease holds its pack until dropped")
    }
}

impl Drop for PackLease<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.pack.take() {
            lock_any(self.pool).push(p);
        }
    }
}

/// The GPU backend for one parameter set: the engine's prover on [`CudaOps`].
pub type CudaBackend = Prover<CudaOps>;

impl std::fmt::Debug for CudaOps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaOps")
            .field("gpus", &self.gpus.iter().map(|s| s.ordinal).collect::<Vec<_>>())
            .finish()
    }
}

/// h left on one GPU's scratch between `h_quotient` and `msm_h`, with that GPU held.
pub struct GpuQuotient<'a> {
    gpu: Held<'a>,
    /// The h bases as that GPU reads them.
    bases: BaseSet<'a, blst::blst_p1_affine>,
    h: DeviceH,
}

/// A witness's aux staged on one GPU for its L, A and B MSMs, with that GPU held from the
/// first to the last (so no other operation lays out its scratch in between).
pub struct GpuWitness<'a> {
    gpu: Held<'a>,
    /// The GPU's index for the bases.
    index: usize,
    staged: DeviceWitness,
}

impl CudaOps {
    /// The first free GPU from a rotating start; when all are busy, waits for the one at
    /// the start. Returns its index and the held device.
    fn take_gpu(&self) -> (usize, Held<'_>) {
        let n = self.gpus.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let (i, gpu) = (0..n)
            .map(|k| (start + k) % n)
            .find_map(|i| try_lock(&self.gpus[i].gpu).map(|g| (i, g)))
            .unwrap_or_else(|| (start, lock(&self.gpus[start].gpu)));
        (i, Held::new(&self.gpus[i], gpu))
    }

    /// `aux` packed for the bus, on this thread before a GPU is taken (so the packing
    /// never holds a device): `None` when no pack is free or `aux` does not pack (too
    /// many values other than 0 and 1), and it then goes up whole.
    fn packed(&self, aux: &[Scalar]) -> Option<PackLease<'_>> {
        let mut pack = lock_any(&self.packs).pop()?;
        if pack.pack(aux) {
            Some(PackLease { pool: &self.packs, pack: Some(pack) })
        } else {
            lock_any(&self.packs).push(pack);
            None
        }
    }

    /// Runs `f` on a free GPU (one lock hold) with that GPU's index for the bases, and
    /// adds the device time it measured to `device`.
    fn on_gpu<T>(
        &self,
        device: &mut Duration,
        f: impl FnOnce(&mut Gpu, usize) -> std::result::Result<T, CudaError>,
    ) -> Result<T> {
        let (i, mut gpu) = self.take_gpu();
        let out = f(&mut gpu, i).map_err(backend_err)?;
        *device += gpu.last_device_time();
        Ok(out)
    }
}

impl ProverOps for CudaOps {
    type Quotient<'a> = GpuQuotient<'a>;
    type Witness<'a> = GpuWitness<'a>;

    fn name(&self) -> &'static str {
        "cuda"
    }

    fn h_quotient<'a>(
        &'a self,
        domain: &Domain,
        a: &'a mut [Scalar],
        b: &'a mut [Scalar],
        c: &'a mut [Scalar],
        device: &mut Duration,
    ) -> Result<GpuQuotient<'a>> {
        // The kernels use the domain of a's length: it must be the prover's.
        same_len("h pipeline: a (padded to the domain)", domain.size, a.len())?;
        let (index, mut gpu) = self.take_gpu();
        let h = gpu.h_quotient_resident(a, b, c).map_err(backend_err)?;
        *device += gpu.last_device_time();
        Ok(GpuQuotient { gpu, bases: self.bases.g1(index, 0), h })
    }

    fn msm_h(&self, q: GpuQuotient<'_>, device: &mut Duration) -> Result<G1Projective> {
        let GpuQuotient { mut gpu, bases, h } = q;
        let sum = gpu.msm_h_over(h, bases).map_err(backend_err)?;
        *device += gpu.last_device_time();
        Ok(sum)
    }

    fn msm_g1(&self, query: G1Query, scalars: &[ScalarBytes], device: &mut Duration) -> Result<G1Projective> {
        let set = g1_index(query);
        same_len(query.name(), self.bases.g1_len(set), scalars.len())?;
        self.on_gpu(device, |g, i| g.msm_g1_over(self.bases.g1(i, set), scalars))
    }

    fn msm_g2(&self, query: G2Query, scalars: &[ScalarBytes], device: &mut Duration) -> Result<G2Projective> {
        same_len(query.name(), self.bases.host.params.b_g2().len(), scalars.len())?;
        self.on_gpu(device, |g, i| g.msm_g2_over(self.bases.b_g2(i), scalars))
    }

    /// Split vectors built on the device; a, b, c from the kind's resident recording.
    fn proves_from_witness(&self) -> bool {
        true
    }

    fn h_quotient_rows<'a>(
        &'a self,
        domain: &Domain,
        rows: &'a Precompiled,
        inputs: &'a [Scalar],
        aux: &'a [Scalar],
        device: &mut Duration,
    ) -> Result<GpuQuotient<'a>> {
        let (resident, kind_rows) = self.rows.as_ref().ok_or_else(|| {
            backend_err(CudaError::Devices(format!(
                "the recording '{}' is not resident: this kind was built without one, so its \
                 partitions must hold a, b, c on the host",
                rows.identity()
            )))
        })?;
        // The same recording, not one that looks like it: rows re-recorded under the same
        // name would give wrong products from the stale resident copy.
        if !std::ptr::eq(rows, &**kind_rows) {
            return Err(backend_err(CudaError::Devices(format!(
                "the partition's recording '{}' is not the kind's resident one ('{}')",
                rows.identity(),
                resident[0].identity()
            ))));
        }
        let pack = self.packed(aux);
        let (index, mut gpu) = self.take_gpu();
        let h = gpu
            .h_quotient_rows(&resident[index], inputs, aux, pack.as_ref().map(PackLease::get), domain.size)
            .map_err(backend_err)?;
        *device += gpu.last_device_time();
        Ok(GpuQuotient { gpu, bases: self.bases.g1(index, 0), h })
    }

    /// Takes a GPU and stages the aux there above the largest of the four MSMs' layouts
    /// (each set resident or streamed as this GPU reads it).
    fn witness_begin<'a>(&'a self, aux: &'a [Scalar], device: &mut Duration) -> Result<GpuWitness<'a>> {
        let pack = self.packed(aux);
        let (index, mut gpu) = self.take_gpu();
        let b = &self.bases;
        let g1 = |set: usize, dense| WitnessMsm {
            curve: Curve::G1,
            n: b.g1_len(set),
            chunk: b.g1(index, set).streamed_chunk(),
            dense,
        };
        let msms = [
            g1(g1_index(G1Query::L), false),
            g1(g1_index(G1Query::A), true),
            g1(g1_index(G1Query::BG1), true),
            WitnessMsm {
                curve: Curve::G2,
                n: b.host.params.b_g2().len(),
                chunk: b.b_g2(index).streamed_chunk(),
                dense: true,
            },
        ];
        let staged =
            gpu.stage_witness_packed(aux, pack.as_ref().map(PackLease::get), &msms).map_err(backend_err)?;
        *device += gpu.last_device_time();
        Ok(GpuWitness { gpu, index, staged })
    }

    fn msm_witness_g1(
        &self,
        w: &mut GpuWitness<'_>,
        query: G1Query,
        s: WitnessScalars<'_>,
        device: &mut Duration,
    ) -> Result<G1Projective> {
        let set = g1_index(query);
        same_len(query.name(), self.bases.g1_len(set), s.len())?;
        let GpuWitness { gpu, index, staged } = w;
        let sum = gpu
            .msm_witness_g1_staged(staged, self.bases.g1(*index, set), s.head, s.aux, s.density)
            .map_err(backend_err)?;
        *device += gpu.last_device_time();
        Ok(sum)
    }

    fn msm_witness_g2(
        &self,
        w: &mut GpuWitness<'_>,
        query: G2Query,
        s: WitnessScalars<'_>,
        device: &mut Duration,
    ) -> Result<G2Projective> {
        same_len(query.name(), self.bases.host.params.b_g2().len(), s.len())?;
        let GpuWitness { gpu, index, staged } = w;
        let sum = gpu
            .msm_witness_g2_staged(staged, self.bases.b_g2(*index), s.head, s.aux, s.density)
            .map_err(backend_err)?;
        *device += gpu.last_device_time();
        Ok(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(log: u32) -> ProofShape {
        let n = 1usize << log;
        ProofShape { inputs: 2, aux: n - 10, domain_size: n, a_points: n / 2, b_points: n / 3 }
    }

    #[test]
    fn device_terms_sum_to_the_arena_of_one_shape() {
        for log in [10, 16, 20] {
            let plan = device_plan(&shape(log), None);
            let terms = device_terms(0, &plan);
            let sum: usize = terms.iter().map(PlanTerm::bytes).sum();
            assert_eq!(sum, plan.total_bytes());
            assert_eq!(arena_bytes(&[plan]), plan.total_bytes());
            assert!(terms.iter().all(|t| t.scope == Scope::Device && t.what.starts_with("cuda:0 ")));
            // Resident bases: H (n - 1), L, A, B_G1 in G1; B_G2 in G2.
            let s = shape(log);
            let g1 = (s.domain_size - 1) + s.aux + s.a_points + s.b_points;
            assert!(plan.g1_bases_bytes >= 96 * g1 && plan.g1_bases_bytes < 96 * g1 + 4 * 256);
            assert!(plan.g2_bases_bytes >= 192 * s.b_points);
        }
    }

    /// A kind planned again sees the same kinds before it: its plan does not change with
    /// the kinds planned after it.
    #[test]
    fn a_kind_is_planned_beside_the_kinds_planned_before_it() {
        let (a, b, c) = (shape(12), shape(14), shape(16));
        let (pa, pb, pc) = (device_plan(&a, None), device_plan(&b, None), device_plan(&c, None));
        let planned = vec![(a, pa), (b, pb), (c, pc)];
        assert!(planned_before(&planned, &a).is_empty());
        assert_eq!(planned_before(&planned, &b), vec![pa]);
        assert_eq!(planned_before(&planned, &c), vec![pa, pb]);
        // A shape not planned yet goes beside all of them.
        assert_eq!(planned_before(&planned, &shape(18)), vec![pa, pb, pc]);
    }

    #[test]
    fn two_shapes_share_tables_and_scratch_but_not_bases() {
        let (small, big) = (device_plan(&shape(12), None), device_plan(&shape(16), None));
        let both = arena_bytes(&[small, big]);
        assert_eq!(
            both,
            big.ntt_tables_bytes
                + big.scratch_bytes()
                + big.g1_bases_bytes
                + big.g2_bases_bytes
                + small.g1_bases_bytes
                + small.g2_bases_bytes
        );
    }
}
