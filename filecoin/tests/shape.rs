//! Shapes of C2 partition circuits for every network sector size: counted on the real
//! blank circuit, cached as JSON, and answered from the cache afterwards.
use arenaprove_filecoin::shape::{
    count_porep_shape, porep_sector_size, porep_sector_size_name, porep_shape, FILECOIN_PROOFS_VERSION,
};
use arenaprove_filecoin::{FilecoinError, RegisteredSealProof};

/// The 2 KiB C2 circuit as bellperson 0.27 synthesized it for `seal_commit_phase2`
/// (ANCHORS.md: 2,687,921 constraints before its one `input * 0 = 0` row per input, 40
/// inputs with ONE, 2,685,673 aux). The shape counts the input rows too.
#[test]
fn the_2kib_shape_is_counted_from_the_blank_circuit_then_cached() {
    let cache = tempfile::tempdir().unwrap();
    let bytes = porep_sector_size("2KiB").unwrap();
    let first = porep_shape(bytes, cache.path()).unwrap();
    assert!(!first.from_cache);
    let s = first.porep.shape;
    assert_eq!((s.constraints - s.inputs, s.inputs, s.aux), (2_687_921, 40, 2_685_673), "{s}");
    assert_eq!(s.domain_size, 1 << 22);
    assert_eq!(first.porep.partitions, 1);
    assert_eq!(first.porep.registered_proof, RegisteredSealProof::StackedDrg2KiBV1_1);
    // The counted file size is the recorded file's (`plan` shows it).
    let recorded = arenaprove_circuits::record(
        arenaprove_filecoin::circuit::blank_circuit(RegisteredSealProof::StackedDrg2KiBV1_1).unwrap(),
        "2 KiB",
    )
    .unwrap();
    assert_eq!(first.porep.precompiled_bytes, recorded.bytes() as u64);
    let name = first.path.file_name().unwrap().to_str().unwrap();
    assert_eq!(name, format!("StackedDrg2KiBV1_1-filecoin-proofs-{FILECOIN_PROOFS_VERSION}.json"));

    // The second call reads the file: same answer, and no counting (milliseconds).
    let started = std::time::Instant::now();
    let second = porep_shape(bytes, cache.path()).unwrap();
    assert!(second.from_cache);
    assert!(started.elapsed().as_millis() < 200, "{:?}", started.elapsed());
    assert_eq!(second.porep, first.porep);
    assert_eq!(second.count_s, first.count_s);

    // A corrupted or foreign file is counted again and rewritten.
    std::fs::write(&first.path, b"{\"constraints\": 1}").unwrap();
    let again = porep_shape(bytes, cache.path()).unwrap();
    assert!(!again.from_cache);
    assert_eq!(again.porep, first.porep);
    assert!(porep_shape(bytes, cache.path()).unwrap().from_cache);
}

#[test]
fn sector_size_names() {
    for (name, bytes) in [
        ("2KiB", 2048u64),
        ("8mib", 8 << 20),
        ("512MiB", 512 << 20),
        ("32GiB", 32 << 30),
        ("64GiB", 64 << 30),
    ] {
        assert_eq!(porep_sector_size(name).unwrap(), bytes, "{name}");
        assert_eq!(porep_sector_size(&bytes.to_string()).unwrap(), bytes);
        assert!(porep_sector_size_name(bytes).unwrap().eq_ignore_ascii_case(name));
    }
    let e = porep_sector_size("4KiB").unwrap_err();
    assert!(matches!(e, FilecoinError::BadArgument(_)) && e.to_string().contains("32GiB"), "{e}");
    assert!(matches!(count_porep_shape(4096), Err(FilecoinError::UnsupportedSectorSize { bytes: 4096 })));
}

/// The version in the cache key is the one Cargo.toml pins.
#[test]
fn the_cache_key_names_the_pinned_filecoin_proofs() {
    let toml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let pin = format!("filecoin-proofs = {{ version = \"={FILECOIN_PROOFS_VERSION}\"");
    assert!(toml.contains(&pin), "Cargo.toml does not pin {pin}");
}

/// 32 GiB: cuzk's figures (ANCHORS.md: 130,278,869 constraints, 328 inputs, 130,169,893
/// aux) cross-check our count. 44 s of CPU on the 2-core dev machine (BENCHMARKS.md), ~7 MB.
#[test]
#[ignore]
fn the_32gib_shape_matches_cuzk() {
    let started = std::time::Instant::now();
    let p = count_porep_shape(porep_sector_size("32GiB").unwrap()).unwrap();
    eprintln!(
        "32GiB: {} ({} partitions) counted in {:.1} s",
        p.shape,
        p.partitions,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(p.partitions, 10);
    assert_eq!((p.shape.inputs, p.shape.aux), (328, 130_169_893), "{}", p.shape);
    assert_eq!(p.shape.domain_size, 1 << 27);
    // cuzk counts as the shape does: the 328 `input * 0 = 0` rows included.
    assert_eq!(p.shape.constraints, 130_278_869, "{}", p.shape);
}

/// 64 GiB: counted (no anchor to compare with beyond its size class).
#[test]
#[ignore]
fn the_64gib_shape_is_counted() {
    let started = std::time::Instant::now();
    let p = count_porep_shape(porep_sector_size("64GiB").unwrap()).unwrap();
    eprintln!(
        "64GiB: {} ({} partitions) counted in {:.1} s",
        p.shape,
        p.partitions,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(p.partitions, 10);
    assert!(p.shape.domain_size <= 1 << 28, "{}", p.shape);
}
