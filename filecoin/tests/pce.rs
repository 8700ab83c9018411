//! Precompiled constraints on real circuits: precompiled synthesis of PoRep C2 partitions is byte-identical
//! to `ArenaAssignment`'s through the bellpepper trait (a, b, c, inputs, aux, densities) for
//! two different sectors, recorded once from the blank circuit; the recording is saved
//! beside the parameters and mapped by the next load; a recording of another sector size is
//! refused by name; the parallel witness (challenges in pieces, in parallel) is byte-identical too. (Proofs from precompiled synthesis are checked by `tests/c2.rs`, whose
//! provers use it by default.) 8 MiB: `--ignored`.
use std::sync::Arc;

use arenaprove_arena::{Ledger, RegionConfig};
use arenaprove_circuits::precompiled::{
    synthesize_precompiled_parts, Origin, PartedCircuit, PrecompiledError,
};
use arenaprove_circuits::{
    shape_of, synthesize_arena, synthesize_precompiled, ArenaAssignment, AssignmentPools, Precompiled,
    ProverWitness,
};
use arenaprove_filecoin::circuit::{blank_circuit, SectorJob};
use arenaprove_filecoin::params::ParamFiles;
use arenaprove_filecoin::pce::{load_or_record, pce_identity, pce_path};
use arenaprove_filecoin::random::random_c1;
use arenaprove_filecoin::{rng_from_seed, seal_sector, SealRequest, SealedSector, SectorSize};

fn sealed(size: SectorSize, seed: u64) -> SealedSector {
    let mut rng = rng_from_seed(seed);
    let request = SealRequest::random(size, &mut rng);
    let work = tempfile::tempdir().expect("tempdir");
    seal_sector(&request, &mut rng, work.path()).expect("seal")
}

fn assert_identical(what: &str, want: &ArenaAssignment, got: &ArenaAssignment) {
    assert_eq!(got.num_constraints(), want.num_constraints(), "{what}: constraints");
    assert!(got.input_assignment() == want.input_assignment(), "{what}: inputs");
    assert!(got.aux_assignment() == want.aux_assignment(), "{what}: aux");
    assert_eq!(got.a_aux_density(), want.a_aux_density(), "{what}: a_aux density");
    assert_eq!(got.b_input_density(), want.b_input_density(), "{what}: b_input density");
    assert_eq!(got.b_aux_density(), want.b_aux_density(), "{what}: b_aux density");
    let (a, b, c) = got.abc().unwrap();
    let (wa, wb, wc) = want.abc().unwrap();
    assert!(a == wa, "{what}: a");
    assert!(b == wb, "{what}: b");
    assert!(c == wc, "{what}: c");
}

/// Every partition of two sectors of `size`: precompiled (recorded from the blank
/// circuit) equals the bellpepper-trait synthesis.
fn check(size: SectorSize, seeds: [u64; 2]) {
    let proof = size.default_registered_proof();
    let started = std::time::Instant::now();
    let pc = arenaprove_circuits::record(blank_circuit(proof).unwrap(), "test").unwrap();
    eprintln!("{size}: recorded {} rows, {} bytes in {:.2?}", pc.rows(), pc.bytes(), started.elapsed());
    let shape = pc.shape();
    let ledger = Ledger::unlimited();
    let pools = AssignmentPools::for_shape(&shape, 2, &ledger, RegionConfig::default()).unwrap();
    let mut checked = 0;
    for seed in seeds {
        let sector = sealed(size, seed);
        let job = SectorJob::new(&sector.c1).unwrap();
        for k in 0..job.partitions() {
            let circuit = job.circuit(k).unwrap();
            assert_eq!(shape_of(circuit.clone()).unwrap(), shape, "{size} partition {k}: shape");
            let want = synthesize_arena(circuit.clone(), &pools, &shape).unwrap();
            let got = synthesize_precompiled(circuit, &pc, &pools, &shape).unwrap();
            assert_identical(&format!("{size} sector seed {seed} partition {k}"), &want, &got);
            assert_eq!(got.input_assignment()[1..], job.public_inputs(k).unwrap()[..]);
            drop(got);
            // The parallel witness (one part per challenge, each in pieces) equals both.
            let parts = job.parts(k).unwrap();
            assert!(parts.parts() >= 2, "{size}: {} challenges", parts.parts());
            assert!(parts.pieces() >= 30, "{size}: {} pieces per challenge", parts.pieces());
            let got = synthesize_precompiled_parts(&parts, &pc, &pools, &shape).unwrap();
            assert_identical(
                &format!("{size} sector seed {seed} partition {k}, parallel witness"),
                &want,
                &got,
            );
            checked += 1;
        }
    }
    assert!(checked >= 2);
    assert_eq!(pools.outstanding(), 0);
}

#[test]
fn porep_2kib_precompiled_is_byte_identical_for_two_sectors() {
    check(SectorSize::Kib2, [3, 4]);
}

#[test]
#[ignore = "8 MiB: ~4M constraints per partition, minutes on 2 cores"]
fn porep_8mib_precompiled_is_byte_identical_for_two_sectors() {
    check(SectorSize::Mib8, [5, 6]);
}

/// Partition 0 of a C1 of the real shape with random values (`filecoin::random`): the
/// bellpepper-trait synthesis, the serial precompiled one and the parallel witness agree
/// byte for byte (a, b, c, inputs, aux, densities), on the circuit recorded from the blank
/// one (so the random C1 has exactly the network's shape). Timings on stderr.
fn check_random(size: SectorSize) {
    let time = std::time::Instant::now;
    let proof = size.default_registered_proof();
    let started = time();
    let c1 = random_c1(proof, &mut rng_from_seed(0x5eed)).unwrap();
    let job = SectorJob::new(&c1).unwrap();
    assert_eq!(job.partitions(), c1.partitions());
    eprintln!("{size}: random C1 of {} partitions in {:.2?}", job.partitions(), started.elapsed());
    let started = time();
    let pc = arenaprove_circuits::record(blank_circuit(proof).unwrap(), "test").unwrap();
    eprintln!("{size}: recorded {} rows, {} bytes in {:.2?}", pc.rows(), pc.bytes(), started.elapsed());
    let shape = pc.shape();
    let ledger = Ledger::unlimited();
    let pools = AssignmentPools::for_shape(&shape, 2, &ledger, RegionConfig::default()).unwrap();
    let started = time();
    let want = synthesize_arena(job.circuit(0).unwrap(), &pools, &shape).unwrap();
    eprintln!("{size}: bellpepper-trait synthesis {:.2?}", started.elapsed());
    let started = time();
    let got = synthesize_precompiled(job.circuit(0).unwrap(), &pc, &pools, &shape).unwrap();
    eprintln!("{size}: precompiled, serial witness {:.2?}", started.elapsed());
    assert_identical(&format!("{size} random C1, serial witness"), &want, &got);
    drop(got);
    let parts = job.parts(0).unwrap();
    let started = time();
    let got = synthesize_precompiled_parts(&parts, &pc, &pools, &shape).unwrap();
    eprintln!(
        "{size}: precompiled, parallel witness ({} parts on {} threads) {:.2?}",
        parts.parts(),
        rayon::current_num_threads(),
        started.elapsed()
    );
    assert_identical(&format!("{size} random C1, parallel witness"), &want, &got);
    drop((want, got));
    assert_eq!(pools.outstanding(), 0);
}

#[test]
fn porep_2kib_random_c1_has_the_network_shape_and_every_synthesis_agrees() {
    check_random(SectorSize::Kib2);
}

#[test]
#[ignore = "32 GiB: 130M constraints, two 13.6 GiB assignments and a 4 GiB recording: the GPU machine"]
fn porep_32gib_random_c1_every_synthesis_agrees() {
    check_random(SectorSize::Gib32);
}

#[test]
#[ignore = "64 GiB: as 32 GiB"]
fn porep_64gib_random_c1_every_synthesis_agrees() {
    check_random(SectorSize::Gib64);
}

#[test]
fn recording_is_saved_beside_the_params_mapped_next_time_and_foreign_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let proof = SectorSize::Kib2.default_registered_proof();
    let files = ParamFiles::for_proof(proof).unwrap().relocated(dir.path());
    let shape = shape_of(blank_circuit(proof).unwrap()).unwrap();
    let path = pce_path(&files);
    assert_eq!(path.parent(), files.params.parent(), "beside the params");

    let first = load_or_record(proof, &files, &shape).unwrap();
    assert_eq!(first.origin, Origin::Recorded { replaced: None });
    assert!(first.matrices.is_mapped());
    let second = load_or_record(proof, &files, &shape).unwrap();
    assert_eq!(second.origin, Origin::Mapped, "the second load maps the file");
    eprintln!("2 KiB: recorded and saved in {:.2?}, mapped in {:.2?}", first.elapsed, second.elapsed);
    assert_eq!(second.matrices.terms(), first.matrices.terms());

    // The same file asked for as the 8 MiB circuit: refused, naming the file and both circuits.
    let files_8m = ParamFiles::for_proof(SectorSize::Mib8.default_registered_proof()).unwrap();
    let e = Precompiled::open(&path, &pce_identity(&files_8m), None).unwrap_err();
    assert!(matches!(e, PrecompiledError::WrongCircuit { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains(&path.display().to_string()) && msg.contains("8MiB") && msg.contains("2KiB"),
        "{msg}"
    );

    // Truncated: refused by name on open; load_or_record records it again.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 4096]).unwrap();
    let e = Precompiled::open(&path, &pce_identity(&files), Some(&shape)).unwrap_err();
    assert!(
        matches!(e, PrecompiledError::Truncated { .. }) && e.to_string().contains("arenaprove-pce"),
        "{e}"
    );
    let third = load_or_record(proof, &files, &shape).unwrap();
    assert!(matches!(third.origin, Origin::Recorded { replaced: Some(_) }), "{:?}", third.origin);
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let _: Arc<Precompiled> = third.matrices;
}

/// A challenge whose labeling proofs do not match its columns' rows (one layer dropped)
/// is refused when the partition's parts are built, naming the partition and the reason:
/// the pieces never meet it (storage-proofs' own synthesis would assert).
#[test]
fn a_misshapen_challenge_is_refused_before_the_parallel_witness() {
    let mut c1 = sealed(SectorSize::Kib2, 9).c1;
    match &mut c1.shaped {
        arenaprove_filecoin::api::ShapedC1::Base(out) => {
            out.vanilla_proofs[0][1].labeling_proofs.pop();
        }
        _ => unreachable!("2 KiB is the base tree shape"),
    }
    let job = SectorJob::new(&c1).unwrap();
    let err = job.parts(0).err().expect("refused");
    let text = err.to_string();
    assert!(text.contains("partition 0"), "{text}");
    assert!(format!("{err:?}").contains("rows"), "{err:?}");
}
