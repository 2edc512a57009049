//! What a window's blocks say: committed rate by CometBFT header times,
//! block intervals, valid and invalid transactions.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use feth_comet::facts::BlockFacts;

/// The blocks `first + 1 ..= last`, measured against block `first`'s time.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockWindow {
    /// Transactions in the window's blocks.
    pub txs: u64,
    /// `txs` over the header time from block `first` to block `last`, tx/s.
    pub committed_tps: f64,
    /// Median block interval, ms.
    pub block_time_p50_ms: f64,
    /// 95th percentile block interval, ms.
    pub block_time_p95_ms: f64,
    /// Transactions the application accepted.
    pub valid: u64,
    /// Transactions the application refused.
    pub invalid: u64,
}

/// Measures blocks `first + 1 ..= last` (`last > first`) from `facts`, which
/// must hold the header time of `first ..= last` and the tx counts and
/// results of the others.
pub fn block_window(
    facts: &BTreeMap<u64, BlockFacts>,
    first: u64,
    last: u64,
) -> Result<BlockWindow> {
    if last <= first {
        bail!("no block in the window (heights {first} to {last})");
    }
    let fact = |h: u64| {
        facts
            .get(&h)
            .with_context(|| format!("no facts of block {h}"))
    };
    let time = |h: u64| -> Result<i64> {
        fact(h)?
            .time_ns
            .with_context(|| format!("no header time of block {h}"))
    };
    let (mut txs, mut valid, mut invalid) = (0, 0, 0);
    let mut intervals = Vec::new();
    for h in first + 1..=last {
        let f = fact(h)?;
        txs += f.txs.with_context(|| format!("no tx count of block {h}"))?;
        valid += f
            .valid
            .with_context(|| format!("no results of block {h}"))?;
        invalid += f
            .invalid
            .with_context(|| format!("no results of block {h}"))?;
        intervals.push((time(h)? - time(h - 1)?) as f64 / 1e6);
    }
    let span_s = (time(last)? - time(first)?) as f64 / 1e9;
    if span_s <= 0.0 {
        bail!("header times of blocks {first} and {last} do not increase");
    }
    intervals.sort_by(f64::total_cmp);
    Ok(BlockWindow {
        txs,
        committed_tps: txs as f64 / span_s,
        block_time_p50_ms: nearest_rank(&intervals, 0.50).unwrap_or_default(),
        block_time_p95_ms: nearest_rank(&intervals, 0.95).unwrap_or_default(),
        valid,
        invalid,
    })
}

/// The `q` quantile (0–1) of `sorted` by nearest rank; `None` when empty.
pub fn nearest_rank(sorted: &[f64], q: f64) -> Option<f64> {
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank.min(sorted.len()).checked_sub(1)?).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(time_ms: i64, txs: u64, invalid: u64) -> BlockFacts {
        BlockFacts {
            txs: Some(txs),
            valid: Some(txs - invalid),
            invalid: Some(invalid),
            time_ns: Some(time_ms * 1_000_000),
            ..BlockFacts::default()
        }
    }

    #[test]
    fn the_window_counts_its_blocks_against_the_previous_header_time() {
        let facts = BTreeMap::from([
            (10, block(1_000, 999, 0)), // before the window: only its time counts
            (11, block(1_500, 100, 0)),
            (12, block(2_000, 200, 1)),
            (13, block(3_000, 300, 2)),
        ]);
        let w = block_window(&facts, 10, 13).unwrap();
        assert_eq!((w.txs, w.valid, w.invalid), (600, 597, 3));
        assert_eq!(w.committed_tps, 300.0, "600 txs over 2 s");
        assert_eq!((w.block_time_p50_ms, w.block_time_p95_ms), (500.0, 1000.0));
        assert!(block_window(&facts, 13, 13).is_err(), "no block");
        assert!(block_window(&facts, 13, 14).is_err(), "no facts of 14");
    }

    #[test]
    fn nearest_rank_quantiles() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(nearest_rank(&v, 0.5), Some(2.0));
        assert_eq!(nearest_rank(&v, 0.99), Some(4.0));
        assert_eq!(nearest_rank(&v, 0.0), Some(1.0));
        assert_eq!(nearest_rank(&[], 0.5), None);
    }
}
