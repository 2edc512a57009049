//! `feth load`'s report ([`LoadReport`], the `--json` file) and the figures
//! in it: every submitted transaction is exactly one of included, rejected
//! (with a reason) or unresolved; committed TPS is read from blocks, the
//! send rate shown apart. The tally keeps them as the run goes; the refills
//! and the readers fill their own sections.
//!
//! Only data lives here, so every part of a run can name the report's
//! types without depending on the parts that produce them.

use std::collections::BTreeMap;

use alloy_primitives::U256;
use serde::{Deserialize, Serialize};

use super::hist::LogHist;
use super::plan::{self, Recipients, WorkloadKind, Write};
use super::rows;
use feth_chain::shard::{KeyRange, ShardOf};

/// Percentiles of a delay, as the report's figures give them (computed by
/// the histograms).
pub use super::hist::Latency;

/// Both latency measures.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Latencies {
    /// Intended send time → the including block's commit: when CometBFT's
    /// RPC is known, the next block's header time in ns (BFT time: a header
    /// carries the median time of the precommits for the block before it, so
    /// a block's own header time precedes transactions in it); else the web3
    /// timestamp (whole seconds: each figure is then a lower bound, the true
    /// delay up to 1 s more).
    pub to_block_time: Latency,
    /// Intended send time → the agent first read the including block
    /// (polled every 100 ms).
    pub to_observed: Latency,
    /// Resolution of the block times behind `to_block_time`, ms (1000 for
    /// web3 timestamps; absent, hence 1000, in older files).
    #[serde(default = "one_second_ms")]
    pub block_time_resolution_ms: f64,
}

fn one_second_ms() -> f64 {
    1000.0
}

/// One second of the run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Second {
    /// Seconds since the run began.
    pub second: u64,
    /// First submissions.
    pub sent: u64,
    /// Accepted by a node.
    pub accepted: u64,
    /// Included, by block time (reverted ones too).
    pub included: u64,
    /// Of those, reverted (receipt status 0).
    #[serde(default)]
    pub reverted: u64,
    /// The rate the schedule offered at the start of this second, tx/s (open
    /// loop only).
    #[serde(default)]
    pub offered: Option<f64>,
    /// Inclusion latency (intended send → block seen) of the transactions
    /// included in this second, ms; `None` when none was.
    #[serde(default)]
    pub latency_ms: Option<Latency>,
    /// Transactions in flight (submitted, not yet in a block nor finally
    /// refused) when last sampled in this second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<u64>,
    /// The agent's resident memory then, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// The web3 reads that ended in this second, when the run reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<ReadsSecond>,
}

/// The reads that ended in one second of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadsSecond {
    /// Answered, the answer checked right.
    pub ok: u64,
    /// Answered wrong.
    pub wrong: u64,
    /// An error or a timeout.
    pub failed: u64,
    /// Due but not sent.
    pub skipped: u64,
    /// Request → answer of those answered, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<Latency>,
}

/// One block of the run's window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockRow {
    /// Height.
    pub number: u64,
    /// Header time, seconds since the epoch.
    pub timestamp: u64,
    /// All transactions in the block.
    pub txs: u64,
    /// Our transactions in the block.
    pub ours: u64,
    /// CometBFT header time, ns since the epoch, when the run read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_ns: Option<i64>,
}

impl BlockRow {
    /// Header time, seconds since the epoch, as precise as known (ns with
    /// CometBFT's header, whole seconds with web3's timestamp).
    pub fn time(&self) -> f64 {
        self.time_ns
            .map_or(self.timestamp as f64, |ns| ns as f64 / 1e9)
    }
}

/// Totals that add up: `signed = included + rejected + unresolved`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Totals {
    /// Transactions submitted at least once.
    pub signed: u64,
    /// Found in a block (reverted ones too).
    pub included: u64,
    /// Of those, reverted (receipt status 0).
    #[serde(default)]
    pub reverted: u64,
    /// Refused and not in any block.
    pub rejected: u64,
    /// Neither after the bounded wait.
    pub unresolved: u64,
    /// Rejections by kind of reason ([`crate::refusal::Refusal::name`]:
    /// "fee below base fee", "nonce too low", "mempool full", "already
    /// known", "insufficient funds", "other" …; older files: the text before
    /// the first colon).
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// The nodes' own texts behind each kind, the first
    /// [`TEXTS_PER_KIND`] different ones (absent in older files).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rejected_texts: BTreeMap<String, Vec<String>>,
    /// Transactions re-signed with the same nonce and a higher fee after a
    /// node refused their fee as below its base fee, and sent again (not
    /// rejections; absent in older files).
    #[serde(default)]
    pub fee_resends: u64,
    /// Submissions of a hash already counted (identical bytes signed again,
    /// e.g. after a nonce resync), folded into it: counted once, under its
    /// last status.
    pub duplicates_folded: u64,
}

/// Figures read from the chain over the run's window.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChainFigures {
    /// First block of the window (the first after the run began).
    pub first_block: u64,
    /// Last block of the window.
    pub last_block: u64,
    /// Header time of the block before the window (its start), seconds
    /// since the epoch; 0 in version 1 files.
    #[serde(default)]
    pub start_time: u64,
    /// Seconds between the block before the window and its last block
    /// (ns-precise when CometBFT header times are known).
    pub seconds: f64,
    /// All transactions in the window's blocks.
    pub all_txs: u64,
    /// Our transactions per second, committed.
    pub committed_tps: f64,
    /// All transactions per second, committed.
    pub committed_tps_all: f64,
    /// Gas the window's blocks used (all transactions; 0 in files before it
    /// was recorded).
    #[serde(default)]
    pub gas_used: u64,
    /// `gas_used` per second: transfers and contract calls differ twentyfold
    /// in gas, so this is the figure that compares workloads.
    #[serde(default)]
    pub gas_per_second: f64,
}

/// Raw refusal texts kept per kind of reason.
pub const TEXTS_PER_KIND: usize = 3;

/// Keeps `text` among `texts[kind]` when it is new and there is room (cut at
/// 300 characters).
pub fn keep_text(texts: &mut BTreeMap<String, Vec<String>>, kind: &str, text: &str) {
    let kept = texts.entry(kind.to_string()).or_default();
    let text: String = text.chars().take(300).collect();
    if kept.len() < TEXTS_PER_KIND && !kept.contains(&text) {
        kept.push(text);
    }
}

/// The `q` quantile (0–1) of `sorted` (ascending), the nearest rank; 0 when empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n => sorted[((n - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize],
    }
}

/// p50, p90, p99 and maximum of `values` (sorted in place), nearest rank.
pub fn percentiles(values: &mut [f64]) -> Latency {
    values.sort_by(f64::total_cmp);
    Latency {
        p50: quantile(values, 0.50),
        p90: quantile(values, 0.90),
        p99: quantile(values, 0.99),
        max: quantile(values, 1.0),
    }
}

/// Schedule lag (first send − intended send), p99, beyond which the agent,
/// not the chain, set the offered rate, ms.
pub const AGENT_LAG_BOUND_MS: f64 = 1000.0;
/// Due transactions one sender may have waiting before the agent, not the
/// chain, set the offered rate.
pub const AGENT_BACKLOG_BOUND: u64 = 1000;

/// An open-loop run whose offered rate the agent, not the chain, limited:
/// its committed TPS is about the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentLimited {
    /// What showed it, in words.
    pub reason: String,
    /// The largest backlog of due, unsubmitted transactions one sender had.
    pub max_backlog: u64,
    /// Schedule lag p99, ms.
    pub schedule_lag_ms: f64,
}

/// Whether the agent limited an open-loop run: a sender's backlog of due
/// transactions passed [`AGENT_BACKLOG_BOUND`], or the schedule lag's p99
/// passed [`AGENT_LAG_BOUND_MS`] (`schedule_lag` is `None` in a closed
/// loop, which has no schedule to fall behind). `per_sender` is the run's
/// `--per-sender`, named in the advice.
pub fn agent_limited(
    schedule_lag: Option<&Latency>,
    max_backlog: u64,
    per_sender: usize,
) -> Option<AgentLimited> {
    let lag = schedule_lag?;
    let mut why = Vec::new();
    if lag.p99 > AGENT_LAG_BOUND_MS {
        why.push(format!(
            "the schedule fell behind: p99 of first send − intended send {:.0} ms > {AGENT_LAG_BOUND_MS:.0} ms",
            lag.p99
        ));
    }
    if max_backlog > AGENT_BACKLOG_BOUND {
        why.push(format!(
            "one sender's backlog of due transactions reached {max_backlog} > {AGENT_BACKLOG_BOUND}"
        ));
    }
    if why.is_empty() {
        return None;
    }
    Some(AgentLimited {
        reason: format!(
            "{} (with --per-sender {per_sender}: raise it, for a node that queues future nonces, or --max-parallelism)",
            why.join("; ")
        ),
        max_backlog,
        schedule_lag_ms: lag.p99,
    })
}

/// Backlog growth over the second half of a closed loop's sending, as a
/// share of what was committed meanwhile, past which the run is a drain.
pub const BACKLOG_GROWTH_SHARE: f64 = 0.25;
/// Backlog growth (transactions) below which a closed loop is never flagged.
pub const BACKLOG_GROWTH_FLOOR: u64 = 50;

/// A closed loop's backlog: transactions the node accepted and had not yet
/// committed (accepted − committed), over the sending time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClosedLoopBacklog {
    /// Whether it grew over the run: the node accepted faster than it
    /// committed, and the committed TPS is a drain, not a steady state.
    pub growing: bool,
    /// Backlog at the middle of the sending time.
    pub mid: u64,
    /// Backlog when sending ended.
    pub end: u64,
    /// The largest backlog while sending.
    pub max: u64,
    /// Its growth over the second half of the sending time, tx/s.
    pub growth_per_second: f64,
    /// Committed over that half, tx/s.
    pub committed_per_second: f64,
}

/// The backlog of a closed loop from its per-second `series` over its first
/// `send_seconds`: growing when it rose over the second half by more than
/// [`BACKLOG_GROWTH_SHARE`] of what was committed meanwhile and more than
/// [`BACKLOG_GROWTH_FLOOR`]. `None` for runs of under 4 seconds.
pub fn closed_loop_backlog(series: &[Second], send_seconds: f64) -> Option<ClosedLoopBacklog> {
    let sending: Vec<&Second> = series
        .iter()
        .filter(|s| (s.second as f64) < send_seconds)
        .collect();
    if sending.len() < 4 {
        return None;
    }
    let mut backlog = Vec::with_capacity(sending.len());
    let (mut accepted, mut included) = (0i64, 0i64);
    for s in &sending {
        accepted += i64::try_from(s.accepted).unwrap_or(i64::MAX);
        included += i64::try_from(s.included).unwrap_or(i64::MAX);
        backlog.push(u64::try_from(accepted - included).unwrap_or(0));
    }
    let half = sending.len() / 2;
    let (mid, end) = (backlog[half - 1], backlog[backlog.len() - 1]);
    let seconds = (sending.len() - half) as f64;
    let committed: u64 = sending[half..].iter().map(|s| s.included).sum();
    let growth = end.saturating_sub(mid);
    Some(ClosedLoopBacklog {
        growing: growth > BACKLOG_GROWTH_FLOOR
            && growth as f64 > BACKLOG_GROWTH_SHARE * committed as f64,
        mid,
        end,
        max: backlog.iter().copied().max().unwrap_or(0),
        growth_per_second: (end as f64 - mid as f64) / seconds,
        committed_per_second: committed as f64 / seconds,
    })
}

/// How the run was configured, for the JSON report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunConfig {
    /// Endpoints.
    pub endpoints: Vec<String>,
    /// Senders.
    pub senders: usize,
    /// Concurrent requests.
    pub max_parallelism: usize,
    /// Transactions in flight per sender (absent, hence 1, in older files).
    #[serde(default = "one")]
    pub per_sender: usize,
    /// Rate schedule, as given.
    pub schedule: String,
    /// Transactions per account, if bounded.
    pub count: Option<u64>,
    /// Sending time, if bounded.
    pub duration_secs: Option<f64>,
    /// Recipients.
    pub recipients: Recipients,
    /// What the transactions did, in which shares, with their gas limits
    /// (`workload`, one kind, in older files).
    #[serde(alias = "workload", deserialize_with = "plan::writes_or_workload")]
    pub writes: Vec<Write>,
    /// Fee model used.
    pub fee: String,
    /// Chain id.
    pub chain_id: u64,
    /// The senders' indices in the keys file (absent in older files).
    #[serde(default)]
    pub keys: Option<KeyRange>,
    /// The shard of the keys file this agent took (`--shard I/N`), if any.
    #[serde(default)]
    pub shard: Option<ShardOf>,
}

/// Where the run happened.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Environment {
    /// feth version.
    pub feth_version: String,
    /// Host name.
    pub host: String,
    /// Logical CPUs of the agent's machine.
    pub cpus: usize,
    /// Unix time the run began.
    pub started_unix: f64,
    /// What the first node calls itself (`web3_clientVersion`: abcid names
    /// its version and the patches in force); empty in version 1 files.
    #[serde(default)]
    pub node: String,
    /// The agent machine's kernel release; empty in version 1 files.
    #[serde(default)]
    pub kernel: String,
}

/// The format version of the JSON `feth load --json` writes. Version 1
/// (files without a `version` field) had no block rows, offered rate or
/// per-second latency.
pub const REPORT_VERSION: u32 = 2;

fn version_one() -> u32 {
    1
}

fn one() -> usize {
    1
}

/// The result of `feth load`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadReport {
    /// Format version ([`REPORT_VERSION`]; 1 when absent).
    #[serde(default = "version_one")]
    pub version: u32,
    /// Configuration.
    pub config: RunConfig,
    /// Environment.
    pub environment: Environment,
    /// Totals that add up.
    pub totals: Totals,
    /// Committed figures read from blocks.
    pub chain: ChainFigures,
    /// Submissions per second while sending (not a TPS figure).
    pub send_rate: f64,
    /// Seconds spent sending.
    pub send_seconds: f64,
    /// Inclusion latency, ms.
    pub latency_ms: Latencies,
    /// Schedule lag, ms: first submission − intended send time. Open loop
    /// only: a closed loop has no schedule (`None`).
    pub schedule_lag_ms: Option<Latency>,
    /// Set when the agent, not the chain, limited the offered rate (open
    /// loop): the committed TPS is then about the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_limited: Option<AgentLimited>,
    /// A closed loop's backlog (accepted − committed) over the sending time;
    /// `growing` set when it rose: the node accepted faster than it
    /// committed and the committed TPS is a drain, not a steady state
    /// (absent for open loops, short runs and older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_loop_backlog: Option<ClosedLoopBacklog>,
    /// RPC reads sent again after a transient transport error (reset,
    /// refused, timeout), web3 and CometBFT (absent in older files).
    #[serde(default)]
    pub rpc_retries: u64,
    /// First submissions of each write kind (absent in older files).
    #[serde(default)]
    pub sent_by_kind: BTreeMap<WorkloadKind, u64>,
    /// The agent's CPU (user + system, whole process) while sending, per
    /// signed transaction, µs.
    pub agent_cpu_us_per_tx: f64,
    /// Share of the sending time (0–1) during which every request slot was
    /// in flight: the node, not the agent, set the pace then.
    pub slots_busy: f64,
    /// Back-offs on a full mempool or rate limit.
    pub backoffs: u64,
    /// Resubmissions of the same signed bytes.
    pub resends: u64,
    /// Nonce resynchronisations.
    pub resyncs: u64,
    /// Per-second series (the latest day of it: see `dropped`).
    pub series: Vec<Second>,
    /// The window's blocks in height order, the latest 100,000 of them
    /// (empty in version 1 files).
    #[serde(default)]
    pub blocks: Vec<BlockRow>,
    /// Windows of `--window-blocks` blocks (empty without it).
    #[serde(default)]
    pub windows: Vec<WindowRow>,
    /// The oldest rows of `series`, `blocks` and `windows` left out because
    /// the run outlasted what a report keeps in memory; the series file
    /// (`--series-out`) has them all. The totals and chain figures cover
    /// the whole run.
    #[serde(default, skip_serializing_if = "rows::Dropped::is_none")]
    pub dropped: rows::Dropped,
    /// What topping up senders during the run did (`--refill-key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refill: Option<RefillReport>,
    /// Blocks of the run by their transaction count (all senders).
    #[serde(default)]
    pub txs_per_block: Vec<TxsPerBlock>,
    /// Where block times came from (CometBFT ns header times, or web3
    /// whole-second timestamps, and why).
    #[serde(default)]
    pub block_clock: String,
    /// The histograms behind `latency_ms`, so that several agents' reports
    /// merge into exact percentiles (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_hist: Option<LatencyHists>,
    /// Transactions a node accepted (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<u64>,
    /// The read traffic beside the writes (`--reads`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<ReadsReport>,
}

/// The histograms of both latency measures (see [`Latencies`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyHists {
    /// Intended send → block header time, ms.
    pub to_block_time: LogHist,
    /// Intended send → block seen, ms.
    pub to_observed: LogHist,
}

/// One window of `--window-blocks` consecutive blocks (the last one of a
/// run may be shorter).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowRow {
    /// First height.
    pub from: u64,
    /// Last height.
    pub to: u64,
    /// Blocks in it.
    pub blocks: u64,
    /// All transactions in its blocks.
    pub txs: u64,
    /// Ours among them.
    pub ours: u64,
    /// Ours that reverted (receipt status 0).
    pub reverted: u64,
    /// Seconds from the previous window's last header (the run's start block
    /// for the first) to this one's last header.
    pub seconds: f64,
    /// Our transactions per second.
    pub tps: f64,
    /// All transactions per second.
    pub tps_all: f64,
}

/// How many blocks held a given number of transactions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxsPerBlock {
    /// Transactions in a block (all senders).
    pub txs: u64,
    /// Blocks that held that many.
    pub blocks: u64,
}

/// What the refills did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RefillReport {
    /// Rounds that paid someone.
    pub rounds: u64,
    /// Top-ups paid (a sender topped up twice counts twice).
    pub topped_up: u64,
    /// Value paid, wei.
    pub value_wei: U256,
    /// Balances read.
    pub balances_read: u64,
    /// Rounds that failed (the error is logged; the next round retries).
    pub failed_rounds: u64,
    /// Seconds spent paying, summed over rounds.
    pub seconds: f64,
}

/// What happened to one method's reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MethodFigures {
    /// Reads due (sent + skipped).
    pub due: u64,
    /// Answered and the answer checked right.
    pub ok: u64,
    /// Answered, and the answer was wrong (see the module docs).
    pub wrong: u64,
    /// An error or a timeout.
    pub failed: u64,
    /// Not sent: the reads in flight were at their limit, or no transaction
    /// had been seen yet to ask a receipt of.
    pub skipped: u64,
    /// Answered reads per second over the run.
    pub answered_per_second: f64,
    /// Request → answer, ms, of the reads answered (right or wrong).
    pub latency_ms: Latency,
    /// A few of the node's errors and the wrong answers, as text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

/// The read traffic of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadsReport {
    /// Reads per second offered.
    pub rate: f64,
    /// Seconds the reads ran.
    pub seconds: f64,
    /// Each method's figures, by its name.
    pub methods: BTreeMap<String, MethodFigures>,
}

impl ReadsReport {
    /// Reads answered per second, over every method.
    pub fn answered_per_second(&self) -> f64 {
        self.methods.values().map(|m| m.answered_per_second).sum()
    }

    /// The slowest answering method and its p99, ms; `None` when no method
    /// was answered.
    pub fn slowest_p99(&self) -> Option<(&str, f64)> {
        self.methods
            .iter()
            .filter(|(_, m)| m.ok + m.wrong > 0)
            .map(|(name, m)| (name.as_str(), m.latency_ms.p99))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Reads answered wrong or failed, over every method.
    pub fn wrong_or_failed(&self) -> u64 {
        self.methods.values().map(|m| m.wrong + m.failed).sum()
    }

    /// The reads in one line: answered per second of those offered, the
    /// slowest method's p99, and what was wrong, failed or skipped.
    pub fn one_line(&self) -> String {
        let sum = |f: fn(&MethodFigures) -> u64| self.methods.values().map(f).sum::<u64>();
        let p99 = self.slowest_p99().map_or_else(
            || "no answer".to_string(),
            |(name, p99)| format!("slowest p99 {p99:.1} ms ({name})"),
        );
        format!(
            "{:.0}/s answered of {:.0}/s offered, {p99}; {} wrong, {} failed, {} skipped",
            self.answered_per_second(),
            self.rate,
            sum(|m| m.wrong),
            sum(|m| m.failed),
            sum(|m| m.skipped)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(second: u64, accepted: u64, included: u64) -> Second {
        Second {
            second,
            accepted,
            included,
            ..Second::default()
        }
    }

    #[test]
    fn a_closed_loop_whose_backlog_grows_is_a_drain() {
        // Accepts 1,245 tx/s, commits 250: a run that drained.
        let drain: Vec<Second> = (0..10).map(|s| second(s, 1245, 250)).collect();
        let b = closed_loop_backlog(&drain, 10.0).unwrap();
        assert!(b.growing, "{b:?}");
        assert_eq!((b.mid, b.end, b.max), (4975, 9950, 9950));
        assert_eq!(b.growth_per_second, 995.0);
        // Steady: what is accepted is committed, the backlog stays at ~1 block.
        let mut steady = vec![second(0, 500, 0)];
        steady.extend((1..10).map(|s| second(s, 250, 250)));
        let b = closed_loop_backlog(&steady, 10.0).unwrap();
        assert!(!b.growing, "{b:?}");
        assert_eq!((b.mid, b.end), (500, 500));
        // The drain after sending stops is not part of it.
        assert!(closed_loop_backlog(&drain[..3], 3.0).is_none());
    }

    fn lag(p99: f64) -> Latency {
        Latency {
            p50: 1.0,
            p90: 2.0,
            p99,
            max: p99,
        }
    }

    #[test]
    fn the_agent_limits_a_run_whose_schedule_or_backlog_passes_its_bound() {
        assert_eq!(agent_limited(None, 50_000, 1), None, "closed loop");
        assert_eq!(agent_limited(Some(&lag(999.0)), 1000, 1), None);
        let late = agent_limited(Some(&lag(24_000.0)), 380, 1).unwrap();
        assert_eq!((late.max_backlog, late.schedule_lag_ms), (380, 24_000.0));
        assert!(
            late.reason.contains("schedule fell behind"),
            "{}",
            late.reason
        );
        assert!(!late.reason.contains("backlog"), "{}", late.reason);
        assert!(late.reason.contains("--per-sender 1"), "{}", late.reason);
        let piled = agent_limited(Some(&lag(10.0)), 1001, 8).unwrap();
        assert!(
            piled.reason.contains("reached 1001 > 1000"),
            "{}",
            piled.reason
        );
    }
}
