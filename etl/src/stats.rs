//! Figures from what was ingested: TPS, block-time distribution,
//! valid/invalid totals, empty blocks, a txs-per-block histogram and a
//! per-window table (like the Ardor 2019 load-test report).
//!
//! Definitions:
//! * a block's *block time* is its time minus its parent's (heights `h` and
//!   `h-1` both known). Times are header times (RPC or abcid) where both
//!   blocks have one, else the chosen node's consensus commit log times;
//! * TPS = transactions of the blocks that have a block time ÷ the sum of
//!   those block times. For a contiguous range `a..=b` that is
//!   `txs(a+1..=b) / (t(b) - t(a))`;
//! * cumulative TPS of a window = the same over all windows up to it.

use std::time::Duration;

use crate::store::{Store, StoreError, StoredBlock, TimeSource};

/// How long `stats` retries when Redis is unreachable.
pub const DEFAULT_REDIS_RETRY: Duration = Duration::from_secs(5);

/// What to compute figures for. `Default` gives an empty Redis URL and
/// chain id, all heights, an automatic window and [`DEFAULT_REDIS_RETRY`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsQuery {
    /// Redis URL.
    pub redis: String,
    /// Chain id, as ingested.
    pub chain_id: String,
    /// First height (`None`: the lowest ingested).
    pub from: Option<u64>,
    /// Last height (`None`: the highest ingested).
    pub to: Option<u64>,
    /// Blocks per window (`None`: a round number giving at most 25 windows).
    pub window: Option<u64>,
    /// Node whose commit log times fill in missing header times (`None`:
    /// the node with the most).
    pub node: Option<String>,
    /// Retry budget for Redis.
    pub redis_retry: Duration,
}

impl Default for StatsQuery {
    fn default() -> Self {
        Self {
            redis: String::new(),
            chain_id: String::new(),
            from: None,
            to: None,
            window: None,
            node: None,
            redis_retry: DEFAULT_REDIS_RETRY,
        }
    }
}

/// Stats failures.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    /// Redis failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Nothing ingested for this chain/range.
    #[error("no blocks of chain {chain:?} in heights {from}–{to} in Redis. {hint}")]
    Empty {
        /// Chain asked for.
        chain: String,
        /// Range asked for.
        from: u64,
        /// Range asked for.
        to: u64,
        /// Chains that do have data.
        hint: String,
    },
    /// `--node` names no known node.
    #[error("no node {node:?} in chain {chain:?}; known nodes: {known}")]
    UnknownNode {
        /// Asked for.
        node: String,
        /// Chain.
        chain: String,
        /// Known names.
        known: String,
    },
    /// `--from` after `--to`, or `--window 0`.
    #[error("{0}")]
    BadRange(String),
}

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

/// Commit log times of one node, aligned with the rows.
pub struct CommitTimes<'a> {
    /// Node name.
    pub node: &'a str,
    /// Zone of its plain log.
    pub log_tz: Option<&'a str>,
    /// Time per row (Unix ns).
    pub times: &'a [Option<i64>],
}

fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// A round window size (1, 2 or 5 × 10^k) giving at most 25 windows.
pub fn auto_window(span: u64) -> u64 {
    let mut unit = 1u64;
    loop {
        for m in [1, 2, 5] {
            let w = unit.saturating_mul(m);
            if span.div_ceil(w) <= 25 {
                return w;
            }
        }
        unit = unit.saturating_mul(10);
    }
}

#[allow(clippy::cast_precision_loss)]
fn secs(ns: i64) -> f64 {
    ns as f64 / 1e9
}

/// Computes every figure from the stored rows (ascending heights).
pub fn compute(
    chain: &str,
    rows: &[StoredBlock],
    commits: Option<&CommitTimes<'_>>,
    window: Option<u64>,
) -> StatsReport {
    let mut sources = TimeSources {
        commit_node: commits.map(|c| c.node.to_string()),
        commit_log_tz: commits.and_then(|c| c.log_tz.map(str::to_string)),
        ..TimeSources::default()
    };
    let commit_at = |i: usize| commits.and_then(|c| c.times.get(i).copied().flatten());
    let mut per_block = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        let parent = i
            .checked_sub(1)
            .map(|j| (j, &rows[j]))
            .filter(|(_, p)| p.height.checked_add(1) == Some(r.height));
        let mut interval = None;
        if let Some((j, p)) = parent {
            if let (Some(t), Some(pt)) = (r.facts.time_ns, p.facts.time_ns) {
                let src = match r.facts.time_src {
                    Some(TimeSource::Abcid) => IntervalSource::HeaderAbcid,
                    _ => IntervalSource::HeaderRpc,
                };
                interval = Some((secs(t.saturating_sub(pt)), src));
            } else if let (Some(t), Some(pt)) = (commit_at(i), commit_at(j)) {
                interval = Some((secs(t.saturating_sub(pt)), IntervalSource::CommitLog));
            }
        }
        match interval.map(|x| x.1) {
            Some(IntervalSource::HeaderRpc) => sources.header_rpc += 1,
            Some(IntervalSource::HeaderAbcid) => sources.header_abcid += 1,
            Some(IntervalSource::CommitLog) => sources.commit_log += 1,
            None => sources.unknown += 1,
        }
        per_block.push(BlockStat {
            height: r.height,
            txs: r.facts.txs,
            valid: r.facts.valid,
            invalid: r.facts.invalid,
            time_ns: r.facts.time_ns.or_else(|| commit_at(i)),
            block_time_s: interval.map(|x| x.0),
            block_time_source: interval.map(|x| x.1),
        });
    }

    let from = rows.first().map_or(0, |r| r.height);
    let to = rows.last().map_or(0, |r| r.height);
    let blocks = rows.len() as u64;
    let txs: u64 = per_block.iter().filter_map(|b| b.txs).sum();
    let (tps_txs, seconds) = per_block
        .iter()
        .filter_map(|b| Some((b.txs?, b.block_time_s?)))
        .fold((0u64, 0.0f64), |(n, s), (t, dt)| (n + t, s + dt));
    #[allow(clippy::cast_precision_loss)]
    let tps = (seconds > 0.0).then(|| tps_txs as f64 / seconds);

    let mut times: Vec<f64> = per_block.iter().filter_map(|b| b.block_time_s).collect();
    times.sort_by(f64::total_cmp);
    #[allow(clippy::cast_precision_loss)]
    let block_time = (!times.is_empty()).then(|| Distribution {
        count: times.len() as u64,
        mean: times.iter().sum::<f64>() / times.len() as f64,
        p50: nearest_rank(&times, 50.0),
        p95: nearest_rank(&times, 95.0),
        max: times[times.len() - 1],
        min: times[0],
    });

    // Decade buckets: 0, 1–9, 10–99, …
    let max_txs = per_block.iter().filter_map(|b| b.txs).max().unwrap_or(0);
    let mut histogram = vec![Bucket {
        lo: 0,
        hi: 0,
        blocks: 0,
    }];
    let mut lo = 1u64;
    while lo <= max_txs {
        let hi = lo.saturating_mul(10) - 1;
        histogram.push(Bucket { lo, hi, blocks: 0 });
        if hi == u64::MAX - 1 {
            break;
        }
        lo = lo.saturating_mul(10);
    }
    for t in per_block.iter().filter_map(|b| b.txs) {
        if let Some(b) = histogram.iter_mut().find(|b| t >= b.lo && t <= b.hi) {
            b.blocks += 1;
        }
    }

    let window = window
        .unwrap_or_else(|| auto_window((to - from).saturating_add(1)))
        .max(1);
    let mut windows: Vec<Window> = Vec::new();
    let (mut cum_txs, mut cum_s) = (0u64, 0.0f64);
    let mut i = 0;
    while i < per_block.len() {
        // Windows are aligned to multiples of `window` (like 10000, 20000, …).
        let w_from = per_block[i].height / window * window;
        let w_to = w_from.saturating_add(window - 1);
        let start = i;
        while i < per_block.len() && per_block[i].height <= w_to {
            i += 1;
        }
        let part = &per_block[start..i];
        let (t_txs, t_s) = part
            .iter()
            .filter_map(|b| Some((b.txs?, b.block_time_s?)))
            .fold((0u64, 0.0f64), |(n, s), (t, dt)| (n + t, s + dt));
        cum_txs += t_txs;
        cum_s += t_s;
        let prev_time = start
            .checked_sub(1)
            .filter(|j| per_block[*j].height.checked_add(1) == Some(per_block[start].height))
            .and_then(|j| per_block[j].time_ns);
        #[allow(clippy::cast_precision_loss)]
        windows.push(Window {
            from: part[0].height.max(w_from),
            to: part[part.len() - 1].height,
            blocks: part.len() as u64,
            txs: part.iter().filter_map(|b| b.txs).sum(),
            start_ns: prev_time.or(part[0].time_ns),
            end_ns: part[part.len() - 1].time_ns,
            interval_s: t_s,
            tps: (t_s > 0.0).then(|| t_txs as f64 / t_s),
            cumulative_tps: (cum_s > 0.0).then(|| cum_txs as f64 / cum_s),
        });
    }

    StatsReport {
        chain_id: chain.to_string(),
        from,
        to,
        blocks,
        missing_heights: (to - from).saturating_add(1).saturating_sub(blocks),
        txs,
        txs_unknown_blocks: per_block.iter().filter(|b| b.txs.is_none()).count() as u64,
        valid: per_block.iter().filter_map(|b| b.valid).sum(),
        invalid: per_block.iter().filter_map(|b| b.invalid).sum(),
        results_unknown_blocks: per_block
            .iter()
            .filter(|b| b.valid.is_none() || b.invalid.is_none())
            .count() as u64,
        empty_blocks: per_block.iter().filter(|b| b.txs == Some(0)).count() as u64,
        tps,
        seconds,
        block_time,
        time_sources: sources,
        histogram,
        window,
        windows,
        per_block,
    }
}

/// Reads the chain's blocks from Redis and computes the figures.
pub async fn query(args: &StatsQuery) -> Result<StatsReport, StatsError> {
    let (from, to) = (args.from.unwrap_or(0), args.to.unwrap_or(u64::MAX));
    if from > to {
        return Err(StatsError::BadRange(format!(
            "--from {from} is after --to {to}"
        )));
    }
    if args.window == Some(0) {
        return Err(StatsError::BadRange("--window must be at least 1".into()));
    }
    let store = Store::connect(&args.redis, &args.chain_id, args.redis_retry).await?;
    let heights = store.heights(from, to).await?;
    if heights.is_empty() {
        let chains = store.chains().await?;
        let hint = if chains.is_empty() {
            "This Redis holds no ingested chain: run `feth etl --tendermint LOG… --redis URL` first.".to_string()
        } else {
            format!("Chains in this Redis: {}.", chains.join(", "))
        };
        return Err(StatsError::Empty {
            chain: args.chain_id.clone(),
            from,
            to,
            hint,
        });
    }
    let rows = store.blocks(&heights).await?;
    let nodes = store.nodes().await?;
    let node = match &args.node {
        Some(n) => Some(nodes.iter().find(|x| x.name == *n).ok_or_else(|| {
            StatsError::UnknownNode {
                node: n.clone(),
                chain: args.chain_id.clone(),
                known: nodes
                    .iter()
                    .map(|x| x.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })?),
        // The node with the most commit times (sorted so by `nodes`).
        None => nodes.first().filter(|n| n.commits > 0),
    };
    // Commit times are only needed where header times are missing.
    let needs_commits = rows.iter().any(|r| r.facts.time_ns.is_none());
    let times = match node {
        Some(n) if needs_commits => Some(store.commit_times(&n.name, &heights).await?),
        _ => None,
    };
    let commits = match (node, &times) {
        (Some(n), Some(t)) => Some(CommitTimes {
            node: &n.name,
            log_tz: n.log_tz.as_deref(),
            times: t,
        }),
        _ => None,
    };
    Ok(compute(
        &args.chain_id,
        &rows,
        commits.as_ref(),
        args.window,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::BlockFacts;

    fn row(height: u64, txs: u64, valid: u64, time_s: Option<f64>) -> StoredBlock {
        #[allow(clippy::cast_possible_truncation)]
        StoredBlock {
            height,
            facts: BlockFacts {
                txs: Some(txs),
                valid: Some(valid),
                invalid: Some(txs - valid),
                time_ns: time_s.map(|s| (s * 1e9) as i64),
                time_src: time_s.map(|_| TimeSource::Rpc),
            },
        }
    }

    #[test]
    fn tps_block_times_and_windows() {
        // Heights 10..=19, one second apart except a 3 s block at 15; 10 txs each, 1 invalid.
        let mut t = 0.0;
        let rows: Vec<StoredBlock> = (10..20)
            .map(|h| {
                t += if h == 15 { 3.0 } else { 1.0 };
                row(h, 10, 9, Some(t))
            })
            .collect();
        let r = compute("c", &rows, None, Some(5));
        assert_eq!((r.from, r.to, r.blocks, r.missing_heights), (10, 19, 10, 0));
        assert_eq!(
            (r.txs, r.valid, r.invalid, r.empty_blocks),
            (100, 90, 10, 0)
        );
        // The first block has no parent here: 9 block times over 11 s carry 90 txs.
        assert_eq!(r.time_sources.header_rpc, 9);
        assert!((r.seconds - 11.0).abs() < 1e-9);
        assert!((r.tps.expect("tps") - 90.0 / 11.0).abs() < 1e-9);
        let bt = r.block_time.expect("block times");
        assert_eq!((bt.count, bt.p50, bt.max, bt.min), (9, 1.0, 3.0, 1.0));
        assert_eq!(r.windows.len(), 2);
        assert_eq!(
            (r.windows[0].from, r.windows[0].to, r.windows[0].txs),
            (10, 14, 50)
        );
        // Second window 15..=19: 5 block times (3+1+1+1+1 s), 50 txs.
        assert!((r.windows[1].interval_s - 7.0).abs() < 1e-9);
        assert!((r.windows[1].tps.expect("tps") - 50.0 / 7.0).abs() < 1e-9);
        assert!((r.windows[1].cumulative_tps.expect("cum") - 90.0 / 11.0).abs() < 1e-9);
        assert_eq!(
            r.histogram
                .iter()
                .map(|b| (b.lo, b.hi, b.blocks))
                .collect::<Vec<_>>(),
            vec![(0, 0, 0), (1, 9, 0), (10, 99, 10)]
        );
    }

    #[test]
    fn gaps_break_block_times_and_commit_times_fill_in() {
        let rows = vec![
            row(1, 0, 0, None),
            row(2, 4, 4, None),
            row(4, 6, 5, None),
            row(5, 0, 0, None),
        ];
        let times = [
            Some(1_000_000_000),
            Some(2_500_000_000),
            Some(5_000_000_000),
            Some(6_000_000_000),
        ];
        let commits = CommitTimes {
            node: "n0",
            log_tz: Some("UTC"),
            times: &times,
        };
        let r = compute("c", &rows, Some(&commits), None);
        assert_eq!(r.missing_heights, 1);
        assert_eq!(r.empty_blocks, 2);
        // Block 2 (1.5 s after 1) and 5 (1 s after 4); 4 has no parent (3 missing).
        assert_eq!(r.time_sources.commit_log, 2);
        assert_eq!(r.time_sources.unknown, 2);
        assert!((r.tps.expect("tps") - 4.0 / 2.5).abs() < 1e-9);
        assert!(r
            .time_sources
            .describe()
            .contains("commit log times of node n0"));
        let b2 = r.per_block[1];
        assert_eq!(
            (b2.block_time_s, b2.block_time_source),
            (Some(1.5), Some(IntervalSource::CommitLog))
        );
    }

    #[test]
    fn auto_window_is_round() {
        assert_eq!(auto_window(10), 1);
        assert_eq!(auto_window(26), 2);
        assert_eq!(auto_window(600), 50);
        assert_eq!(auto_window(641_270), 50_000);
    }
}
