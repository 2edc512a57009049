//! The per-window table of a run, as in the Ardor load-test report: for each
//! range of consecutive blocks, its transactions, its TPS and the run's
//! cumulative TPS up to it. Times are the blocks' CometBFT header times (ns)
//! when the run read them, else web3's whole-second timestamps.

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
    pub seconds: f64,
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
/// run's window opened (the header time of the block before the first),
/// seconds since the epoch.
pub fn windows(blocks: &[BlockRow], size: u64, start: f64) -> Vec<Window> {
    let mut out = Vec::new();
    let (mut prev_end, mut total_txs) = (start, 0);
    for chunk in blocks.chunks(size.max(1) as usize) {
        let (Some(first), Some(last)) = (chunk.first(), chunk.last()) else {
            continue;
        };
        let txs: u64 = chunk.iter().map(|b| b.txs).sum();
        let seconds = (last.time() - prev_end).max(0.0);
        total_txs += txs;
        let elapsed = (last.time() - start).max(0.0);
        out.push(Window {
            from: first.number,
            to: last.number,
            txs,
            ours: chunk.iter().map(|b| b.ours).sum(),
            seconds,
            tps: per_second(txs, seconds),
            cumulative_tps: per_second(total_txs, elapsed),
        });
        prev_end = last.time();
    }
    out
}

/// `n` over `seconds`; 0 over no time (a window that cannot be timed).
fn per_second(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
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
            time_ns: None,
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
        let w = windows(&blocks, 2, 100.0);
        assert_eq!(w.len(), 3);
        assert_eq!((w[0].from, w[0].to, w[0].txs, w[0].ours), (5, 6, 30, 15));
        assert_eq!((w[0].seconds, w[0].tps), (2.0, 15.0));
        assert_eq!((w[1].seconds, w[1].tps), (4.0, 17.5));
        assert_eq!(w[1].cumulative_tps, 100.0 / 6.0);
        assert_eq!((w[2].from, w[2].to, w[2].txs), (9, 9, 0));
        assert_eq!(w[2].cumulative_tps, 100.0 / 7.0);
        assert_eq!(default_size(5), 1);
        assert_eq!(default_size(130), 20);
    }

    #[test]
    fn header_times_in_ns_time_sub_second_blocks() {
        // 500 ms blocks: whole-second timestamps read 0 s, 1 s, 0 s …; the
        // header times give every window its true length.
        let blocks: Vec<BlockRow> = (0..8)
            .map(|i| BlockRow {
                time_ns: Some(100_000_000_000 + (i + 1) * 500_000_000),
                ..block(10 + i as u64, 100 + (i as u64).div_ceil(2), 1000)
            })
            .collect();
        let w = windows(&blocks, 2, 100.0);
        assert_eq!(w.len(), 4);
        for win in &w {
            assert!((win.seconds - 1.0).abs() < 1e-9, "{win:?}");
            assert!((win.tps - 2000.0).abs() < 1e-6, "{win:?}");
        }
        assert!((w[3].cumulative_tps - 2000.0).abs() < 1e-6);
    }
}
