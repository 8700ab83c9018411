//! Precompiled constraints: synthesis through recorded matrices is byte-identical
//! to `ArenaAssignment`'s (a, b, c, inputs, aux, densities) for every test circuit, on both
//! the bellpepper-core and the native path and for several witnesses of one recording; the
//! file round-trips through a read-only map; a file of another circuit, of another shape,
//! truncated or corrupted is refused naming the file; a circuit that does not match its
//! recording is refused.
use std::path::PathBuf;
use std::sync::Arc;

use arenaprove_arena::{Ledger, RegionConfig};
use arenaprove_circuits::circuits::{ChainCircuit, SectorPartitionCircuit, ShaCircuit};
use arenaprove_circuits::precompiled::{Origin, PrecompiledError};
use arenaprove_circuits::{
    record, record_native, shape_of, shape_of_native, synthesize_arena, synthesize_native,
    synthesize_precompiled, synthesize_precompiled_native, ArenaAssignment, AssignmentPools, CircuitError,
    Precompiled, ProverWitness, Shape,
};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;

fn assert_identical(what: &str, want: &ArenaAssignment, got: &ArenaAssignment) {
    assert_eq!(got.num_constraints(), want.num_constraints(), "{what}: constraints");
    assert_eq!(got.input_assignment(), want.input_assignment(), "{what}: inputs");
    assert_eq!(got.aux_assignment(), want.aux_assignment(), "{what}: aux");
    assert_eq!(got.a_aux_density().words(), want.a_aux_density().words(), "{what}: a_aux density");
    assert_eq!(got.a_aux_density().len(), want.a_aux_density().len(), "{what}: a_aux density bits");
    assert_eq!(got.b_input_density().words(), want.b_input_density().words(), "{what}: b_input density");
    assert_eq!(got.b_input_density().len(), want.b_input_density().len(), "{what}: b_input bits");
    assert_eq!(got.b_aux_density().words(), want.b_aux_density().words(), "{what}: b_aux density");
    let (a, b, c) = got.abc().unwrap();
    let (wa, wb, wc) = want.abc().unwrap();
    for i in 0..wa.len() {
        assert_eq!((a[i], b[i], c[i]), (wa[i], wb[i], wc[i]), "{what}: row {i}");
    }
    assert_eq!(a.len(), wa.len());
    let nonzero = a.iter().filter(|v| !bool::from(v.is_zero())).count();
    assert!(nonzero > 0, "{what}: a is all zero");
}

fn pools_for(shape: &Shape) -> (Arc<Ledger>, AssignmentPools) {
    let ledger = Ledger::unlimited();
    // Two assignments at once: the reference and the precompiled one.
    let pools = AssignmentPools::for_shape(shape, 2, &ledger, RegionConfig::heap()).unwrap();
    (ledger, pools)
}

/// Records `circuits[0]` and checks each circuit against `synthesize_arena`.
fn check_generic<C: Circuit<Scalar> + Clone>(what: &str, circuits: &[C]) -> Precompiled {
    let shape = shape_of(circuits[0].clone()).unwrap();
    let pc = record(circuits[0].clone(), what).unwrap();
    assert_eq!(pc.shape(), shape, "{what}: recorded shape");
    assert!(!pc.is_mapped());
    let (ledger, pools) = pools_for(&shape);
    for (n, c) in circuits.iter().enumerate() {
        let want = synthesize_arena(c.clone(), &pools, &shape).unwrap();
        let got = synthesize_precompiled(c.clone(), &pc, &pools, &shape).unwrap();
        assert_identical(&format!("{what} witness {n}"), &want, &got);
    }
    assert_eq!(pools.outstanding(), 0);
    assert!(ledger.snapshot().balanced());
    pc
}

fn check_native(what: &str, circuits: &[arenaprove_circuits::circuits::AnyCircuit]) {
    let shape = shape_of_native(&circuits[0]).unwrap();
    let pc = record_native(&circuits[0], what).unwrap();
    assert_eq!(pc.shape(), shape, "{what}: recorded shape");
    let (_ledger, pools) = pools_for(&shape);
    for (n, c) in circuits.iter().enumerate() {
        let want = synthesize_native(c, &pools, &shape).unwrap();
        let got = synthesize_precompiled_native(c, &pc, &pools, &shape).unwrap();
        assert_identical(&format!("{what} native witness {n}"), &want, &got);
    }
}

use arenaprove_circuits::circuits::AnyCircuit;

#[test]
fn chain_precompiled_is_byte_identical() {
    let pc = check_generic("chain", &[ChainCircuit::new(300, 11), ChainCircuit::new(300, 12)]);
    let [a, b, c] = pc.terms();
    assert!(a.total() > 0 && b.total() > 0 && c.total() > 0, "{:?}", pc.terms());
    check_native(
        "chain",
        &[AnyCircuit::Chain(ChainCircuit::new(300, 11)), AnyCircuit::Chain(ChainCircuit::new(300, 13))],
    );
}

#[test]
fn sha_precompiled_is_byte_identical() {
    // bellpepper 0.2's own SHA-256 gadget (the generic path) and the native gadgets.
    let pc = check_generic(
        "sha-bellpepper",
        &[ShaCircuit::new(2, 5).bellpepper(), ShaCircuit::new(2, 6).bellpepper()],
    );
    assert!(pc.terms()[0].one > 0 && pc.terms()[0].general > 0, "{:?}", pc.terms());
    check_native("sha", &[AnyCircuit::Sha(ShaCircuit::new(2, 5)), AnyCircuit::Sha(ShaCircuit::new(2, 9))]);
}

#[test]
fn sector_precompiled_is_byte_identical() {
    let circuits = [SectorPartitionCircuit::full(77, 3, 1, 2), SectorPartitionCircuit::full(78, 3, 1, 2)];
    check_generic("sector", &circuits);
    check_native("sector", &circuits.map(AnyCircuit::Sector));
    // Reduced challenges, as soaks and CI use, and more than one block of rows.
    let small = [
        SectorPartitionCircuit::for_constraints(79, 1, 4096),
        SectorPartitionCircuit::for_constraints(80, 1, 4096),
    ];
    let pc = check_generic("sector@4096", &small);
    assert!(pc.rows() > arenaprove_circuits::precompiled::format::ROWS_PER_BLOCK, "{} rows", pc.rows());
}

/// Inputs allocated between constraints, a long combination (escaped row header), a
/// duplicated variable whose coefficients cancel (no density bit), -1 and general
/// coefficients, and a constant term on ONE.
#[derive(Clone)]
struct Interleaved {
    seed: u64,
}

impl Circuit<Scalar> for Interleaved {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = Scalar::from(self.seed + 3);
        let mut vars = Vec::new();
        let mut values = Vec::new();
        for i in 0..1100u64 {
            let v = x + Scalar::from(i);
            vars.push(cs.alloc(|| "v", || Ok(v))?);
            values.push(v);
            if i % 100 == 7 {
                // A public input between constraints: aux columns must not move.
                let input = cs.alloc_input(|| "in", || Ok(v))?;
                cs.enforce(|| "in = v", |lc| lc + input, |lc| lc + CS::one(), |lc| lc + vars[i as usize]);
            }
            if i > 0 {
                let (p, q) = (vars[i as usize - 1], vars[i as usize]);
                let prod = values[i as usize - 1] * v;
                let r = cs.alloc(|| "r", || Ok(prod))?;
                cs.enforce(
                    || "p*q=r",
                    |lc| lc + p + (Scalar::from(5), q) - (Scalar::from(5), q),
                    |lc| lc - (Scalar::ONE, q) + (Scalar::from(2), q),
                    |lc| lc + r,
                );
            }
        }
        // One long combination: sum of 1100 variables times ONE.
        let sum: Scalar = values.iter().copied().sum();
        let s = cs.alloc(|| "sum", || Ok(sum))?;
        cs.enforce(
            || "sum",
            |mut lc| {
                for (k, v) in vars.iter().enumerate() {
                    lc = lc + (Scalar::from(k as u64 % 3 + 1), *v) - (Scalar::from(k as u64 % 3), *v);
                }
                lc
            },
            |lc| lc + CS::one(),
            |lc| lc + s,
        );
        // A constant on ONE, and a -1 coefficient: (x + 7) * 1 = x + 7 with x as v0.
        let v0 = vars[0];
        let t = cs.alloc(|| "t", || Ok(x + Scalar::from(7)))?;
        cs.enforce(
            || "c",
            |lc| lc + v0 + (Scalar::from(7), CS::one()),
            |lc| lc + CS::one(),
            |lc| lc - t + t + t,
        );
        Ok(())
    }
}

#[test]
fn interleaved_inputs_long_rows_and_cancelling_terms_are_identical() {
    let pc = check_generic("interleaved", &[Interleaved { seed: 1 }, Interleaved { seed: 2 }]);
    assert!(pc.shape().inputs > 10, "{:?}", pc.shape());
    assert!(pc.terms()[1].minus_one > 0 || pc.terms()[0].minus_one == 0);
}

#[test]
fn witness_generator_flag_does_not_change_the_result() {
    let c = SectorPartitionCircuit::full(70, 3, 1, 2);
    let shape = shape_of(c).unwrap();
    let pc = record(c, "sector").unwrap();
    let (_ledger, pools) = pools_for(&shape);
    let mut results = Vec::new();
    for generator in [true, false] {
        let mut cs = ArenaAssignment::new(&pools, &shape).unwrap();
        cs.alloc_one().unwrap();
        pc.witness_with(&mut cs, generator, |w| c.synthesize(w).map_err(CircuitError::Synthesis)).unwrap();
        pc.products_into(&mut cs).unwrap();
        cs.finish().unwrap();
        results.push(cs);
    }
    assert_identical("generator on/off", &results[0], &results[1]);
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("arenaprove-pce-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn file_round_trip_maps_and_refuses_other_circuits_and_damage() {
    let dir = temp_dir("file");
    let c = SectorPartitionCircuit::for_constraints(81, 1, 4096);
    let shape = shape_of(c).unwrap();
    let pc = record(c, "sector@4096").unwrap();
    let path = dir.join("sector.pce");
    pc.save(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), pc.bytes());

    // Round trip: a map of the file synthesizes the same assignment as the recording.
    let mapped = Precompiled::open(&path, "sector@4096", Some(&shape)).unwrap();
    assert!(mapped.is_mapped());
    assert_eq!(mapped.terms(), pc.terms());
    let (_ledger, pools) = pools_for(&shape);
    let c2 = SectorPartitionCircuit::for_constraints(82, 1, 4096);
    let want = synthesize_arena(c2, &pools, &shape).unwrap();
    let got = synthesize_precompiled(c2, &mapped, &pools, &shape).unwrap();
    assert_identical("mapped", &want, &got);
    drop((want, got));

    let p = path.display().to_string();
    // Another circuit's identity.
    let e = Precompiled::open(&path, "chain@300", None).unwrap_err();
    assert!(matches!(e, PrecompiledError::WrongCircuit { .. }), "{e}");
    assert!(e.to_string().contains(&p) && e.to_string().contains("sector@4096"), "{e}");
    // Same identity, another shape.
    let other = Shape::new(shape.constraints + 1, shape.inputs, shape.aux);
    let e = Precompiled::open(&path, "sector@4096", Some(&other)).unwrap_err();
    assert!(matches!(e, PrecompiledError::WrongShape { .. }) && e.to_string().contains(&p), "{e}");
    // Truncated (in the sections, and inside the header).
    for keep in [bytes.len() - 1, bytes.len() / 2, 100] {
        let cut = dir.join(format!("cut{keep}.pce"));
        std::fs::write(&cut, &bytes[..keep]).unwrap();
        let e = Precompiled::open(&cut, "sector@4096", None).unwrap_err();
        assert!(matches!(e, PrecompiledError::Truncated { .. }), "{keep}: {e}");
        assert!(e.to_string().contains(&cut.display().to_string()), "{e}");
    }
    // One flipped bit in the row stream, and one in the header.
    for at in [bytes.len() - 4096 - 7, 40] {
        let mut bad = bytes.clone();
        let at = if at < 4096 { at } else { pc_stream_byte(&bytes) };
        bad[at] ^= 0x10;
        let f = dir.join("bad.pce");
        std::fs::write(&f, &bad).unwrap();
        let e = Precompiled::open(&f, "sector@4096", None).unwrap_err();
        assert!(matches!(e, PrecompiledError::Corrupt { .. }), "byte {at}: {e}");
    }
    // Not a precompiled file at all; a missing file.
    let f = dir.join("other.bin");
    std::fs::write(&f, b"hello, this is not a recording").unwrap();
    let e = Precompiled::open(&f, "sector@4096", None).unwrap_err();
    assert!(matches!(e, PrecompiledError::NotPrecompiled { .. }), "{e}");
    let e = Precompiled::open(&dir.join("absent.pce"), "sector@4096", None).unwrap_err();
    assert!(matches!(e, PrecompiledError::Io { .. }) && e.to_string().contains("absent.pce"), "{e}");

    // open_or_record: maps an intact file, re-records over a damaged one.
    let (_, origin) =
        Precompiled::open_or_record(&path, "sector@4096", Some(&shape), || unreachable!()).unwrap();
    assert_eq!(origin, Origin::Mapped);
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let (again, origin) =
        Precompiled::open_or_record(&path, "sector@4096", Some(&shape), || record(c, "sector@4096")).unwrap();
    assert!(matches!(origin, Origin::Recorded { replaced: Some(_) }), "{origin:?}");
    assert!(again.is_mapped(), "a saved recording is used through its map");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "re-recorded file is the same bytes");
    assert_eq!(again.terms(), pc.terms());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A byte inside the row stream (the second section).
fn pc_stream_byte(bytes: &[u8]) -> usize {
    let h = arenaprove_circuits::precompiled::Header::decode(bytes, "test").unwrap();
    let s = h.sections[arenaprove_circuits::precompiled::format::S_STREAM];
    (s.offset + s.len / 2) as usize
}

#[test]
fn a_circuit_that_does_not_match_its_recording_is_refused() {
    let small = ChainCircuit::new(100, 1);
    let big = ChainCircuit::new(101, 1);
    let pc = record(small.clone(), "chain@100").unwrap();
    let shape = Shape::covering(&[shape_of(small).unwrap(), shape_of(big.clone()).unwrap()]);
    let (_ledger, pools) = pools_for(&shape);
    let e = synthesize_precompiled(big, &pc, &pools, &shape).unwrap_err();
    assert!(matches!(e, CircuitError::Precompiled(PrecompiledError::Mismatch { .. })), "{e}");
    assert!(e.to_string().contains("chain@100"), "{e}");
    assert_eq!(pools.outstanding(), 0);
}

/// A counting recorder (no row stream kept) predicts the recorded file's bytes exactly, on
/// the native and the bellpepper-core path: what `arenaprove plan` shows for PoRep
/// partitions too large to record in memory.
#[test]
fn a_counting_recorder_predicts_the_file_bytes() {
    use arenaprove_circuits::native::NativeCircuit;
    use arenaprove_circuits::precompiled::RecordingCs;
    type Run = Box<dyn Fn(&mut RecordingCs)>;
    let natives: Vec<(&str, Run)> = vec![
        ("chain", Box::new(|cs| ChainCircuit::new(3_000, 7).synthesize_native(cs).unwrap())),
        ("sha", Box::new(|cs| ShaCircuit::new(2, 7).synthesize_native(cs).unwrap())),
        (
            "sector",
            Box::new(|cs| {
                SectorPartitionCircuit::for_constraints(1, 0, 16_384).synthesize_native(cs).unwrap()
            }),
        ),
        ("sha, bellpepper gadget", Box::new(|cs| ShaCircuit::new(2, 7).bellpepper().synthesize(cs).unwrap())),
    ];
    for (what, run) in natives {
        let mut full = RecordingCs::new(what).unwrap();
        run(&mut full);
        let mut counting = RecordingCs::counting(what).unwrap();
        run(&mut counting);
        let predicted = full.file_bytes();
        assert_eq!(counting.file_bytes(), predicted, "{what}: counting vs full recorder");
        assert_eq!(counting.counts(), full.counts(), "{what}: rows, inputs, aux");
        assert_eq!(full.into_bytes().unwrap().len() as u64, predicted, "{what}: predicted vs written");
        assert!(counting.into_bytes().is_err(), "{what}: a counting recorder has nothing to write");
    }
}

/// a, b, c leased late ([`ArenaAssignment::witness_then_abc`]): two partitions share one
/// set. The first takes it at its products; the second's witness goes ahead, and its
/// products wait for the set (a typed timeout when it does not come back, the set once it
/// does). Each result is byte-identical to the plain assignment's, and nothing leaks.
#[test]
fn late_abc_partitions_share_fewer_sets_and_stay_identical() {
    use arenaprove_circuits::LateAbc;
    use std::time::Duration;
    let circuits = [
        SectorPartitionCircuit::for_constraints(81, 1, 4096),
        SectorPartitionCircuit::for_constraints(82, 1, 4096),
    ];
    let shape = shape_of(circuits[0]).unwrap();
    let pc = Arc::new(record(circuits[0], "late").unwrap());
    let ledger = Ledger::unlimited();
    // One set of a, b, c for two witnesses; a reference pool apart.
    let pools = AssignmentPools::for_shape(&shape, 2, &ledger, RegionConfig::heap()).unwrap();
    let abc_pool = AssignmentPools::for_shape(&shape, 1, &ledger, RegionConfig::heap()).unwrap().abc.unwrap();
    let (ref_ledger, ref_pools) = pools_for(&shape);
    let late = |wait_ms: u64| LateAbc {
        pool: abc_pool.clone(),
        gate: Arc::new(std::sync::Mutex::new(())),
        wait: Duration::from_millis(wait_ms),
    };
    let witness = |c: &SectorPartitionCircuit, wait_ms: u64| {
        let mut cs = ArenaAssignment::witness_then_abc(&pools, &shape, late(wait_ms)).unwrap();
        assert!(cs.takes_abc_late() && !cs.holds_abc_slabs());
        cs.alloc_one().unwrap();
        pc.witness_into(*c, &mut cs).unwrap();
        cs
    };
    let (mut first, mut second) = (witness(&circuits[0], 50), witness(&circuits[1], 50));
    pc.products_or_defer(&mut first).unwrap();
    first.finish().unwrap();
    assert!(first.holds_abc_slabs() && !first.takes_abc_late());
    let want = synthesize_arena(circuits[0], &ref_pools, &shape).unwrap();
    assert_identical("late, first", &want, &first);
    drop(want);
    // The only set is out: the second waits its 50 ms and fails, naming the pool.
    let err = pc.products_or_defer(&mut second).unwrap_err().to_string();
    assert!(err.contains("abc"), "{err}");
    drop(second);
    // Once the first hands its set back (after h, in the engine), the next one proceeds.
    let mut third = witness(&circuits[1], 5_000);
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        drop(first);
    });
    pc.products_or_defer(&mut third).unwrap();
    third.finish().unwrap();
    t.join().unwrap();
    let want = synthesize_arena(circuits[1], &ref_pools, &shape).unwrap();
    assert_identical("late, after a wait", &want, &third);
    drop((third, want));
    assert_eq!(pools.outstanding(), 0);
    assert_eq!(abc_pool.outstanding(), 0);
    assert!(ledger.snapshot().balanced() && ref_ledger.snapshot().balanced());
}
