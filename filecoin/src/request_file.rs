//! A PoSt or SnapDeals request in a file, for a baseline run as a child process
//! (`arenaprove filecoin post-bench --peer-exe`, `snap-bench --peer-exe`;
//! `peer-gpu/filecoin-baseline`, filecoin-proofs built with `cuda-supraseal`). The file holds
//! the request's fields and its vanilla proofs in Curio's encoding (one bincode blob per
//! sector or partition), the whole bincode-encoded. Reading it goes through the parsers the
//! daemon's requests go through ([`PostRequest::from_bincode`], [`SnapRequest::from_bincode`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::post::{reference_post, PostRequest, RegisteredPoStProof};
use crate::snap::{reference_snap, RegisteredUpdateProof, SnapRequest};
use crate::FilecoinError;

/// The file's contents.
#[derive(Serialize, Deserialize)]
enum Stored {
    Post {
        proof: u64,
        randomness: [u8; 32],
        prover_id: [u8; 32],
        partition_index: u64,
        vanilla: Vec<Vec<u8>>,
    },
    Snap {
        proof: u64,
        comm_r_old: [u8; 32],
        comm_r_new: [u8; 32],
        comm_d_new: [u8; 32],
        vanilla: Vec<Vec<u8>>,
    },
}

/// Writes a PoSt request to `path` (read back by [`ProofRequest::read`]).
pub fn write_post(r: &PostRequest, path: &Path) -> Result<(), FilecoinError> {
    store(
        &Stored::Post {
            proof: r.proof.number(),
            randomness: r.randomness,
            prover_id: r.prover_id,
            partition_index: r.partition_index as u64,
            vanilla: r.vanilla_bincode()?,
        },
        path,
    )
}

/// Writes a SnapDeals request to `path` (read back by [`ProofRequest::read`]).
pub fn write_snap(r: &SnapRequest, path: &Path) -> Result<(), FilecoinError> {
    store(
        &Stored::Snap {
            proof: r.proof.number(),
            comm_r_old: r.comm_r_old,
            comm_r_new: r.comm_r_new,
            comm_d_new: r.comm_d_new,
            vanilla: r.vanilla_bincode()?,
        },
        path,
    )
}

fn store(stored: &Stored, path: &Path) -> Result<(), FilecoinError> {
    let bytes = bincode::serialize(stored).map_err(|e| FilecoinError::Internal(format!("bincode: {e}")))?;
    std::fs::write(path, bytes).map_err(|source| FilecoinError::Io { path: path.into(), source })
}

/// A request a baseline proves with filecoin-proofs' own `generate_*_with_vanilla`.
#[derive(Debug)]
pub enum ProofRequest {
    Post(PostRequest),
    Snap(SnapRequest),
}

impl ProofRequest {
    /// Reads a request [`write_post`] or [`write_snap`] wrote; a file that is not one is an error
    /// naming it.
    pub fn read(path: &Path) -> Result<ProofRequest, FilecoinError> {
        let bytes = std::fs::read(path).map_err(|source| FilecoinError::Io { path: path.into(), source })?;
        let in_file =
            |inner: FilecoinError| FilecoinError::InFile { path: path.into(), inner: Box::new(inner) };
        let stored: Stored = crate::post::decode_bincode(&bytes)
            .map_err(|e| in_file(FilecoinError::BadArgument(format!("not a request file: {e}"))))?;
        let unknown =
            |what: &str, n: u64| in_file(FilecoinError::BadArgument(format!("unknown {what} proof {n}")));
        Ok(match stored {
            Stored::Post { proof, randomness, prover_id, partition_index, vanilla } => {
                let proof = RegisteredPoStProof::from_number(proof).ok_or_else(|| unknown("PoSt", proof))?;
                let partition_index = usize::try_from(partition_index).map_err(|_| {
                    in_file(FilecoinError::BadArgument("partition index out of range".into()))
                })?;
                ProofRequest::Post(
                    PostRequest::from_bincode(proof, randomness, prover_id, partition_index, &vanilla)
                        .map_err(in_file)?,
                )
            }
            Stored::Snap { proof, comm_r_old, comm_r_new, comm_d_new, vanilla } => {
                let proof =
                    RegisteredUpdateProof::from_number(proof).ok_or_else(|| unknown("update", proof))?;
                ProofRequest::Snap(
                    SnapRequest::from_bincode(proof, comm_r_old, comm_r_new, comm_d_new, &vanilla)
                        .map_err(in_file)?,
                )
            }
        })
    }

    /// The proof filecoin-proofs makes for it (`generate_*_with_vanilla` of this build).
    pub fn reference(&self) -> Result<Vec<u8>, FilecoinError> {
        match self {
            ProofRequest::Post(r) => reference_post(r),
            ProofRequest::Snap(r) => reference_snap(r),
        }
    }
}
