//! One step of a saturation search: offer a fixed open-loop rate to a chain
//! for a while and measure what it committed, and whether the agent itself
//! kept to its schedule.

use std::future::Future;

use crate::load::report::ReadsReport;
use serde::{Deserialize, Serialize};

/// Which clock a committed rate was computed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Clock {
    /// CometBFT header times (nanoseconds), from its RPC.
    CometbftHeaders,
    /// web3 block timestamps (whole seconds: ±5 % over a 20 s window).
    Web3Timestamps,
}

/// What one step at one offered rate measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepMeasure {
    /// The open-loop rate asked for, tx/s.
    pub offered_tps: f64,
    /// What the agent actually submitted over the window, tx/s.
    pub sent_tps: f64,
    /// Transactions committed per second over the window's blocks.
    pub committed_tps: f64,
    /// The clock `committed_tps` was computed with.
    pub clock: Clock,
    /// The window holds blocks `first_height + 1 ..= last_height`.
    pub first_height: u64,
    /// Last block of the window.
    pub last_height: u64,
    /// Median block interval over the window, ms.
    pub block_time_p50_ms: f64,
    /// 95th percentile block interval over the window, ms.
    pub block_time_p95_ms: f64,
    /// Transactions waiting in the node's mempool when the window opened, if the node says.
    pub mempool_start: Option<u64>,
    /// Transactions waiting in the node's mempool when the window closed, if the node says.
    pub mempool_end: Option<u64>,
    /// Median of (first send − intended send time) over the transactions
    /// first sent in the window, ms.
    pub schedule_lag_p50_ms: f64,
    /// 99th percentile of the schedule lag, ms.
    pub schedule_lag_p99_ms: f64,
    /// 99th percentile of the agent's own part of the schedule lag, ms: first
    /// send − the later of the intended send time and the moment the
    /// sender's previous transaction was answered. A sender keeps one
    /// transaction in flight, so waiting for that answer is waiting on the
    /// node. A probe whose senders never wait on the node reports its whole
    /// schedule lag here.
    pub agent_lag_p99_ms: f64,
    /// The agent's own CPU (user + system) per submitted transaction, µs.
    pub agent_cpu_us_per_tx: f64,
    /// Share of the window (0–1) during which every request slot of the agent
    /// was waiting on the node: a schedule lag with busy slots is the node's,
    /// a lag with idle slots is the agent's own.
    pub slots_busy: f64,
    /// Submissions the node turned away as busy over the window (its mempool
    /// full, a rate limit), each retried after a back-off: the node pushing
    /// back, not the agent falling short.
    pub backoffs: u64,
    /// CPU of the node's processes per committed transaction, µs, when the
    /// agent knows their PIDs (a devnet of its own).
    pub node_cpu_us_per_tx: Option<f64>,
    /// Transactions in the window's blocks the application accepted.
    pub valid: u64,
    /// Transactions in the window's blocks the application refused, when known
    /// (CometBFT `/block_results`).
    pub invalid: Option<u64>,
    /// Gas the window's blocks used per second of their time (web3
    /// `gasUsed`); `None` where there is no gas (CometBFT's kvstore) or a
    /// block could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gas_per_sec: Option<f64>,
    /// The web3 reads beside the step's writes (a scenario with reads), over
    /// the step's whole load, warm-up included; each answer checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<ReadsReport>,
    /// What the rest of the machine took over the window; `None` where the
    /// machine's CPU could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineShare>,
    /// Transactions in the node's mempool when the step's load began: what
    /// earlier work left behind the drain; `None` where the node does not
    /// say (and in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog: Option<u64>,
}

impl StepMeasure {
    /// Why the window measured what ran before it as well as its own load:
    /// it began on a backlog of more than `share` (0–1) of the transactions
    /// it offered over its `seconds`.
    pub fn started_on_backlog(&self, seconds: f64, share: f64) -> Option<String> {
        let backlog = self.backlog?;
        let offered = self.offered_tps * seconds;
        (backlog as f64 > share * offered).then(|| {
            format!(
                "began on a backlog of {backlog} transactions, over {:.0} % of the {offered:.0} it offered",
                share * 100.0
            )
        })
    }
}

/// The share of the machine (all its cores over a window, 0–1) that went
/// neither to the node nor to the agent: a window measured on a busy
/// machine measures the machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MachineShare {
    /// CPU of every other process; `None` when the node's processes are not
    /// known (a node given by URL without `--node-pid`), so that its CPU
    /// cannot be told from theirs.
    pub outside: Option<f64>,
    /// Time the hypervisor gave to other machines (steal).
    pub steal: f64,
}

impl MachineShare {
    /// The share lost to others: other processes and steal; `None` when the
    /// other processes could not be told from the node.
    pub fn lost(&self) -> Option<f64> {
        self.outside.map(|o| o + self.steal)
    }
}

impl MachineShare {
    /// What the rest of the machine took between two readings of its CPU
    /// `wall` seconds apart: its busy time less `ours` (the node's and the
    /// agent's CPU over the same time, `None` when the node's is unknown),
    /// over all its cores.
    pub fn between(
        (a, b): (crate::procstat::MachineCpu, crate::procstat::MachineCpu),
        ours: Option<std::time::Duration>,
        wall: f64,
    ) -> Self {
        let capacity = wall * b.cores as f64;
        let share = |d: std::time::Duration| (d.as_secs_f64() / capacity).clamp(0.0, 1.0);
        let busy = b.busy.saturating_sub(a.busy);
        Self {
            outside: ours.map(|ours| share(busy.saturating_sub(ours))),
            steal: share(b.steal.saturating_sub(a.steal)),
        }
    }
}

/// What a comparison reads of a step besides its [`StepMeasure`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowExtras {
    /// Median latency to commit of the window's inclusions, ms.
    pub latency_p50_ms: Option<f64>,
    /// 99th percentile latency to commit, ms.
    pub latency_p99_ms: Option<f64>,
    /// Gas used by the window's blocks per second of header time.
    pub gas_per_sec: Option<f64>,
}

/// A chain under an open-loop load at a chosen rate: abcid or any web3 node
/// through `feth load`'s engine, or CometBFT's own kvstore application.
pub trait Probe {
    /// Offers `rate` tx/s, open loop, for a warm-up and then `seconds` of
    /// measured window, and returns what the window measured. Leaves the
    /// chain drained (its mempool emptied or a bounded wait spent) before
    /// returning, so the next step starts clean.
    fn step(
        &mut self,
        rate: f64,
        seconds: f64,
    ) -> impl Future<Output = anyhow::Result<StepMeasure>> + Send;

    /// RPC reads sent again after a transient transport error (reset,
    /// refused, timeout) so far; 0 for a probe that does not count them.
    fn rpc_retries(&self) -> u64 {
        0
    }
}
