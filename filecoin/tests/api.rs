//! The C1 and sector.json formats, on a real 2 KiB sector sealed by filecoin-proofs.
//! No Groth16 parameters needed: sealing up to C1 uses none.
use arenaprove_filecoin::{
    rng_from_seed, seal_sector, C1Output, FilecoinError, RegisteredSealProof, SealRequest, SealedSector,
    SectorInfo, SectorSize,
};

fn sealed_2kib(seed: u64) -> SealedSector {
    let mut rng = rng_from_seed(seed);
    let request = SealRequest::random(SectorSize::Kib2, &mut rng);
    let work = tempfile::tempdir().expect("tempdir");
    seal_sector(&request, &mut rng, work.path()).expect("2 KiB seal")
}

#[test]
fn api_json_has_the_filecoin_proofs_api_shape_and_round_trips() {
    let sealed = sealed_2kib(11);
    let json = sealed.c1.to_api_json().unwrap();
    let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(value["registered_proof"], "StackedDrg2KiBV1_1");
    let tagged = value["vanilla_proofs"].as_object().expect("vanilla_proofs is a tagged enum");
    assert_eq!(tagged.keys().collect::<Vec<_>>(), ["StackedDrg2KiBV1"]);
    let partitions = tagged["StackedDrg2KiBV1"].as_array().unwrap();
    assert_eq!(partitions.len(), 1, "2 KiB has one partition");
    assert!(!partitions[0].as_array().unwrap().is_empty());
    for field in ["comm_r", "comm_d", "replica_id", "seed", "ticket"] {
        assert_eq!(value[field].as_array().map(Vec::len), Some(32), "{field} is 32 bytes");
    }
    assert_eq!(value["seed"], serde_json::json!(sealed.info.seed));
    assert_eq!(value["comm_r"], serde_json::json!(sealed.info.comm_r));

    let back = C1Output::from_json(&json, None).unwrap();
    assert_eq!(back.registered_proof, RegisteredSealProof::StackedDrg2KiBV1_1);
    assert_eq!(back.to_api_json().unwrap(), json, "api format round-trips byte for byte");
    assert_eq!(back.commitments(), (sealed.info.comm_r, sealed.info.comm_d));
}

#[test]
fn plain_format_needs_the_sector_size_and_then_reads() {
    let sealed = sealed_2kib(12);
    let plain = sealed.c1.to_plain_json().unwrap();
    let value: serde_json::Value = serde_json::from_slice(&plain).unwrap();
    assert!(value.get("registered_proof").is_none());
    assert!(value["vanilla_proofs"].is_array(), "plain format is untagged");

    let err = C1Output::from_json(&plain, None).unwrap_err().to_string();
    assert!(err.contains("registered_proof") && err.contains("--sector-size"), "{err}");

    let c1 = C1Output::from_json(&plain, Some(SectorSize::Kib2.default_registered_proof())).unwrap();
    assert_eq!(c1.to_api_json().unwrap(), sealed.c1.to_api_json().unwrap());
}

#[test]
fn bad_c1_files_give_clear_errors() {
    let sealed = sealed_2kib(13);
    let json = sealed.c1.to_api_json().unwrap();

    let truncated = &json[..json.len() / 2];
    let err = C1Output::from_json(truncated, None).unwrap_err();
    assert!(matches!(err, FilecoinError::BadC1(_)), "{err}");
    assert!(err.to_string().contains("EOF"), "{err}");

    for foreign in [&b"{\"foo\": 1}"[..], b"[1, 2, 3]", b"\xff\xfe", b""] {
        let err = C1Output::from_json(foreign, None).unwrap_err();
        assert!(matches!(err, FilecoinError::BadC1(_)), "{err}");
    }

    // A tag that does not match the registered proof.
    let mut value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    value["registered_proof"] = "StackedDrg8MiBV1_1".into();
    let err = C1Output::from_json(value.to_string().as_bytes(), None).unwrap_err().to_string();
    assert!(err.contains("StackedDrg2KiBV1") && err.contains("StackedDrg8MiBV1_1"), "{err}");

    // 32 GiB is read as its own tree shape: a 2 KiB sector's proofs under the 32 GiB tag
    // are refused with what is wrong (one partition where a 32 GiB sector has ten).
    let mut value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    value["registered_proof"] = "StackedDrg32GiBV1_1".into();
    let proofs = value["vanilla_proofs"]["StackedDrg2KiBV1"].take();
    value["vanilla_proofs"] = serde_json::json!({ "StackedDrg32GiBV1": proofs });
    let err = C1Output::from_json(value.to_string().as_bytes(), None).unwrap_err();
    assert!(matches!(err, FilecoinError::BadC1(_)), "{err}");
    assert!(err.to_string().contains("StackedDrg32GiBV1_1 has 10"), "{err}");

    // Non-interactive PoRep is refused.
    let mut value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    value["registered_proof"] = "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep".into();
    let err = C1Output::from_json(value.to_string().as_bytes(), None).unwrap_err();
    assert!(matches!(err, FilecoinError::Unsupported(_)), "{err}");

    // An all-zero seed is what seal_commit_phase2 refuses too.
    let mut value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    value["seed"] = serde_json::json!(vec![0u8; 32]);
    let err = C1Output::from_json(value.to_string().as_bytes(), None).unwrap_err().to_string();
    assert!(err.contains("seed"), "{err}");

    // Missing file: the path is named.
    let missing = std::path::Path::new("/nonexistent/c1.json");
    let err = C1Output::read(missing, None).unwrap_err().to_string();
    assert!(err.contains("/nonexistent/c1.json"), "{err}");
}

#[test]
fn registered_proofs_match_upstream_ids_and_configs() {
    use storage_proofs_core::api_version::{ApiFeature, ApiVersion};
    let p = RegisteredSealProof::StackedDrg2KiBV1_1;
    assert_eq!(p.proof_id(), 5);
    assert_eq!(&p.porep_id()[..8], &5u64.to_le_bytes());
    assert!(p.porep_id()[8..].iter().all(|&b| b == 0));
    assert_eq!(p.api_version(), ApiVersion::V1_1_0);
    assert_eq!(RegisteredSealProof::StackedDrg8MiBV1.api_version(), ApiVersion::V1_0_0);
    assert_eq!(RegisteredSealProof::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep.proof_id(), 19);
    assert_eq!(
        RegisteredSealProof::StackedDrg8MiBV1_1_Feat_SyntheticPoRep.api_features(),
        vec![ApiFeature::SyntheticPoRep]
    );
    assert_eq!(RegisteredSealProof::StackedDrg512MiBV1.sector_size_bytes(), 512 << 20);
    let config = RegisteredSealProof::StackedDrg8MiBV1_1.porep_config().unwrap();
    assert_eq!(u64::from(config.sector_size), 8 << 20);
    assert_eq!(usize::from(config.partitions), 1);
    assert_eq!("StackedDrg2KiBV1_1".parse::<RegisteredSealProof>().unwrap(), p);
    assert!("StackedDrg3KiBV1".parse::<RegisteredSealProof>().is_err());
    assert_eq!("2kib".parse::<SectorSize>().unwrap(), SectorSize::Kib2);
    assert_eq!("8388608".parse::<SectorSize>().unwrap(), SectorSize::Mib8);
    assert!("3KiB".parse::<SectorSize>().is_err());
}

#[test]
fn sector_json_round_trips_and_rejects_inconsistency() {
    let sealed = sealed_2kib(14);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sector.json");
    sealed.info.write(&path).unwrap();
    assert_eq!(SectorInfo::read(&path).unwrap(), sealed.info);

    let mut value: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    value["sector_size"] = 8388608.into();
    std::fs::write(&path, value.to_string()).unwrap();
    let err = SectorInfo::read(&path).unwrap_err().to_string();
    assert!(err.contains("sector.json") && err.contains("sector_size"), "{err}");

    std::fs::write(&path, b"{").unwrap();
    assert!(SectorInfo::read(&path).unwrap_err().to_string().contains("sector.json"));
}

#[test]
fn distinct_requests_seal_distinct_sectors() {
    let a = sealed_2kib(21);
    let b = sealed_2kib(22);
    assert_ne!(a.info.sector_id, b.info.sector_id);
    assert_ne!(a.info.comm_r, b.info.comm_r);
    assert_ne!(a.info.comm_d, b.info.comm_d);
    // Same seed, same sector: sealing is deterministic in its inputs.
    let a2 = sealed_2kib(21);
    assert_eq!(a.info, a2.info);
}

/// Every sector size's parameter files carry the names of the official ones (the cache id
/// filecoin-proofs derives for its tree shape), so official parameters load unchanged:
/// 32 GiB is `...poseidon_hasher-8-8-0-...`, 64 GiB `...-8-8-2-...`.
#[test]
fn every_sector_size_names_its_official_parameter_file() {
    let dir = std::path::Path::new("/nonexistent");
    for size in SectorSize::ALL {
        let files =
            arenaprove_filecoin::params::ParamFiles::in_dir(size.default_registered_proof(), dir).unwrap();
        let name = files.params.file_name().unwrap().to_str().unwrap().to_string();
        assert!(
            storage_proofs_core::parameter_cache::get_parameter_data_from_id(&name).is_some(),
            "{size}: {name} is not an official parameter file"
        );
        let arity = match size {
            SectorSize::Gib32 => "-8-8-0-",
            SectorSize::Gib64 => "-8-8-2-",
            _ => "-8-0-0-",
        };
        assert!(name.contains(arity), "{size}: {name}");
        assert_eq!(size.name().parse::<SectorSize>().unwrap(), size);
        let err = files.require_params().unwrap_err().to_string();
        assert!(err.contains(&name), "{err}");
    }
}
