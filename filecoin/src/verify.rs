//! Verification with filecoin-proofs' own `verify_seal`: the check the chain makes.
use filecoin_proofs::SINGLE_PARTITION_PROOF_LEN;
use storage_proofs_core::sector::SectorId;

use crate::api::SectorInfo;
use crate::error::FilecoinError;

/// Bytes of one partition proof (bellperson's compressed Groth16 proof).
pub const PARTITION_PROOF_BYTES: usize = SINGLE_PARTITION_PROOF_LEN;

/// The verdict on a seal proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `verify_seal` returned true.
    Accepted,
    /// `verify_seal` returned false (well-formed proof that does not verify).
    Rejected,
    /// `verify_seal` refused the proof bytes (wrong length, a point that does not decode).
    Malformed(String),
}

impl Verdict {
    /// Only `Accepted` is acceptance.
    pub fn is_accepted(&self) -> bool {
        matches!(self, Verdict::Accepted)
    }
}

/// Runs `filecoin_proofs::verify_seal` on `proof` (partition proofs concatenated in
/// partition order) for the sector `info` describes. Verifying key: the `.vk` file in
/// the parameter cache (derived from the `.params` file there when absent).
pub fn verify_seal(info: &SectorInfo, proof: &[u8]) -> Result<Verdict, FilecoinError> {
    let config = info.registered_proof.porep_config()?;
    let partitions = usize::from(config.partitions);
    let expected = partitions * PARTITION_PROOF_BYTES;
    if proof.len() != expected {
        return Ok(Verdict::Malformed(format!(
            "proof is {} bytes; {:?} needs {partitions} partition proofs of {PARTITION_PROOF_BYTES} bytes = {expected}",
            proof.len(),
            info.registered_proof
        )));
    }
    // verify_seal fails (Err) for missing parameters too: look for them first so that a
    // missing file is an error, not a "malformed proof" verdict.
    crate::params::ParamFiles::for_proof(info.registered_proof)?.require_vk_source()?;
    let _span = tracing::info_span!("verify_seal", sector_id = info.sector_id).entered();
    let shape = info.registered_proof.sector_size()?.tree_shape();
    let result = crate::tree::with_tree!(shape, Tree => filecoin_proofs::verify_seal::<Tree>(
        &config,
        info.comm_r,
        info.comm_d,
        info.prover_id,
        SectorId::from(info.sector_id),
        info.ticket,
        info.seed,
        proof,
    ));
    Ok(match result {
        Ok(true) => Verdict::Accepted,
        Ok(false) => Verdict::Rejected,
        Err(e) => Verdict::Malformed(format!("{e:#}")),
    })
}
