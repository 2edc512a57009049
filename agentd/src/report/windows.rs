//! The per-window table of a run, as in the Ardor load-test report: for each
//! range of consecutive blocks, its transactions, its TPS and the run's
//! cumulative TPS up to it.

use crate::load::report::BlockRow;

/// One range of blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// First height.
    pub from: u64,
    /// Last height.
    pub to: u64,
    /// Transactions in the range (all senders).
    pub txs: u64,
    /// Ours among them.
    pub ours: u64,
    /// Seconds from the end of the previous range (or the run's window
    /// start) to the range's last block.
    pub seconds: u64,
    /// `txs / seconds`.
    pub tps: f64,
    /// All transactions up to this range over all seconds up to it.
    pub cumulative_tps: f64,
}

/// Blocks per window: a round number giving at most about 12 windows.
pub fn default_size(blocks: usize) -> u64 {
    let raw = blocks.div_ceil(12).max(1) as u64;
    [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000]
        .into_iter()
        .find(|&s| s >= raw)
        .unwrap_or(raw)
}

/// The table of `blocks` in windows of `size` blocks; `start` is the time the
/// run's window opened (the header time of the block before the first).
pub fn windows(blocks: &[BlockRow], size: u64, start: u64) -> Vec<Window> {
    let mut out = Vec::new();
    let (mut prev_end, mut total_txs) = (start, 0);
    for chunk in blocks.chunks(size.max(1) as usize) {
        let (Some(first), Some(last)) = (chunk.first(), chunk.last()) else {
            continue;
        };
        let txs: u64 = chunk.iter().map(|b| b.txs).sum();
        let seconds = last.timestamp.saturating_sub(prev_end);
        total_txs += txs;
        let elapsed = last.timestamp.saturating_sub(start);
        out.push(Window {
            from: first.number,
            to: last.number,
            txs,
            ours: chunk.iter().map(|b| b.ours).sum(),
            seconds,
            tps: txs as f64 / seconds.max(1) as f64,
            cumulative_tps: total_txs as f64 / elapsed.max(1) as f64,
        });
        prev_end = last.timestamp;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(number: u64, timestamp: u64, txs: u64) -> BlockRow {
        BlockRow {
            number,
            timestamp,
            txs,
            ours: txs / 2,
        }
    }

    #[test]
    fn windows_sum_their_blocks_and_accumulate() {
        let blocks = [
            block(5, 101, 10),
            block(6, 102, 20),
            block(7, 104, 30),
            block(8, 106, 40),
            block(9, 107, 0),
        ];
        let w = windows(&blocks, 2, 100);
        assert_eq!(w.len(), 3);
        assert_eq!((w[0].from, w[0].to, w[0].txs, w[0].ours), (5, 6, 30, 15));
        assert_eq!((w[0].seconds, w[0].tps), (2, 15.0));
        assert_eq!((w[1].seconds, w[1].tps), (4, 17.5));
        assert_eq!(w[1].cumulative_tps, 100.0 / 6.0);
        assert_eq!((w[2].from, w[2].to, w[2].txs), (9, 9, 0));
        assert_eq!(w[2].cumulative_tps, 100.0 / 7.0);
        assert_eq!(default_size(5), 1);
        assert_eq!(default_size(130), 20);
    }
}
