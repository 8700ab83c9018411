//! Jobs, their circuits, and what comes back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bellpepper_core::{Circuit, SynthesisError};
use blstrs::Scalar;

use super::error::EngineError;
use super::timeline::{Span, StageGap};
use crate::groth16::{Groth16Error, Proof};
use arenaprove_circuits::ArenaAssignment;

/// One partition circuit, synthesized straight into an [`ArenaAssignment`].
///
/// bellpepper's `Circuit::synthesize` is generic over the constraint system and so not
/// object-safe; this trait is its object-safe form. Wrap any bellpepper circuit with
/// [`generic`]; circuits with a native path implement it directly.
pub trait PartitionCircuit: Send + 'static {
    fn synthesize_into(self: Box<Self>, cs: &mut ArenaAssignment) -> Result<(), SynthesisError>;
}

/// A bellpepper-core circuit run through the `ConstraintSystem` trait.
pub struct Generic<C>(pub C);

impl<C: Circuit<Scalar> + Send + 'static> PartitionCircuit for Generic<C> {
    fn synthesize_into(self: Box<Self>, cs: &mut ArenaAssignment) -> Result<(), SynthesisError> {
        self.0.synthesize(cs)
    }
}

/// Boxes a bellpepper-core circuit as a partition circuit.
pub fn generic<C: Circuit<Scalar> + Send + 'static>(c: C) -> Box<dyn PartitionCircuit> {
    Box::new(Generic(c))
}

/// Proving randomness for one partition, for exact comparisons (tests); normally drawn
/// from the OS's entropy.
#[derive(Clone, Copy, Debug)]
pub struct Randomness {
    pub r: Scalar,
    pub s: Scalar,
}

/// A sector (P partitions of one circuit kind) or a single partition.
pub struct Job {
    /// Names a circuit kind registered with the engine (its params and shape).
    pub kind: String,
    pub partitions: Vec<Box<dyn PartitionCircuit>>,
    /// One per partition, or `None` to draw fresh randomness.
    pub randomness: Option<Vec<Randomness>>,
    /// Higher first (default 0): when a slot frees, the engine gives it to the waiting
    /// partition of the highest priority, oldest first within one (among the
    /// `job_queue_max` partitions the dispatcher holds; beyond, submission order). A
    /// partition already holding a slot runs to its end: a higher job waits for the next
    /// free slot, not for the lower jobs queued before it (the daemon: WinningPoSt before
    /// WindowPoSt before PoRep). Past the slot, the pipeline's stages are FIFO.
    pub priority: i32,
}

impl Job {
    pub fn new(kind: impl Into<String>, partitions: Vec<Box<dyn PartitionCircuit>>) -> Job {
        Job { kind: kind.into(), partitions, randomness: None, priority: 0 }
    }

    /// This job at `priority` ([`Job::priority`]).
    pub fn with_priority(mut self, priority: i32) -> Job {
        self.priority = priority;
        self
    }
}

/// Why one partition (and so its job) failed. Errors keep their type (`source`); the
/// message is their display.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PartitionError {
    #[error("partition {partition}: synthesis failed: {source}")]
    Synthesis { partition: u32, source: Arc<Groth16Error> },
    /// A panic caught in synthesis or proving (its payload, when it is a string).
    #[error("partition {partition}: panicked: {reason}")]
    Panicked { partition: u32, reason: String },
    #[error("partition {partition}: proving failed: {source}")]
    Prove { partition: u32, source: Arc<Groth16Error> },
    #[error("partition {partition}: proof does not verify (is the circuit satisfied?)")]
    Unverified { partition: u32 },
    /// Verification could not run (not the same as a rejected proof).
    #[error("partition {partition}: verification failed to run: {source}")]
    Verify { partition: u32, source: Arc<Groth16Error> },
    /// Its job was cancelled ([`JobHandle::cancel`]) or the engine shut down with
    /// [`super::ShutdownMode::Cancel`] before the partition reached the prover.
    #[error("partition {partition}: cancelled")]
    Cancelled { partition: u32 },
}

/// A finished partition.
#[derive(Clone, Debug)]
pub struct PartitionOutput {
    pub partition: u32,
    pub proof: Proof,
    /// Public inputs, ONE excluded (what a verifier is given).
    pub public_inputs: Vec<Scalar>,
    pub verified: bool,
}

/// What a job hands back: every partition in order, or the first error; always its timeline.
#[derive(Debug)]
pub struct JobOutput {
    pub job_id: u64,
    pub kind: String,
    pub partitions: Vec<Result<PartitionOutput, PartitionError>>,
    pub spans: Vec<Span>,
    pub gaps: Vec<StageGap>,
    pub wall: Duration,
}

impl JobOutput {
    /// All partitions proven (and verified, when the engine verifies).
    pub fn is_ok(&self) -> bool {
        self.partitions.iter().all(|p| p.is_ok())
    }
    pub fn first_error(&self) -> Option<&PartitionError> {
        self.partitions.iter().find_map(|p| p.as_ref().err())
    }
    /// Verified partition proofs concatenated in partition order (192 bytes each), as
    /// Filecoin's multi-partition proofs are; `None` if any partition failed or was not
    /// verified (an engine with `verify: false`: see [`JobOutput::unverified_proof_bytes`]).
    pub fn proof_bytes(&self) -> Option<Vec<u8>> {
        self.concat_proofs(true)
    }

    /// The proofs as [`JobOutput::proof_bytes`], verified or not (an engine that does not
    /// verify, e.g. to time the prover alone); `None` if any partition failed.
    pub fn unverified_proof_bytes(&self) -> Option<Vec<u8>> {
        self.concat_proofs(false)
    }

    fn concat_proofs(&self, verified_only: bool) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(self.partitions.len() * crate::groth16::PROOF_BYTES);
        for p in &self.partitions {
            let p = p.as_ref().ok()?;
            if verified_only && !p.verified {
                return None;
            }
            out.extend_from_slice(&p.proof.to_bytes());
        }
        Some(out)
    }
}

/// A caught panic's message (its `&str` or `String` payload), for a typed error.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Waits for a submitted job, or cancels it.
pub struct JobHandle {
    pub(crate) job_id: u64,
    pub(crate) rx: crossbeam::channel::Receiver<JobOutput>,
    pub(crate) cancel: JobCanceller,
}

impl JobHandle {
    pub fn id(&self) -> u64 {
        self.job_id
    }
    /// Blocks until the job ends (successfully, failed or cancelled).
    pub fn wait(self) -> Result<JobOutput, EngineError> {
        self.rx.recv().map_err(|_| EngineError::ShutDown)
    }
    /// Cancels the job; see [`JobCanceller::cancel`].
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
    /// A handle that cancels this job from elsewhere (another thread, a job table) while
    /// [`JobHandle::wait`] blocks.
    pub fn canceller(&self) -> JobCanceller {
        self.cancel.clone()
    }
}

/// Cancels one job. Clones share the job's flag.
#[derive(Clone, Debug)]
pub struct JobCanceller(Arc<AtomicBool>);

impl JobCanceller {
    pub(crate) fn new() -> JobCanceller {
        JobCanceller(Arc::new(AtomicBool::new(false)))
    }
    /// The job's partitions that have not reached the prover end with
    /// [`PartitionError::Cancelled`] and give their slot back: those queued or waiting for
    /// a slot at once, one being synthesized when its synthesis ends. Those already
    /// proving finish. The job still ends as usual: [`JobHandle::wait`] returns its
    /// output. Cancelling twice, or a finished job, does nothing.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A circuit with a native path (the circuits crate's gadgets), synthesized without the
/// bellpepper trait's temporary linear combinations.
pub struct Native<C>(pub C);

impl<C: arenaprove_circuits::native::NativeCircuit + Send + 'static> PartitionCircuit for Native<C> {
    fn synthesize_into(self: Box<Self>, cs: &mut ArenaAssignment) -> Result<(), SynthesisError> {
        self.0.synthesize_native(cs).map_err(|e| e.into_synthesis())
    }
}

/// Boxes a native circuit as a partition circuit.
pub fn native<C: arenaprove_circuits::native::NativeCircuit + Send + 'static>(
    c: C,
) -> Box<dyn PartitionCircuit> {
    Box::new(Native(c))
}
