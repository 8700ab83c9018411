//! Circuit ids, as cuzk names its parameter sets (`porep-32g`): the unit of PreloadSRS,
//! EvictSRS and `srs.preload`, and the engine's circuit kind.
use arenaprove::filecoin::{RegisteredSealProof, SectorSize};

/// A PoRep C2 circuit of one sector size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CircuitId(pub SectorSize);

/// Every id this build proves, smallest first.
pub const ALL: [CircuitId; 5] = [
    CircuitId(SectorSize::Kib2),
    CircuitId(SectorSize::Mib8),
    CircuitId(SectorSize::Mib512),
    CircuitId(SectorSize::Gib32),
    CircuitId(SectorSize::Gib64),
];

impl CircuitId {
    /// `porep-2k`, `porep-8m`, `porep-512m`, `porep-32g`, `porep-64g`.
    pub fn parse(s: &str) -> Result<CircuitId, String> {
        ALL.into_iter().find(|id| id.name() == s.trim()).ok_or_else(|| {
            format!(
                "unknown circuit id `{s}` (known: {})",
                ALL.iter().map(|id| id.name()).collect::<Vec<_>>().join(", ")
            )
        })
    }

    /// The circuit for a sector size.
    pub fn for_size(size: SectorSize) -> CircuitId {
        CircuitId(size)
    }

    pub fn sector_size(self) -> SectorSize {
        self.0
    }

    /// The registered proof whose parameter file serves this circuit (every API version
    /// and feature of one size shares the circuit and its file).
    pub fn registered_proof(self) -> RegisteredSealProof {
        self.sector_size().default_registered_proof()
    }

    pub fn name(self) -> &'static str {
        match self.0 {
            SectorSize::Kib2 => "porep-2k",
            SectorSize::Mib8 => "porep-8m",
            SectorSize::Mib512 => "porep-512m",
            SectorSize::Gib32 => "porep-32g",
            SectorSize::Gib64 => "porep-64g",
        }
    }
}

impl std::fmt::Display for CircuitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
