//! Parameters: our generator against bellperson 0.27's (same seed, same bytes), the file
//! format both ways, and every kind of bad file giving a clear error.
use arenaprove::circuits::circuits::ChainCircuit;
use arenaprove::engine::groth16::{
    generate_random_parameters, CpuSubgroupCheck, Groth16Error, Parameters, ParamsMemory, PointFault,
    VerifyingKey,
};
use blstrs::Bls12;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

type BpParams = bellperson::groth16::Parameters<Bls12>;

fn ours(steps: usize, seed: u64) -> Parameters {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    generate_random_parameters(ChainCircuit::new(steps, 1), &mut rng, &ParamsMemory::heap()).unwrap()
}

fn theirs(steps: usize, seed: u64) -> BpParams {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    bellperson::groth16::generate_random_parameters::<Bls12, _, _>(ChainCircuit::new(steps, 1), &mut rng)
        .unwrap()
}

fn bytes_of(p: &BpParams) -> Vec<u8> {
    let mut v = Vec::new();
    p.write(&mut v).unwrap();
    v
}

#[test]
fn generator_matches_bellperson_byte_for_byte() {
    for steps in [1usize, 5, 300] {
        let ours = ours(steps, 7).to_bytes();
        let theirs = bytes_of(&theirs(steps, 7));
        assert_eq!(ours.len(), theirs.len(), "steps {steps}");
        assert!(ours == theirs, "steps {steps}: generated parameters differ");
    }
}

#[test]
fn files_round_trip_both_ways() {
    let dir = std::env::temp_dir().join(format!("arenaprove-params-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ours = ours(200, 3);
    let path = dir.join("ours.params");
    ours.write_file(&path).unwrap();
    // bellperson reads ours (checked) and writes back the same bytes.
    let bytes = std::fs::read(&path).unwrap();
    let bp = BpParams::read(&bytes[..], true).unwrap();
    assert_eq!(bytes_of(&bp), bytes);
    // We read bellperson's file, checked and unchecked.
    let theirs_path = dir.join("theirs.params");
    std::fs::write(&theirs_path, bytes_of(&theirs(200, 4))).unwrap();
    for checked in [true, false] {
        let back = Parameters::read_file(&theirs_path, checked, &ParamsMemory::heap()).unwrap();
        assert_eq!(back.to_bytes(), std::fs::read(&theirs_path).unwrap());
        assert_eq!(back.domain_size(), 256);
    }
    let back = Parameters::read_file(&path, true, &ParamsMemory::default()).unwrap();
    assert!(back == ours);
    // The checked load in two halves (the subgroup half through a SubgroupCheck).
    let back = Parameters::read_file_checked_by(&path, &mut CpuSubgroupCheck, &ParamsMemory::heap()).unwrap();
    assert!(back == ours);
    // Verifying key files.
    let vk_path = dir.join("ours.vk");
    ours.vk.write_file(&vk_path).unwrap();
    let bp_vk =
        bellperson::groth16::VerifyingKey::<Bls12>::read(&std::fs::read(&vk_path).unwrap()[..]).unwrap();
    assert_eq!(bp_vk, bp.vk);
    assert_eq!(VerifyingKey::read_file(&vk_path).unwrap(), ours.vk);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Offset of point `index` of `section` in a file of `p`.
fn offset_of(p: &Parameters, section: &str, index: usize) -> usize {
    let mut off = p.vk.encoded_bytes();
    for (name, len, size) in [
        ("h", p.h().len(), 96),
        ("l", p.l().len(), 96),
        ("a", p.a().len(), 96),
        ("b_g1", p.b_g1().len(), 96),
        ("b_g2", p.b_g2().len(), 192),
    ] {
        if name == section {
            return off + 4 + index * size;
        }
        off += 4 + len * size;
    }
    panic!("no section {section}");
}

fn load(bytes: &[u8], checked: bool) -> Result<Parameters, Groth16Error> {
    Parameters::from_bytes(bytes, "test.params", checked, &ParamsMemory::heap())
}

#[test]
fn bad_files_give_errors_naming_file_section_and_index() {
    let p = ours(40, 5);
    let good = p.to_bytes();
    assert!(load(&good, true).is_ok());

    // Truncated inside every section and at its length prefix.
    for (section, index) in [("h", 3usize), ("l", 0), ("a", 7), ("b_g1", 1), ("b_g2", 2)] {
        let cut = offset_of(&p, section, index) + 10;
        match load(&good[..cut], true) {
            Err(Groth16Error::Truncated { section: s, index: i, ref file, .. }) => {
                assert_eq!((s, i, file.as_str()), (section, index, "test.params"))
            }
            other => panic!("{section}: {other:?}"),
        }
    }
    match load(&good[..100], true) {
        Err(Groth16Error::Truncated { section: "vk.beta_g1", .. }) => {}
        other => panic!("{other:?}"),
    }
    let e = load(&good[..offset_of(&p, "l", 0) - 2], true).unwrap_err();
    assert!(matches!(e, Groth16Error::Truncated { section: "l", index: 0, .. }), "{e}");
    assert!(e.to_string().contains("test.params") && e.to_string().contains("'l'"), "{e}");

    // Trailing garbage.
    let mut long = good.clone();
    long.extend_from_slice(&[0u8; 5]);
    assert!(matches!(load(&long, true), Err(Groth16Error::TrailingBytes { extra_bytes: 5, .. })));

    // A corrupted coordinate: off the curve (checked and unchecked).
    let mut bad = good.clone();
    bad[offset_of(&p, "a", 4) + 95] ^= 1;
    for checked in [true, false] {
        match load(&bad, checked) {
            Err(Groth16Error::BadPoint { section: "a", index: 4, fault: PointFault::NotOnCurve, .. }) => {}
            other => panic!("{other:?}"),
        }
    }
    // G2 as well.
    let mut bad = good.clone();
    bad[offset_of(&p, "b_g2", 1) + 191] ^= 1;
    assert!(matches!(
        load(&bad, true),
        Err(Groth16Error::BadPoint { section: "b_g2", index: 1, fault: PointFault::NotOnCurve, .. })
    ));

    // On the curve but outside the subgroup: only checked mode sees it.
    let mut bad = good.clone();
    let o = offset_of(&p, "h", 9);
    bad[o..o + 96].copy_from_slice(&arenaprove::engine::groth16::params::g1_outside_subgroup_bytes());
    let e = load(&bad, true).unwrap_err();
    assert!(
        matches!(e, Groth16Error::BadPoint { section: "h", index: 9, fault: PointFault::NotInSubgroup, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("subgroup"), "{e}");
    assert!(load(&bad, false).is_ok());
    // The checked load in two halves (decode, then a SubgroupCheck over the sections, as the
    // GPU runs it) reports the same point at the same offset; a good file passes.
    let two_halves = |bytes: &[u8]| {
        let p = load(bytes, false)?;
        p.check_subgroups("test.params", &mut CpuSubgroupCheck)
    };
    assert_eq!(two_halves(&bad).unwrap_err().to_string(), e.to_string());
    two_halves(&good).unwrap();
    let mut bad_late = good.clone();
    let o = offset_of(&p, "b_g1", p.b_g1().len() - 1);
    bad_late[o..o + 96].copy_from_slice(&arenaprove::engine::groth16::params::g1_outside_subgroup_bytes());
    assert_eq!(
        two_halves(&bad_late).unwrap_err().to_string(),
        load(&bad_late, true).unwrap_err().to_string(),
        "the last point of b_g1"
    );
    // bellperson agrees.
    assert!(BpParams::read(&bad[..], true).is_err());

    // The point at infinity in l.
    let mut bad = good.clone();
    let o = offset_of(&p, "l", 2);
    bad[o..o + 96].fill(0);
    bad[o] = 0x40;
    assert!(matches!(
        load(&bad, false),
        Err(Groth16Error::BadPoint { section: "l", index: 2, fault: PointFault::Infinity, .. })
    ));
    // A compressed flag in an uncompressed file.
    let mut bad = good.clone();
    bad[offset_of(&p, "b_g1", 0)] |= 0x80;
    assert!(matches!(
        load(&bad, true),
        Err(Groth16Error::BadPoint { section: "b_g1", index: 0, fault: PointFault::BadEncoding, .. })
    ));
    // A bad point in the verifying key's ic.
    let mut bad = good.clone();
    bad[arenaprove::engine::groth16::params::VK_FIXED_BYTES + 4 + 95] ^= 1;
    assert!(matches!(load(&bad, true), Err(Groth16Error::BadPoint { section: "vk.ic", index: 0, .. })));
    // A huge count.
    let mut bad = good.clone();
    let o = offset_of(&p, "h", 0) - 4;
    bad[o..o + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(load(&bad, true), Err(Groth16Error::SectionTooLong { section: "h", .. })));
    // A missing file.
    let e = Parameters::read_file("/nonexistent/x.params", true, &ParamsMemory::heap()).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/x.params"), "{e}");
}
