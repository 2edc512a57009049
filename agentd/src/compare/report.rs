//! What `feth compare` writes: the machine, the conditions, every run in the
//! order it ran, and one summary per step of the ladder.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::etl::EtlFigures;
use crate::bench::stats::{MeanEstimate, RatioEstimate};
use crate::saturate::{Clock, StepMeasure};

/// The report format this feth writes and reads.
pub const SCHEMA: u32 = 1;

/// A whole comparison: a ladder of steps, each run `repeat` times, interleaved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareReport {
    /// Report format version ([`SCHEMA`]).
    pub schema: u32,
    /// The machine the comparison ran on.
    pub environment: Environment,
    /// The conditions every run shared.
    pub settings: Settings,
    /// Every run, in the order it ran.
    pub runs: Vec<StepRun>,
    /// One summary per step, in ladder order.
    pub steps: Vec<StepSummary>,
    /// CometBFT's own kvstore application under the same conditions: the
    /// consensus engine's ceiling on this machine, when it was measured.
    pub reference: Option<ReferenceRun>,
    /// Wall time of the whole comparison, seconds.
    pub wall_secs: f64,
}

impl CompareReport {
    /// Reads a report written by `feth compare --json`, naming the file in any error.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the report {}", path.display()))?;
        let report: Self = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a feth compare report (write one with `feth compare --json > FILE`)",
                path.display()
            )
        })?;
        if report.schema != SCHEMA {
            bail!(
                "{} is a report of schema {}; this feth reads schema {SCHEMA}",
                path.display(),
                report.schema
            );
        }
        Ok(report)
    }

    /// The committed TPS of every run of `step`, in the order they ran.
    pub fn committed_tps(&self, step: &str) -> Vec<f64> {
        self.runs
            .iter()
            .filter(|r| r.step == step)
            .map(|r| r.measure.committed_tps)
            .collect()
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
    /// Version of CometBFT the devnets ran.
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

/// The conditions every run of a comparison shared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// What the steps differ by.
    pub kind: Kind,
    /// Block gas limit of every devnet.
    pub block_gas_limit: u64,
    /// CometBFT `timeout_commit` of every devnet (e.g. `500ms`).
    pub timeout_commit: String,
    /// Measured seconds per run.
    pub seconds: f64,
    /// Runs per step.
    pub repeat: usize,
    /// Sending accounts.
    pub senders: usize,
    /// What each transaction does (`transfer`, `erc20`).
    pub workload: String,
    /// The rate every run was offered, tx/s; `None`: each run searched its own knee.
    pub fixed_rate: Option<f64>,
}

/// One run of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRun {
    /// The step's name (`none`, `+rwlock`, `all`, or `a` / `b`).
    pub step: String,
    /// The patch set abcid ran with (`--patches`).
    pub patches: String,
    /// What the node calls itself (`web3_clientVersion`).
    pub node: String,
    /// The round this run belongs to (0-based); a round runs every step once.
    pub round: usize,
    /// The offered rate the run was measured at, when it searched its knee.
    pub knee_tps: Option<f64>,
    /// What the run measured.
    pub measure: StepMeasure,
    /// What the etl made of the node's logs over the measured window (runs
    /// on a devnet of their own); its valid/invalid are the measure's.
    pub etl: Option<EtlFigures>,
    /// The run's flamegraph, when profiled.
    pub flamegraph: Option<PathBuf>,
    /// Differential flamegraph against the previous step, when profiled.
    pub diff_flamegraph: Option<PathBuf>,
}

/// CometBFT's kvstore application measured under the same conditions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceRun {
    /// The application (`cometbft kvstore`).
    pub app: String,
    /// The offered rate the run was measured at, when it searched its knee.
    pub knee_tps: Option<f64>,
    /// What the run measured.
    pub measure: StepMeasure,
}

/// What the step did against the one before it, from the paired ratios' 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// The first step: what the others are compared with.
    First,
    /// Faster: the whole interval lies above 1.
    Gain,
    /// Slower: the whole interval lies below 1.
    Loss,
    /// The interval holds 1: no gain or loss beyond noise.
    NoClearChange,
    /// One round (or none) paired with the previous step: no interval, no verdict.
    OneRun,
}

/// One step of the ladder over all its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    /// The step's name.
    pub step: String,
    /// The patch set abcid ran with.
    pub patches: String,
    /// Runs of the step.
    pub runs: usize,
    /// Median committed TPS over the runs.
    pub committed_tps_median: f64,
    /// Lowest committed TPS of a run.
    pub committed_tps_min: f64,
    /// Highest committed TPS of a run.
    pub committed_tps_max: f64,
    /// Mean committed TPS with its 95 % Student-t interval (from two runs on).
    pub committed_tps_mean: MeanEstimate,
    /// Committed TPS over the previous step's, paired within each round.
    pub vs_previous: Option<RatioEstimate>,
    /// Committed TPS over the first step's, paired within each round.
    pub vs_first: Option<RatioEstimate>,
    /// What `vs_previous` says.
    pub change: Change,
    /// Median over the runs of their median block interval, ms.
    pub block_time_p50_ms: f64,
    /// Median over the runs of their 95th percentile block interval, ms.
    pub block_time_p95_ms: f64,
    /// Valid transactions in all the runs' windows.
    pub valid: u64,
    /// Invalid transactions in all the runs' windows; `None` when a run could not tell.
    pub invalid: Option<u64>,
    /// Median node CPU per committed transaction over the runs that know it, µs.
    pub node_cpu_us_per_tx: Option<f64>,
    /// Median agent CPU per submitted transaction, µs.
    pub agent_cpu_us_per_tx: f64,
    /// Worst 99th percentile schedule lag of a run, ms: the agent kept up when it is small.
    pub schedule_lag_p99_ms: f64,
    /// Median offered rate the runs were measured at, when they searched their knee.
    pub knee_tps: Option<f64>,
    /// The clocks the runs' committed rates were computed with.
    pub clocks: Vec<Clock>,
    /// Median committed TPS over the reference's, when a reference ran.
    pub ratio_to_reference: Option<f64>,
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
