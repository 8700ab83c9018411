//! C1 outputs of the real shape with random values, built from filecoin-proofs' own types
//! without sealing: every Merkle path as long as the sector's trees (base, sub and top
//! arity as the tree shape says), every column as tall as the sector has layers, the
//! registered proof's challenges per partition and partitions per sector, all values random.
//!
//! Such a C1 synthesizes into exactly the circuit shape of a real sector (what the
//! precompiled recording, the memory plan and the parallel witness are checked against),
//! so a 32 GiB or 64 GiB partition can be synthesized, compared and timed on a machine that
//! never sealed one. Its challenges are the ones the verifier derives from its seed and
//! replica id, and every Merkle path leads to the node it claims (the challenge, or that
//! challenge's DRG and expander parents), so the public inputs the circuit computes are the
//! verifier's and a C2 of it passes the driver's inputs check. The hashes are random, so its
//! vanilla proofs do not verify and its proofs cannot verify: use it for synthesis identity
//! and timing only, never where a proof is expected.
use filecoin_hashers::poseidon::PoseidonDomain;
use filecoin_hashers::Domain;
use filecoin_proofs::constants::{DefaultPieceDomain, DefaultPieceHasher};
use filecoin_proofs::types::{PoRepConfig, SealCommitPhase1Output, VanillaSealProof};
use rand_core::RngCore;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_porep::stacked::{self, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof};
use typenum::{Unsigned, U2};

use crate::api::{C1Output, RegisteredSealProof};
use crate::circuit::compound_public_params;
use crate::error::FilecoinError;
use crate::tree::{with_tree, SealTree};

/// A C1 output for `registered_proof` of the real shape with random values (see the
/// module docs: for synthesis identity and timing only; its proofs cannot verify).
pub fn random_c1(
    registered_proof: RegisteredSealProof,
    rng: &mut impl RngCore,
) -> Result<C1Output, FilecoinError> {
    let config = registered_proof.porep_config()?;
    let shape = registered_proof.sector_size()?.tree_shape();
    let shaped = with_tree!(shape, Tree => random_of::<Tree>(&config, rng)?);
    Ok(C1Output { registered_proof, shaped })
}

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

fn random_of<Tree: SealTree>(
    config: &PoRepConfig,
    rng: &mut impl RngCore,
) -> Result<crate::api::ShapedC1, FilecoinError> {
    let public_params = compound_public_params::<Tree>(config)?;
    let params = &public_params.vanilla_params;
    let nodes = params.graph.size();
    let layers = params.num_layers;
    let per_partition = params.challenges.num_challenges_per_partition();
    let partitions = usize::from(config.partitions);
    let comm_r = PoseidonDomain::random(&mut RngRef(rng));
    let comm_d = DefaultPieceDomain::random(&mut RngRef(rng));
    let replica_id = PoseidonDomain::random(&mut RngRef(rng));
    let seed = random_seed(rng);
    let ticket = random_seed(rng);
    // The verifier's view, from which it derives each partition's challenges.
    let public = stacked::PublicInputs::<PoseidonDomain, DefaultPieceDomain> {
        replica_id,
        seed: Some(seed),
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
    };
    let mut vanilla_proofs = Vec::with_capacity(partitions);
    for k in 0..partitions {
        // One comm_c and one comm_r_last per partition, as the circuit builder checks.
        let roots = Roots {
            comm_c: PoseidonDomain::random(&mut RngRef(rng)),
            comm_r_last: PoseidonDomain::random(&mut RngRef(rng)),
        };
        let challenges = public.challenges(&params.challenges, nodes, Some(k));
        if challenges.len() != per_partition {
            return Err(FilecoinError::Internal(format!(
                "{} challenges derived for partition {k}, {per_partition} expected",
                challenges.len()
            )));
        }
        let proofs = challenges
            .into_iter()
            .map(|challenge| random_challenge::<Tree>(rng, &roots, &params.graph, challenge, layers))
            .collect::<Result<Vec<VanillaSealProof<Tree>>, FilecoinError>>()?;
        vanilla_proofs.push(proofs);
    }
    Ok(Tree::c1(SealCommitPhase1Output {
        vanilla_proofs,
        comm_r: bytes32(&comm_r.into_bytes()),
        comm_d: bytes32(&comm_d.into_bytes()),
        replica_id,
        seed,
        ticket,
    }))
}

/// The tree roots every challenge's paths lead to.
struct Roots {
    comm_c: PoseidonDomain,
    comm_r_last: PoseidonDomain,
}

/// One challenge's vanilla proof: comm_d path (binary, over every node), comm_r_last and
/// comm_c paths (the tree's arities), the challenged column and its parents' columns; each
/// path leads to the node it proves.
fn random_challenge<Tree: SealTree>(
    rng: &mut impl RngCore,
    roots: &Roots,
    graph: &stacked::StackedBucketGraph<Tree::Hasher>,
    challenge: usize,
    layers: usize,
) -> Result<VanillaSealProof<Tree>, FilecoinError> {
    let nodes = graph.size();
    let parents_err = |e| FilecoinError::proofs("deriving a challenge's parents", e);
    let mut drg_parents = vec![0u32; graph.base_graph().degree()];
    graph.base_graph().parents(challenge, &mut drg_parents).map_err(parents_err)?;
    let mut exp_parents = vec![0u32; graph.expansion_degree()];
    graph.expanded_parents(challenge, &mut exp_parents).map_err(parents_err)?;
    let mut bits = challenge;
    let comm_d_path: Vec<(Vec<DefaultPieceDomain>, usize)> = (0..log_floor(nodes, 2))
        .map(|_| {
            let bit = bits % 2;
            bits /= 2;
            (vec![DefaultPieceDomain::random(&mut RngRef(rng))], bit)
        })
        .collect();
    let comm_d_proofs = MerkleProof::<DefaultPieceHasher, U2>::from_parts(
        DefaultPieceDomain::random(&mut RngRef(rng)),
        DefaultPieceDomain::random(&mut RngRef(rng)),
        comm_d_path,
    );
    let column = |rng: &mut dyn RngCore, index: usize| {
        let rows = (0..layers).map(|_| PoseidonDomain::random(&mut RngRef(rng))).collect();
        ColumnProof::new(index as u32, rows, tree_proof::<Tree>(rng, nodes, index, roots.comm_c))
    };
    let replica_column_proofs = ReplicaColumnProof {
        c_x: column(rng, challenge),
        drg_parents: drg_parents.iter().map(|&p| column(rng, p as usize)).collect(),
        exp_parents: exp_parents.iter().map(|&p| column(rng, p as usize)).collect(),
    };
    Ok(stacked::Proof {
        comm_d_proofs,
        comm_r_last_proof: tree_proof::<Tree>(rng, nodes, challenge, roots.comm_r_last),
        replica_column_proofs,
        labeling_proofs: (1..=layers)
            .map(|layer| LabelingProof::new(layer as u32, challenge as u64, Vec::new()))
            .collect(),
        encoding_proof: EncodingProof::new(layers as u32, challenge as u64, Vec::new()),
    })
}

/// A path to leaf `index` through the tree of `nodes` leaves of shape `Tree`: base levels
/// of `Arity`, then one sub-tree level and one top-tree level when the shape has them; each
/// level's position is the index's digit there (leaf level first, as the circuit packs it).
fn tree_proof<Tree: SealTree>(
    rng: &mut dyn RngCore,
    nodes: usize,
    index: usize,
    root: PoseidonDomain,
) -> TreeProof<Tree> {
    let (base, sub, top) =
        (Tree::Arity::to_usize(), Tree::SubTreeArity::to_usize(), Tree::TopTreeArity::to_usize());
    let leaves_per_base = nodes / sub.max(1) / top.max(1);
    let mut rest = index;
    let mut element = |rng: &mut dyn RngCore, arity: usize| {
        let hashes = (0..arity - 1).map(|_| PoseidonDomain::random(&mut RngRef(rng))).collect();
        let digit = rest % arity;
        rest /= arity;
        (hashes, digit)
    };
    let mut path: Vec<_> = (0..log_floor(leaves_per_base, base)).map(|_| element(rng, base)).collect();
    if sub > 0 {
        path.push(element(rng, sub));
    }
    if top > 0 {
        path.push(element(rng, top));
    }
    MerkleProof::from_parts(PoseidonDomain::random(&mut RngRef(rng)), root, path)
}

/// floor(log_base(n)) for n >= 1.
fn log_floor(mut n: usize, base: usize) -> usize {
    let mut levels = 0;
    while n >= base {
        n /= base;
        levels += 1;
    }
    levels
}

fn bytes32(bytes: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&bytes[..32]);
    out
}

fn random_seed(rng: &mut dyn RngCore) -> [u8; 32] {
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    seed[0] |= 1; // never all zero
    seed
}

/// A sized `RngCore` over a `dyn RngCore` (filecoin-hashers' `Domain::random` wants one).
struct RngRef<'a>(&'a mut dyn RngCore);

impl RngCore for RngRef<'_> {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.0.try_fill_bytes(dest)
    }
}
