//! The Groth16 parameter cache, as filecoin-proofs lays it out.
//!
//! Directory: `FIL_PROOFS_PARAMETER_CACHE` (default `/var/tmp/filecoin-proof-parameters/`),
//! read once per process by storage-proofs-core's `SETTINGS`. Names:
//! `v28-stacked-proof-of-replication-<tree>-<sha256 of the public params identifier>` with
//! `.params` (bellperson's parameter format), `.vk` (verifying key) and `.meta`
//! (`{"sector_size":N}`), the same names as the official trusted-setup files.
//!
//! What filecoin-proofs 19.1.0 requires of them (storage-proofs-core's `parameter_cache`):
//! * `.params` must exist: C2 (`get_stacked_params`) never generates parameters; it memory
//!   maps the file with bellperson's `build_mapped_parameters` (unchecked).
//! * `.vk` is read when present, else derived from `.params` and written.
//! * `.meta` is only written by `get_param_metadata`, never needed for C2 or verification.
//! * The content digest (blake2b against the `parameters.json` manifest) is checked only
//!   when `FIL_PROOFS_VERIFY_PRODUCTION_PARAMS=1` (default off). Development parameters
//!   have other digests, so that setting must stay off for them; official files pass it
//!   unchanged.
use std::path::{Path, PathBuf};

use arenaprove_engine::groth16::FixedBaseSource;

use crate::api::RegisteredSealProof;
use crate::error::FilecoinError;

/// The directory filecoin-proofs itself reads parameters from: `FIL_PROOFS_PARAMETER_CACHE`
/// as the process had it when storage-proofs-core first read its settings (once per
/// process), else its default. `verify_seal` and `seal_commit_phase2` read only this one.
pub fn default_cache_dir() -> PathBuf {
    storage_proofs_core::parameter_cache::parameter_cache_dir()
}

/// Where the parameter files of one sector size live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamFiles {
    /// Sector size name (`2KiB`), for messages.
    pub sector_size: String,
    /// What the parameters are for, for messages: `2KiB sectors`, `2KiB WindowPoSt`.
    pub circuit: String,
    /// The command that generates development parameters for this circuit (for messages).
    pub generate: String,
    /// Cache identifier (file name without version prefix and extension).
    pub cache_id: String,
    pub params: PathBuf,
    pub vk: PathBuf,
    pub meta: PathBuf,
    pub cache_dir: PathBuf,
}

impl ParamFiles {
    /// The files filecoin-proofs looks for when proving or verifying `registered_proof`, in
    /// its own cache directory ([`default_cache_dir`]).
    pub fn for_proof(registered_proof: RegisteredSealProof) -> Result<Self, FilecoinError> {
        Self::in_dir(registered_proof, &default_cache_dir())
    }

    /// The files filecoin-proofs names for `registered_proof`, in `dir`: what a caller that
    /// was given the directory (the daemon's `srs.param_cache`, the CLI's `--param-cache`)
    /// loads, without touching the process environment.
    pub fn in_dir(registered_proof: RegisteredSealProof, dir: &Path) -> Result<Self, FilecoinError> {
        let config = registered_proof.porep_config()?;
        let what = "locating the parameter cache";
        // The identifier sets up the public parameters and hashes them: computed once, and
        // the names derived from it as filecoin-proofs' get_cache_*_path do.
        let shape = registered_proof.sector_size()?.tree_shape();
        let cache_id = crate::tree::with_tree!(shape, Tree => config.get_cache_identifier::<Tree>())
            .map_err(|e| FilecoinError::proofs(what, e))?;
        let size = registered_proof.sector_size()?;
        Ok(ParamFiles::named(
            size.name(),
            format!("{size} sectors"),
            format!("arenaprove filecoin seal --sector-size {size}"),
            cache_id,
            dir,
        ))
    }

    /// The files of the circuit whose cache identifier is `cache_id` (what filecoin-proofs'
    /// `get_cache_*_path` name), in `dir`; `circuit` and `generate` are for messages.
    pub(crate) fn named(
        sector_size: &str,
        circuit: String,
        generate: String,
        cache_id: String,
        dir: &Path,
    ) -> Self {
        use storage_proofs_core::parameter_cache as pc;
        ParamFiles {
            sector_size: sector_size.to_string(),
            circuit,
            generate,
            params: dir.join(pc::parameter_id(&cache_id)),
            vk: dir.join(pc::verifying_key_id(&cache_id)),
            meta: dir.join(pc::metadata_id(&cache_id)),
            cache_id,
            cache_dir: dir.to_path_buf(),
        }
    }

    /// The same file names in another directory (a second cache, a test fixture).
    pub fn relocated(&self, dir: &Path) -> ParamFiles {
        let moved = |p: &PathBuf| dir.join(p.file_name().unwrap_or_default());
        ParamFiles {
            sector_size: self.sector_size.clone(),
            circuit: self.circuit.clone(),
            generate: self.generate.clone(),
            cache_id: self.cache_id.clone(),
            params: moved(&self.params),
            vk: moved(&self.vk),
            meta: moved(&self.meta),
            cache_dir: dir.to_path_buf(),
        }
    }

    /// Errors with [`FilecoinError::MissingParams`] unless the `.params` file exists.
    pub fn require_params(&self) -> Result<(), FilecoinError> {
        if self.params.is_file() {
            Ok(())
        } else {
            Err(self.missing(&self.params))
        }
    }

    /// Errors unless a verifying key can be had: the `.vk` file, or the `.params` file it is
    /// derived from.
    pub fn require_vk_source(&self) -> Result<(), FilecoinError> {
        if self.vk.is_file() || self.params.is_file() {
            Ok(())
        } else {
            Err(self.missing(&self.vk))
        }
    }

    fn missing(&self, path: &Path) -> FilecoinError {
        FilecoinError::MissingParams {
            circuit: self.circuit.clone(),
            generate: self.generate.clone(),
            path: path.to_path_buf(),
            cache_dir: self.cache_dir.clone(),
        }
    }
}

/// What [`ensure_params`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamsStatus {
    /// The `.params` file was already in the cache (official or generated before).
    Present,
    /// Development parameters were generated and written: in `seconds` in all, of which
    /// `recording_seconds` recording the circuit (or mapping its recording) and
    /// `products_seconds` in the fixed-base products, made by `products` ("cpu", "CUDA
    /// device 0 (..)").
    Generated {
        params_bytes: u64,
        seconds: f64,
        recording_seconds: f64,
        products: String,
        products_seconds: f64,
    },
}

/// Makes sure `files` (the cache's files for `registered_proof`) hold parameters: when the
/// `.params` file is absent, generates **insecure development parameters** (random toxic waste from `rng`)
/// for the StackedDrg circuit with the engine's generator and writes `.params`, `.vk` and
/// `.meta` in filecoin-proofs' format. Files are written under a temporary name and
/// renamed, so a reader never sees a partial file. An existing file is never touched.
pub fn ensure_params(
    registered_proof: RegisteredSealProof,
    files: &ParamFiles,
    rng: &mut impl rand_core::RngCore,
) -> Result<ParamsStatus, FilecoinError> {
    ensure_params_with(registered_proof, files, rng, None)
}

/// [`ensure_params`] with the parameters' fixed-base products made by `products` (a GPU's;
/// `None`: the CPU's). The same file either way for the same rng.
pub fn ensure_params_with(
    registered_proof: RegisteredSealProof,
    files: &ParamFiles,
    rng: &mut impl rand_core::RngCore,
    products: Option<&FixedBaseSource>,
) -> Result<ParamsStatus, FilecoinError> {
    let identity = crate::pce::pce_identity(files);
    ensure_params_of(files, registered_proof.sector_size_bytes(), rng, Some(&identity), products, || {
        crate::circuit::blank_circuit(registered_proof)
    })
}

/// [`ensure_params`] for any circuit: `blank` builds the circuit parameter generation
/// synthesizes (called only when the file is absent); `sector_size_bytes` goes to `.meta`.
/// With `identity`, the circuit is recorded first (or its recording of that identity mapped
/// from beside the parameters, where proving will look for it) and the parameters are
/// written section by section from the recording
/// ([`arenaprove_engine::write_parameters_from_matrices`]: the same bytes for the same toxic
/// waste, without holding the parameters, so any sector size fits); without, they are
/// generated in memory from the circuit and then written.
pub(crate) fn ensure_params_of<C: bellpepper_core::Circuit<blstrs::Scalar>>(
    files: &ParamFiles,
    sector_size_bytes: u64,
    rng: &mut impl rand_core::RngCore,
    identity: Option<&str>,
    products: Option<&FixedBaseSource>,
    blank: impl FnOnce() -> Result<C, FilecoinError>,
) -> Result<ParamsStatus, FilecoinError> {
    if files.params.is_file() {
        return Ok(ParamsStatus::Present);
    }
    let started = std::time::Instant::now();
    let _span = tracing::info_span!("generate_params", circuit = %files.circuit).entered();
    std::fs::create_dir_all(&files.cache_dir).map_err(|e| FilecoinError::io(&files.cache_dir, e))?;
    // `<file>.tmp-<pid>`: one temporary name per file (the parameters stay under theirs
    // while the vk and meta are written and renamed).
    let tmp = |path: &Path| {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".tmp-{}", std::process::id()));
        std::path::PathBuf::from(name)
    };
    let engine_err = |path: &Path| {
        let what = format!("writing {}", path.display());
        move |e: arenaprove_engine::Groth16Error| FilecoinError::groth16(what, e)
    };
    let rename = |from: &Path, to: &Path| std::fs::rename(from, to).map_err(|e| FilecoinError::io(to, e));
    // The parameters go to a temporary name first and are renamed last.
    let params_tmp = tmp(&files.params);
    let mut recording_seconds = 0.0;
    let mut made_by = ("cpu".to_string(), 0.0);
    let made = match identity {
        Some(identity) => {
            let pce = crate::pce::load_or_record_of(files, identity, None, blank)?;
            recording_seconds = started.elapsed().as_secs_f64();
            let tw = arenaprove_engine::groth16::ToxicWaste::random(rng);
            arenaprove_engine::groth16::write_parameters_from_matrices_with(
                &pce.matrices,
                &tw,
                &params_tmp,
                products,
            )
            .map(|written| {
                made_by = (written.products, written.products_time.as_secs_f64());
                written.vk
            })
            .map_err(engine_err(&params_tmp))
        }
        None => blank().and_then(|circuit| {
            let params = arenaprove_engine::generate_random_parameters(
                circuit,
                rng,
                &arenaprove_engine::ParamsMemory::default(),
            )
            .map_err(|e| FilecoinError::groth16(format!("generating parameters for {}", files.circuit), e))?;
            params.write_file(&params_tmp).map_err(engine_err(&params_tmp))?;
            Ok(params.vk)
        }),
    };
    let vk = made.inspect_err(|_| {
        // A partial file under the temporary name is of no use to anyone.
        let _ = std::fs::remove_file(&params_tmp);
    })?;
    // The verifying key before the parameters are renamed: if the vk is present,
    // filecoin-proofs never derives it from the params, so it must never be stale. A crash
    // leaves a vk without params, which `require_params` reports.
    let vk_tmp = tmp(&files.vk);
    vk.write_file(&vk_tmp).map_err(engine_err(&vk_tmp))?;
    rename(&vk_tmp, &files.vk)?;
    let meta = serde_json::json!({ "sector_size": sector_size_bytes });
    let meta_tmp = tmp(&files.meta);
    std::fs::write(&meta_tmp, meta.to_string()).map_err(|e| FilecoinError::io(&meta_tmp, e))?;
    rename(&meta_tmp, &files.meta)?;
    rename(&params_tmp, &files.params)?;
    let params_bytes =
        std::fs::metadata(&files.params).map_err(|e| FilecoinError::io(&files.params, e))?.len();
    Ok(ParamsStatus::Generated {
        params_bytes,
        seconds: started.elapsed().as_secs_f64(),
        recording_seconds,
        products: made_by.0,
        products_seconds: made_by.1,
    })
}
