//! The C2 driver: a commit-phase-1 output becomes one engine job, one partition circuit per
//! vanilla proof list, proven on the long-lived [`Engine`].
//!
//! [`C2Engine`] is the only way this repository proves C2: `arenaprove filecoin c2`,
//! `bench` and `soak`, the `serve` daemon and embedders all submit through it (one slot
//! is still the engine, with its timeline, its verification and its slot accounting).
//! What it promises:
//! * a partition's public inputs, as the circuit computes them from the vanilla proofs,
//!   equal those the verifier derives from the C1's seed, replica id and commitments, or
//!   the partition ends right after synthesis, before any proving (a tampered C1 fails in
//!   seconds, not after a proof), and the sector with [`FilecoinError::InputsMismatch`];
//! * a proof leaves [`C2Pending::wait`] only when every partition was proven and verified
//!   by the engine ([`FilecoinError::Unverified`] otherwise): the engine must be started
//!   with `verify` on;
//! * [`C2Cancel::cancel`] (the engine's job cancellation) ends the sector's partitions
//!   that have not reached the prover at once (their slots go to the next job) and makes
//!   `wait` return [`FilecoinError::Cancelled`], saying how many partitions it stopped;
//!   dropping a [`C2Pending`] unwaited cancels it too.
//!
//! The circuits are built in [`crate::circuit`]; synthesis is precompiled by default
//! ([`crate::pce`]).
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arenaprove_circuits::{ArenaAssignment, ProverWitness, Shape};
use arenaprove_engine::groth16::SubgroupCheckSource;
use arenaprove_engine::pipeline::{
    CircuitSpec, Engine, EngineConfig, Job, JobCanceller, JobHandle, JobOutput, Level, PartitionCircuit,
    PartitionError, ShutdownMode, ShutdownReport,
};
use arenaprove_engine::{Groth16Error, Parameters, ParamsMemory};
use bellpepper_core::SynthesisError;
use blstrs::Scalar;

use crate::api::{C1Output, RegisteredSealProof, SectorInfo, SectorSize, ShapedC1};
use crate::error::FilecoinError;
use crate::params::ParamFiles;
use crate::pce::Synthesis;
use crate::post::{PostCircuit, PostJob, PostRequest, RegisteredPoStProof};
use crate::snap::{RegisteredUpdateProof, SnapCircuit, SnapJob, SnapRequest};

use crate::circuit::{blank_shape, SectorJob};

/// How a circuit's parameters are loaded and its partitions synthesized.
#[derive(Clone)]
pub struct LoadOptions {
    /// Validate every parameter point while loading (slower).
    pub checked: bool,
    /// Synthesize through the precompiled constraints (recorded on first use and saved
    /// beside the parameters); `false` goes through the bellpepper trait.
    pub precompiled: bool,
    /// With `checked`: who runs the subgroup tests, after a decode that checks encodings and
    /// curves (a GPU: [`arenaprove_engine::groth16::Parameters::check_subgroups`]); `None`:
    /// blst per point on every core, fused with the decode.
    pub subgroup_check: Option<SubgroupCheckSource>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { checked: false, precompiled: true, subgroup_check: None }
    }
}

impl std::fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("checked", &self.checked)
            .field("precompiled", &self.precompiled)
            .field("subgroup_check", &self.subgroup_check.as_ref().map(|_| "given"))
            .finish()
    }
}

/// One sector size's C2 circuit, ready for an engine: its parameters loaded once and checked
/// against the circuit's shape (counted on the blank circuit), and how its partitions are
/// synthesized. Cheap to clone (the parameters and recordings are shared), so an engine can
/// be rebuilt with another set of circuits without reading any file again.
#[derive(Clone)]
pub struct C2Circuit {
    /// The engine's circuit kind: `stacked-drg-<size>`.
    kind: String,
    sector_size: SectorSize,
    files: ParamFiles,
    shape: Shape,
    params: Arc<Parameters>,
    synthesis: Synthesis,
    /// Shape-only parameters (no setup): its proofs cannot verify ([`C2Circuit::timing_only`]).
    timing_only: bool,
}

impl fmt::Debug for C2Circuit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("C2Circuit")
            .field("kind", &self.kind)
            .field("params", &self.files.params)
            .field("shape", &self.shape)
            .field("synthesis", &self.synthesis.name())
            .field("timing_only", &self.timing_only)
            .finish()
    }
}

impl C2Circuit {
    /// Loads `files.params` for `registered_proof`'s circuit (a file made for another
    /// circuit is refused here, naming the section), and the precompiled constraints beside
    /// it unless `options` says otherwise.
    pub fn load(
        registered_proof: RegisteredSealProof,
        files: &ParamFiles,
        options: LoadOptions,
    ) -> Result<Self, FilecoinError> {
        let sector_size = registered_proof.sector_size()?;
        files.require_params()?;
        let identity = crate::pce::pce_identity(files);
        let (shape, params, synthesis) = load_parts(
            files,
            options,
            &identity,
            || blank_shape(registered_proof),
            || crate::circuit::blank_circuit(registered_proof),
        )?;
        Ok(C2Circuit {
            kind: format!("stacked-drg-{}", sector_size.name()),
            sector_size,
            files: files.clone(),
            shape,
            params,
            synthesis,
            timing_only: false,
        })
    }

    /// `registered_proof`'s circuit **for timing only**: precompiled (the recording mapped
    /// from beside `files.params`, or recorded there), with parameters of its shape that are
    /// not a setup ([`arenaprove_engine::shape_only_parameters`], from `seed`). Nothing is
    /// read from `files.params`, and its shape is the recording's, so a 32 GiB or 64 GiB
    /// partition can be timed without a 47 GiB file. **Its proofs cannot verify**: an
    /// engine serving it runs with verification off, and what it returns is for timing.
    /// Parameters larger than `params_bytes_max` are refused before any is made.
    pub fn timing_only(
        registered_proof: RegisteredSealProof,
        files: &ParamFiles,
        seed: u64,
        params_bytes_max: u64,
    ) -> Result<Self, FilecoinError> {
        let sector_size = registered_proof.sector_size()?;
        let identity = crate::pce::pce_identity(files);
        let pce = crate::pce::load_or_record_of(files, &identity, None, || {
            crate::circuit::blank_circuit(registered_proof)
        })?;
        let shape = pce.matrices.shape();
        let (a, b) = pce.matrices.query_points();
        let bytes = {
            use arenaprove_engine::groth16::params::{G1_BYTES, G2_BYTES};
            let g1 = (shape.domain_size - 1 + shape.aux + a + b) as u64;
            g1 * G1_BYTES as u64 + b as u64 * G2_BYTES as u64
        };
        if bytes > params_bytes_max {
            let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
            return Err(FilecoinError::BadArgument(format!(
                "timing only, {sector_size} sectors: shape-only parameters of {:.2} GiB do not fit the {:.2} GiB \
                 the memory limit leaves",
                gib(bytes),
                gib(params_bytes_max)
            )));
        }
        let params = arenaprove_engine::shape_only_parameters(
            &shape,
            arenaprove_engine::QueryPoints { a, b },
            seed,
            &ParamsMemory::default(),
        )
        .map_err(|e| FilecoinError::groth16(format!("shape-only parameters for {sector_size} sectors"), e))?;
        Ok(C2Circuit {
            kind: format!("stacked-drg-{}-timing-only", sector_size.name()),
            sector_size,
            files: files.clone(),
            shape,
            params: Arc::new(params),
            synthesis: Synthesis::Precompiled(pce.matrices),
            timing_only: true,
        })
    }

    /// Whether this circuit is [`C2Circuit::timing_only`] (its proofs cannot verify).
    pub fn is_timing_only(&self) -> bool {
        self.timing_only
    }

    /// The engine's circuit kind (`stacked-drg-2KiB`).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    pub fn sector_size(&self) -> SectorSize {
        self.sector_size
    }

    /// The shape of one partition circuit.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    pub fn params(&self) -> &Arc<Parameters> {
        &self.params
    }

    /// How partitions are synthesized.
    pub fn synthesis(&self) -> &Synthesis {
        &self.synthesis
    }

    /// The engine's circuit kind for this circuit (name, shape, parameters, and the
    /// recording when partitions are precompiled: a GPU engine keeps it on the device and
    /// computes a, b, c there).
    pub fn spec(&self) -> CircuitSpec {
        spec_of(&self.kind, self.shape, &self.params, &self.synthesis)
    }
}

/// What loading any circuit kind (PoRep, PoSt, SnapDeals) comes to: `files.params` read
/// and checked against the circuit's shape (a file made for another circuit is refused,
/// naming the section), and its synthesis: the recording named `identity` mapped from
/// beside the parameters, or recorded from `blank`, unless `options` say generic.
///
/// The shape of a precompiled circuit with a saved recording is the recording's (made
/// from the same blank circuit; its identity names the circuit and the code that builds
/// it), so `count`, a synthesis of the whole blank circuit (tens of seconds at 32 GiB),
/// runs only for a generic circuit, when there is no saved recording yet (the parameters
/// are then checked before the circuit is recorded), or when the parameters do not fit
/// the recording's shape (the counted shape decides; a recording of another shape is made
/// again).
pub(crate) fn load_parts<C: bellpepper_core::Circuit<Scalar>>(
    files: &ParamFiles,
    options: LoadOptions,
    identity: &str,
    count: impl FnOnce() -> Result<Shape, FilecoinError>,
    blank: impl FnOnce() -> Result<C, FilecoinError>,
) -> Result<(Shape, Arc<Parameters>, Synthesis), FilecoinError> {
    files.require_params()?;
    let mismatch = |source| FilecoinError::ParamsMismatch {
        sector_size: files.circuit.clone(),
        path: files.params.clone(),
        source: Box::new(source),
    };
    let read_err = |e| match e {
        e @ Groth16Error::Io { .. } => FilecoinError::groth16("reading parameters", e),
        // The subgroup checker's own failure (a GPU's), not the file's.
        e @ Groth16Error::Backend { .. } => FilecoinError::groth16("testing the parameters' subgroups", e),
        e => mismatch(e),
    };
    let mem = ParamsMemory::default();
    let params = match (&options.subgroup_check, options.checked) {
        (Some(source), true) => Parameters::read_file_checked_by(&files.params, source().as_mut(), &mem),
        _ => Parameters::read_file(&files.params, options.checked, &mem),
    }
    .map_err(read_err)?;
    if options.precompiled {
        if let Some(saved) = crate::pce::open_saved(files, identity) {
            let shape = saved.matrices.shape();
            if params.check_fits(&shape).is_ok() {
                return Ok((shape, Arc::new(params), Synthesis::Precompiled(saved.matrices)));
            }
        }
    }
    // No saved recording (or one the parameters do not fit): count, check the parameters
    // before anything is recorded, then map or record against the counted shape.
    let shape = count()?;
    params.check_fits(&shape).map_err(mismatch)?;
    let synthesis = if options.precompiled {
        Synthesis::Precompiled(crate::pce::load_or_record_of(files, identity, Some(&shape), blank)?.matrices)
    } else {
        Synthesis::Generic
    };
    Ok((shape, Arc::new(params), synthesis))
}

/// The engine's circuit kind for a loaded circuit (with its recording when precompiled: a
/// GPU engine keeps it on the device and computes a, b, c there).
pub(crate) fn spec_of(
    kind: &str,
    shape: Shape,
    params: &Arc<Parameters>,
    synthesis: &Synthesis,
) -> CircuitSpec {
    let matrices = match synthesis {
        Synthesis::Precompiled(pc) => Some(pc.clone()),
        Synthesis::Generic => None,
    };
    CircuitSpec { kind: kind.to_string(), shape, params: params.clone(), matrices }
}

/// C2 on the long-lived engine: one job per sector, parameters loaded once, slots reserved
/// at start, synthesis of the next partition (or sector) overlapping the proving of the
/// current one. Serves one circuit per sector size.
pub struct C2Engine {
    engine: Engine,
    circuits: Vec<C2Circuit>,
    posts: Vec<PostCircuit>,
    snaps: Vec<SnapCircuit>,
}

/// Every circuit an engine serves, by family (cheap to clone: shared parameters).
#[derive(Clone, Debug, Default)]
pub struct Circuits {
    /// PoRep C2, at most one per sector size.
    pub porep: Vec<C2Circuit>,
    /// WinningPoSt and WindowPoSt, at most one per kind and size.
    pub post: Vec<PostCircuit>,
    /// SnapDeals, at most one per size.
    pub snap: Vec<SnapCircuit>,
}

impl Circuits {
    pub fn is_empty(&self) -> bool {
        self.porep.is_empty() && self.post.is_empty() && self.snap.is_empty()
    }

    /// The engine's circuit kinds.
    pub fn specs(&self) -> Vec<CircuitSpec> {
        let porep = self.porep.iter().map(C2Circuit::spec);
        let post = self.post.iter().map(PostCircuit::spec);
        porep.chain(post).chain(self.snap.iter().map(SnapCircuit::spec)).collect()
    }
}

impl fmt::Debug for C2Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("C2Engine")
            .field("circuits", &self.circuits)
            .field("posts", &self.posts)
            .field("snaps", &self.snaps)
            .finish()
    }
}

impl C2Engine {
    /// Starts an engine serving `circuits` (at most one per sector size). `config.verify`
    /// must be on: this driver hands back verified proofs only.
    pub fn new(config: EngineConfig, circuits: Vec<C2Circuit>) -> Result<Self, FilecoinError> {
        C2Engine::with_posts(config, circuits, Vec::new())
    }

    /// Starts an engine serving PoRep `circuits` (at most one per sector size) and PoSt
    /// circuits `posts` (at most one per kind and size): every Filecoin proof on one engine,
    /// one set of slots, one memory plan.
    pub fn with_posts(
        config: EngineConfig,
        circuits: Vec<C2Circuit>,
        posts: Vec<PostCircuit>,
    ) -> Result<Self, FilecoinError> {
        C2Engine::with_circuits(config, Circuits { porep: circuits, post: posts, snap: Vec::new() })
    }

    /// Starts an engine serving every circuit of `all` (PoRep, PoSt, SnapDeals): one set of
    /// slots, one memory plan. `config.verify` must be on, except for an engine that serves
    /// [`C2Circuit::timing_only`] circuits alone, whose proofs cannot verify; such an engine
    /// must have it off.
    pub fn with_circuits(config: EngineConfig, all: Circuits) -> Result<Self, FilecoinError> {
        let Circuits { porep: circuits, post: posts, snap: snaps } = all;
        let timing = circuits.iter().filter(|c| c.timing_only).count();
        if timing > 0 && (timing < circuits.len() || !posts.is_empty() || !snaps.is_empty()) {
            return Err(FilecoinError::BadArgument(
                "a timing-only circuit shares no engine with circuits whose proofs verify".into(),
            ));
        }
        match (timing > 0, config.verify) {
            (false, false) => {
                return Err(FilecoinError::BadArgument(
                    "C2Engine hands back verified proofs only: EngineConfig::verify must be on".into(),
                ))
            }
            (true, true) => {
                return Err(FilecoinError::BadArgument(
                    "timing-only circuits have shape-only parameters, so their proofs cannot verify: \
                     EngineConfig::verify must be off"
                        .into(),
                ))
            }
            _ => {}
        }
        for (i, c) in circuits.iter().enumerate() {
            if circuits[..i].iter().any(|o| o.sector_size == c.sector_size) {
                return Err(FilecoinError::BadArgument(format!(
                    "two circuits for {} sectors",
                    c.sector_size
                )));
            }
        }
        let kinds: Vec<&str> =
            posts.iter().map(PostCircuit::kind).chain(snaps.iter().map(SnapCircuit::kind)).collect();
        for (i, k) in kinds.iter().enumerate() {
            if kinds[..i].contains(k) {
                return Err(FilecoinError::BadArgument(format!("two {k} circuits")));
            }
        }
        let all = Circuits { porep: circuits, post: posts, snap: snaps };
        let engine = Engine::new(config, all.specs())?;
        let Circuits { porep: circuits, post: posts, snap: snaps } = all;
        Ok(C2Engine { engine, circuits, posts, snaps })
    }

    /// Loads `registered_proof`'s circuit from `files` and starts an engine serving it.
    pub fn start(
        registered_proof: RegisteredSealProof,
        files: &ParamFiles,
        config: EngineConfig,
        options: LoadOptions,
    ) -> Result<Self, FilecoinError> {
        C2Engine::new(config, vec![C2Circuit::load(registered_proof, files, options)?])
    }

    /// The engine (memory plan, ledger, stats).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The circuits served, in the order given at start.
    pub fn circuits(&self) -> &[C2Circuit] {
        &self.circuits
    }

    /// The PoSt circuits served, in the order given at start.
    pub fn posts(&self) -> &[PostCircuit] {
        &self.posts
    }

    /// The PoSt circuit that proves `proof`, when served.
    pub fn post_circuit(&self, proof: RegisteredPoStProof) -> Option<&PostCircuit> {
        self.posts.iter().find(|c| c.proves(proof))
    }

    /// Submits one PoSt (a WinningPoSt, or one WindowPoSt partition): its vanilla proofs
    /// checked and its circuit built here, on the caller's thread, then queued as one job.
    /// The proof [`C2Pending::wait`] returns is what filecoin-proofs' `*_with_vanilla`
    /// returns: the partition proofs, 192 bytes each, verified by the engine against the
    /// inputs filecoin-proofs' verifier derives.
    pub fn submit_post(&self, request: &PostRequest) -> Result<C2Pending, FilecoinError> {
        self.submit_request(C2Request::Post(request), SubmitOptions::default())
    }

    /// [`C2Engine::submit_post`] with the proving randomness given (tests and byte
    /// comparisons only; see [`C2Engine::submit_with`]).
    pub fn submit_post_with(
        &self,
        request: &PostRequest,
        randomness: Option<Vec<arenaprove_engine::pipeline::Randomness>>,
    ) -> Result<C2Pending, FilecoinError> {
        self.submit_request(
            C2Request::Post(request),
            SubmitOptions { randomness, ..SubmitOptions::default() },
        )
    }

    /// Submits any request Curio sends, with its options (randomness, priority): what
    /// [`C2Engine::submit`], [`C2Engine::submit_post`] and [`C2Engine::submit_snap`] do.
    pub fn submit_request(
        &self,
        request: C2Request<'_>,
        options: SubmitOptions,
    ) -> Result<C2Pending, FilecoinError> {
        match request {
            C2Request::Porep(c1) => self.queue_porep(c1, options),
            C2Request::Post(post) => self.queue_post(post, options),
            C2Request::Snap(snap) => self.queue_snap(snap, options),
        }
    }

    fn queue_post(&self, request: &PostRequest, options: SubmitOptions) -> Result<C2Pending, FilecoinError> {
        let circuit = self.post_circuit(request.proof).ok_or_else(|| FilecoinError::NotServed {
            sector_size: format!("{} {}", request.proof.sector_size(), request.proof.kind()),
            served: self.served(),
        })?;
        let started = Instant::now();
        let job = PostJob::new(request)?;
        let parts = (0..job.partitions()).map(|k| {
            // Precompiled: the circuit's sectors in parallel (the witness of a WinningPoSt is
            // 66 independent one-challenge sectors).
            let synthesized = match circuit.synthesis() {
                Synthesis::Precompiled(pc) => arenaprove_engine::pipeline::precompiled_parts(
                    crate::post::PostParts(job.circuit(k)?),
                    pc.clone(),
                ),
                generic => generic.whole(job.circuit(k)?),
            };
            Ok((synthesized, job.public_inputs(k)?))
        });
        self.queue(circuit.kind(), circuit.synthesis(), circuit.shape(), parts, options, started)
    }

    /// The SnapDeals circuits served.
    pub fn snaps(&self) -> &[SnapCircuit] {
        &self.snaps
    }

    /// The SnapDeals circuit that proves `proof`, when served.
    pub fn snap_circuit(&self, proof: RegisteredUpdateProof) -> Option<&SnapCircuit> {
        self.snaps.iter().find(|c| c.proof() == proof)
    }

    /// Submits one SnapDeals update proof: its partition proofs verified and its circuits
    /// built here, then queued as one job. [`C2Pending::wait`] returns what filecoin-proofs'
    /// `generate_empty_sector_update_proof_with_vanilla` returns: the partition proofs, 192
    /// bytes each, in partition order, every one verified by the engine.
    pub fn submit_snap(&self, request: &SnapRequest) -> Result<C2Pending, FilecoinError> {
        self.submit_request(C2Request::Snap(request), SubmitOptions::default())
    }

    /// [`C2Engine::submit_snap`] with the proving randomness given (tests only).
    pub fn submit_snap_with(
        &self,
        request: &SnapRequest,
        randomness: Option<Vec<arenaprove_engine::pipeline::Randomness>>,
    ) -> Result<C2Pending, FilecoinError> {
        self.submit_request(
            C2Request::Snap(request),
            SubmitOptions { randomness, ..SubmitOptions::default() },
        )
    }

    fn queue_snap(&self, request: &SnapRequest, options: SubmitOptions) -> Result<C2Pending, FilecoinError> {
        let circuit = self.snap_circuit(request.proof).ok_or_else(|| FilecoinError::NotServed {
            sector_size: format!("{} SnapDeals", request.proof.sector_size()),
            served: self.served(),
        })?;
        let started = Instant::now();
        let job = SnapJob::new(request)?;
        let parts = (0..job.partitions())
            .map(|k| Ok((circuit.synthesis().whole(job.circuit(k)?), job.public_inputs(k)?)));
        self.queue(circuit.kind(), circuit.synthesis(), circuit.shape(), parts, options, started)
    }

    /// Everything served, for messages: `2KiB, 8MiB sectors; 2KiB WindowPoSt`.
    fn served(&self) -> String {
        let seals: Vec<&str> = self.circuits.iter().map(|c| c.sector_size.name()).collect();
        let posts: Vec<String> =
            self.posts.iter().map(|c| format!("{} {}", c.sector_size(), c.post_kind())).collect();
        let mut parts = Vec::new();
        if !seals.is_empty() {
            parts.push(format!("{} sectors", seals.join(", ")));
        }
        parts.extend(posts);
        parts.extend(self.snaps.iter().map(|c| format!("{} SnapDeals", c.proof().sector_size())));
        if parts.is_empty() {
            "nothing".into()
        } else {
            parts.join("; ")
        }
    }

    /// The circuit that proves `size` sectors, when served.
    pub fn circuit(&self, size: SectorSize) -> Option<&C2Circuit> {
        self.circuits.iter().find(|c| c.sector_size == size)
    }

    /// Submits one sector's C2: its partition circuits are built here, on the caller's
    /// thread (filecoin-proofs' circuit builder), then queued. Blocks while the engine's
    /// job queue is full.
    pub fn submit(&self, c1: &C1Output) -> Result<C2Pending, FilecoinError> {
        self.submit_request(C2Request::Porep(c1), SubmitOptions::default())
    }

    /// [`C2Engine::submit`] with the proving randomness (r, s) of every partition given:
    /// for comparing backends or runs byte for byte (tests, `filecoin c2
    /// --insecure-randomness-seed`). Never in production: a proof's zero knowledge rests on
    /// r and s being fresh and secret.
    pub fn submit_with(
        &self,
        c1: &C1Output,
        randomness: Option<Vec<arenaprove_engine::pipeline::Randomness>>,
    ) -> Result<C2Pending, FilecoinError> {
        self.submit_request(C2Request::Porep(c1), SubmitOptions { randomness, ..SubmitOptions::default() })
    }

    fn queue_porep(&self, c1: &C1Output, options: SubmitOptions) -> Result<C2Pending, FilecoinError> {
        let size = c1.registered_proof.sector_size()?;
        let circuit = self.circuit(size).ok_or_else(|| FilecoinError::NotServed {
            sector_size: format!("{size} PoRep"),
            served: self.served(),
        })?;
        let started = Instant::now();
        let job = SectorJob::new(c1)?;
        let parts =
            (0..job.partitions()).map(|k| Ok((circuit.synthesis.partition(&job, k)?, job.public_inputs(k)?)));
        let mut pending =
            self.queue(&circuit.kind, &circuit.synthesis, circuit.shape, parts, options, started)?;
        pending.timing_only = circuit.timing_only;
        Ok(pending)
    }

    /// Queues one job of `kind`: each partition's circuit with the public inputs the
    /// verifier derives for it, checked right after synthesis ([`C2Partition`]).
    fn queue(
        &self,
        kind: &str,
        synthesis: &Synthesis,
        shape: Shape,
        parts: impl Iterator<Item = Result<(Box<dyn PartitionCircuit>, Vec<Scalar>), FilecoinError>>,
        options: SubmitOptions,
        started: Instant,
    ) -> Result<C2Pending, FilecoinError> {
        let mismatch: FirstMismatch = Arc::new(Mutex::new(None));
        let mut partitions: Vec<Box<dyn PartitionCircuit>> = Vec::new();
        for (k, part) in parts.enumerate() {
            let (circuit, expected) = part?;
            partitions.push(Box::new(C2Partition {
                circuit,
                partition: k,
                expected,
                mismatch: mismatch.clone(),
            }));
        }
        let n_partitions = partitions.len();
        let circuit_build = started.elapsed();
        let mut job = Job::new(kind.to_string(), partitions).with_priority(options.priority);
        job.randomness = options.randomness;
        let handle = self.engine.submit(job)?;
        Ok(C2Pending {
            cancel: C2Cancel(handle.canceller()),
            handle: Some(handle),
            partitions: n_partitions,
            mismatch,
            circuit_build,
            synthesis: synthesis.name(),
            constraints: shape.constraints,
            timing_only: false,
        })
    }

    /// [`C2Engine::submit`] and [`C2Pending::wait`].
    pub fn prove(&self, c1: &C1Output) -> Result<C2Output, FilecoinError> {
        self.submit(c1)?.wait()
    }

    /// Stops the engine (`Drain` finishes every accepted job); its report says whether
    /// every slab came back.
    pub fn shutdown(self, mode: ShutdownMode) -> ShutdownReport {
        self.engine.shutdown(mode)
    }
}

/// The first partition of a sector whose public inputs did not match, shared by its
/// partitions while they are in the engine.
type FirstMismatch = Arc<Mutex<Option<usize>>>;

/// Cancels a submitted sector (cheap to clone, safe from any thread).
#[derive(Clone, Debug)]
pub struct C2Cancel(JobCanceller);

impl C2Cancel {
    /// Partitions that have not reached the prover end at once and free their slots;
    /// those already proving finish, and their proofs are dropped.
    pub fn cancel(&self) {
        self.0.cancel();
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }
}

/// One partition as the engine takes it: the circuit, and the check of its public inputs
/// right after synthesis (before the slot goes to proving).
struct C2Partition {
    circuit: Box<dyn PartitionCircuit>,
    partition: usize,
    /// The public inputs filecoin-proofs derives for this partition (ONE excluded).
    expected: Vec<Scalar>,
    mismatch: FirstMismatch,
}

impl PartitionCircuit for C2Partition {
    fn synthesize_into(self: Box<Self>, cs: &mut ArenaAssignment) -> Result<(), SynthesisError> {
        let C2Partition { circuit, partition, expected, mismatch } = *self;
        circuit.synthesize_into(cs)?;
        // The one inputs check: the engine's public inputs are these, read from this
        // witness, so a partition that passes here cannot differ later.
        if cs.input_assignment().get(1..) != Some(&expected[..]) {
            mismatch.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(partition);
            // Ends the partition here: its slot goes back without proving.
            return Err(SynthesisError::IoError(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the public inputs differ from those the verifier derives",
            )));
        }
        Ok(())
    }
}

/// What a [`C2Engine`] proves: each kind of request Curio sends.
#[derive(Clone, Copy, Debug)]
pub enum C2Request<'a> {
    /// PoRep C2 of one sector.
    Porep(&'a C1Output),
    /// A WinningPoSt, or one WindowPoSt partition.
    Post(&'a PostRequest),
    /// A SnapDeals update proof.
    Snap(&'a SnapRequest),
}

/// How a request is queued ([`C2Engine::submit_request`]).
#[derive(Clone, Debug, Default)]
pub struct SubmitOptions {
    /// Every partition's proving randomness (tests and byte comparisons only; see
    /// [`C2Engine::submit_with`]); `None`: fresh.
    pub randomness: Option<Vec<arenaprove_engine::pipeline::Randomness>>,
    /// The engine's [`Job::priority`]: higher first for the next free slot.
    pub priority: i32,
}

/// A sector submitted to a [`C2Engine`]. Dropping it unwaited cancels the sector.
pub struct C2Pending {
    handle: Option<JobHandle>,
    /// Partitions submitted.
    partitions: usize,
    mismatch: FirstMismatch,
    cancel: C2Cancel,
    circuit_build: Duration,
    synthesis: &'static str,
    constraints: usize,
    /// A [`C2Circuit::timing_only`] sector: its proofs are not verified (they cannot be).
    timing_only: bool,
}

impl fmt::Debug for C2Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("C2Pending")
            .field("job", &self.handle.as_ref().map(JobHandle::id))
            .field("partitions", &self.partitions)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish()
    }
}

impl C2Pending {
    /// The engine's id of this job ([`arenaprove_engine::pipeline::WorkTag::job`]).
    pub fn job_id(&self) -> Option<u64> {
        self.handle.as_ref().map(JobHandle::id)
    }

    /// A handle that cancels this sector from another thread.
    pub fn canceller(&self) -> C2Cancel {
        self.cancel.clone()
    }

    /// Waits for the sector. `Ok` only with every partition proven, its public inputs
    /// those filecoin-proofs derives, and its proof verified by the engine (a timing-only
    /// sector: every partition proven; see [`C2Output::is_timing_only`]).
    pub fn wait(mut self) -> Result<C2Output, FilecoinError> {
        let handle = self.handle.take().ok_or_else(|| FilecoinError::Internal("waited twice".into()))?;
        let job = handle.wait()?;
        if self.cancel.is_cancelled() {
            let stopped =
                job.partitions.iter().filter(|p| matches!(p, Err(PartitionError::Cancelled { .. }))).count();
            return Err(FilecoinError::Cancelled {
                partitions_stopped: stopped,
                partitions: job.partitions.len(),
            });
        }
        if let Some(partition) = *self.mismatch.lock().unwrap_or_else(|p| p.into_inner()) {
            return Err(FilecoinError::InputsMismatch { partition });
        }
        if job.partitions.len() != self.partitions {
            return Err(FilecoinError::Internal(format!(
                "{} partitions back for {} submitted",
                job.partitions.len(),
                self.partitions
            )));
        }
        if let Some(e) = job.first_error() {
            return Err(FilecoinError::Partition(e.clone()));
        }
        // `None` only for a proof not verified (every partition proved).
        let proof = if self.timing_only { job.unverified_proof_bytes() } else { job.proof_bytes() };
        let proof = proof.ok_or_else(|| FilecoinError::Unverified {
            partition: job.partitions.iter().position(|p| p.as_ref().is_ok_and(|p| !p.verified)).unwrap_or(0),
        })?;
        let stages = C2Stages::of_job(&job, self.circuit_build, self.synthesis, self.constraints);
        Ok(C2Output { proof, stages, job, timing_only: self.timing_only })
    }
}

impl Drop for C2Pending {
    fn drop(&mut self) {
        if self.handle.is_some() {
            self.cancel.cancel();
        }
    }
}

/// A proven sector: partition proofs concatenated in partition order (192 bytes each),
/// every one verified by the engine against the public inputs filecoin-proofs derives.
/// Only [`C2Pending::wait`] makes one.
#[derive(Debug)]
pub struct C2Output {
    proof: Vec<u8>,
    stages: C2Stages,
    job: JobOutput,
    timing_only: bool,
}

impl C2Output {
    /// Whether this came from a [`C2Circuit::timing_only`] circuit: its bytes have a proof's
    /// size and were made as one, but cannot verify (shape-only parameters).
    pub fn is_timing_only(&self) -> bool {
        self.timing_only
    }

    /// The verified proof bytes (a timing-only sector's: unverified, see
    /// [`C2Output::is_timing_only`]).
    pub fn proof(&self) -> &[u8] {
        &self.proof
    }

    pub fn into_proof(self) -> Vec<u8> {
        self.proof
    }

    /// Where the time went.
    pub fn stages(&self) -> &C2Stages {
        &self.stages
    }

    /// The engine's job output (timeline spans and gaps).
    pub fn job(&self) -> &JobOutput {
        &self.job
    }
}

/// Where one sector's C2 spent its time, from the engine's timeline (summed over
/// partitions) and the circuit building before it.
#[derive(Clone, Debug, Default)]
pub struct C2Stages {
    pub partitions: usize,
    /// Constraints of one partition circuit (bellperson's count, input constraints included).
    pub constraints: usize,
    /// Which synthesis ran: `precompiled` or `generic`.
    pub synthesis_kind: &'static str,
    /// Building the partition circuits and their public inputs, on the submitting thread.
    pub circuit_build: Duration,
    pub synthesis: Duration,
    pub prove_start: Duration,
    pub finalize: Duration,
    pub verify: Duration,
    /// The backend's calls inside `prove_start` and `finalize` (`ntt_h`, `msm_h`, `msm_l`,
    /// ...), in the order they first ran.
    pub calls: Vec<(&'static str, Duration)>,
    /// The job in the engine, from submission to its last partition.
    pub wall: Duration,
}

impl C2Stages {
    fn of_job(
        job: &JobOutput,
        circuit_build: Duration,
        synthesis_kind: &'static str,
        constraints: usize,
    ) -> Self {
        let mut stages = C2Stages {
            partitions: job.partitions.len(),
            constraints,
            synthesis_kind,
            circuit_build,
            wall: job.wall,
            ..C2Stages::default()
        };
        for span in &job.spans {
            let d = Duration::from_nanos(span.dur_ns);
            match (span.level, span.name) {
                (Level::Stage, "synthesize") => stages.synthesis += d,
                (Level::Stage, "prove_start") => stages.prove_start += d,
                (Level::Stage, "finalize") => stages.finalize += d,
                (Level::Stage, "verify") => stages.verify += d,
                (Level::Call, name) => match stages.calls.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, sum)) => *sum += d,
                    None => stages.calls.push((name, d)),
                },
                _ => {}
            }
        }
        stages
    }

    /// Proving (`prove_start` and `finalize`), synthesis excluded.
    pub fn prove(&self) -> Duration {
        self.prove_start + self.finalize
    }

    /// The split as a JSON object (seconds).
    pub fn to_json(&self) -> serde_json::Value {
        let mut obj = serde_json::json!({
            "partitions": self.partitions,
            "constraints": self.constraints,
            "synthesis": self.synthesis_kind,
            "circuit_build_s": self.circuit_build.as_secs_f64(),
            "synthesis_s": self.synthesis.as_secs_f64(),
            "prove_start_s": self.prove_start.as_secs_f64(),
            "finalize_s": self.finalize.as_secs_f64(),
            "verify_s": self.verify.as_secs_f64(),
            "wall_s": self.wall.as_secs_f64(),
        });
        for (name, d) in &self.calls {
            obj[format!("{name}_s")] = serde_json::json!(d.as_secs_f64());
        }
        obj
    }
}

impl fmt::Display for C2Stages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let calls = |names: &[&str]| {
            let parts: Vec<String> = self
                .calls
                .iter()
                .filter(|(n, _)| names.contains(n))
                .map(|(n, d)| format!("{n} {:.2}", d.as_secs_f64()))
                .collect();
            parts.join(", ")
        };
        write!(
            f,
            "{} partition(s) of {} constraints: circuit {:.3} s, synthesis ({}) {:.2} s, prove_start {:.2} s \
             ({}), finalize {:.2} s ({}), verify {:.3} s",
            self.partitions,
            self.constraints,
            self.circuit_build.as_secs_f64(),
            self.synthesis_kind,
            self.synthesis.as_secs_f64(),
            self.prove_start.as_secs_f64(),
            calls(&["ntt_h", "msm_h"]),
            self.finalize.as_secs_f64(),
            calls(&["msm_l", "msm_a", "msm_b_g1", "msm_b_g2"]),
            self.verify.as_secs_f64()
        )
    }
}

/// filecoin-proofs' own `seal_commit_phase2` on the same C1 and the parameter cache it
/// reads (the baseline; it verifies its proof with `verify_seal` before returning).
pub fn reference_c2(c1: &C1Output, info: &SectorInfo) -> Result<Vec<u8>, FilecoinError> {
    let config = c1.registered_proof.porep_config()?;
    crate::params::ParamFiles::for_proof(c1.registered_proof)?.require_params()?;
    // seal_commit_phase2 takes the output by value; round-trip it through its own serde
    // (C1 outputs are not Clone in filecoin-proofs 19.1.0). Excluded from nothing: this
    // costs ~1 ms for 2 KiB.
    crate::tree::each_shape!(&c1.shaped, ShapedC1, out => reference_c2_tree(&config, out, info))
}

fn reference_c2_tree<Tree: crate::tree::SealTree>(
    config: &filecoin_proofs::types::PoRepConfig,
    out: &filecoin_proofs::types::SealCommitPhase1Output<Tree>,
    info: &SectorInfo,
) -> Result<Vec<u8>, FilecoinError> {
    let copy = |e: serde_json::Error| FilecoinError::Internal(format!("C1 copy: {e}"));
    let owned: filecoin_proofs::types::SealCommitPhase1Output<Tree> =
        serde_json::from_slice(&serde_json::to_vec(out).map_err(copy)?).map_err(copy)?;
    let sector_id = storage_proofs_core::sector::SectorId::from(info.sector_id);
    let output = filecoin_proofs::seal_commit_phase2(config, owned, info.prover_id, sector_id)
        .map_err(|e| FilecoinError::proofs("seal_commit_phase2", e))?;
    Ok(output.proof)
}
