//! The daemon's configuration: a TOML file, then command-line flags over it.
//!
//! Every key, with its default (also in `arenaprove serve --help`):
//!
//! ```toml
//! [daemon]
//! listen = ["0.0.0.0:9820"]          # TCP host:port and/or "unix:///path/to.sock"
//! message_bytes_max = 268435456      # largest request or response (a 32 GiB C1 is ~50 MB)
//!
//! [srs]
//! param_cache = "/var/tmp/filecoin-proof-parameters"   # default: FIL_PROOFS_PARAMETER_CACHE
//! preload = []                       # circuit ids, e.g. ["porep-2k"]; empty: every PoRep
//!                                    # size whose .params file is in the cache
//! checked = false                    # validate every parameter point while loading (on a
//!                                    # GPU daemon the subgroup tests run on its first GPU)
//!
//! [engine]
//! slots = 2                          # partitions in flight, each a full working set
//! synth_workers = 1                  # threads synthesizing (1..=slots)
//! memory_limit = "16GiB"             # host memory: the engine's regions + resident params
//! synthesis = "precompiled"          # or "generic" (the bellpepper trait); precompiled
//!                                    # constraints are recorded once beside the parameters
//! backend = "gpu"                    # the GPUs of gpus.devices; "cpu": the CPU backend
//!
//! [queue]
//! pending_max = 64                   # jobs queued or running; RESOURCE_EXHAUSTED beyond
//! finished_keep = 1024               # finished jobs kept for AwaitProof and idempotency
//!
//! [gpus]
//! devices = []                       # GPUs to prove on, e.g. [0, 1]; []: every visible GPU
//!                                    # (none visible, or no `cuda` build: the CPU, logged)
//! fallback = "none"                  # a named GPU that does not open stops the daemon at
//!                                    # start; "cpu": prove on the CPU instead (logged)
//! device_memory = "24GiB"            # device memory each GPU may use (default: what the
//!                                    # proofs need, every base set resident); base sets
//!                                    # that do not fit stream from page-locked host memory
//! ```
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Default TCP address (cuzk's).
pub const LISTEN_DEFAULT: &str = "0.0.0.0:9820";
/// Curio's client sends and receives up to 256 MiB; so does the daemon.
pub const MESSAGE_BYTES_MAX_DEFAULT: usize = 256 << 20;
/// Smallest message limit accepted: a 32 GiB sector's C1 output is ~50 MB.
pub const MESSAGE_BYTES_MIN: usize = 64 << 20;
/// filecoin-proofs' default parameter cache.
pub const PARAM_CACHE_DEFAULT: &str = "/var/tmp/filecoin-proof-parameters";

/// Errors of the configuration, each naming the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{key}: {reason}")]
    Invalid { key: &'static str, reason: String },
}

fn invalid(key: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { key, reason: reason.into() }
}

/// One listening address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    Tcp(std::net::SocketAddr),
    Unix(PathBuf),
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Tcp(a) => write!(f, "{a}"),
            Listen::Unix(p) => write!(f, "unix://{}", p.display()),
        }
    }
}

impl std::str::FromStr for Listen {
    type Err = ConfigError;

    /// `host:port` (IP literal) or `unix:///abs/path` (also `unix:/abs/path`).
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        if let Some(rest) = s.strip_prefix("unix:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() || !path.starts_with('/') {
                return Err(invalid("daemon.listen", format!("`{s}`: a unix socket needs an absolute path")));
            }
            return Ok(Listen::Unix(PathBuf::from(path)));
        }
        s.parse()
            .map(Listen::Tcp)
            .map_err(|e| invalid("daemon.listen", format!("`{s}`: not ip:port or unix:///path ({e})")))
    }
}

/// The TOML file as written (every key optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    daemon: DaemonSection,
    #[serde(default)]
    srs: SrsSection,
    #[serde(default)]
    engine: EngineSection,
    #[serde(default)]
    queue: QueueSection,
    #[serde(default)]
    gpus: GpusSection,
}

/// `listen` may be one string or a list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DaemonSection {
    listen: Option<OneOrMany>,
    message_bytes_max: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SrsSection {
    param_cache: Option<PathBuf>,
    preload: Option<Vec<String>>,
    checked: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EngineSection {
    slots: Option<usize>,
    synth_workers: Option<usize>,
    memory_limit: Option<toml::Value>,
    synthesis: Option<String>,
    backend: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueueSection {
    pending_max: Option<usize>,
    finished_keep: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct GpusSection {
    devices: Option<Vec<u32>>,
    fallback: Option<String>,
    device_memory: Option<toml::Value>,
}

/// Where the engine proves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Devices {
    /// The CPU backend (`engine.backend = "cpu"`).
    Cpu,
    /// Every GPU the driver shows (`gpus.devices = []`, the default); the CPU where there is
    /// none or the binary has no `cuda` feature, said in the log.
    AllVisible,
    /// These GPUs (distinct ordinals); one that does not open is an error unless
    /// `gpus.fallback = "cpu"`.
    Gpus(Vec<u32>),
}

/// What the daemon does when a configured GPU does not open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuFallback {
    /// Refuse to start (the default): a GPU daemon proving on the CPU is a silent slowdown.
    None,
    /// Prove on the CPU, saying so in the log.
    Cpu,
}

/// Flags that override the file (all optional).
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub listen: Vec<String>,
    pub param_cache: Option<PathBuf>,
    pub preload: Vec<String>,
    pub slots: Option<usize>,
    pub synth_workers: Option<usize>,
    pub memory_limit: Option<String>,
    pub pending_max: Option<usize>,
    /// `--gpu 0,1` (overrides gpus.devices; empty: not given).
    pub gpus: Vec<u32>,
    /// `--backend gpu|cpu` (overrides engine.backend).
    pub backend: Option<String>,
}

/// The resolved, checked configuration.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub listen: Vec<Listen>,
    pub message_bytes_max: usize,
    pub param_cache: PathBuf,
    /// Circuit ids to load at start; empty: every PoRep size whose params are present.
    pub preload: Vec<String>,
    pub checked: bool,
    /// Partitions in flight; `None`: chosen when the engine is built, from the host's cores
    /// and the memory plan ([`super::lifecycle::engine_sizes`]).
    pub slots: Option<usize>,
    /// Synthesis threads; `None`: chosen with the slots.
    pub synth_workers: Option<usize>,
    pub memory_limit_bytes: usize,
    /// Where the memory limit came from (`engine.memory_limit`, or 90% of MemAvailable).
    pub memory_limit_source: &'static str,
    pub pending_max: usize,
    pub finished_keep: usize,
    /// Where the engine proves: the CPU, every visible GPU, or named GPUs.
    pub devices: Devices,
    /// When a named GPU does not open (a binary built without the `cuda` feature, a host
    /// without that GPU): refuse to start, or prove on the CPU.
    pub gpu_fallback: GpuFallback,
    /// Synthesis through precompiled constraints (the default), else the bellpepper trait.
    pub precompiled: bool,
    /// Device memory each GPU may use (`gpus.device_memory`); `None`: no budget.
    pub device_memory_bytes: Option<usize>,
}

/// Slots at most (the engine's own limit is checked again when it starts).
const SLOTS_MAX: usize = 64;
/// Jobs queued or running at most.
const PENDING_MAX_LIMIT: usize = 100_000;

impl ServeConfig {
    /// Reads `file` (when given), applies `overrides`, and checks every value.
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<ServeConfig, ConfigError> {
        let parsed = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
                toml::from_str::<FileConfig>(&text)
                    .map_err(|e| ConfigError::Parse { path: path.to_path_buf(), message: e.to_string() })?
            }
            None => FileConfig::default(),
        };
        Self::resolve(parsed, overrides)
    }

    /// Parses TOML text (tests, `--check-config` of a string).
    pub fn from_toml(text: &str, overrides: &Overrides) -> Result<ServeConfig, ConfigError> {
        let parsed = toml::from_str::<FileConfig>(text)
            .map_err(|e| ConfigError::Parse { path: PathBuf::from("<config>"), message: e.to_string() })?;
        Self::resolve(parsed, overrides)
    }

    fn resolve(file: FileConfig, o: &Overrides) -> Result<ServeConfig, ConfigError> {
        let listen_text: Vec<String> = if !o.listen.is_empty() {
            o.listen.clone()
        } else {
            match file.daemon.listen {
                Some(OneOrMany::One(s)) => vec![s],
                Some(OneOrMany::Many(v)) => v,
                None => vec![LISTEN_DEFAULT.to_string()],
            }
        };
        if listen_text.is_empty() {
            return Err(invalid("daemon.listen", "no address"));
        }
        let listen = listen_text.iter().map(|s| s.parse()).collect::<Result<Vec<Listen>, _>>()?;

        let message_bytes_max = file.daemon.message_bytes_max.unwrap_or(MESSAGE_BYTES_MAX_DEFAULT);
        if !(MESSAGE_BYTES_MIN..=(1 << 31)).contains(&message_bytes_max) {
            return Err(invalid(
                "daemon.message_bytes_max",
                format!(
                    "{message_bytes_max} not in {MESSAGE_BYTES_MIN}..=2^31 (a 32 GiB C1 output is ~50 MB)"
                ),
            ));
        }

        let param_cache = o
            .param_cache
            .clone()
            .or(file.srs.param_cache)
            .or_else(|| std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(PARAM_CACHE_DEFAULT));
        let preload =
            if !o.preload.is_empty() { o.preload.clone() } else { file.srs.preload.unwrap_or_default() };
        for id in &preload {
            super::circuits::CircuitId::parse(id).map_err(|e| invalid("srs.preload", e))?;
        }

        let slots = o.slots.or(file.engine.slots);
        if let Some(slots) = slots {
            if slots == 0 || slots > SLOTS_MAX {
                return Err(invalid("engine.slots", format!("{slots} not in 1..={SLOTS_MAX}")));
            }
        }
        let synth_workers = o.synth_workers.or(file.engine.synth_workers);
        if let Some(w) = synth_workers {
            let most = slots.unwrap_or(SLOTS_MAX);
            if w == 0 || w > most {
                let of = slots.map_or(format!("{SLOTS_MAX}"), |s| format!("slots ({s})"));
                return Err(invalid("engine.synth_workers", format!("{w} not in 1..={of}")));
            }
        }
        let (memory_limit_bytes, memory_limit_source) = match (&o.memory_limit, &file.engine.memory_limit) {
            (Some(s), _) => {
                (parse_bytes(s).map_err(|e| invalid("engine.memory_limit", e))?, "--memory-limit")
            }
            (None, Some(toml::Value::Integer(n))) if *n > 0 => (*n as usize, "engine.memory_limit"),
            (None, Some(toml::Value::String(s))) => {
                (parse_bytes(s).map_err(|e| invalid("engine.memory_limit", e))?, "engine.memory_limit")
            }
            (None, Some(v)) => {
                return Err(invalid("engine.memory_limit", format!("{v}: a byte count or \"16GiB\"")))
            }
            (None, None) => match crate::common::mem_available_bytes() {
                // Headroom for the process's own heap and the host's other work (Curio).
                Some(avail) => ((avail / 10 * 9) as usize, "90% of MemAvailable at start"),
                None => (16 << 30, "default 16 GiB (MemAvailable unreadable)"),
            },
        };

        let pending_max = o.pending_max.or(file.queue.pending_max).unwrap_or(64);
        if pending_max == 0 || pending_max > PENDING_MAX_LIMIT {
            return Err(invalid(
                "queue.pending_max",
                format!("{pending_max} not in 1..={PENDING_MAX_LIMIT}"),
            ));
        }
        let finished_keep = file.queue.finished_keep.unwrap_or(1024);
        if finished_keep == 0 || finished_keep > PENDING_MAX_LIMIT {
            return Err(invalid(
                "queue.finished_keep",
                format!("{finished_keep} not in 1..={PENDING_MAX_LIMIT}"),
            ));
        }
        let named = if o.gpus.is_empty() { file.gpus.devices.unwrap_or_default() } else { o.gpus.clone() };
        if let Some(d) = named.iter().enumerate().find(|(i, d)| named[..*i].contains(d)) {
            return Err(invalid("gpus.devices", format!("{named:?}: GPU {} named twice", d.1)));
        }
        let devices = match o.backend.as_deref().or(file.engine.backend.as_deref()) {
            None | Some("gpu") if named.is_empty() => Devices::AllVisible,
            None | Some("gpu") => Devices::Gpus(named),
            Some("cpu") => Devices::Cpu,
            Some(other) => return Err(invalid("engine.backend", format!("`{other}`: \"gpu\" or \"cpu\""))),
        };
        let gpu_fallback = match file.gpus.fallback.as_deref() {
            None | Some("none") => GpuFallback::None,
            Some("cpu") => GpuFallback::Cpu,
            Some(other) => return Err(invalid("gpus.fallback", format!("`{other}`: \"none\" or \"cpu\""))),
        };
        let device_memory_bytes = match &file.gpus.device_memory {
            None => None,
            Some(toml::Value::Integer(n)) if *n > 0 => Some(*n as usize),
            Some(toml::Value::String(s)) => {
                Some(parse_bytes(s).map_err(|e| invalid("gpus.device_memory", e))?)
            }
            Some(v) => return Err(invalid("gpus.device_memory", format!("{v}: a byte count or \"24GiB\""))),
        };
        let precompiled = match file.engine.synthesis.as_deref() {
            None | Some("precompiled") => true,
            Some("generic") => false,
            Some(other) => {
                return Err(invalid("engine.synthesis", format!("`{other}`: \"precompiled\" or \"generic\"")))
            }
        };
        Ok(ServeConfig {
            listen,
            message_bytes_max,
            param_cache,
            preload,
            checked: file.srs.checked.unwrap_or(false),
            slots,
            synth_workers,
            memory_limit_bytes,
            memory_limit_source,
            pending_max,
            finished_keep,
            devices,
            gpu_fallback,
            precompiled,
            device_memory_bytes,
        })
    }
}

/// `123`, `64MiB`, `16GiB`, `1TiB` (binary units; `KB`/`MB`/`GB` are read as binary too).
pub fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: usize = digits.parse().map_err(|_| format!("`{s}`: expected a number then an optional unit"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => return Err(format!("`{s}`: unknown unit `{other}` (B, KiB, MiB, GiB, TiB)")),
    };
    n.checked_mul(1usize << shift).filter(|&b| b > 0).ok_or_else(|| format!("`{s}`: zero or too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_file_and_flags() {
        let c = ServeConfig::from_toml("", &Overrides::default()).unwrap();
        assert_eq!(c.listen, vec![Listen::Tcp("0.0.0.0:9820".parse().unwrap())]);
        // Slots and synthesis workers are chosen at the engine's build; the memory limit
        // follows the host.
        assert_eq!((c.slots, c.synth_workers, c.pending_max), (None, None, 64));
        assert!(c.memory_limit_bytes > 0 && !c.memory_limit_source.is_empty());
        assert_eq!(c.message_bytes_max, 256 << 20);

        let text = r#"
            [daemon]
            listen = ["127.0.0.1:1", "unix:///tmp/a.sock"]
            [srs]
            param_cache = "/p"
            preload = ["porep-2k"]
            [engine]
            slots = 4
            synth_workers = 2
            memory_limit = "8GiB"
            [queue]
            pending_max = 3
        "#;
        let c = ServeConfig::from_toml(text, &Overrides::default()).unwrap();
        assert_eq!(c.listen[1], Listen::Unix("/tmp/a.sock".into()));
        assert_eq!(
            (c.slots, c.synth_workers, c.memory_limit_bytes, c.pending_max),
            (Some(4), Some(2), 8 << 30, 3)
        );
        assert_eq!(c.param_cache, PathBuf::from("/p"));

        let flags = Overrides {
            listen: vec!["unix:/run/x.sock".into()],
            slots: Some(1),
            synth_workers: Some(1),
            pending_max: Some(9),
            ..Default::default()
        };
        let c = ServeConfig::from_toml(text, &flags).unwrap();
        assert_eq!(c.listen, vec![Listen::Unix("/run/x.sock".into())]);
        assert_eq!((c.slots, c.pending_max), (Some(1), 9));
    }

    #[test]
    fn bad_values_name_their_key() {
        let cases = [
            ("[engine]\nslots = 0", "engine.slots"),
            ("[engine]\nslots = 1\nsynth_workers = 2", "engine.synth_workers"),
            ("[engine]\nsynth_workers = 65", "engine.synth_workers"),
            ("[engine]\nmemory_limit = \"12 parsecs\"", "engine.memory_limit"),
            ("[daemon]\nlisten = \"nowhere\"", "daemon.listen"),
            ("[daemon]\nlisten = \"unix://relative\"", "daemon.listen"),
            ("[daemon]\nmessage_bytes_max = 1000", "daemon.message_bytes_max"),
            ("[srs]\npreload = [\"porep-3k\"]", "srs.preload"),
            ("[queue]\npending_max = 0", "queue.pending_max"),
            ("[gpus]\ndevices = [0, 1, 0]", "gpus.devices"),
            ("[engine]\nbackend = \"tpu\"", "engine.backend"),
            ("[gpus]\nfallback = \"gpu\"", "gpus.fallback"),
            ("[gpus]\ndevice_memory = \"lots\"", "gpus.device_memory"),
            ("[gpus]\ndevice_memory = -1", "gpus.device_memory"),
            ("[engine]\nsynthesis = \"fast\"", "engine.synthesis"),
            ("[engine]\nslotz = 1", "slotz"),
        ];
        for (text, key) in cases {
            let err = ServeConfig::from_toml(text, &Overrides::default()).unwrap_err().to_string();
            assert!(err.contains(key), "{text:?}: {err}");
        }
        let budget =
            ServeConfig::from_toml("[gpus]\ndevice_memory = \"24GiB\"", &Overrides::default()).unwrap();
        assert_eq!(budget.device_memory_bytes, Some(24 << 30));
        assert_eq!(ServeConfig::from_toml("", &Overrides::default()).unwrap().device_memory_bytes, None);
        let two = ServeConfig::from_toml("[gpus]\ndevices = [1, 0]", &Overrides::default()).unwrap();
        assert_eq!(two.devices, Devices::Gpus(vec![1, 0]));
        let flag = Overrides { gpus: vec![0], ..Overrides::default() };
        assert_eq!(
            ServeConfig::from_toml("[gpus]\ndevices = [1]", &flag).unwrap().devices,
            Devices::Gpus(vec![0])
        );
        let cpu = Overrides { backend: Some("cpu".into()), ..Overrides::default() };
        assert_eq!(ServeConfig::from_toml("[gpus]\ndevices = [1]", &cpu).unwrap().devices, Devices::Cpu);
        let cpu = ServeConfig::from_toml("[engine]\nbackend = \"cpu\"", &Overrides::default()).unwrap();
        assert_eq!(cpu.devices, Devices::Cpu);
        let defaults = ServeConfig::from_toml("", &Overrides::default()).unwrap();
        assert_eq!(
            (defaults.devices, defaults.gpu_fallback, defaults.precompiled),
            (Devices::AllVisible, GpuFallback::None, true)
        );
        let relaxed = "[gpus]\nfallback = \"cpu\"\n[engine]\nsynthesis = \"generic\"";
        let relaxed = ServeConfig::from_toml(relaxed, &Overrides::default()).unwrap();
        assert_eq!((relaxed.gpu_fallback, relaxed.precompiled), (GpuFallback::Cpu, false));
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert!(parse_bytes("0").is_err());
    }
}
