//! What `feth compare` writes: the machine, the conditions, every run in the
//! order it ran, and one summary per step of the ladder.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::machine::{MachineLoad, DEFAULT_MAX_LOST};
use super::step::{StepRun, StepSetup, StepSummary};
use crate::saturate::{SearchConfig, StepMeasure};

/// The report format this feth writes and reads.
pub const SCHEMA: u32 = 2;

/// A whole comparison: a ladder of steps measured in interleaved rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareReport {
    /// Report format version ([`SCHEMA`]).
    pub schema: u32,
    /// The machine the comparison ran on.
    pub environment: Environment,
    /// The conditions every run shared.
    pub settings: Settings,
    /// How each step was set up: its knee, searched once, and the rates its
    /// rounds were measured at.
    pub setups: Vec<StepSetup>,
    /// Every run (one step in one round), in the order it ran.
    pub runs: Vec<StepRun>,
    /// One summary per step, in ladder order.
    pub steps: Vec<StepSummary>,
    /// CometBFT's own kvstore application under the same conditions: the
    /// consensus engine's ceiling on this machine, when it was measured.
    pub reference: Option<ReferenceRun>,
    /// Why the rounds stopped, with `--until-resolved` or `--budget`.
    pub stopped: Option<String>,
    /// The error that ended the rounds early (a failed deploy); the report
    /// holds what was measured before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// How much of the machine the windows lost to other processes and
    /// steal; a busy machine makes every verdict inconclusive.
    #[serde(default)]
    pub machine: MachineLoad,
    /// Wall time of the whole comparison, seconds.
    pub wall_secs: f64,
}

impl CompareReport {
    /// Reads a report written by `feth compare --json`, naming the file in any error.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the report {}", path.display()))?;
        let schema = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("schema").and_then(serde_json::Value::as_u64));
        if let Some(schema) = schema.filter(|s| *s != u64::from(SCHEMA)) {
            bail!(
                "{} is a report of schema {schema}; this feth reads schema {SCHEMA}: measure again with this feth",
                path.display()
            );
        }
        serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a feth compare report (write one with `feth compare --json > FILE`)",
                path.display()
            )
        })
    }

    /// Names of the steps, in ladder order.
    pub fn step_names(&self) -> Vec<&str> {
        self.steps.iter().map(|s| s.step.as_str()).collect()
    }
}

/// The machine a comparison ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// CPU model name from `/proc/cpuinfo` (`unknown` when it has none).
    pub cpu_model: String,
    /// CPUs this process may run on.
    pub cores: usize,
    /// Total memory, GiB.
    pub memory_gib: f64,
    /// Host name.
    pub host: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Version of feth.
    pub feth_version: String,
    /// Version of CometBFT feth's own devnets run (the pinned one); each
    /// step's node says its own in its setup's conditions.
    pub cometbft_version: String,
}

impl Environment {
    /// Describes this machine; what cannot be read is `unknown` (or 0).
    pub fn detect(cometbft_version: &str) -> Self {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let or_unknown = |text: String| {
            let text = text.trim().to_string();
            if text.is_empty() {
                "unknown".to_string()
            } else {
                text
            }
        };
        Self {
            cpu_model: or_unknown(cpu_model(&read("/proc/cpuinfo")).unwrap_or_default()),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_gib: memory_gib(&read("/proc/meminfo")).unwrap_or(0.0),
            host: or_unknown(read("/etc/hostname")),
            kernel: or_unknown(read("/proc/sys/kernel/osrelease")),
            feth_version: env!("CARGO_PKG_VERSION").to_string(),
            cometbft_version: cometbft_version.to_string(),
        }
    }
}

/// The first `model name` of a `/proc/cpuinfo`.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_string())
    })
}

/// `MemTotal` of a `/proc/meminfo`, in GiB.
fn memory_gib(meminfo: &str) -> Option<f64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / (1024.0 * 1024.0))
}

/// What the ladder's steps differ by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// One abcid build, different patch sets (`none`, `+parallel-abci`, …, `all`).
    Patches,
    /// Two builds of abcid, `a` and `b`.
    Builds,
    /// One running node, measured as it is (`--network`).
    Live,
}

/// The conditions every run of a comparison shared: everything a second
/// report must match to be compared with this one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// What the steps differ by.
    pub kind: Kind,
    /// Block gas limit feth gave its devnets; `None` for a live node, whose
    /// own is read into each step's conditions.
    pub block_gas_limit: Option<u64>,
    /// CometBFT `timeout_commit` feth gave its devnets (e.g. `500ms`);
    /// `None` for a live node.
    pub timeout_commit: Option<crate::devnet::GoDuration>,
    /// Measured seconds per window (each run measures two windows).
    pub seconds: f64,
    /// Load before each measured window, seconds.
    pub warmup_secs: f64,
    /// Rounds run (each measures every step once).
    pub rounds: usize,
    /// Sending accounts.
    pub senders: usize,
    /// What each transaction does (`transfer`).
    pub workload: String,
    /// The saturation windows' offered rate over the highest rate any step's
    /// search fell behind at (2: twice it), raised by the pilot while a step
    /// kept up; the same for every step.
    pub overload: f64,
    /// The saturation windows' first rate, tx/s, when it was given
    /// (`--overload-tps`) and no step's knee was searched; the pilot still
    /// raises it while a step keeps up. `None`: placed by the searches.
    #[serde(default)]
    pub given_overload_tps: Option<f64>,
    /// The rate of the fixed-rate window (node CPU per transaction, latency),
    /// tx/s: given, or a share of the lowest capacity the pilot measured.
    pub fixed_rate: f64,
    /// Changes smaller than this share are "no change" (0.02: 2 %).
    pub floor: f64,
    /// The knee search each step ran once.
    pub search: SearchConfig,
    /// `--until-resolved`: the half-width (share) every step's intervals
    /// were driven to, and the budget in seconds.
    pub until_resolved: Option<(f64, f64)>,
    /// A window that lost more than this share of the machine to other
    /// processes and steal makes the comparison inconclusive (0.1: 10 %).
    #[serde(default = "default_max_lost")]
    pub max_lost: f64,
    /// What every step's devnet was given beyond its recipe:
    /// `var:NAME=VALUE`, `comet:KEY=VALUE`, `app:KEY=VALUE`,
    /// `genesis:/POINTER=JSON` (`feth compare --var/--set/--app/--genesis`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub every_step: Vec<String>,
}

fn default_max_lost() -> f64 {
    DEFAULT_MAX_LOST
}

/// CometBFT's kvstore application measured under the same conditions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceRun {
    /// The application (`cometbft kvstore`).
    pub app: String,
    /// Its knee; `None` when the search found none and the run was measured
    /// at the highest rate kept up (its figure then a lower bound).
    pub knee_tps: Option<f64>,
    /// What the run measured.
    pub measure: StepMeasure,
}

#[cfg(test)]
mod tests {
    use super::{cpu_model, memory_gib, Environment};

    #[test]
    fn this_machine_is_described() {
        let env = Environment::detect("v0.38.17");
        assert!(env.cores >= 1 && env.memory_gib > 0.1, "{env:?}");
        assert!(
            !env.cpu_model.is_empty() && !env.kernel.is_empty(),
            "{env:?}"
        );
        assert_ne!(env.kernel, "unknown", "{env:?}");
        assert_eq!(env.cometbft_version, "v0.38.17");
        assert_eq!(env.feth_version, env!("CARGO_PKG_VERSION"));
    }

    #[test]
    fn cpu_model_and_memory_are_read_from_proc_text() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(
            cpu_model(cpuinfo).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        assert_eq!(cpu_model("processor : 0\n"), None);
        let meminfo = "MemTotal:        8048576 kB\nMemFree:  1 kB\n";
        assert!((memory_gib(meminfo).unwrap() - 8048576.0 / 1048576.0).abs() < 1e-12);
        assert_eq!(memory_gib("MemFree: 1 kB\n"), None);
    }
}
