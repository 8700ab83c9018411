//! [`EngineError`]: why the engine refused to start or to take a job. A job's own failures
//! are [`super::PartitionError`]s. Every error from below keeps its type as the `source`.

use super::plan::PlanError;
use crate::groth16::Groth16Error;

/// Why the engine refused something (a job's own failures are [`super::PartitionError`]s).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid engine configuration: {0}")]
    Config(String),
    #[error("unknown circuit kind '{kind}' (the engine serves: {known})")]
    UnknownKind { kind: String, known: String },
    #[error("job has {partitions} partitions; limit is {limit} (partitions_per_job_max)")]
    TooManyPartitions { partitions: usize, limit: usize },
    #[error("job has no partitions")]
    NoPartitions,
    #[error("job gives {got} randomness pairs for {partitions} partitions")]
    Randomness { got: usize, partitions: usize },
    /// The parameters were made for another circuit shape.
    #[error("parameters for '{kind}' do not fit its shape: {source}")]
    ParamsShape {
        kind: String,
        #[source]
        source: Groth16Error,
    },
    /// The plan's memory could not be reserved (mapping, pinning, locking, the ledger).
    #[error("reserving engine memory: {source}")]
    Reserve {
        #[source]
        source: Groth16Error,
    },
    /// The backend factory could not build a kind's backend (a GPU that does not open,
    /// bases that do not upload; a non-CPU backend's error names the backend).
    #[error("building the backend for '{kind}': {source}")]
    Backend {
        kind: String,
        #[source]
        source: Groth16Error,
    },
    /// An engine thread could not be started.
    #[error("starting engine thread {thread}: {source}")]
    Spawn {
        thread: String,
        #[source]
        source: std::io::Error,
    },
    /// The synthesis worker pool could not be started.
    #[error("starting the synthesis pool: {0}")]
    ThreadPool(#[from] rayon::ThreadPoolBuildError),
    #[error("{0}")]
    Plan(#[from] PlanError),
    #[error("the engine is shut down")]
    ShutDown,
}
