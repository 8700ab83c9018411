//! Precompiled C2 circuits: the StackedDrg partition circuit of a sector size is
//! recorded once (from the blank circuit parameter generation uses: no witness needed),
//! saved beside the parameters as `<params file stem>.arenaprove-pce`, and mapped
//! read-only by every later prover or process. Each partition is then synthesized as
//! witness generation plus sparse products ([`arenaprove_circuits::precompiled`]).
//!
//! The file is keyed by the sector size, the parameter cache identifier (a digest of the
//! public parameters) and the storage-proofs version; a file of another circuit or a
//! damaged one is recorded over. A cache directory that cannot be written is not an
//! error: the recording is used from memory and the next process records again.
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arenaprove_circuits::precompiled::Origin;
use arenaprove_circuits::{Precompiled, Shape};
use arenaprove_engine::pipeline::{generic, precompiled_parts, PartitionCircuit};

use crate::api::RegisteredSealProof;
use crate::circuit::{blank_circuit, SectorJob};
use crate::error::FilecoinError;
use crate::params::ParamFiles;

/// The storage-proofs line whose circuits are recorded (part of the file's identity).
const CIRCUIT_CODE: &str = "storage-proofs-porep 19.1.0";

/// Where the recording of `files`' circuit lives: beside its parameters.
pub fn pce_path(files: &ParamFiles) -> PathBuf {
    files.params.with_extension("arenaprove-pce")
}

/// The identity recorded in (and required of) the file.
pub fn pce_identity(files: &ParamFiles) -> String {
    format!("stacked-drg-{} {} {CIRCUIT_CODE}", files.sector_size, files.cache_id)
}

/// How partitions are synthesized.
#[derive(Clone, Debug)]
pub enum Synthesis {
    /// The bellpepper-core trait into `ArenaAssignment` (every `enforce` evaluated).
    Generic,
    /// Witness-only synthesis and sparse products against recorded constraints.
    Precompiled(Arc<Precompiled>),
}

/// A loaded recording and how it was obtained.
#[derive(Debug)]
pub struct LoadedPce {
    pub matrices: Arc<Precompiled>,
    pub origin: Origin,
    /// Wall time to map (and check) or to record and save it.
    pub elapsed: Duration,
}

/// Maps the recording of `registered_proof`'s circuit from beside `files.params`, or
/// records it from the blank circuit (and saves it there).
pub fn load_or_record(
    registered_proof: RegisteredSealProof,
    files: &ParamFiles,
    shape: &Shape,
) -> Result<LoadedPce, FilecoinError> {
    load_or_record_of(files, &pce_identity(files), Some(shape), || blank_circuit(registered_proof))
}

/// The saved recording named `identity` beside `files.params`, mapped and checked, its own
/// shape standing (it was recorded from the circuit `identity` names); `None` when there
/// is none or it does not open, and the caller counts the circuit and goes through
/// [`load_or_record_of`], which records it again.
pub fn open_saved(files: &ParamFiles, identity: &str) -> Option<LoadedPce> {
    let started = Instant::now();
    let path = pce_path(files);
    match Precompiled::open(&path, identity, None) {
        Ok(pc) => {
            tracing::info!(path = %path.display(), "precompiled constraints mapped (their shape taken as the circuit's)");
            Some(LoadedPce { matrices: Arc::new(pc), origin: Origin::Mapped, elapsed: started.elapsed() })
        }
        Err(e) => {
            tracing::info!(path = %path.display(), why = %e, "no saved recording to take the circuit's shape from");
            None
        }
    }
}

/// [`load_or_record`] for any circuit: `identity` names it (and is required of the file),
/// `blank` builds the circuit to record, called only when no valid file is there. With
/// `shape`, a file of another shape is recorded again; without, the recording's own shape
/// stands (it was counted from the same blank circuit).
pub fn load_or_record_of<C: bellpepper_core::Circuit<blstrs::Scalar>>(
    files: &ParamFiles,
    identity: &str,
    shape: Option<&Shape>,
    blank: impl FnOnce() -> Result<C, FilecoinError>,
) -> Result<LoadedPce, FilecoinError> {
    let started = Instant::now();
    let path = pce_path(files);
    let (pc, origin) = Precompiled::open_or_record(&path, identity, shape, || {
        let blank = blank().map_err(|e| arenaprove_circuits::PrecompiledError::Record {
            identity: identity.to_string(),
            reason: e.to_string(),
        })?;
        arenaprove_circuits::record(blank, identity)
    })?;
    match &origin {
        Origin::Mapped => tracing::info!(path = %path.display(), "precompiled constraints mapped"),
        Origin::Recorded { replaced } => {
            tracing::info!(path = %path.display(), ?replaced, "precompiled constraints recorded")
        }
        Origin::RecordedUnsaved { why } => {
            tracing::warn!(path = %path.display(), why, "precompiled constraints recorded but not saved")
        }
    }
    Ok(LoadedPce { matrices: Arc::new(pc), origin, elapsed: started.elapsed() })
}

impl Synthesis {
    /// [`Synthesis::Precompiled`] when `precompiled`, loading or recording it.
    pub fn for_proof(
        registered_proof: RegisteredSealProof,
        files: &ParamFiles,
        shape: &Shape,
        precompiled: bool,
    ) -> Result<Self, FilecoinError> {
        if !precompiled {
            return Ok(Synthesis::Generic);
        }
        Ok(Synthesis::Precompiled(load_or_record(registered_proof, files, shape)?.matrices))
    }

    /// `precompiled` or `generic`: what timings, logs and metrics call it.
    pub fn name(&self) -> &'static str {
        match self {
            Synthesis::Generic => "generic",
            Synthesis::Precompiled(_) => "precompiled",
        }
    }

    /// One line for people: which synthesis, and for precompiled constraints where they
    /// come from and how large they are.
    pub fn describe(&self) -> String {
        match self {
            Synthesis::Precompiled(pc) => format!(
                "precompiled constraints, {} ({:.1} MB, {})",
                pc.source(),
                pc.bytes() as f64 / 1e6,
                if pc.is_mapped() { "mapped" } else { "recorded now, not saved" }
            ),
            Synthesis::Generic => "the bellpepper trait (generic)".to_string(),
        }
    }

    /// A whole circuit as the engine takes it: through the bellpepper trait, or its witness
    /// against the recording (no parts: the circuit has no independent pieces we know of).
    pub fn whole<C: bellpepper_core::Circuit<blstrs::Scalar> + Send + 'static>(
        &self,
        circuit: C,
    ) -> Box<dyn PartitionCircuit> {
        match self {
            Synthesis::Generic => generic(circuit),
            Synthesis::Precompiled(pc) => arenaprove_engine::pipeline::precompiled(circuit, pc.clone()),
        }
    }

    /// Partition `k` of `job` as the engine takes it: the circuit through the bellpepper
    /// trait, or its challenges in pieces, in parallel, against the recording.
    pub fn partition(
        &self,
        job: &SectorJob<'_>,
        k: usize,
    ) -> Result<Box<dyn PartitionCircuit>, FilecoinError> {
        Ok(match self {
            Synthesis::Generic => generic(job.circuit(k)?),
            Synthesis::Precompiled(pc) => precompiled_parts(job.parts(k)?, pc.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    use blstrs::Scalar;
    use ff::Field;

    use super::*;

    /// One boolean: `x * x = x`.
    struct Tiny;

    impl Circuit<Scalar> for Tiny {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Scalar::ONE))?;
            cs.enforce(|| "x * x = x", |lc| lc + x, |lc| lc + x, |lc| lc + x);
            Ok(())
        }
    }

    #[test]
    fn a_recording_is_saved_into_a_cache_directory_that_did_not_exist() {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let dir = tmp.path().join("not").join("yet");
        let files = ParamFiles::named("2KiB", "a tiny circuit".into(), "none".into(), "tiny".into(), &dir);
        let loaded = load_or_record_of(&files, "tiny test circuit", None, || Ok(Tiny)).expect("recorded");
        assert!(matches!(loaded.origin, Origin::Recorded { .. }), "saved, not {:?}", loaded.origin);
        assert!(pce_path(&files).is_file());
        let again = load_or_record_of(&files, "tiny test circuit", None, || Ok(Tiny)).expect("mapped");
        assert!(matches!(again.origin, Origin::Mapped));
    }
}
