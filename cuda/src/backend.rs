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
//! its MSMs may run on different GPUs: only the h sum, a host value, passes between them),
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
use crate::error::CudaError;
use crate::gpu::Gpu;
use crate::msm::{G1Bases, G2Bases};
use crate::ntt::DeviceH;
use crate::pinned::CudaRegionHook;
use crate::plan::DevicePlan;
use crate::products::DeviceRows;

type Result<T, E = Groth16Error> = std::result::Result<T, E>;

fn backend_err(e: CudaError) -> Groth16Error {
    Groth16Error::Backend { backend: "cuda", source: Box::new(e) }
}

/// The device memory one parameter set of `shape` needs: NTT tables for its domain, its
/// five base sets resident (H, L, A, B_G1 in G1; B_G2 in G2), the kind's recording when a,
/// b, c are computed on the device from it, and the largest operation's scratch (the h
/// pipeline, from a, b, c or from the recording; an MSM over the longest base set; a
/// witness MSM with its staged aux).
pub fn device_plan(shape: &ProofShape, rows: Option<&Precompiled>) -> DevicePlan {
    device_plan_sized(shape, rows.map(|pc| crate::products::rows_resident_bytes(&pc.row_stream())))
}

/// [`device_plan`] with the resident recording given by its size (`rows_bytes`, e.g. an
/// estimate from the recording file's size, for `arenaprove plan` before one exists).
pub fn device_plan_sized(shape: &ProofShape, rows_bytes: Option<usize>) -> DevicePlan {
    let domain = shape.domain_size.max(2);
    let h_points = domain - 1;
    let msm_max = h_points.max(shape.aux).max(shape.a_points).max(shape.b_points);
    let plan = DevicePlan::new(
        domain.trailing_zeros(),
        &[h_points, shape.aux, shape.a_points, shape.b_points],
        &[shape.b_points],
        msm_max,
    )
    .with_witness_msms(shape.aux, shape.a_points, shape.b_points);
    match rows_bytes {
        Some(b) => plan.with_rows(b, domain.trailing_zeros(), shape.inputs, shape.aux),
        None => plan,
    }
}

/// The arena for several shapes on one device: the largest NTT tables (they serve every
/// smaller domain), every shape's bases, and the largest scratch (operations run one at
/// a time).
fn arena_bytes(plans: &[DevicePlan]) -> usize {
    let tables = plans.iter().map(|p| p.ntt_tables_bytes).max().unwrap_or(0);
    let bases: usize = plans.iter().map(|p| p.g1_bases_bytes + p.g2_bases_bytes + p.rows_bytes).sum();
    let scratch = plans.iter().map(DevicePlan::scratch_bytes).max().unwrap_or(0);
    tables + bases + scratch
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
    let mut terms = vec![
        term("NTT tables (persistent)".into(), plan.ntt_tables_bytes),
        term("G1 bases H, L, A, B_G1 (resident)".into(), plan.g1_bases_bytes),
        term("G2 bases B_G2 (resident)".into(), plan.g2_bases_bytes),
    ];
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
}

/// One recording on each GPU of a factory, in the factory's order.
type PerGpuRows = Arc<[DeviceRows]>;

/// One parameter set's bases on each GPU of a factory, in the factory's order.
type PerGpuBases = Arc<[ResidentBases]>;

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
        })
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
        let plan = device_plan(shape, rows);
        self.note_planned(shape, plan);
        // One prover per GPU: the device terms do not scale with the slots; each GPU holds
        // its own copy.
        self.gpus.iter().flat_map(|s| device_terms(s.ordinal, &plan)).collect()
    }

    /// a, b, c from a kind's recording, split vectors from the assignment: the engine
    /// plans no a, b, c slabs on the host for precompiled kinds.
    fn proves_from_witness(&self) -> bool {
        true
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
        self.note_planned(&shape, device_plan(&shape, rows.as_deref()));
        let mut resident = self.resident.lock().unwrap_or_else(|e| e.into_inner());
        let key = Arc::downgrade(&params);
        let bases = match resident.iter().find(|(w, _)| Weak::ptr_eq(w, &key)) {
            Some((_, bases)) => bases.clone(),
            None => {
                let mut each = Vec::with_capacity(self.gpus.len());
                for slot in self.gpus.iter() {
                    let mut gpu = lock(&slot.gpu);
                    self.prepare(&mut gpu, &shape).map_err(backend_err)?;
                    each.push(ResidentBases {
                        h: gpu.upload_g1_bases(params.h()).map_err(backend_err)?,
                        l: gpu.upload_g1_bases(params.l()).map_err(backend_err)?,
                        a: gpu.upload_g1_bases(params.a()).map_err(backend_err)?,
                        b_g1: gpu.upload_g1_bases(params.b_g1()).map_err(backend_err)?,
                        b_g2: gpu.upload_g2_bases(params.b_g2()).map_err(backend_err)?,
                    });
                }
                let bases: PerGpuBases = each.into();
                resident.push((key, bases.clone()));
                bases
            }
        };
        drop(resident);
        let rows = match rows {
            Some(pc) => Some((self.resident_rows(&pc, &shape)?, pc)),
            None => None,
        };
        let ops = CudaOps { gpus: self.gpus.clone(), bases, rows, next: AtomicUsize::new(0) };
        Ok(Arc::new(Prover::from_ops(params, memory, ops)?))
    }
}

impl CudaFactory {
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

/// One parameter set's bases in one device arena.
#[derive(Debug)]
struct ResidentBases {
    h: G1Bases,
    l: G1Bases,
    a: G1Bases,
    b_g1: G1Bases,
    b_g2: G2Bases,
}

impl ResidentBases {
    fn g1(&self, query: G1Query) -> &G1Bases {
        match query {
            G1Query::L => &self.l,
            G1Query::A => &self.a,
            G1Query::BG1 => &self.b_g1,
        }
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
    /// That GPU's copy of the h bases.
    bases: &'a G1Bases,
    h: DeviceH,
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

    /// Runs `f` on a free GPU (one lock hold) with that GPU's copy of the bases, and adds
    /// the device time it measured to `device`.
    fn on_gpu<T>(
        &self,
        device: &mut Duration,
        f: impl FnOnce(&mut Gpu, &ResidentBases) -> std::result::Result<T, CudaError>,
    ) -> Result<T> {
        let (i, mut gpu) = self.take_gpu();
        let out = f(&mut gpu, &self.bases[i]).map_err(backend_err)?;
        *device += gpu.last_device_time();
        Ok(out)
    }
}

impl ProverOps for CudaOps {
    type Quotient<'a> = GpuQuotient<'a>;

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
        Ok(GpuQuotient { gpu, bases: &self.bases[index].h, h })
    }

    fn msm_h(&self, q: GpuQuotient<'_>, device: &mut Duration) -> Result<G1Projective> {
        let GpuQuotient { mut gpu, bases, h } = q;
        let sum = gpu.msm_h_resident(h, bases).map_err(backend_err)?;
        *device += gpu.last_device_time();
        Ok(sum)
    }

    fn msm_g1(&self, query: G1Query, scalars: &[ScalarBytes], device: &mut Duration) -> Result<G1Projective> {
        // Every GPU holds the same bases: the first's length is every one's.
        same_len(query.name(), self.bases[0].g1(query).len, scalars.len())?;
        self.on_gpu(device, |g, bases| g.msm_g1_resident(bases.g1(query), scalars))
    }

    fn msm_g2(&self, query: G2Query, scalars: &[ScalarBytes], device: &mut Duration) -> Result<G2Projective> {
        same_len(query.name(), self.bases[0].b_g2.len, scalars.len())?;
        self.on_gpu(device, |g, bases| g.msm_g2_resident(&bases.b_g2, scalars))
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
        let (index, mut gpu) = self.take_gpu();
        let h = gpu.h_quotient_rows(&resident[index], inputs, aux, domain.size).map_err(backend_err)?;
        *device += gpu.last_device_time();
        Ok(GpuQuotient { gpu, bases: &self.bases[index].h, h })
    }

    fn msm_witness_g1(
        &self,
        query: G1Query,
        s: WitnessScalars<'_>,
        device: &mut Duration,
    ) -> Result<G1Projective> {
        same_len(query.name(), self.bases[0].g1(query).len, s.len())?;
        self.on_gpu(device, |g, bases| g.msm_witness_g1(bases.g1(query), s.head, s.aux, s.density))
    }

    fn msm_witness_g2(
        &self,
        query: G2Query,
        s: WitnessScalars<'_>,
        device: &mut Duration,
    ) -> Result<G2Projective> {
        same_len(query.name(), self.bases[0].b_g2.len, s.len())?;
        self.on_gpu(device, |g, bases| g.msm_witness_g2(&bases.b_g2, s.head, s.aux, s.density))
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
