//! The figures `stats` reports: per block, per window, and for the range.

/// Where a block time came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IntervalSource {
    /// Header times from the node's RPC.
    HeaderRpc,
    /// Header times from abcid's block lines.
    HeaderAbcid,
    /// A node's consensus commit log times.
    CommitLog,
}

/// One block's figures.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct BlockStat {
    /// Height.
    pub height: u64,
    /// Transactions (unknown if no line or RPC said).
    pub txs: Option<u64>,
    /// Valid transactions.
    pub valid: Option<u64>,
    /// Invalid transactions.
    pub invalid: Option<u64>,
    /// Block time (Unix ns): header time, else commit log time.
    pub time_ns: Option<i64>,
    /// Seconds since the parent block.
    pub block_time_s: Option<f64>,
    /// Where `block_time_s` came from.
    pub block_time_source: Option<IntervalSource>,
}

impl BlockStat {
    /// Transactions per second of this block (txs ÷ block time).
    pub fn tps(&self) -> Option<f64> {
        match (self.txs, self.block_time_s) {
            #[allow(clippy::cast_precision_loss)]
            (Some(t), Some(s)) if s > 0.0 => Some(t as f64 / s),
            _ => None,
        }
    }
}

/// Distribution of block times, seconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Distribution {
    /// Block times measured.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 95th percentile (nearest rank).
    pub p95: f64,
    /// Largest.
    pub max: f64,
    /// Smallest.
    pub min: f64,
}

/// A histogram bucket of txs per block.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Bucket {
    /// Lowest tx count in the bucket.
    pub lo: u64,
    /// Highest tx count in the bucket.
    pub hi: u64,
    /// Blocks in it.
    pub blocks: u64,
}

/// One row of the per-window table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Window {
    /// First height.
    pub from: u64,
    /// Last height.
    pub to: u64,
    /// Blocks present.
    pub blocks: u64,
    /// Transactions in them.
    pub txs: u64,
    /// Time of the block before the window (or its first block), Unix ns.
    pub start_ns: Option<i64>,
    /// Time of its last block, Unix ns.
    pub end_ns: Option<i64>,
    /// Sum of its block times, seconds.
    pub interval_s: f64,
    /// TPS in the window.
    pub tps: Option<f64>,
    /// TPS from the first window to this one.
    pub cumulative_tps: Option<f64>,
}

/// How many block times came from where.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TimeSources {
    /// From RPC header times.
    pub header_rpc: u64,
    /// From abcid header times.
    pub header_abcid: u64,
    /// From commit log times.
    pub commit_log: u64,
    /// Blocks without a block time (first block, gaps, no times).
    pub unknown: u64,
    /// Node whose commit log times were used.
    pub commit_node: Option<String>,
    /// Zone its plain timestamps were read in.
    pub commit_log_tz: Option<String>,
}

impl TimeSources {
    /// One line saying where block times came from.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.header_rpc > 0 {
            parts.push(format!("{} from header times (node RPC)", self.header_rpc));
        }
        if self.header_abcid > 0 {
            parts.push(format!(
                "{} from header times (abcid log)",
                self.header_abcid
            ));
        }
        if self.commit_log > 0 {
            parts.push(format!(
                "{} from commit log times of node {} (plain-log zone: {})",
                self.commit_log,
                self.commit_node.as_deref().unwrap_or("?"),
                self.commit_log_tz.as_deref().unwrap_or("unknown")
            ));
        }
        if parts.is_empty() {
            return "no block times: ingest with --comet-rpc, abcid logs, or node logs with commit lines"
                .into();
        }
        parts.join("; ")
    }
}

/// All figures for a height range.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StatsReport {
    /// Chain id.
    pub chain_id: String,
    /// First height present.
    pub from: u64,
    /// Last height present.
    pub to: u64,
    /// Blocks present.
    pub blocks: u64,
    /// Heights in `from..=to` with no data.
    pub missing_heights: u64,
    /// Transactions in all blocks with a known count.
    pub txs: u64,
    /// Blocks with no known tx count.
    pub txs_unknown_blocks: u64,
    /// Valid transactions.
    pub valid: u64,
    /// Invalid transactions.
    pub invalid: u64,
    /// Blocks with no known valid/invalid split (0.38+ without abcid or RPC).
    pub results_unknown_blocks: u64,
    /// Blocks with no transactions.
    pub empty_blocks: u64,
    /// Overall TPS.
    pub tps: Option<f64>,
    /// Seconds covered by block times.
    pub seconds: f64,
    /// Block-time distribution.
    pub block_time: Option<Distribution>,
    /// Where block times came from.
    pub time_sources: TimeSources,
    /// Txs-per-block histogram.
    pub histogram: Vec<Bucket>,
    /// Blocks per window.
    pub window: u64,
    /// Per-window table.
    pub windows: Vec<Window>,
    /// Per-block figures.
    pub per_block: Vec<BlockStat>,
}
