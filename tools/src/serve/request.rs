//! A `SubmitProofRequest` checked and parsed: every way it can be wrong becomes a gRPC
//! status whose code says what kind of problem it is and whose message names it.
//!
//! PoRep C2 input, as Curio's cuzk client sends it: `vanilla_proof` is the JSON
//! envelope `{"SectorNum": n, "Phase1Out": "<base64>", "SectorSize": bytes}` whose
//! `Phase1Out` is the base64 (Go's encoding of `[]byte`) of filecoin-proofs-api's
//! `SealCommitPhase1Output` JSON, and `registered_proof` is the numeric
//! `RegisteredSealProof` (go-state-types order, which is upstream's declaration order).
//!
//! WinningPoSt and WindowPoSt input, as cuzk's prover reads it: `vanilla_proofs` holds one
//! bincode `FallbackPoStSectorProof` per sector, `randomness` the 32-byte challenge seed,
//! `miner_id` the actor whose prover id (its ID address payload) the proof binds,
//! `partition_index` the WindowPoSt partition; `registered_proof` is the numeric
//! `RegisteredPoStProof` (go-state-types order: Winning 0-4, Window V1 5-9, V1_1 10-14).
//! `sector_size` may be 0 (the size then comes from `registered_proof`); when set it must
//! agree.
//!
//! SnapDeals input: `vanilla_proofs` holds one bincode `PartitionProof` per partition,
//! `comm_r_old`, `comm_r_new` and `comm_d_new` the raw 32-byte commitments;
//! `registered_proof` is the numeric `RegisteredUpdateProof` (0..=4, 2 KiB .. 64 GiB).
//! Curio's proof-share path leaves `sector_size` unset: the size comes from the proof.
use std::hash::{Hash, Hasher};

use arenaprove::filecoin::api::RegisteredSealProof;
use arenaprove::filecoin::circuit::SectorJob;
use arenaprove::filecoin::post::{PostJob, PostKind, PostRequest, RegisteredPoStProof};
use arenaprove::filecoin::snap::{RegisteredUpdateProof, SnapJob, SnapRequest};
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

/// A checked request of any kind, ready to queue.
pub enum JobRequest {
    Porep(PorepRequest),
    Post(PostRequest),
    Snap(SnapRequest),
}

impl JobRequest {
    /// Partitions the job puts into the engine.
    pub fn partitions(&self) -> usize {
        match self {
            JobRequest::Porep(r) => r.c1.partitions(),
            JobRequest::Post(_) => 1,
            JobRequest::Snap(r) => r.len(),
        }
    }
}

/// What a request asks for, once its kind and registered proof are checked (before the
/// payload is parsed).
#[derive(Clone, Copy, Debug)]
pub enum Checked {
    Porep(RegisteredSealProof, CircuitId),
    Post(RegisteredPoStProof, CircuitId),
    Snap(RegisteredUpdateProof, CircuitId),
}

impl Checked {
    pub fn circuit(self) -> CircuitId {
        match self {
            Checked::Porep(_, c) | Checked::Post(_, c) | Checked::Snap(_, c) => c,
        }
    }

    /// Parses and checks the payload (blocking: up to hundreds of MB of proofs, and their
    /// Merkle paths checked).
    pub fn parse(self, req: &SubmitProofRequest) -> Result<JobRequest, Status> {
        match self {
            Checked::Porep(proof, circuit) => parse_porep(req, proof, circuit).map(JobRequest::Porep),
            Checked::Post(proof, _) => parse_post(req, proof).map(JobRequest::Post),
            Checked::Snap(proof, _) => parse_snap(req, proof).map(JobRequest::Snap),
        }
    }
}

/// What identifies a request's content for idempotency: a resubmission under the same
/// `request_id` must carry the same proof request.
pub fn fingerprint(req: &SubmitProofRequest) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (req.proof_kind, req.sector_size, req.registered_proof, req.sector_number, req.miner_id).hash(&mut h);
    (req.partition_index, &req.randomness, &req.comm_r_old, &req.comm_r_new, &req.comm_d_new).hash(&mut h);
    req.vanilla_proof.hash(&mut h);
    req.vanilla_proofs.hash(&mut h);
    h.finish()
}

/// The priority a request asks for; `PRIORITY_UNSPECIFIED` is cuzk's default for the kind:
/// `CRITICAL` for WinningPoSt (a block is at stake), `HIGH` for WindowPoSt (a deadline),
/// `NORMAL` otherwise.
pub fn priority(req: &SubmitProofRequest) -> Result<Priority, Status> {
    match Priority::try_from(req.priority) {
        Ok(Priority::Unspecified) => Ok(match ProofKind::try_from(req.proof_kind) {
            Ok(ProofKind::WinningPost) => Priority::Critical,
            Ok(ProofKind::WindowPostPartition) => Priority::High,
            _ => Priority::Normal,
        }),
        Ok(p) => Ok(p),
        Err(_) => Err(Status::invalid_argument(format!("unknown priority {}", req.priority))),
    }
}

/// The proof kind, or the status that refuses it: every kind Curio sends is proven (PoRep
/// C2, SnapDeals, WinningPoSt, WindowPoSt partitions).
pub fn check_kind(req: &SubmitProofRequest) -> Result<ProofKind, Status> {
    match ProofKind::try_from(req.proof_kind) {
        Ok(ProofKind::Unspecified) => Err(Status::invalid_argument("proof_kind is PROOF_KIND_UNSPECIFIED")),
        Ok(kind) => Ok(kind),
        Err(_) => Err(Status::invalid_argument(format!("unknown proof_kind {}", req.proof_kind))),
    }
}

/// The kind's registered proof and the circuit it needs (cheap checks: size agreement, a
/// proof this build proves), before the payload is parsed.
pub fn check(req: &SubmitProofRequest, kind: ProofKind) -> Result<Checked, Status> {
    match kind {
        ProofKind::WinningPost | ProofKind::WindowPostPartition => {
            let proof = RegisteredPoStProof::from_number(req.registered_proof).ok_or_else(|| {
                Status::invalid_argument(format!(
                    "unknown registered PoSt proof {} (registered PoSt proofs are 0..=14)",
                    req.registered_proof
                ))
            })?;
            let want = if kind == ProofKind::WinningPost { PostKind::Winning } else { PostKind::Window };
            if proof.kind() != want {
                return Err(Status::invalid_argument(format!(
                    "proof_kind {} but registered_proof {} is {proof} (a {} proof)",
                    kind.as_str_name(),
                    req.registered_proof,
                    proof.kind()
                )));
            }
            size_agrees(req, proof.sector_size().bytes(), &proof)?;
            Ok(Checked::Post(proof, CircuitId::post(proof)))
        }
        ProofKind::SnapDealsUpdate => {
            let proof = RegisteredUpdateProof::from_number(req.registered_proof).ok_or_else(|| {
                Status::invalid_argument(format!(
                    "unknown registered update proof {} (registered update proofs are 0..=4)",
                    req.registered_proof
                ))
            })?;
            size_agrees(req, proof.sector_size().bytes(), &proof)?;
            Ok(Checked::Snap(proof, CircuitId::snap(proof.sector_size())))
        }
        _ => check_proof(req).map(|(proof, circuit)| Checked::Porep(proof, circuit)),
    }
}

/// `sector_size` 0 (the size then comes from `proof`), or `bytes`, the proof's size.
fn size_agrees(req: &SubmitProofRequest, bytes: u64, proof: &dyn std::fmt::Display) -> Result<(), Status> {
    if req.sector_size != 0 && req.sector_size != bytes {
        return Err(Status::invalid_argument(format!(
            "sector size mismatch: sector_size is {} but registered_proof {} ({proof}) is for {bytes}-byte sectors",
            req.sector_size, req.registered_proof
        )));
    }
    Ok(())
}

/// The numeric registered seal proof, and the circuit it needs; cheap checks first (size
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
    Ok((proof, CircuitId::porep(size)))
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

/// Cuzk's prover id for a miner: the payload of its ID address (the actor id as an
/// unsigned LEB128 varint), left-aligned in 32 bytes; what Curio's `toProverID` gives.
pub fn prover_id(miner_id: u64) -> [u8; 32] {
    let mut id = [0u8; 32];
    let (mut v, mut i) = (miner_id, 0);
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            id[i] = byte;
            return id;
        }
        id[i] = byte | 0x80;
        i += 1;
    }
}

/// Parses and checks a PoSt payload (blocking: bincode of up to ~200 MB for a 32 GiB
/// WindowPoSt partition, and the vanilla proofs' Merkle paths checked against the
/// randomness and comm_r's before anything is queued).
pub fn parse_post(req: &SubmitProofRequest, proof: RegisteredPoStProof) -> Result<PostRequest, Status> {
    if req.vanilla_proofs.is_empty() {
        return Err(Status::invalid_argument(format!(
            "vanilla_proofs is empty ({} takes one bincode FallbackPoStSectorProof per sector)",
            proof.kind()
        )));
    }
    let randomness: [u8; 32] = req.randomness.as_slice().try_into().map_err(|_| {
        Status::invalid_argument(format!("randomness must be exactly 32 bytes, got {}", req.randomness.len()))
    })?;
    let partition_index = match proof.kind() {
        PostKind::Winning if req.partition_index != 0 => {
            return Err(Status::invalid_argument(format!(
                "WinningPoSt has one partition; partition_index is {}",
                req.partition_index
            )))
        }
        _ => req.partition_index as usize,
    };
    let request = PostRequest::from_bincode(
        proof,
        randomness,
        prover_id(req.miner_id),
        partition_index,
        &req.vanilla_proofs,
    )
    .map_err(|e| post_status(&e))?;
    // The vanilla proofs against the randomness, prover and comm_r's: a request for
    // another epoch or miner fails here, not after a proof.
    PostJob::new(&request).map_err(|e| post_status(&e))?;
    Ok(request)
}

/// Parses and checks a SnapDeals payload: the three commitments, one bincode
/// `PartitionProof` per partition, verified against the commitments before queueing.
pub fn parse_snap(req: &SubmitProofRequest, proof: RegisteredUpdateProof) -> Result<SnapRequest, Status> {
    let comm = |bytes: &[u8], what: &str| -> Result<[u8; 32], Status> {
        bytes.try_into().map_err(|_| {
            Status::invalid_argument(format!("{what} must be exactly 32 bytes, got {}", bytes.len()))
        })
    };
    let (old, new, d) = (
        comm(&req.comm_r_old, "comm_r_old")?,
        comm(&req.comm_r_new, "comm_r_new")?,
        comm(&req.comm_d_new, "comm_d_new")?,
    );
    if req.vanilla_proofs.is_empty() {
        return Err(Status::invalid_argument(
            "vanilla_proofs is empty (SnapDeals takes one bincode PartitionProof per partition)",
        ));
    }
    let request =
        SnapRequest::from_bincode(proof, old, new, d, &req.vanilla_proofs).map_err(|e| post_status(&e))?;
    SnapJob::new(&request).map_err(|e| post_status(&e))?;
    Ok(request)
}

/// The status for a PoSt or SnapDeals request the adapter refused.
fn post_status(e: &FilecoinError) -> Status {
    match e {
        FilecoinError::BadVanilla(_) | FilecoinError::BadArgument(_) | FilecoinError::CircuitBuild { .. } => {
            Status::invalid_argument(e.to_string())
        }
        FilecoinError::MissingParams { .. } => Status::failed_precondition(e.to_string()),
        // setup, I/O, parameters: the daemon's side, not the request's.
        _ => Status::internal(e.to_string()),
    }
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
    fn prover_ids_are_id_address_payloads_and_priorities_follow_the_kind() {
        assert_eq!(prover_id(1000)[..3], [0xe8, 0x07, 0x00]);
        assert_eq!(prover_id(0)[..2], [0, 0]);
        assert_eq!(prover_id(127)[..2], [0x7f, 0]);
        assert_eq!(prover_id(128)[..3], [0x80, 0x01, 0]);
        assert_eq!(prover_id(u64::MAX)[9..11], [0x01, 0]);
        let p = |kind: ProofKind| priority(&request(kind, 0, 0)).unwrap();
        assert_eq!(p(ProofKind::WinningPost), Priority::Critical);
        assert_eq!(p(ProofKind::WindowPostPartition), Priority::High);
        assert_eq!(p(ProofKind::PorepSealCommit), Priority::Normal);
        let low =
            SubmitProofRequest { priority: Priority::Low as i32, ..request(ProofKind::WinningPost, 0, 0) };
        assert_eq!(priority(&low).unwrap(), Priority::Low, "an explicit priority wins");
    }

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
        // SnapDeals: update proofs 0..=4, sector_size may be unset (Curio's proof-share path).
        let snap = request(ProofKind::SnapDealsUpdate, 3, 0);
        assert_eq!(check(&snap, check_kind(&snap).unwrap()).unwrap().circuit().name(), "snap-32g");
        let e = check(&request(ProofKind::SnapDealsUpdate, 5, 0), ProofKind::SnapDealsUpdate).unwrap_err();
        assert!(e.message().contains("0..=4"), "{}", e.message());
        // PoSt: go-state-types' numbers, the kind must agree, sector_size 0 is allowed.
        let winning = request(ProofKind::WinningPost, 3, 0);
        let c = check(&winning, check_kind(&winning).unwrap()).unwrap();
        assert_eq!(c.circuit().name(), "winning-32g");
        let window = request(ProofKind::WindowPostPartition, 10, 2048);
        assert_eq!(check(&window, check_kind(&window).unwrap()).unwrap().circuit().name(), "wpost-2k");
        let e = check(&request(ProofKind::WinningPost, 10, 0), ProofKind::WinningPost).unwrap_err();
        assert!(e.message().contains("WindowPoSt"), "{}", e.message());
        let e = check(&request(ProofKind::WindowPostPartition, 10, 4096), ProofKind::WindowPostPartition)
            .unwrap_err();
        assert!(e.message().contains("sector size mismatch"), "{}", e.message());
        let e = check(&request(ProofKind::WinningPost, 15, 0), ProofKind::WinningPost).unwrap_err();
        assert!(e.message().contains("0..=14"), "{}", e.message());
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
