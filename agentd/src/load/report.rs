//! The figures of a run's report: every submitted transaction is exactly
//! one of included, rejected (with a reason) or unresolved; committed TPS is
//! read from blocks, the send rate shown apart. They are kept as the run
//! goes by [`super::tally`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Percentiles of a delay, milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Maximum.
    pub max: f64,
}

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
    /// Rejections by reason.
    pub rejected_by_reason: BTreeMap<String, u64>,
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
