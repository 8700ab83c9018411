//! The parallel witness (`Precompiled::witness_parts`): a circuit of a prologue and
//! independent parts synthesizes byte-identically to its serial bellpepper-core synthesis
//! (a, b, c, inputs, aux, densities), whether its parts replay the prologue or not, with
//! parts that use the witness generator's bulk allocation; a part that allocates or
//! enforces other than its share is refused naming the part, and so is a circuit whose
//! counts do not divide among its parts. Parts synthesized in pieces (each rebuilding the
//! chain's value before it in a replay block) give the same bytes, and a misbehaving piece
//! is refused naming its part and piece.
use std::sync::Arc;

use arenaprove_arena::{Ledger, RegionConfig};
use arenaprove_circuits::precompiled::{
    synthesize_precompiled_parts, PartCs, PartedCircuit, PrecompiledError, WitnessCs,
};
use arenaprove_circuits::{
    record, shape_of, synthesize_arena, ArenaAssignment, AssignmentPools, CircuitError, ProverWitness,
};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;

/// x = seed (aux, made public), y = x^2; then `parts` parts, part i: a chain of `len`
/// multiplications starting from x * y * (i + 1), a public input per part, and a bulk
/// allocation of 3 aux when the constraint system is a witness generator (allocated one by
/// one otherwise; same values).
#[derive(Clone)]
struct Toy {
    seed: Option<Scalar>,
    parts: usize,
    len: usize,
    replay: bool,
    /// Pieces each part is synthesized in by the parallel witness (the chain cut evenly).
    pieces: usize,
    /// Part that misbehaves by one extra aux (tests).
    rogue: Option<usize>,
}

struct Prologue {
    x: AllocatedNum<Scalar>,
    y: AllocatedNum<Scalar>,
}

impl Toy {
    fn prologue<CS: ConstraintSystem<Scalar>>(&self, cs: &mut CS) -> Result<Prologue, SynthesisError> {
        let x =
            AllocatedNum::alloc(cs.namespace(|| "x"), || self.seed.ok_or(SynthesisError::AssignmentMissing))?;
        x.inputize(cs.namespace(|| "x input"))?;
        let y = x.square(cs.namespace(|| "y"))?;
        Ok(Prologue { x, y })
    }

    /// Part `i`'s steps `steps` of its chain (0 the start, 1..=len the multiplications,
    /// len + 1 the public output and the bulk allocation), continuing from `v` (the value
    /// after the step before `steps`).
    fn part<CS: ConstraintSystem<Scalar>>(
        &self,
        i: usize,
        p: &Prologue,
        cs: &mut CS,
        steps: std::ops::Range<usize>,
        mut v: Option<AllocatedNum<Scalar>>,
    ) -> Result<(), SynthesisError> {
        let k = Scalar::from(i as u64 + 1);
        for step in steps {
            if step == 0 {
                let start = self.start(i, p);
                let s = AllocatedNum::alloc(cs.namespace(|| "start"), || {
                    start.ok_or(SynthesisError::AssignmentMissing)
                })?;
                cs.enforce(
                    || "start",
                    |lc| lc + p.x.get_variable(),
                    |lc| lc + (k, p.y.get_variable()),
                    |lc| lc + s.get_variable(),
                );
                v = Some(s);
                continue;
            }
            let cur = v.take().ok_or(SynthesisError::AssignmentMissing)?;
            if step <= self.len {
                v = Some(cur.mul(cs.namespace(|| format!("m{step}")), &p.x)?);
                continue;
            }
            cur.inputize(cs.namespace(|| "out"))?;
            let values: Vec<Scalar> =
                (0..3).map(|t| cur.get_value().unwrap_or(Scalar::ZERO) + Scalar::from(t)).collect();
            if cs.is_witness_generator() {
                cs.allocate_empty_aux(3).copy_from_slice(&values);
            } else {
                for (t, value) in values.into_iter().enumerate() {
                    cs.alloc(|| format!("bulk {t}"), || Ok(value))?;
                }
            }
            if self.rogue == Some(i) {
                cs.alloc(|| "rogue", || Ok(Scalar::ONE))?;
            }
        }
        Ok(())
    }

    fn start(&self, i: usize, p: &Prologue) -> Option<Scalar> {
        p.x.get_value().zip(p.y.get_value()).map(|(x, y)| x * y * Scalar::from(i as u64 + 1))
    }

    /// Steps of the chain in all (see [`Toy::part`]).
    fn steps(&self) -> usize {
        self.len + 2
    }
}

impl Circuit<Scalar> for Toy {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let p = self.prologue(cs)?;
        for i in 0..self.parts {
            self.part(i, &p, &mut cs.namespace(|| format!("part {i}")), 0..self.steps(), None)?;
        }
        Ok(())
    }
}

impl PartedCircuit for Toy {
    fn prologue(&self, cs: &mut WitnessCs<'_>) -> Result<(), SynthesisError> {
        Toy::prologue(self, cs).map(|_| ())
    }
    fn parts(&self) -> usize {
        self.parts
    }
    fn pieces(&self) -> usize {
        self.pieces
    }
    fn part(&self, i: usize, piece: usize, cs: &mut PartCs<'_>) -> Result<(), SynthesisError> {
        // As storage-proofs' StackedCircuit: the prologue again, counted as its replay; or
        // its values rebuilt in a replay block (a circuit that can).
        let p = if self.replay { Toy::prologue(self, cs)? } else { cs.replay(|cs| Toy::prologue(self, cs))? };
        let cut = |j: usize| j * self.steps() / self.pieces;
        let steps = cut(piece)..cut(piece + 1);
        // The chain's value before this piece, rebuilt (x * y * (i + 1) * x^(m - 1) after m steps).
        let v = match steps.start {
            0 => None,
            m => {
                let value =
                    self.start(i, &p).zip(p.x.get_value()).map(|(s, x)| s * x.pow_vartime([m as u64 - 1]));
                Some(cs.replay(|cs| {
                    AllocatedNum::alloc(cs, || value.ok_or(SynthesisError::AssignmentMissing))
                })?)
            }
        };
        Toy::part(self, i, &p, cs, steps, v)
    }
    fn replays_prologue(&self) -> bool {
        self.replay
    }
}

/// The toy, claiming `.1` parts (a circuit that miscounts its parts).
struct Claims(Toy, usize);

impl PartedCircuit for Claims {
    fn prologue(&self, cs: &mut WitnessCs<'_>) -> Result<(), SynthesisError> {
        PartedCircuit::prologue(&self.0, cs)
    }
    fn parts(&self) -> usize {
        self.1
    }
    fn pieces(&self) -> usize {
        self.0.pieces
    }
    fn part(&self, i: usize, piece: usize, cs: &mut PartCs<'_>) -> Result<(), SynthesisError> {
        PartedCircuit::part(&self.0, i, piece, cs)
    }
    fn replays_prologue(&self) -> bool {
        self.0.replay
    }
}

fn pools(shape: &arenaprove_circuits::Shape) -> (Arc<Ledger>, AssignmentPools) {
    let ledger = Ledger::unlimited();
    let pools = AssignmentPools::for_shape(shape, 2, &ledger, RegionConfig::heap()).unwrap();
    (ledger, pools)
}

fn assert_identical(what: &str, want: &ArenaAssignment, got: &ArenaAssignment) {
    assert_eq!(got.num_constraints(), want.num_constraints(), "{what}: constraints");
    assert_eq!(got.input_assignment(), want.input_assignment(), "{what}: inputs");
    assert_eq!(got.aux_assignment(), want.aux_assignment(), "{what}: aux");
    assert_eq!(got.a_aux_density().words(), want.a_aux_density().words(), "{what}: a_aux density");
    assert_eq!(got.b_input_density().words(), want.b_input_density().words(), "{what}: b_input density");
    assert_eq!(got.b_aux_density().words(), want.b_aux_density().words(), "{what}: b_aux density");
    assert_eq!(got.abc().unwrap(), want.abc().unwrap(), "{what}: a, b, c");
}

fn toy(replay: bool) -> Toy {
    Toy { seed: Some(Scalar::from(7u64)), parts: 9, len: 40, replay, pieces: 1, rogue: None }
}

#[test]
fn parallel_witness_is_byte_identical_to_serial_synthesis() {
    for (replay, pieces) in [(false, 1), (true, 1), (false, 5), (true, 5)] {
        let circuit = Toy { pieces, ..toy(replay) };
        let shape = shape_of(circuit.clone()).unwrap();
        let pc = record(Toy { seed: None, ..circuit.clone() }, "toy").unwrap();
        let (ledger, pools) = pools(&shape);
        // The first seed measures the pieces, the others reuse the measurement.
        for seed in [3u64, 11, 12345] {
            let c = Toy { seed: Some(Scalar::from(seed)), ..circuit.clone() };
            let want = synthesize_arena(c.clone(), &pools, &shape).unwrap();
            let got = synthesize_precompiled_parts(&c, &pc, &pools, &shape).unwrap();
            assert!(got.aux_assignment().iter().any(|v| !bool::from(v.is_zero())));
            assert_identical(&format!("replay {replay}, {pieces} pieces, seed {seed}"), &want, &got);
        }
        assert_eq!(pools.outstanding(), 0);
        assert!(ledger.snapshot().balanced());
    }
}

#[test]
fn a_part_off_its_share_is_refused_by_index() {
    for (replay, pieces) in [(false, 1), (true, 1), (false, 5), (true, 5)] {
        let circuit = Toy { pieces, ..toy(replay) };
        let shape = shape_of(circuit.clone()).unwrap();
        let pc = record(Toy { seed: None, ..circuit.clone() }, "toy").unwrap();
        let (_ledger, pools) = pools(&shape);
        // An extra aux in part 4 overruns its window: refused naming part 4 (and its last
        // piece), over the shape by one in all but caught at the part before the shape.
        let rogue = Toy { rogue: Some(4), ..circuit.clone() };
        let err = synthesize_precompiled_parts(&rogue, &pc, &pools, &shape).unwrap_err();
        let last = (pieces > 1).then_some(pieces - 1);
        match err {
            CircuitError::Precompiled(PrecompiledError::Parts { part: Some(4), piece, .. })
                if piece == last => {}
            other => panic!("replay {replay}, {pieces} pieces: expected part 4 refused, got {other}"),
        }
        assert_eq!(pools.outstanding(), 0);
        // A circuit that says it has one part fewer: the counts do not divide.
        let err =
            synthesize_precompiled_parts(&Claims(circuit.clone(), circuit.parts - 1), &pc, &pools, &shape)
                .unwrap_err();
        assert!(
            matches!(&err, CircuitError::Precompiled(PrecompiledError::Parts { part: None, .. })),
            "replay {replay}: {err}"
        );
        assert!(err.to_string().contains("parallel witness"), "{err}");
    }
}

#[test]
fn pieces_that_do_not_add_up_to_a_part_are_refused_when_measured() {
    // Part 0 misbehaves, so the pieces measured on it do not add up to a part's share:
    // refused before anything is written, naming part 0 and no piece; the slabs go back.
    let circuit = Toy { pieces: 4, rogue: Some(0), ..toy(false) };
    let shape = shape_of(Toy { rogue: None, ..circuit.clone() }).unwrap();
    let pc = record(Toy { seed: None, rogue: None, ..circuit.clone() }, "toy").unwrap();
    let (_ledger, pools) = pools(&shape);
    let err = synthesize_precompiled_parts(&circuit, &pc, &pools, &shape).unwrap_err();
    match &err {
        CircuitError::Precompiled(PrecompiledError::Parts { part: Some(0), piece: None, what, .. }) => {
            assert!(what.contains("measured"), "{err}")
        }
        other => panic!("expected the measurement refused, got {other}"),
    }
    assert_eq!(pools.outstanding(), 0);
    // The recording is not spoiled: the honest circuit then proves through it.
    let honest = Toy { rogue: None, ..circuit };
    let want = synthesize_arena(honest.clone(), &pools, &shape).unwrap();
    let got = synthesize_precompiled_parts(&honest, &pc, &pools, &shape).unwrap();
    assert_identical("after a refused measurement", &want, &got);
}

#[test]
fn kept_piece_windows_serve_only_parts_of_their_share() {
    // Windows measured for the 9-part circuit are kept; a circuit that claims 3 parts on
    // the same recording (so a share three times as large, which divides) must not reuse
    // them: it is measured again, and its pieces do not add up to its share: refused.
    let circuit = Toy { pieces: 5, ..toy(false) };
    let shape = shape_of(circuit.clone()).unwrap();
    let pc = record(Toy { seed: None, ..circuit.clone() }, "toy").unwrap();
    let (_ledger, pools) = pools(&shape);
    let want = synthesize_arena(circuit.clone(), &pools, &shape).unwrap();
    let got = synthesize_precompiled_parts(&circuit, &pc, &pools, &shape).unwrap();
    assert_identical("first, measured", &want, &got);
    drop(got);
    let held = pools.outstanding(); // `want`'s slabs
    let err = synthesize_precompiled_parts(&Claims(circuit.clone(), 3), &pc, &pools, &shape).unwrap_err();
    match &err {
        CircuitError::Precompiled(PrecompiledError::Parts { part: Some(0), piece: None, what, .. }) => {
            assert!(what.contains("measured"), "{err}")
        }
        other => panic!("expected the 3-part claim refused, got {other}"),
    }
    assert_eq!(pools.outstanding(), held, "the refused partition's slabs went back");
    // The honest circuit still proves through the windows kept for it.
    let got = synthesize_precompiled_parts(&circuit, &pc, &pools, &shape).unwrap();
    assert_identical("after the refused claim", &want, &got);
}

#[test]
fn a_piece_that_fails_is_named_with_its_error_and_the_slabs_go_back() {
    struct Fails(Toy);
    impl PartedCircuit for Fails {
        fn prologue(&self, cs: &mut WitnessCs<'_>) -> Result<(), SynthesisError> {
            PartedCircuit::prologue(&self.0, cs)
        }
        fn parts(&self) -> usize {
            self.0.parts
        }
        fn pieces(&self) -> usize {
            self.0.pieces
        }
        fn part(&self, i: usize, piece: usize, cs: &mut PartCs<'_>) -> Result<(), SynthesisError> {
            if (i, piece) == (3, 2) {
                return Err(SynthesisError::AssignmentMissing);
            }
            PartedCircuit::part(&self.0, i, piece, cs)
        }
        fn replays_prologue(&self) -> bool {
            self.0.replay
        }
    }
    let circuit = Toy { pieces: 5, ..toy(false) };
    let shape = shape_of(circuit.clone()).unwrap();
    let pc = record(Toy { seed: None, ..circuit.clone() }, "toy").unwrap();
    let (_ledger, pools) = pools(&shape);
    let err = synthesize_precompiled_parts(&Fails(circuit), &pc, &pools, &shape).unwrap_err();
    match &err {
        CircuitError::Precompiled(PrecompiledError::PartFailed {
            part: 3,
            piece: Some(2),
            source: SynthesisError::AssignmentMissing,
            ..
        }) => assert!(err.to_string().contains("part 3, piece 2"), "{err}"),
        other => panic!("expected part 3 piece 2 named, got {other}"),
    }
    assert_eq!(pools.outstanding(), 0);
}
