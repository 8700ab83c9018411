//! Circuit ids, as cuzk names its parameter sets (`porep-32g`): the unit of PreloadSRS,
//! EvictSRS and `srs.preload`, and the engine's circuit kind.
use arenaprove::filecoin::{RegisteredSealProof, SectorSize};

/// A PoRep C2 circuit of one sector size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CircuitId(pub SectorSizeKey);

/// Sector sizes this build proves, in an orderable form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SectorSizeKey {
    Kib2,
    Mib8,
    Mib512,
}

/// Every id this build proves, smallest first.
pub const ALL: [CircuitId; 3] =
    [CircuitId(SectorSizeKey::Kib2), CircuitId(SectorSizeKey::Mib8), CircuitId(SectorSizeKey::Mib512)];

impl CircuitId {
    /// `porep-2k`, `porep-8m`, `porep-512m`. `porep-32g` and `porep-64g` are refused with
    /// a message saying why.
    pub fn parse(s: &str) -> Result<CircuitId, String> {
        match s.trim() {
            "porep-2k" => Ok(CircuitId(SectorSizeKey::Kib2)),
            "porep-8m" => Ok(CircuitId(SectorSizeKey::Mib8)),
            "porep-512m" => Ok(CircuitId(SectorSizeKey::Mib512)),
            "porep-32g" | "porep-64g" => Err(format!(
                "`{s}`: 32 and 64 GiB PoRep circuits are not proven by this build (arenaprove-filecoin \
                 proves 2KiB, 8MiB and 512MiB sectors)"
            )),
            _ => Err(format!("unknown circuit id `{s}` (known: porep-2k, porep-8m, porep-512m)")),
        }
    }

    /// The circuit for a sector size.
    pub fn for_size(size: SectorSize) -> CircuitId {
        CircuitId(match size {
            SectorSize::Kib2 => SectorSizeKey::Kib2,
            SectorSize::Mib8 => SectorSizeKey::Mib8,
            SectorSize::Mib512 => SectorSizeKey::Mib512,
        })
    }

    pub fn sector_size(self) -> SectorSize {
        match self.0 {
            SectorSizeKey::Kib2 => SectorSize::Kib2,
            SectorSizeKey::Mib8 => SectorSize::Mib8,
            SectorSizeKey::Mib512 => SectorSize::Mib512,
        }
    }

    /// The registered proof whose parameter file serves this circuit (every API version
    /// and feature of one size shares the circuit and its file).
    pub fn registered_proof(self) -> RegisteredSealProof {
        self.sector_size().default_registered_proof()
    }

    pub fn name(self) -> &'static str {
        match self.0 {
            SectorSizeKey::Kib2 => "porep-2k",
            SectorSizeKey::Mib8 => "porep-8m",
            SectorSizeKey::Mib512 => "porep-512m",
        }
    }
}

impl std::fmt::Display for CircuitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
