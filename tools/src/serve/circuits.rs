//! Circuit ids, as cuzk names its parameter sets (`porep-32g`, `winning-32g`, `wpost-32g`):
//! the unit of PreloadSRS, EvictSRS and `srs.preload`, and the engine's circuit kind.
use arenaprove::filecoin::post::{PostKind, RegisteredPoStProof};
use arenaprove::filecoin::{RegisteredSealProof, SectorSize};

/// Which proof a circuit serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// PoRep commit phase 2 (`POREP_SEAL_COMMIT`).
    Porep,
    /// WinningPoSt (`WINNING_POST`).
    Winning,
    /// One WindowPoSt partition (`WINDOW_POST_PARTITION`).
    Window,
    /// A SnapDeals update proof (`SNAP_DEALS_UPDATE`).
    Snap,
}

impl Family {
    /// The proto's `ProofKind` name, e.g. `"POREP_SEAL_COMMIT"`.
    pub fn proof_kind_name(self) -> &'static str {
        match self {
            Family::Porep => "POREP_SEAL_COMMIT",
            Family::Winning => "WINNING_POST",
            Family::Window => "WINDOW_POST_PARTITION",
            Family::Snap => "SNAP_DEALS_UPDATE",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Family::Porep => "porep",
            Family::Winning => "winning",
            Family::Window => "wpost",
            Family::Snap => "snap",
        }
    }
}

/// A circuit of one family and sector size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CircuitId {
    pub family: Family,
    pub size: SectorSize,
}

/// Every id this build proves: PoRep, WinningPoSt, WindowPoSt, SnapDeals, each smallest first.
pub const ALL: [CircuitId; 20] = {
    const S: [SectorSize; 5] =
        [SectorSize::Kib2, SectorSize::Mib8, SectorSize::Mib512, SectorSize::Gib32, SectorSize::Gib64];
    let mut all = [CircuitId { family: Family::Porep, size: SectorSize::Kib2 }; 20];
    let mut i = 0;
    while i < 20 {
        let family = match i / 5 {
            0 => Family::Porep,
            1 => Family::Winning,
            2 => Family::Window,
            _ => Family::Snap,
        };
        all[i] = CircuitId { family, size: S[i % 5] };
        i += 1;
    }
    all
};

impl CircuitId {
    /// `porep-2k` .. `porep-64g`, `winning-2k` .., `wpost-2k` .., `snap-2k` ..
    pub fn parse(s: &str) -> Result<CircuitId, String> {
        ALL.into_iter().find(|id| id.name() == s.trim()).ok_or_else(|| {
            format!(
                "unknown circuit id `{s}` (known: {})",
                ALL.iter().map(|id| id.name()).collect::<Vec<_>>().join(", ")
            )
        })
    }

    /// The PoRep circuit for a sector size.
    pub fn porep(size: SectorSize) -> CircuitId {
        CircuitId { family: Family::Porep, size }
    }

    /// The circuit that proves `proof` (every API version of a kind shares it).
    pub fn post(proof: RegisteredPoStProof) -> CircuitId {
        let family = match proof.kind() {
            PostKind::Winning => Family::Winning,
            PostKind::Window => Family::Window,
        };
        CircuitId { family, size: proof.sector_size() }
    }

    /// The SnapDeals circuit of a sector size.
    pub fn snap(size: SectorSize) -> CircuitId {
        CircuitId { family: Family::Snap, size }
    }

    pub fn sector_size(self) -> SectorSize {
        self.size
    }

    /// The registered seal proof whose parameter file serves a PoRep circuit (every API
    /// version and feature of one size shares the circuit and its file); `None` for PoSt.
    pub fn registered_proof(self) -> Option<RegisteredSealProof> {
        (self.family == Family::Porep).then(|| self.size.default_registered_proof())
    }

    /// The registered PoSt proof whose parameter file serves a PoSt circuit; `None` for PoRep.
    pub fn post_proof(self) -> Option<RegisteredPoStProof> {
        match self.family {
            Family::Porep | Family::Snap => None,
            Family::Winning => Some(RegisteredPoStProof::current(PostKind::Winning, self.size)),
            Family::Window => Some(RegisteredPoStProof::current(PostKind::Window, self.size)),
        }
    }

    pub fn name(self) -> &'static str {
        // One static name per id (20), as metrics labels want.
        const NAMES: [&str; 20] = [
            "porep-2k",
            "porep-8m",
            "porep-512m",
            "porep-32g",
            "porep-64g",
            "winning-2k",
            "winning-8m",
            "winning-512m",
            "winning-32g",
            "winning-64g",
            "wpost-2k",
            "wpost-8m",
            "wpost-512m",
            "wpost-32g",
            "wpost-64g",
            "snap-2k",
            "snap-8m",
            "snap-512m",
            "snap-32g",
            "snap-64g",
        ];
        let i = ALL.iter().position(|id| *id == self).unwrap_or(0);
        debug_assert!(NAMES[i].starts_with(self.family.prefix()));
        NAMES[i]
    }
}

impl std::fmt::Display for CircuitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
