//! The figures, from stored rows: block times and their sources, totals,
//! TPS, the block-time distribution, the histogram and the windows.

use super::{BlockStat, Bucket, Distribution, IntervalSource, StatsReport, TimeSources, Window};
use crate::store::StoredBlock;
use feth_comet::facts::TimeSource;

/// Commit log times of one node, aligned with the rows.
pub struct CommitTimes<'a> {
    /// Node name.
    pub node: &'a str,
    /// Zone of its plain log.
    pub log_tz: Option<&'a str>,
    /// Time per row (Unix ns).
    pub times: &'a [Option<i64>],
}

/// Computes every figure from the stored rows (ascending heights).
pub fn compute(
    chain: &str,
    rows: &[StoredBlock],
    commits: Option<&CommitTimes<'_>>,
    window: Option<u64>,
) -> StatsReport {
    let (per_block, time_sources) = per_block(rows, commits);
    let from = rows.first().map_or(0, |r| r.height);
    let to = rows.last().map_or(0, |r| r.height);
    let blocks = rows.len() as u64;
    let (tps_txs, seconds) = timed_totals(&per_block);
    let window = window
        .unwrap_or_else(|| auto_window((to - from).saturating_add(1)))
        .max(1);
    let count = |f: fn(&BlockStat) -> bool| per_block.iter().filter(|b| f(b)).count() as u64;
    StatsReport {
        chain_id: chain.to_string(),
        from,
        to,
        blocks,
        missing_heights: (to - from).saturating_add(1).saturating_sub(blocks),
        txs: per_block.iter().filter_map(|b| b.txs).sum(),
        txs_unknown_blocks: count(|b| b.txs.is_none()),
        valid: per_block.iter().filter_map(|b| b.valid).sum(),
        invalid: per_block.iter().filter_map(|b| b.invalid).sum(),
        results_unknown_blocks: count(|b| b.valid.is_none() || b.invalid.is_none()),
        empty_blocks: count(|b| b.txs == Some(0)),
        tps: rate(tps_txs, seconds),
        seconds,
        block_time: distribution(&per_block),
        time_sources,
        histogram: histogram(&per_block),
        window,
        windows: windows(&per_block, window),
        per_block,
    }
}

/// Per-block figures, and a tally of where their block times came from.
fn per_block(
    rows: &[StoredBlock],
    commits: Option<&CommitTimes<'_>>,
) -> (Vec<BlockStat>, TimeSources) {
    let mut sources = TimeSources {
        commit_node: commits.map(|c| c.node.to_string()),
        commit_log_tz: commits.and_then(|c| c.log_tz.map(str::to_string)),
        ..TimeSources::default()
    };
    let commit_at = |i: usize| commits.and_then(|c| c.times.get(i).copied().flatten());
    let mut per_block = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        let interval = block_time(rows, i, commit_at);
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
    (per_block, sources)
}

/// Seconds from row `i`'s parent (row `i - 1`, when it is height `h - 1`)
/// to row `i`: header times where both have one, else commit log times.
fn block_time(
    rows: &[StoredBlock],
    i: usize,
    commit_at: impl Fn(usize) -> Option<i64>,
) -> Option<(f64, IntervalSource)> {
    let r = &rows[i];
    let (j, p) = i
        .checked_sub(1)
        .map(|j| (j, &rows[j]))
        .filter(|(_, p)| p.height.checked_add(1) == Some(r.height))?;
    if let (Some(t), Some(pt)) = (r.facts.time_ns, p.facts.time_ns) {
        let src = match r.facts.time_src {
            Some(TimeSource::Abcid) => IntervalSource::HeaderAbcid,
            _ => IntervalSource::HeaderRpc,
        };
        Some((secs(t.saturating_sub(pt)), src))
    } else if let (Some(t), Some(pt)) = (commit_at(i), commit_at(j)) {
        Some((secs(t.saturating_sub(pt)), IntervalSource::CommitLog))
    } else {
        None
    }
}

#[allow(clippy::cast_precision_loss)]
fn secs(ns: i64) -> f64 {
    ns as f64 / 1e9
}

/// Transactions and seconds of the blocks with both a tx count and a block
/// time (what TPS is computed over).
fn timed_totals(blocks: &[BlockStat]) -> (u64, f64) {
    blocks
        .iter()
        .filter_map(|b| Some((b.txs?, b.block_time_s?)))
        .fold((0u64, 0.0f64), |(n, s), (t, dt)| (n + t, s + dt))
}

/// `txs / seconds`, when any time passed.
fn rate(txs: u64, seconds: f64) -> Option<f64> {
    #[allow(clippy::cast_precision_loss)]
    (seconds > 0.0).then(|| txs as f64 / seconds)
}

/// The distribution of the block times, if any.
fn distribution(per_block: &[BlockStat]) -> Option<Distribution> {
    let mut times: Vec<f64> = per_block.iter().filter_map(|b| b.block_time_s).collect();
    times.sort_by(f64::total_cmp);
    #[allow(clippy::cast_precision_loss)]
    (!times.is_empty()).then(|| Distribution {
        count: times.len() as u64,
        mean: times.iter().sum::<f64>() / times.len() as f64,
        p50: nearest_rank(&times, 50.0),
        p95: nearest_rank(&times, 95.0),
        max: times[times.len() - 1],
        min: times[0],
    })
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

/// Blocks per decade of tx count: 0, 1–9, 10–99, … up to the largest.
fn histogram(per_block: &[BlockStat]) -> Vec<Bucket> {
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
    histogram
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

/// The per-window table: windows aligned to multiples of `window` (like
/// 10000, 20000, …), one row per window holding any block.
fn windows(per_block: &[BlockStat], window: u64) -> Vec<Window> {
    let mut windows = Vec::new();
    let (mut cum_txs, mut cum_s) = (0u64, 0.0f64);
    let mut start = 0;
    while start < per_block.len() {
        let w_from = per_block[start].height / window * window;
        let w_to = w_from.saturating_add(window - 1);
        let len = per_block[start..]
            .iter()
            .take_while(|b| b.height <= w_to)
            .count();
        let part = &per_block[start..start + len];
        let (txs, seconds) = timed_totals(part);
        cum_txs += txs;
        cum_s += seconds;
        windows.push(Window {
            from: part[0].height.max(w_from),
            to: part[len - 1].height,
            blocks: len as u64,
            txs: part.iter().filter_map(|b| b.txs).sum(),
            start_ns: parent_time(per_block, start).or(part[0].time_ns),
            end_ns: part[len - 1].time_ns,
            interval_s: seconds,
            tps: rate(txs, seconds),
            cumulative_tps: rate(cum_txs, cum_s),
        });
        start += len;
    }
    windows
}

/// Time of block `i`'s parent, when the block before it is its parent.
fn parent_time(per_block: &[BlockStat], i: usize) -> Option<i64> {
    i.checked_sub(1)
        .filter(|j| per_block[*j].height.checked_add(1) == Some(per_block[i].height))
        .and_then(|j| per_block[j].time_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use feth_comet::facts::BlockFacts;

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
