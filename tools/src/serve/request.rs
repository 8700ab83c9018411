//! A `SubmitProofRequest` checked and parsed: every way it can be wrong becomes a gRPC
//! status whose code says what kind of problem it is and whose message names it.
//!
//! PoRep C2 input, as Curio's cuzk client sends it: `vanilla_proof` is the JSON
//! envelope `{"SectorNum": n, "Phase1Out": "<base64>", "SectorSize": bytes}` whose
//! `Phase1Out` is the base64 (Go's encoding of `[]byte`) of filecoin-proofs-api's
//! `SealCommitPhase1Output` JSON, and `registered_proof` is the numeric
//! `RegisteredSealProof` (go-state-types order, which is upstream's declaration order).
use std::hash::{Hash, Hasher};

use arenaprove::filecoin::api::RegisteredSealProof;
use arenaprove::filecoin::circuit::SectorJob;
use arenaprove::filecoin::{C1Output, FilecoinError};
use base64::Engine as _;
use serde::Deserialize;
use tonic::Status;

use super::circuits::CircuitId;
use super::pb::{Priority, ProofKind, SubmitProofRequest};

/// Numeric registered seal proofs, in go-state-types order (its `abi.RegisteredSealProof`).
const REGISTERED_SEAL_PROOFS: usize = 20;

/// The envelope Curio wraps a C1 output in.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    #[serde(rename = "SectorNum")]
    sector_num: u64,
    /// `null` when Go marshals a nil slice.
    #[serde(rename = "Phase1Out")]
    phase1_out: Option<String>,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

/// A checked PoRep C2 request, ready to queue.
pub struct PorepRequest {
    pub circuit: CircuitId,
    pub c1: C1Output,
    pub sector_number: u64,
    pub priority: Priority,
}

/// What identifies a request's content for idempotency: a resubmission under the same
/// `request_id` must carry the same proof request.
pub fn fingerprint(req: &SubmitProofRequest) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (req.proof_kind, req.sector_size, req.registered_proof, req.sector_number, req.miner_id).hash(&mut h);
    req.vanilla_proof.hash(&mut h);
    req.vanilla_proofs.hash(&mut h);
    h.finish()
}

/// The priority a request asks for (`PRIORITY_UNSPECIFIED` is `NORMAL`).
pub fn priority(req: &SubmitProofRequest) -> Result<Priority, Status> {
    match Priority::try_from(req.priority) {
        Ok(Priority::Unspecified) => Ok(Priority::Normal),
        Ok(p) => Ok(p),
        Err(_) => Err(Status::invalid_argument(format!("unknown priority {}", req.priority))),
    }
}

/// The proof kind, or the status that refuses it: only `POREP_SEAL_COMMIT` is proven.
pub fn check_kind(req: &SubmitProofRequest) -> Result<(), Status> {
    match ProofKind::try_from(req.proof_kind) {
        Ok(ProofKind::PorepSealCommit) => Ok(()),
        Ok(ProofKind::Unspecified) => Err(Status::invalid_argument("proof_kind is PROOF_KIND_UNSPECIFIED")),
        Ok(kind) => Err(Status::unimplemented(format!(
            "proof kind {} is not proven by arenaprove yet (only POREP_SEAL_COMMIT)",
            kind.as_str_name()
        ))),
        Err(_) => Err(Status::invalid_argument(format!("unknown proof_kind {}", req.proof_kind))),
    }
}

/// The numeric registered proof, and the circuit it needs; cheap checks first (size
/// agreement, a proof this build proves), before the payload is parsed.
pub fn check_proof(req: &SubmitProofRequest) -> Result<(RegisteredSealProof, CircuitId), Status> {
    let proof = registered_proof(req.registered_proof)?;
    let size_bytes = proof.sector_size_bytes();
    if req.sector_size != size_bytes {
        return Err(Status::invalid_argument(format!(
            "sector size mismatch: sector_size is {} but registered_proof {} ({proof:?}) is for {size_bytes}-byte sectors",
            req.sector_size, req.registered_proof
        )));
    }
    let size = proof.sector_size().map_err(|e| Status::unimplemented(format!("{proof:?}: {e}")))?;
    // Non-interactive PoRep and friends: refused by the adapter with its reason.
    proof.porep_config().map_err(|e| Status::unimplemented(format!("{proof:?}: {e}")))?;
    Ok((proof, CircuitId::for_size(size)))
}

/// A numeric `RegisteredSealProof`.
pub fn registered_proof(n: u64) -> Result<RegisteredSealProof, Status> {
    let name = (n < REGISTERED_SEAL_PROOFS as u64).then(|| proof_name(n as usize));
    name.and_then(|name| name.parse::<RegisteredSealProof>().ok()).ok_or_else(|| {
        Status::invalid_argument(format!(
            "unknown registered proof {n} (registered seal proofs are 0..={})",
            REGISTERED_SEAL_PROOFS - 1
        ))
    })
}

/// The upstream name of seal proof number `n` (< 20).
fn proof_name(n: usize) -> String {
    const SIZES: [&str; 5] = ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"];
    const FAMILIES: [&str; 4] = ["V1", "V1_1", "V1_1_Feat_SyntheticPoRep", "V1_2_Feat_NonInteractivePoRep"];
    format!("StackedDrg{}{}", SIZES[n % 5], FAMILIES[n / 5])
}

/// Parses and checks the payload (blocking: JSON of up to ~50 MB, vanilla proof checks).
pub fn parse_porep(
    req: &SubmitProofRequest,
    proof: RegisteredSealProof,
    circuit: CircuitId,
) -> Result<PorepRequest, Status> {
    if req.vanilla_proof.is_empty() {
        return Err(Status::invalid_argument(
            "vanilla_proof is empty (PoRep C2 takes the C1 envelope {SectorNum, Phase1Out, SectorSize})",
        ));
    }
    let envelope: Envelope = serde_json::from_slice(&req.vanilla_proof).map_err(|e| {
        let what = if e.is_eof() { "truncated" } else { "malformed" };
        Status::invalid_argument(format!(
            "vanilla_proof: {what} C1 envelope JSON (expected {{SectorNum, Phase1Out, SectorSize}}): {e}"
        ))
    })?;
    if envelope.sector_size != req.sector_size {
        return Err(Status::invalid_argument(format!(
            "sector size mismatch: the envelope's SectorSize is {} but sector_size is {}",
            envelope.sector_size, req.sector_size
        )));
    }
    if req.sector_number != 0 && envelope.sector_num != req.sector_number {
        return Err(Status::invalid_argument(format!(
            "the envelope's SectorNum {} differs from sector_number {}",
            envelope.sector_num, req.sector_number
        )));
    }
    let b64 = envelope.phase1_out.unwrap_or_default();
    if b64.is_empty() {
        return Err(Status::invalid_argument("vanilla_proof: the envelope's Phase1Out is empty"));
    }
    let c1_json = base64::engine::general_purpose::STANDARD
        .decode(b64.as_bytes())
        .map_err(|e| Status::invalid_argument(format!("vanilla_proof: Phase1Out is not base64: {e}")))?;
    drop(b64);
    let c1 = C1Output::from_json(&c1_json, None).map_err(|e| c1_status(&e))?;
    drop(c1_json);
    if c1.registered_proof != proof {
        let theirs = c1.registered_proof;
        let size = if theirs.sector_size_bytes() != proof.sector_size_bytes() {
            "sector size mismatch: "
        } else {
            ""
        };
        return Err(Status::invalid_argument(format!(
            "{size}registered_proof {} ({proof:?}) but Phase1Out is a C1 output of {theirs:?}",
            req.registered_proof
        )));
    }
    let job = SectorJob::new(&c1).map_err(|e| c1_status(&e))?;
    // The Merkle paths and labels of every challenge, against the seed and commitments:
    // what commit phase 1 checks before it returns. A C1 tampered with fails here.
    let ok = job.verify_vanilla().map_err(|e| c1_status(&e))?;
    if !ok {
        return Err(Status::invalid_argument(
            "Phase1Out: the vanilla proofs do not verify against the C1's seed, replica id and commitments \
             (a tampered or mixed-up C1 output)",
        ));
    }
    drop(job);
    Ok(PorepRequest { circuit, c1, sector_number: envelope.sector_num, priority: priority(req)? })
}

/// The status for a C1 the adapter refused.
fn c1_status(e: &FilecoinError) -> Status {
    match e {
        FilecoinError::UnsupportedSectorSize { .. } | FilecoinError::Unsupported(_) => {
            Status::unimplemented(format!("Phase1Out: {e}"))
        }
        FilecoinError::MissingParams { .. } => Status::failed_precondition(e.to_string()),
        FilecoinError::Internal(_) | FilecoinError::Engine(_) => Status::internal(e.to_string()),
        _ => Status::invalid_argument(format!("Phase1Out: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_registered_proofs_follow_go_state_types() {
        assert_eq!(registered_proof(0).unwrap(), RegisteredSealProof::StackedDrg2KiBV1);
        assert_eq!(registered_proof(5).unwrap(), RegisteredSealProof::StackedDrg2KiBV1_1);
        assert_eq!(registered_proof(8).unwrap(), RegisteredSealProof::StackedDrg32GiBV1_1);
        assert_eq!(
            registered_proof(19).unwrap(),
            RegisteredSealProof::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep
        );
        for n in 0..20 {
            assert_eq!(registered_proof(n).unwrap().proof_id(), n);
        }
        let e = registered_proof(20).unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        assert!(e.message().contains("unknown registered proof 20"), "{}", e.message());
    }

    fn request(kind: ProofKind, proof: u64, size: u64) -> SubmitProofRequest {
        SubmitProofRequest {
            proof_kind: kind as i32,
            registered_proof: proof,
            sector_size: size,
            ..Default::default()
        }
    }

    #[test]
    fn kinds_and_sizes_are_checked_before_the_payload() {
        let e = check_kind(&request(ProofKind::WinningPost, 5, 2048)).unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unimplemented);
        assert!(e.message().contains("WINNING_POST"), "{}", e.message());
        assert_eq!(
            check_kind(&request(ProofKind::Unspecified, 5, 2048)).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );

        let e = check_proof(&request(ProofKind::PorepSealCommit, 5, 4096)).unwrap_err();
        assert!(e.message().contains("sector size mismatch"), "{}", e.message());
        // Every size has a circuit; non-interactive PoRep is refused with its reason.
        for (n, bytes, proof, name) in [
            (5, 2048, RegisteredSealProof::StackedDrg2KiBV1_1, "porep-2k"),
            (8, 32 << 30, RegisteredSealProof::StackedDrg32GiBV1_1, "porep-32g"),
            (9, 64 << 30, RegisteredSealProof::StackedDrg64GiBV1_1, "porep-64g"),
            (13, 32 << 30, RegisteredSealProof::StackedDrg32GiBV1_1_Feat_SyntheticPoRep, "porep-32g"),
        ] {
            let (got, circuit) = check_proof(&request(ProofKind::PorepSealCommit, n, bytes)).unwrap();
            assert_eq!((got, circuit.name()), (proof, name));
        }
        let e = check_proof(&request(ProofKind::PorepSealCommit, 18, 32 << 30)).unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unimplemented, "{}", e.message());
        assert!(e.message().contains("non-interactive"), "{}", e.message());
    }
}
