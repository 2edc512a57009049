//! One step of a comparison as the report keeps it: how it was set up, each
//! of its runs, and its summary over the rounds (each figure's level and
//! paired ratios, computed by [`super::summary`]).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::conditions::NodeConditions;
use super::etl::EtlFigures;
use crate::saturate::{Clock, StepMeasure, WindowExtras};
use crate::stats::decide::Better;
use crate::stats::{Change, LogRatio};

/// How one step was set up, once, before its rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSetup {
    /// The step's name.
    pub step: String,
    /// The search's outcome in words (`knee at 2,000 tx/s …`).
    pub search: String,
    /// Highest rate kept up, when a knee was found.
    pub knee_tps: Option<f64>,
    /// Lowest rate it fell behind at.
    pub behind_tps: Option<f64>,
    /// The rate of the saturation windows (the same for every step).
    pub overload_tps: f64,
    /// Why the search found no knee (agent limited, maximum reached): the
    /// overload came from the highest rate kept up, and the pilot and the
    /// rounds raise it until the step falls behind.
    pub lower_bound: Option<String>,
    /// What the step's node ran under, read from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<NodeConditions>,
}

/// One run: one step measured in one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRun {
    /// The step's name (`none`, `+rwlock`, `all`, or `a` / `b`).
    pub step: String,
    /// The patch set abcid ran with (`--patches`).
    pub patches: String,
    /// The step's own CometBFT settings, read back from the `config.toml`
    /// its node ran with (`KEY=VALUE`; none in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comet: Vec<String>,
    /// What the node calls itself (`web3_clientVersion`).
    pub node: String,
    /// The round this run belongs to (0-based); a round runs every step once.
    pub round: usize,
    /// The saturation window: committed TPS under the step's overload.
    pub measure: StepMeasure,
    /// The saturation window's latency and gas per second.
    pub extras: WindowExtras,
    /// Why this run's saturation figure is only a lower bound (it kept up
    /// with the overload); kept out of estimates.
    pub lower_bound: Option<String>,
    /// Why this run's saturation window is kept out of estimates: it began
    /// on a backlog, what ran before it left in the mempool past the drain
    /// ([`StepMeasure::started_on_backlog`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog: Option<String>,
    /// The fixed-rate window: node CPU per transaction and latency at a rate
    /// every step sustains.
    pub fixed: Option<FixedWindow>,
    /// What the etl made of the node's logs over the saturation window
    /// (runs on a devnet of their own).
    pub etl: Option<EtlFigures>,
    /// The run's flamegraph, when profiled.
    pub flamegraph: Option<PathBuf>,
    /// Differential flamegraph against the previous step, when profiled.
    pub diff_flamegraph: Option<PathBuf>,
    /// CometBFT's own CPU profile over the same profiled load (folded,
    /// drawn, `capture.json`), when the devnet serves Go's pprof.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cometbft_profile: Option<PathBuf>,
    /// The whole node's profile (abcid and CometBFT weighed in CPU time:
    /// `node.svg`, `node.folded`, `node.json`), when both were profiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_profile: Option<PathBuf>,
    /// The whole node's differential flamegraph against the previous step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_diff_flamegraph: Option<PathBuf>,
    /// A Go node's per-block CPU profile and its split by role (recipe
    /// chains whose node serves Go's pprof).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub go_profile: Option<crate::go_profile::StepGoProfile>,
    /// Its differential flamegraph against the previous step's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub go_diff_flamegraph: Option<PathBuf>,
    /// Node reads sent again after a transient transport error (connection
    /// reset or refused, timeout) during this run.
    #[serde(default)]
    pub rpc_retries: u64,
}

/// A window at the comparison's fixed rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixedWindow {
    /// What it measured.
    pub measure: StepMeasure,
    /// Latency to commit and gas per second.
    pub extras: WindowExtras,
    /// Why its figures are kept out (the step fell behind the rate).
    pub off_rate: Option<String>,
    /// Why its figures are kept out: it began on a backlog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog: Option<String>,
}

/// A figure each run yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Committed TPS under overload: the headline.
    Tps,
    /// Node CPU (CometBFT + abcid) per committed transaction at the fixed
    /// rate, µs: the low-noise view of the same change.
    CpuPerTx,
    /// Median latency to commit at the fixed rate, ms.
    LatencyP50,
    /// 99th percentile latency to commit at the fixed rate, ms.
    LatencyP99,
    /// Gas the blocks used per second under overload.
    GasPerSec,
}

impl Metric {
    /// Every figure, in table order.
    pub const ALL: [Metric; 5] = [
        Metric::Tps,
        Metric::CpuPerTx,
        Metric::LatencyP50,
        Metric::LatencyP99,
        Metric::GasPerSec,
    ];

    /// Which way is better.
    pub fn better(self) -> Better {
        match self {
            Metric::Tps | Metric::GasPerSec => Better::Higher,
            Metric::CpuPerTx | Metric::LatencyP50 | Metric::LatencyP99 => Better::Lower,
        }
    }

    /// How the figure is named in tables.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Tps => "committed tx/s",
            Metric::CpuPerTx => "node µs/tx",
            Metric::LatencyP50 => "latency p50 ms",
            Metric::LatencyP99 => "latency p99 ms",
            Metric::GasPerSec => "gas/s",
        }
    }

    /// The run's figure, when it counts.
    pub fn of(self, run: &StepRun) -> Option<f64> {
        let fixed = run
            .fixed
            .as_ref()
            .filter(|f| f.off_rate.is_none() && f.backlog.is_none());
        let saturated = run.lower_bound.is_none() && run.backlog.is_none();
        match self {
            Metric::Tps => saturated.then_some(run.measure.committed_tps),
            Metric::GasPerSec => run.extras.gas_per_sec.filter(|_| saturated),
            Metric::CpuPerTx => fixed?.measure.node_cpu_us_per_tx,
            Metric::LatencyP50 => fixed?.extras.latency_p50_ms,
            Metric::LatencyP99 => fixed?.extras.latency_p99_ms,
        }
        .filter(|v| *v > 0.0 && v.is_finite())
    }
}

/// A step's level of one figure: the geometric mean over its rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// Geometric mean.
    pub mean: f64,
    /// Lower end of its 95 % interval (absent below two rounds).
    pub low: Option<f64>,
    /// Upper end.
    pub high: Option<f64>,
    /// Rounds it is over.
    pub rounds: usize,
}

/// One figure of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Which figure.
    pub metric: Metric,
    /// The step's level; `None` when no run yielded it.
    pub level: Option<Level>,
    /// This step over the previous one, paired by round.
    pub vs_previous: Option<LogRatio>,
    /// This step over the first one, paired by round.
    pub vs_first: Option<LogRatio>,
    /// What `vs_previous` says (Holm over the ladder's steps).
    pub change: Change,
    /// What `vs_first` says (Holm over the ladder's steps).
    pub change_vs_first: Change,
}

/// One step of the ladder over all its rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    /// The step's name.
    pub step: String,
    /// The patch set abcid ran with.
    pub patches: String,
    /// The step's own CometBFT settings (`KEY=VALUE`), as its node ran with
    /// them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comet: Vec<String>,
    /// Runs of the step.
    pub runs: usize,
    /// Runs whose saturation figure was only a lower bound, kept out.
    pub lower_bounds: usize,
    /// Every figure, in [`Metric::ALL`] order.
    pub figures: Vec<Figure>,
    /// Median over the saturation windows of their median block interval, ms.
    pub block_time_p50_ms: f64,
    /// Median over the saturation windows of their 95th percentile block interval, ms.
    pub block_time_p95_ms: f64,
    /// Valid transactions in all the saturation windows.
    pub valid: u64,
    /// Invalid transactions in them; `None` when a run could not tell.
    pub invalid: Option<u64>,
    /// Median agent CPU per submitted transaction (saturation windows), µs:
    /// the agent shares the machine.
    pub agent_cpu_us_per_tx: f64,
    /// The step's knee, searched once.
    pub knee_tps: Option<f64>,
    /// The clocks the committed rates were computed with.
    pub clocks: Vec<Clock>,
    /// Committed TPS level over the reference's, when a reference ran.
    pub ratio_to_reference: Option<f64>,
}

impl StepSummary {
    /// The step's patches, then its own CometBFT settings (`all; comet
    /// mempool.size=8000`): what its node ran with.
    pub fn node_settings(&self) -> String {
        match self.comet.is_empty() {
            true => self.patches.clone(),
            false => format!("{}; comet {}", self.patches, self.comet.join(" ")),
        }
    }

    /// The step's `metric` figure.
    pub fn figure(&self, metric: Metric) -> Option<&Figure> {
        self.figures.iter().find(|f| f.metric == metric)
    }
}
