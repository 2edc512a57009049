//! The run's accounting and figures: every submitted transaction is exactly
//! one of included, rejected (with a reason) or unresolved; committed TPS is
//! read from blocks, the send rate shown apart.

use std::collections::{BTreeMap, HashMap};

use alloy_primitives::B256;
use serde::{Deserialize, Serialize};

use super::ledger::{Fate, TxEntry, TxStatus};
use super::scan::ScanState;

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
    /// Intended send time → block timestamp (1 s resolution on Ethereum RPC).
    pub to_block_time: Latency,
    /// Intended send time → the agent first read the including block
    /// (polled every 100 ms).
    pub to_observed: Latency,
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
    /// Included, by block time.
    pub included: u64,
    /// The rate the schedule offered at the start of this second, tx/s (open
    /// loop only).
    #[serde(default)]
    pub offered: Option<f64>,
    /// Inclusion latency (intended send → block seen) of the transactions
    /// included in this second, ms; `None` when none was.
    #[serde(default)]
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
}

/// What [`account`] makes of a run.
#[derive(Debug, Clone, Default)]
pub struct Accounts {
    /// Totals that add up.
    pub totals: Totals,
    /// Inclusion latency over the run.
    pub latency: Latencies,
    /// Committed figures over the window.
    pub chain: ChainFigures,
    /// Per-second series.
    pub series: Vec<Second>,
    /// Every block scanned, in height order.
    pub blocks: Vec<BlockRow>,
}

/// Totals that add up: `signed = included + rejected + unresolved`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Totals {
    /// Transactions submitted at least once.
    pub signed: u64,
    /// Found in a block.
    pub included: u64,
    /// Refused and not in any block.
    pub rejected: u64,
    /// Neither after the bounded wait.
    pub unresolved: u64,
    /// Rejections by reason.
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// Ledger entries with the hash of an earlier one (identical bytes signed
    /// again, e.g. after a nonce resync), counted once under their last status.
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
    /// Seconds between the block before the window and its last block.
    pub seconds: f64,
    /// All transactions in the window's blocks.
    pub all_txs: u64,
    /// Our transactions per second, committed.
    pub committed_tps: f64,
    /// All transactions per second, committed.
    pub committed_tps_all: f64,
}

/// Builds the totals, latency, window figures, per-second series and block
/// rows.
pub fn account(
    ledger: &[TxEntry],
    scan: &ScanState,
    run_start_unix: f64,
    window_start_time: u64,
) -> Accounts {
    let mut totals = Totals::default();
    let mut latencies = Vec::new();
    let mut observed = Vec::new();
    let mut series: BTreeMap<u64, Second> = BTreeMap::new();
    let mut per_second: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    let mut ours = vec![0u64; scan.blocks.len()];
    let mut last_used_block: Option<usize> = None;
    let last_entry: HashMap<B256, usize> = ledger
        .iter()
        .enumerate()
        .map(|(i, e)| (e.hash, i))
        .collect();
    for (i, entry) in ledger.iter().enumerate() {
        if last_entry.get(&entry.hash) != Some(&i) {
            totals.duplicates_folded += 1;
            continue;
        }
        totals.signed += 1;
        let sec = series.entry(entry.first_sent as u64).or_default();
        sec.sent += 1;
        if let Some(t) = entry.accepted_at {
            series.entry(t as u64).or_default().accepted += 1;
        }
        let fate = match scan.included.get(&entry.hash) {
            Some(&b) => {
                let block = &scan.blocks[b];
                last_used_block = Some(last_used_block.map_or(b, |l| l.max(b)));
                let at = block.timestamp as f64 - run_start_unix;
                let seen_ms = ((block.seen - entry.intended) * 1000.0).max(0.0);
                latencies.push(((at - entry.intended) * 1000.0).max(0.0));
                observed.push(seen_ms);
                ours[b] += 1;
                series.entry(at.max(0.0) as u64).or_default().included += 1;
                per_second
                    .entry(at.max(0.0) as u64)
                    .or_default()
                    .push(seen_ms);
                Fate::Included
            }
            None => match &entry.status {
                TxStatus::Rejected(reason) => {
                    *totals.rejected_by_reason.entry(reason.clone()).or_default() += 1;
                    Fate::Rejected
                }
                _ => Fate::Unresolved,
            },
        };
        match fate {
            Fate::Included => totals.included += 1,
            Fate::Rejected => totals.rejected += 1,
            Fate::Unresolved => totals.unresolved += 1,
        }
    }
    let chain = window_figures(scan, last_used_block, totals.included, window_start_time);
    let latency = Latencies {
        to_block_time: percentiles(&mut latencies),
        to_observed: percentiles(&mut observed),
    };
    for (second, mut values) in per_second {
        series.entry(second).or_default().latency_ms = Some(percentiles(&mut values));
    }
    let blocks = scan
        .blocks
        .iter()
        .zip(ours)
        .map(|(b, ours)| BlockRow {
            number: b.number,
            timestamp: b.timestamp,
            txs: b.txs as u64,
            ours,
        })
        .collect();
    Accounts {
        totals,
        latency,
        chain,
        series: dense(series),
        blocks,
    }
}

/// Committed figures over the window from the first scanned block to the
/// last one that holds one of ours.
fn window_figures(
    scan: &ScanState,
    last_used_block: Option<usize>,
    included: u64,
    window_start_time: u64,
) -> ChainFigures {
    let (Some(first), Some(last)) = (
        scan.blocks.first(),
        last_used_block.map(|l| &scan.blocks[l]),
    ) else {
        return ChainFigures::default();
    };
    let seconds = (last.timestamp.saturating_sub(window_start_time)).max(1) as f64;
    let all_txs = scan
        .blocks
        .iter()
        .filter(|b| b.number <= last.number)
        .map(|b| b.txs as u64)
        .sum();
    ChainFigures {
        first_block: first.number,
        last_block: last.number,
        start_time: window_start_time,
        seconds,
        all_txs,
        committed_tps: included as f64 / seconds,
        committed_tps_all: all_txs as f64 / seconds,
    }
}

/// Every second from 0 to the last one with something in it.
fn dense(mut series: BTreeMap<u64, Second>) -> Vec<Second> {
    let last = series.keys().next_back().copied().unwrap_or(0);
    (0..=last)
        .map(|s| {
            let mut v = series.remove(&s).unwrap_or_default();
            v.second = s;
            v
        })
        .collect()
}

/// The `q` quantile (0–1) of `sorted` (ascending), the nearest rank; 0 when empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n => sorted[((n - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize],
    }
}

fn percentiles(values: &mut [f64]) -> Latency {
    values.sort_by(f64::total_cmp);
    Latency {
        p50: quantile(values, 0.50),
        p90: quantile(values, 0.90),
        p99: quantile(values, 0.99),
        max: quantile(values, 1.0),
    }
}

/// The schedule lag of some transactions, and the agent's own part of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScheduleLag {
    /// First submission − intended send time, ms.
    pub total: Latency,
    /// First submission − the later of the intended send time and the moment
    /// the sender's previous transaction was answered, ms. A sender has one
    /// transaction in flight: waiting for that answer is waiting on the node,
    /// the rest is the agent's own. (A refused transaction's answer time is
    /// not kept: its first submission stands in.)
    pub own: Latency,
}

/// Schedule lag of the transactions first sent in `from..to` (seconds since
/// the run began): the agent keeping (or not) to an open-loop schedule. (An
/// agent far behind sends in a window what was due before it.)
pub fn schedule_lag(ledger: &[TxEntry], from: f64, to: f64) -> ScheduleLag {
    let mut answered: HashMap<u32, f64> = HashMap::new();
    let (mut total, mut own) = (Vec::new(), Vec::new());
    for e in ledger {
        // The ledger holds each sender's transactions in the order sent.
        let free = answered
            .insert(e.account, e.accepted_at.unwrap_or(e.first_sent))
            .unwrap_or(0.0);
        if (from..to).contains(&e.first_sent) {
            total.push(((e.first_sent - e.intended) * 1000.0).max(0.0));
            own.push(((e.first_sent - e.intended.max(free)) * 1000.0).max(0.0));
        }
    }
    ScheduleLag {
        total: percentiles(&mut total),
        own: percentiles(&mut own),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::scan::ScannedBlock;
    use alloy_primitives::Bytes;

    fn entry(i: u8, status: TxStatus) -> TxEntry {
        TxEntry {
            hash: B256::repeat_byte(i),
            account: 0,
            nonce: i as u64,
            raw: Bytes::new(),
            intended: 0.5,
            first_sent: 0.5,
            accepted_at: Some(0.6),
            status,
        }
    }

    #[test]
    fn fates_add_up_and_inclusion_wins() {
        let ledger = vec![
            entry(1, TxStatus::Accepted),
            entry(2, TxStatus::Accepted),
            entry(3, TxStatus::Rejected("nonce too low".into())),
            entry(
                4,
                TxStatus::Rejected("insufficient funds for gas * price + value".into()),
            ),
        ];
        let mut scan = ScanState::default();
        scan.blocks.push(ScannedBlock {
            number: 10,
            timestamp: 1002,
            txs: 5,
            seen: 2.0,
        });
        scan.included.insert(B256::repeat_byte(1), 0);
        scan.included.insert(B256::repeat_byte(3), 0);
        let a = account(&ledger, &scan, 1000.0, 1000);
        let (t, lat, chain, series) = (a.totals, a.latency, a.chain, a.series);
        assert_eq!(
            (t.signed, t.included, t.rejected, t.unresolved),
            (4, 2, 1, 1)
        );
        let row = BlockRow {
            number: 10,
            timestamp: 1002,
            txs: 5,
            ours: 2,
        };
        assert_eq!(a.blocks, vec![row]);
        let second = series[2].latency_ms.clone().unwrap();
        assert_eq!((second.p50, second.max), (1500.0, 1500.0));
        assert!(series[0].latency_ms.is_none() && series[1].latency_ms.is_none());
        assert_eq!(chain.committed_tps, 1.0);
        assert_eq!(chain.committed_tps_all, 2.5);
        assert_eq!(lat.to_block_time.p50, 1500.0);
        assert_eq!(lat.to_observed.p50, 1500.0);
        assert_eq!(series[2].included, 2);
        assert_eq!(series[0].sent, 4);
    }

    fn one_block_with(hashes: &[u8]) -> ScanState {
        let mut scan = ScanState::default();
        scan.blocks.push(ScannedBlock {
            number: 10,
            timestamp: 1002,
            txs: hashes.len(),
            seen: 2.0,
        });
        for &h in hashes {
            scan.included.insert(B256::repeat_byte(h), 0);
        }
        scan
    }

    #[test]
    fn a_hash_signed_twice_is_counted_once_under_its_last_status() {
        // Identical bytes signed again after a resync: the same hash twice.
        let ledger = vec![
            entry(1, TxStatus::Rejected("nonce too low".into())),
            entry(2, TxStatus::Accepted),
            entry(1, TxStatus::Accepted),
            entry(2, TxStatus::Accepted),
        ];
        let a = account(&ledger, &one_block_with(&[1]), 1000.0, 1000);
        let (t, chain, series) = (a.totals, a.chain, a.series);
        assert_eq!(
            (t.signed, t.included, t.rejected, t.unresolved),
            (2, 1, 0, 1)
        );
        assert_eq!(t.duplicates_folded, 2);
        assert_eq!(chain.committed_tps, 0.5);
        assert_eq!(series[2].included, 1);
    }

    #[test]
    fn schedule_lag_is_first_send_minus_intended_within_the_window() {
        let mut ledger: Vec<TxEntry> = (1..=4).map(|i| entry(i, TxStatus::Accepted)).collect();
        for (i, e) in ledger.iter_mut().enumerate() {
            e.account = (i % 2) as u32;
            e.intended = i as f64;
            e.first_sent = i as f64 + 0.01 * (i + 1) as f64;
            e.accepted_at = Some(e.first_sent + 0.005);
        }
        // Sender 1's second transaction (intended at 3 s) waited until its
        // first (sent at 1.02 s) was answered at 3.035 s: 5 of its 40 ms are
        // the agent's own.
        ledger[1].accepted_at = Some(3.035);
        // Sent 20, 30 and 40 ms late at 1.02, 2.03 and 3.04 s; the one at 0.01 s is out.
        let lag = schedule_lag(&ledger, 1.0, 4.0);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(
            close(lag.total.p50, 30.0) && close(lag.total.max, 40.0),
            "{lag:?}"
        );
        assert!(
            close(lag.own.p50, 20.0) && close(lag.own.max, 30.0),
            "{lag:?}"
        );
        assert_eq!(schedule_lag(&ledger, 10.0, 20.0), ScheduleLag::default());
        assert_eq!(quantile(&[1.0, 2.0, 3.0], 0.5), 2.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }

    #[test]
    fn an_accepted_hash_in_no_block_is_unresolved_not_included() {
        let ledger = vec![entry(7, TxStatus::Accepted)];
        let a = account(&ledger, &one_block_with(&[8]), 1000.0, 1000);
        let (t, lat, chain) = (a.totals, a.latency, a.chain);
        assert_eq!(a.blocks[0].ours, 0);
        assert_eq!((t.included, t.unresolved), (0, 1));
        assert_eq!(chain.committed_tps, 0.0);
        assert_eq!(lat.to_block_time.max, 0.0);
    }
}
