//! One StackedDrg challenge in pieces, for the parallel witness ([`crate::circuit::SealParts`]).
//!
//! A partition of a small sector has two challenges, so a part per challenge keeps two cores
//! busy. The witness of one challenge is mostly SHA-256: the comm_d inclusion path (one
//! SHA-256 of two nodes per level) and one label per layer (a SHA-256 of 20 blocks). Both
//! are chains, but each link's input is known outside the circuit: a level's node is the
//! native hash of the levels below, a block's midstate the native compression of the blocks
//! before. So a challenge is synthesized here in pieces that each start mid-chain, in the
//! order storage-proofs' `Proof::synthesize` (stacked/circuit/params.rs) synthesizes them:
//!
//! | pieces | what is the piece's own (serial order) |
//! |---|---|
//! | one per comm_d level | level 0 first allocates the data leaf; the last packs the path bits into inputs and checks the root |
//! | 2 | the DRG parents' columns (allocation, column hash, inclusion in tree C), then the expander parents' |
//! | per layer: 1 + [`BLOCKS_PER_PIECE`]-block pieces | the parents' bits (layer 1: after the challenge index, made public); then the label's SHA-256, the last piece packing it into a number |
//! | 2 | the encoded node and its inclusion in tree R; the column hash of the labels and its inclusion in tree C |
//!
//! Everything a piece needs from before it (the prologue's values, a node, a midstate, a
//! column) it rebuilds inside [`PartCs::replay`], from the vanilla proof or by native
//! hashing: allocated as the serial synthesis allocates it (bits stay bits, constants
//! constants), so the gadgets take the same paths, and sent to scratch. The gadgets are
//! storage-proofs', bellperson's and neptune's own, called as `Proof::synthesize` calls them,
//! but for the SHA-256 compressions of the labels and the comm_d path (most of a
//! partition), whose witness [`crate::sha_witness`] computes natively as bellperson's gadget
//! would write it; only the loops that chain them are written here. Whether the pieces add up to the serial
//! witness is not assumed: [`arenaprove_circuits::precompiled`] checks every piece's counts
//! against the recording, and the tests check the bytes against the serial synthesis.
use std::ops::Range;

use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{ConstraintSystem, SynthesisError};
use bellperson::gadgets::multipack;
use bellperson::gadgets::uint32::UInt32;
use blstrs::Scalar;
use filecoin_hashers::poseidon::PoseidonDomain;
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::{HashFunction, Hasher, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use filecoin_proofs::constants::DefaultPieceDomain;
use filecoin_proofs::types::VanillaSealProof;
use storage_proofs_core::gadgets::por::PoRCircuit;
use storage_proofs_core::gadgets::{
    constraint, encode::encode, insertion::insert, uint64::UInt64, variables::Root,
};
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::{StackedCircuit, TOTAL_PARENTS};
use typenum::{U11, U2};

use arenaprove_circuits::native::sha256::IV as SHA256_IV;
use arenaprove_circuits::precompiled::PartCs;

use crate::sha_witness::{self, Bit, Witness, Word};
use crate::tree::SealTree;

/// SHA-256 blocks per label piece: 2 of a label's 20, each piece ~45k constraints, about one
/// comm_d level.
pub const BLOCKS_PER_PIECE: usize = 2;
/// Bits of a label's SHA-256 input: replica id, layer and node, 37 parents, 32 bytes each.
const LABEL_INPUT_BITS: usize = (2 + TOTAL_PARENTS) * 256;
/// Blocks of a label's SHA-256, padding included.
const LABEL_BLOCKS: usize = (LABEL_INPUT_BITS + 1 + 64).div_ceil(512);

type G = filecoin_proofs::constants::DefaultPieceHasher;

/// The public values of the partition: what the prologue allocates.
pub(crate) struct Publics {
    pub replica_id: PoseidonDomain,
    pub comm_d: DefaultPieceDomain,
    pub comm_r: PoseidonDomain,
    pub comm_r_last: PoseidonDomain,
    pub comm_c: PoseidonDomain,
}

/// The prologue's variables a piece uses, rebuilt (values only).
struct Prologue {
    replica_id_bits: Vec<Boolean>,
    comm_d: AllocatedNum<Scalar>,
    comm_r_last: AllocatedNum<Scalar>,
    comm_c: AllocatedNum<Scalar>,
}

/// What a piece of a challenge is (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Piece {
    CommDLevel(usize),
    DrgParents,
    ExpParents,
    ParentBits { layer: usize },
    Label { layer: usize, blocks: (usize, usize) },
    Encoding,
    ColumnHash,
}

/// The pieces of a challenge whose comm_d path has `levels` levels, of `layers` layers.
fn layout(levels: usize, layers: usize) -> Vec<Piece> {
    let mut pieces: Vec<Piece> = (0..levels).map(Piece::CommDLevel).collect();
    pieces.extend([Piece::DrgParents, Piece::ExpParents]);
    for layer in 1..=layers {
        pieces.push(Piece::ParentBits { layer });
        for first in (0..LABEL_BLOCKS).step_by(BLOCKS_PER_PIECE) {
            pieces
                .push(Piece::Label { layer, blocks: (first, (first + BLOCKS_PER_PIECE).min(LABEL_BLOCKS)) });
        }
    }
    pieces.extend([Piece::Encoding, Piece::ColumnHash]);
    pieces
}

/// How many pieces a challenge of `proof`'s shape is synthesized in.
pub(crate) fn pieces<Tree: SealTree>(proof: &VanillaSealProof<Tree>) -> usize {
    layout(proof.comm_d_proofs.as_options().len(), proof.labeling_proofs.len()).len()
}

/// The shape of `StackedCircuit::synthesize`: a constraint system, five commitments, the
/// per-challenge proofs.
type SynthesizeFn<CS, A, B, C, D, E, P> = fn(CS, A, B, C, D, E, Vec<P>) -> Result<(), SynthesisError>;

/// The expander (`exp`) or DRG parents' column proofs of a circuit `Proof` (whose type cannot
/// be named here: see [`typed`]).
macro_rules! parents {
    ($proof:expr, $exp:expr) => {
        if $exp {
            &$proof.exp_parents_proofs
        } else {
            &$proof.drg_parents_proofs
        }
    };
}

/// Checks that `vanilla` has the shape the pieces assume: a binary comm_d path, parents of
/// both kinds, and every parent's column one row per layer (one labeling proof per layer).
/// storage-proofs' own synthesis asserts as much; this says it as an error instead.
pub(crate) fn check_shape<Tree: SealTree>(vanilla: &VanillaSealProof<Tree>) -> Result<(), String> {
    if vanilla.comm_d_proofs.as_options().iter().any(|(hashes, _)| hashes.len() != 1) {
        return Err("a comm_d path level of other than one sibling".into());
    }
    let layers = vanilla.labeling_proofs.len();
    let proof = typed(StackedCircuit::<Tree, G>::synthesize::<&mut PartCs<'_>>, vanilla.clone());
    for exp in [false, true] {
        let parents = parents!(proof, exp);
        if parents.is_empty() {
            return Err(format!("no {} parents", if exp { "expander" } else { "DRG" }));
        }
        for column in parents {
            let mut rows = bellpepper_core::test_cs::TestConstraintSystem::<Scalar>::new();
            column.clone().alloc(&mut rows).map_err(|e| format!("a parent's column: {e}"))?;
            if rows.scalar_aux().len() != layers {
                return Err(format!(
                    "a parent's column of {} rows, {layers} labeling proofs",
                    rows.scalar_aux().len()
                ));
            }
        }
    }
    Ok(())
}

/// storage-proofs' per-challenge circuit `Proof` lives in a private module; its type is
/// taken from `StackedCircuit::synthesize`'s signature (its fields are public), and the
/// value made by its `From<vanilla Proof>`, as `StackedCompound::circuit` makes it.
fn typed<P, CS, A, B, C, D, E>(_: SynthesizeFn<CS, A, B, C, D, E, P>, vanilla: impl Into<P>) -> P {
    vanilla.into()
}

/// A value the proof does not have.
fn missing() -> SynthesisError {
    SynthesisError::AssignmentMissing
}

/// A proof of another shape than the partition's first challenge (or than its own columns).
fn misshapen() -> SynthesisError {
    SynthesisError::Unsatisfiable
}

fn alloc<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    value: Option<Scalar>,
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    AllocatedNum::alloc(cs.namespace(|| "replayed"), || value.ok_or_else(missing))
}

/// The prologue's values, allocated as `StackedCircuit::synthesize` allocates them (its
/// comm_r = H(comm_c, comm_r_last) check allocates nothing a piece uses, so it is left out).
fn prologue<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    publics: &Publics,
) -> Result<Prologue, SynthesisError> {
    let replica_id = alloc(cs, Some(publics.replica_id.into()))?;
    replica_id.inputize(cs.namespace(|| "replica_id_input"))?;
    let replica_id_bits = reverse_bit_numbering(replica_id.to_bits_le(cs.namespace(|| "replica_id_bits"))?);
    let comm_d = alloc(cs, Some(publics.comm_d.into()))?;
    let comm_r = alloc(cs, Some(publics.comm_r.into()))?;
    comm_d.inputize(cs.namespace(|| "comm_d_input"))?;
    comm_r.inputize(cs.namespace(|| "comm_r_input"))?;
    let comm_r_last = alloc(cs, Some(publics.comm_r_last.into()))?;
    let comm_c = alloc(cs, Some(publics.comm_c.into()))?;
    Ok(Prologue { replica_id_bits, comm_d, comm_r_last, comm_c })
}

/// Piece `piece` of the challenge proven by `vanilla` (see the module docs).
pub(crate) fn synthesize_piece<Tree: SealTree>(
    cs: &mut PartCs<'_>,
    publics: &Publics,
    vanilla: &VanillaSealProof<Tree>,
    piece: usize,
) -> Result<(), SynthesisError> {
    let levels = vanilla.comm_d_proofs.as_options();
    let layers = vanilla.labeling_proofs.len();
    let what = *layout(levels.len(), layers).get(piece).ok_or_else(misshapen)?;
    let proof = typed(StackedCircuit::<Tree, G>::synthesize::<&mut PartCs<'_>>, vanilla.clone());
    let p = cs.replay(|cs| prologue(cs, publics))?;
    // The parents' columns, as `Proof::synthesize` allocates them (values from the proof),
    // row by row (row l - 1 is layer l).
    let columns =
        |cs: &mut PartCs<'_>, exp: bool| -> Result<Vec<Vec<AllocatedNum<Scalar>>>, SynthesisError> {
            parents!(proof, exp)
                .iter()
                .map(|c| {
                    let (column, _) = c.clone().alloc(cs.namespace(|| "column"))?;
                    Ok((1..=layers).map(|l| column.get_value(l).clone()).collect())
                })
                .collect()
        };
    // The input of `layer`'s label SHA-256, rebuilt (to be replayed).
    let label_message = |cs: &mut PartCs<'_>, layer: usize| -> Result<Vec<Boolean>, SynthesisError> {
        let challenge = UInt64::alloc(cs.namespace(|| "challenge"), proof.challenge)?;
        let (drg, exp) = (columns(cs, false)?, columns(cs, true)?);
        let parents = parent_bits(cs, layer, &drg, &exp)?;
        Ok(label_input(&p.replica_id_bits, layer, &challenge, parents))
    };
    // `layer`'s label as the circuit computes it (from the parents, not the proof's column:
    // the two differ only for a C1 whose circuit is unsatisfied, which then gets the same
    // witness as the serial synthesis gives it).
    let label = |cs: &mut PartCs<'_>, layer: usize| -> Result<Scalar, SynthesisError> {
        let message = cs.replay(|cs| label_message(cs, layer))?;
        label_of(&pad(&message))
    };
    match what {
        Piece::CommDLevel(level) => {
            // The node below this level (the leaf at 0), natively.
            let mut node: Scalar = proof.data_leaf.ok_or_else(missing)?;
            let mut bits = Vec::with_capacity(levels.len());
            for (hashes, index) in levels.get(..level).ok_or_else(misshapen)? {
                let (sibling, index) =
                    (hashes.first().copied().flatten().ok_or_else(missing)?, index.ok_or_else(missing)?);
                let (left, right) = if index & 1 == 0 { (node, sibling) } else { (sibling, node) };
                node = <Sha256Hasher as Hasher>::Function::hash2(
                    &Sha256Domain::from(left),
                    &Sha256Domain::from(right),
                )
                .into();
                bits.push(index & 1 == 1);
            }
            let mut bits = cs.replay(|cs| {
                bits.iter()
                    .map(|b| AllocatedBit::alloc(cs.namespace(|| "index bit"), Some(*b)).map(Boolean::from))
                    .collect::<Result<Vec<_>, _>>()
            })?;
            let cur = if level == 0 {
                AllocatedNum::alloc(cs.namespace(|| "data_leaf"), || proof.data_leaf.ok_or_else(missing))?
            } else {
                cs.replay(|cs| alloc(cs, Some(node)))?
            };
            // storage-proofs-core's `SubPath::synthesize`, one level (arity 2: one index bit).
            let (hashes, index) = levels.get(level).ok_or_else(misshapen)?;
            // Tree D is binary: one sibling per level (`check_shape`, when the parts are built).
            let bit = Boolean::from(AllocatedBit::alloc(
                cs.namespace(|| "index bit 0"),
                index.map(|i| i & 1 == 1),
            )?);
            bits.push(bit.clone());
            let siblings = hashes
                .iter()
                .map(|h| AllocatedNum::alloc(cs.namespace(|| "path element"), || h.ok_or_else(missing)))
                .collect::<Result<Vec<_>, _>>()?;
            let inserted = insert(cs, &cur, &[bit], &siblings)?;
            let computed = hash_nodes(cs, &inserted)?;
            if level + 1 == levels.len() {
                // `PoRCircuit::synthesize`'s end: the path bits public, the root checked.
                multipack::pack_into_inputs(cs.namespace(|| "path"), &bits)?;
                constraint::equal(cs, || "enforce root is correct", &computed, &p.comm_d);
            }
        }
        Piece::DrgParents | Piece::ExpParents => {
            for parent in parents!(proof, what == Piece::ExpParents) {
                let (column, path) = parent.clone().alloc(cs.namespace(|| "parent_num"))?;
                let hash = column.hash(cs.namespace(|| "parent_constraint"))?;
                inclusion::<Tree>(cs, hash, path, &p.comm_c)?;
            }
        }
        Piece::ParentBits { layer } => {
            if layer == 1 {
                let challenge = UInt64::alloc(cs.namespace(|| "challenge"), proof.challenge)?;
                challenge.pack_into_input(cs.namespace(|| "challenge input"))?;
            }
            let (drg, exp) = cs.replay(|cs| Ok((columns(cs, false)?, columns(cs, true)?)))?;
            parent_bits(cs, layer, &drg, &exp)?;
        }
        Piece::Label { layer, blocks } => {
            let message = cs.replay(|cs| label_message(cs, layer))?;
            label_blocks(cs, &message, blocks.0..blocks.1)?;
        }
        Piece::Encoding => {
            let key = label(cs, layers)?;
            let (data_leaf, key) =
                cs.replay(|cs| Ok((alloc(cs, proof.data_leaf)?, alloc(cs, Some(key))?)))?;
            let encoded = encode(cs.namespace(|| "encode_node"), &key, &data_leaf)?;
            inclusion::<Tree>(cs, encoded, proof.comm_r_last_path.clone(), &p.comm_r_last)?;
        }
        Piece::ColumnHash => {
            let values = (1..=layers).map(|l| label(cs, l)).collect::<Result<Vec<_>, _>>()?;
            let labels =
                cs.replay(|cs| values.iter().map(|&v| alloc(cs, Some(v))).collect::<Result<Vec<_>, _>>())?;
            // storage-proofs-porep's `hash_single_column` (a private module), as it is.
            let hash = match labels.len() {
                2 => neptune::circuit::poseidon_hash::<_, Scalar, U2>(
                    cs.namespace(|| "c_x_column_hash"),
                    labels,
                    &POSEIDON_CONSTANTS_2,
                ),
                11 => neptune::circuit::poseidon_hash::<_, Scalar, U11>(
                    cs.namespace(|| "c_x_column_hash"),
                    labels,
                    &POSEIDON_CONSTANTS_11,
                ),
                _ => return Err(SynthesisError::Unsatisfiable),
            }?;
            inclusion::<Tree>(cs, hash, proof.comm_c_path.clone(), &p.comm_c)?;
        }
    }
    Ok(())
}

/// storage-proofs-porep's `enforce_inclusion`: a private inclusion proof of `leaf` under `root`.
fn inclusion<Tree: SealTree>(
    cs: &mut PartCs<'_>,
    leaf: AllocatedNum<Scalar>,
    path: storage_proofs_core::gadgets::por::AuthPath<
        Tree::Hasher,
        Tree::Arity,
        Tree::SubTreeArity,
        Tree::TopTreeArity,
    >,
    root: &AllocatedNum<Scalar>,
) -> Result<(), SynthesisError> {
    PoRCircuit::<Tree>::synthesize(
        cs.namespace(|| "inclusion"),
        Root::Var(leaf),
        path,
        Root::Var(root.clone()),
        true,
    )
}

/// The parents' bits of `layer`'s label, as `Proof::synthesize` allocates them: the DRG
/// parents' values at `layer`, and from layer 2 on the expander parents' at `layer - 1`.
fn parent_bits<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    layer: usize,
    drg: &[Vec<AllocatedNum<Scalar>>],
    exp: &[Vec<AllocatedNum<Scalar>>],
) -> Result<Vec<Vec<Boolean>>, SynthesisError> {
    let mut values: Vec<&AllocatedNum<Scalar>> =
        drg.iter().map(|c| c.get(layer - 1)).collect::<Option<_>>().ok_or_else(misshapen)?;
    if layer > 1 {
        let exp: Vec<_> =
            exp.iter().map(|c| c.get(layer - 2)).collect::<Option<_>>().ok_or_else(misshapen)?;
        values.extend(exp);
    }
    values
        .into_iter()
        .map(|v| Ok(reverse_bit_numbering(v.to_bits_le(cs.namespace(|| "parent_bits"))?)))
        .collect()
}

/// The input of a label's SHA-256, as `create_label_circuit` lays it out: replica id, layer
/// and node, then the parents repeated to 37 (`Proof::synthesize`'s expansion), 32 bytes each.
fn label_input(
    replica_id: &[Boolean],
    layer: usize,
    node: &UInt64,
    parents: Vec<Vec<Boolean>>,
) -> Vec<Boolean> {
    let mut expanded = parents.clone();
    if layer > 1 {
        expanded.extend_from_slice(&parents);
        expanded.extend_from_slice(&parents[..9.min(parents.len())]);
    } else {
        for _ in 0..5 {
            expanded.extend_from_slice(&parents);
        }
        expanded.extend(parents.first().cloned());
    }
    let mut bits = replica_id.to_vec();
    bits.resize(256.max(bits.len()), Boolean::constant(false));
    bits.extend(UInt32::constant(layer as u32).into_bits_be());
    bits.extend(node.to_bits_be());
    bits.resize(512.max(bits.len()), Boolean::constant(false));
    for parent in expanded {
        bits.extend(parent);
        bits.resize(bits.len().next_multiple_of(256), Boolean::constant(false));
    }
    bits
}

/// bellperson's `sha256` padding of `input`.
fn pad(input: &[Boolean]) -> Vec<Boolean> {
    let mut padded = input.to_vec();
    padded.push(Boolean::constant(true));
    while (padded.len() + 64) % 512 != 0 {
        padded.push(Boolean::constant(false));
    }
    padded.extend((0..64).rev().map(|i| Boolean::constant((input.len() as u64 >> i) & 1 == 1)));
    padded
}

/// The SHA-256 state after the padded message's first `blocks` blocks, natively.
fn midstate(padded: &[Boolean], blocks: usize) -> Result<[u32; 8], SynthesisError> {
    let mut state = SHA256_IV;
    for block in padded.get(..blocks * 512).ok_or_else(misshapen)?.chunks(512) {
        let mut bytes = [0u8; 64];
        for (byte, bits) in bytes.iter_mut().zip(block.chunks(8)) {
            for bit in bits {
                *byte = *byte << 1 | u8::from(bit.get_value().ok_or_else(missing)?);
            }
        }
        sha2::compress256(&mut state, &[bytes.into()]);
    }
    Ok(state)
}

/// `create_label_circuit`'s result, natively: the digest's bits (big-endian words),
/// reversed within each byte (`reverse_bit_numbering`), the first 254 packed
/// little-endian: the digest's bytes as a little-endian number, its top two bits cleared.
fn label_of(padded: &[Boolean]) -> Result<Scalar, SynthesisError> {
    packed_digest(&midstate(padded, padded.len() / 512)?)
}

/// A SHA-256 digest (its eight words) packed as `create_label_circuit` packs it.
fn packed_digest(digest: &[u32; 8]) -> Result<Scalar, SynthesisError> {
    let mut repr = [0u8; 32];
    for (i, word) in digest.iter().enumerate() {
        repr[4 * i..4 * i + 4].copy_from_slice(&word.to_be_bytes());
    }
    repr[31] &= 0b0011_1111;
    Option::from(Scalar::from_bytes_le(&repr)).ok_or_else(misshapen)
}

/// filecoin-hashers' `Sha256Function::hash_multi_leaf_circuit` over `leaves` (each to its
/// bits, bytes bit-reversed, then bellperson's `sha256` and the digest packed), with the
/// SHA-256 compressions' witness computed natively ([`compress_blocks`]).
fn hash_nodes(
    cs: &mut PartCs<'_>,
    leaves: &[AllocatedNum<Scalar>],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let mut bits = Vec::with_capacity(leaves.len() * 256);
    for leaf in leaves {
        let mut padded = leaf.to_bits_le(&mut *cs)?;
        padded.resize(padded.len().next_multiple_of(8), Boolean::Constant(false));
        bits.extend(padded.chunks_exact(8).flat_map(|chunk| chunk.iter().rev()).cloned());
    }
    let padded = pad(&bits);
    let cur = compress_blocks(cs, &padded, 0..padded.len() / 512, SHA256_IV.map(sha_witness::constant))?;
    pack_digest(cs, &cur)
}

/// The SHA-256 compressions of `padded`'s blocks `blocks` from the state `cur`, their
/// witness ([`crate::sha_witness`]: the gadget's aux values and constraint count, without
/// its linear combinations) written into the piece's window as bellperson's
/// `sha256_compression_function` would write it. Returns the state after them.
fn compress_blocks(
    cs: &mut PartCs<'_>,
    padded: &[Boolean],
    blocks: Range<usize>,
    mut cur: [Word; 8],
) -> Result<[Word; 8], SynthesisError> {
    let mut witness = Witness::default();
    for block in blocks {
        let bits = padded.get(block * 512..(block + 1) * 512).ok_or_else(misshapen)?;
        let bits = bits.iter().map(|b| Bit::of(b).ok_or_else(missing)).collect::<Result<Vec<_>, _>>()?;
        cur = sha_witness::compress(&mut witness, &bits, &cur)?;
    }
    cs.extend_aux(&witness.aux);
    for _ in 0..witness.constraints {
        cs.enforce(|| "", |lc| lc, |lc| lc, |lc| lc);
    }
    Ok(cur)
}

/// `multipack::pack_bits` of a digest's bits as the circuits pack it (bytes bit-reversed,
/// the first 254): the packed number (one variable) and its constraint.
fn pack_digest(cs: &mut PartCs<'_>, state: &[Word; 8]) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let num = alloc(cs, Some(packed_digest(&state.map(|w| sha_witness::value(&w)))?))?;
    cs.enforce(|| "packing constraint", |lc| lc, |lc| lc, |lc| lc);
    Ok(num)
}

/// Blocks `blocks` of the SHA-256 of `input` (bellperson's `sha256`: its padding, one
/// `sha256_compression_function` per block), from the midstate before them, computed
/// natively; the last block's piece also packs the digest into the label, as
/// `create_label_circuit` does. The compressions' witness is computed natively too
/// ([`crate::sha_witness`]: the gadget's aux values and constraint count, without its
/// linear combinations), and goes into the piece's window as the gadget would write it.
fn label_blocks(cs: &mut PartCs<'_>, input: &[Boolean], blocks: Range<usize>) -> Result<(), SynthesisError> {
    if input.len() != LABEL_INPUT_BITS {
        return Err(misshapen());
    }
    let padded = pad(input);
    let cur: [Word; 8] = if blocks.start == 0 {
        SHA256_IV.map(sha_witness::constant)
    } else {
        let state = midstate(&padded, blocks.start)?;
        let words: Vec<UInt32> = cs.replay(|cs| {
            state.iter().map(|&w| UInt32::alloc(cs.namespace(|| "midstate"), Some(w))).collect()
        })?;
        let mut cur = [sha_witness::constant(0); 8];
        for (c, w) in cur.iter_mut().zip(words) {
            for (bit, b) in c.iter_mut().zip(w.into_bits()) {
                *bit = Bit::of(&b).ok_or_else(missing)?;
            }
        }
        cur
    };
    let cur = compress_blocks(cs, &padded, blocks.clone(), cur)?;
    if blocks.end * 512 == padded.len() {
        pack_digest(cs, &cur)?;
    }
    Ok(())
}
