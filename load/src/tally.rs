//! The run's figures, kept as the run goes in memory that does not grow with
//! the transactions sent: totals, latency histograms, one row per second
//! (finished once it can no longer change, then handed to the sidecar),
//! one row per block, windows of `--window-blocks` blocks and the
//! transactions-per-block histogram. The committed figures are running sums;
//! of the rows, only the latest are kept in memory ([`super::rows`]).
//!
//! A second `s` is finished once the agent's clock is 2 s past it (nothing
//! more is sent or accepted in it) and a block stamped after it was read
//! (blocks are read in height order, so no later inclusion lands in it).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::hist::LogHist;
use super::pick::RateSchedule;
use super::report::{BlockRow, ChainFigures, Latencies, Second, Totals, TxsPerBlock, WindowRow};
use super::rows::{Dropped, Latest, KEEP_BLOCKS, KEEP_SECONDS, KEEP_WINDOWS};

/// Seconds the agent's clock must be past a second before it is finished.
const SETTLE_SECONDS: f64 = 2.0;

/// A line of the sidecar file: a finished second or window.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Line {
    /// A finished second.
    Second(Second),
    /// A finished window of blocks.
    Window(WindowRow),
    /// A block read from the chain.
    Block(BlockRow),
}

/// What one of our included transactions contributes.
#[derive(Debug, Clone, Copy)]
pub struct Inclusion {
    /// Intended send time, seconds since the run began.
    pub intended: f64,
    /// Receipt status 0.
    pub reverted: bool,
}

/// A block as the tally takes it.
#[derive(Debug, Clone)]
pub struct BlockFacts {
    /// Height.
    pub number: u64,
    /// web3 timestamp, whole seconds since the epoch.
    pub timestamp: u64,
    /// CometBFT header time, ns since the epoch, when known.
    pub time_ns: Option<i64>,
    /// All transactions in it.
    pub txs: u64,
    /// Gas all its transactions used.
    pub gas_used: u64,
    /// When the agent first read it, seconds since the run began.
    pub seen: f64,
}

impl BlockFacts {
    /// Header time, seconds since the epoch, as precise as known.
    pub fn time(&self) -> f64 {
        self.time_ns
            .map_or(self.timestamp as f64, |ns| ns as f64 / 1e9)
    }
}

/// Settings of a tally.
#[derive(Debug, Clone)]
pub struct TallyConfig {
    /// Unix time the run began.
    pub run_start_unix: f64,
    /// The rate schedule (offered rate per second).
    pub schedule: RateSchedule,
    /// Blocks per window; `None`: no windows.
    pub window_blocks: Option<u64>,
    /// Header time (seconds since the epoch, ns-precise when known) of the
    /// block before the run.
    pub start_time: f64,
    /// web3 timestamp of that block.
    pub start_timestamp: u64,
}

#[derive(Debug, Default)]
struct OpenSecond {
    row: Second,
    /// Inclusion latencies (to block seen) of the transactions included in it, ms.
    observed: Vec<f64>,
    /// Latencies of the reads answered in it, ms.
    read_ms: Vec<f64>,
}

/// How a read ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadEnd {
    /// Answered, the answer checked right.
    Right,
    /// Answered wrong.
    Wrong,
    /// An error or a timeout.
    Failed,
    /// Due but not sent.
    Skipped,
}

/// A read that ended: when (seconds since the run began), how, and for an
/// answered one its latency, ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadDone {
    /// When it ended, seconds since the run began.
    pub at: f64,
    /// How.
    pub end: ReadEnd,
    /// Request → answer, ms, when answered.
    pub took_ms: Option<f64>,
}

/// The last block read that held one of ours.
#[derive(Debug, Clone, Copy)]
struct LastOurs {
    number: u64,
    timestamp: u64,
    time: f64,
    /// All transactions in the blocks read up to it.
    all_txs: u64,
    /// Gas used by the blocks read up to it.
    all_gas: u64,
}

#[derive(Debug, Clone)]
struct OpenWindow {
    row: WindowRow,
    since: f64,
}

/// The figures of a run (see the module docs).
#[derive(Debug)]
pub struct Tally {
    cfg: TallyConfig,
    /// Totals so far (`unresolved` is settled by the ledger at the end).
    pub totals: Totals,
    /// Accepted by a node.
    pub accepted: u64,
    /// Intended send → the including block's commit time, ms: the next
    /// block's header time when header times are CometBFT's (BFT time: a
    /// header carries the median time of the precommits of the block before
    /// it), else the block's own timestamp.
    pub to_block_time: LogHist,
    /// Intended send → block seen, ms.
    pub to_observed: LogHist,
    /// First submission − intended send time, ms.
    pub lag_total: LogHist,
    /// The agent's own part of it, ms: first submission − the later of the
    /// intended send time and the moment the node answered the sender's
    /// previous transaction (a sender has one transaction in flight: waiting
    /// for that answer is waiting on the node, the rest is the agent's own).
    pub lag_own: LogHist,
    /// Whether some block's header time was known in ns.
    pub ns_clock: bool,
    /// Intended send times of ours in the last block read whose commit time
    /// is the next header's.
    awaiting_commit: Vec<f64>,
    open: BTreeMap<u64, OpenSecond>,
    next_second: u64,
    /// Latest block's header time, seconds since the run began.
    block_clock: f64,
    series: Latest<Second>,
    blocks: Latest<BlockRow>,
    first_block: Option<u64>,
    /// Header time of the last block read, seconds since the epoch.
    last_time: Option<f64>,
    /// All transactions in the blocks read.
    all_txs: u64,
    /// Gas used by the blocks read.
    all_gas: u64,
    last_ours: Option<LastOurs>,
    window: Option<OpenWindow>,
    windows: Latest<WindowRow>,
    per_block: BTreeMap<u64, u64>,
    out: Vec<Line>,
    send_end: Option<f64>,
}

fn second_of(t: f64) -> u64 {
    t.max(0.0) as u64
}

impl Tally {
    /// An empty tally.
    pub fn new(cfg: TallyConfig) -> Self {
        Self {
            block_clock: cfg.start_time - cfg.run_start_unix,
            cfg,
            totals: Totals::default(),
            accepted: 0,
            to_block_time: LogHist::default(),
            to_observed: LogHist::default(),
            lag_total: LogHist::default(),
            lag_own: LogHist::default(),
            ns_clock: false,
            awaiting_commit: Vec::new(),
            open: BTreeMap::new(),
            next_second: 0,
            series: Latest::new(KEEP_SECONDS),
            blocks: Latest::new(KEEP_BLOCKS),
            first_block: None,
            last_time: None,
            all_txs: 0,
            all_gas: 0,
            last_ours: None,
            window: None,
            windows: Latest::new(KEEP_WINDOWS),
            per_block: BTreeMap::new(),
            out: Vec::new(),
            send_end: None,
        }
    }

    fn row(&mut self, t: f64) -> &mut OpenSecond {
        // A late event of a finished second lands in the first open one.
        let s = second_of(t).max(self.next_second);
        self.open.entry(s).or_default()
    }

    /// A first submission at `at` (seconds since the run began) with its lags, ms.
    pub fn sent(&mut self, at: f64, lag: Option<(f64, f64)>) {
        self.totals.signed += 1;
        self.row(at).row.sent += 1;
        if let Some((total, own)) = lag {
            self.lag_total.record(total);
            self.lag_own.record(own);
        }
    }

    /// Reads that ended, each in the second it ended in.
    pub fn reads(&mut self, done: &[ReadDone]) {
        for d in done {
            let open = self.row(d.at);
            let r = open.row.reads.get_or_insert_with(Default::default);
            match d.end {
                ReadEnd::Right => r.ok += 1,
                ReadEnd::Wrong => r.wrong += 1,
                ReadEnd::Failed => r.failed += 1,
                ReadEnd::Skipped => r.skipped += 1,
            }
            open.read_ms.extend(d.took_ms);
        }
    }

    /// An acceptance at `at`.
    pub fn accepted(&mut self, at: f64) {
        self.accepted += 1;
        self.row(at).row.accepted += 1;
    }

    /// A final rejection, for the node's reason `text` (its whole answer):
    /// counted by kind ([`crate::refusal`]), a few of its raw texts kept.
    pub fn rejected(&mut self, text: &str) {
        self.totals.rejected += 1;
        let kind = crate::refusal::classify(text).name();
        *self
            .totals
            .rejected_by_reason
            .entry(kind.to_string())
            .or_default() += 1;
        super::report::keep_text(&mut self.totals.rejected_texts, kind, text);
    }

    /// Whether some of ours wait for the next block's header time (their
    /// commit time) to be read.
    pub fn awaits_commit_time(&self) -> bool {
        !self.awaiting_commit.is_empty()
    }

    /// The agent's memory and transactions in flight, sampled at `at`.
    pub fn sample(&mut self, at: f64, in_flight: u64, rss_bytes: u64) {
        let row = &mut self.row(at).row;
        row.in_flight = Some(in_flight);
        row.rss_bytes = Some(rss_bytes);
    }

    /// A block read from the chain, with our transactions in it.
    pub fn block(&mut self, b: &BlockFacts, ours: &[Inclusion]) {
        self.ns_clock |= b.time_ns.is_some();
        let at = b.time() - self.cfg.run_start_unix;
        self.block_clock = self.block_clock.max(at);
        let reverted = ours.iter().filter(|i| i.reverted).count() as u64;
        self.commit_latencies(at);
        for i in ours {
            if b.time_ns.is_some() {
                self.awaiting_commit.push(i.intended);
            } else {
                self.to_block_time.record((at - i.intended) * 1000.0);
            }
        }
        let mut observed = Vec::with_capacity(ours.len());
        for i in ours {
            let seen = (b.seen - i.intended) * 1000.0;
            self.to_observed.record(seen);
            observed.push(seen.max(0.0));
        }
        let open = self.row(at);
        open.row.included += ours.len() as u64;
        open.row.reverted += reverted;
        open.observed.extend(observed);
        self.totals.included += ours.len() as u64;
        self.totals.reverted += reverted;
        self.first_block.get_or_insert(b.number);
        self.all_txs += b.txs;
        self.all_gas = self.all_gas.saturating_add(b.gas_used);
        if !ours.is_empty() {
            self.last_ours = Some(LastOurs {
                number: b.number,
                timestamp: b.timestamp,
                time: b.time(),
                all_txs: self.all_txs,
                all_gas: self.all_gas,
            });
        }
        *self.per_block.entry(b.txs).or_default() += 1;
        let row = BlockRow {
            number: b.number,
            timestamp: b.timestamp,
            txs: b.txs,
            ours: ours.len() as u64,
            time_ns: b.time_ns,
        };
        self.blocks.push(row.clone());
        self.out.push(Line::Block(row));
        let previous = self.last_time.replace(b.time());
        self.window_add(b, previous, ours.len() as u64, reverted);
    }

    /// Adds block `b` to the open window; `previous` is the header time of
    /// the block before it, if one was read.
    /// Records the latencies of the transactions awaiting their commit time,
    /// `at` (seconds since the run began).
    fn commit_latencies(&mut self, at: f64) {
        for intended in std::mem::take(&mut self.awaiting_commit) {
            self.to_block_time.record((at - intended) * 1000.0);
        }
    }

    fn window_add(&mut self, b: &BlockFacts, previous: Option<f64>, ours: u64, reverted: u64) {
        let Some(size) = self.cfg.window_blocks else {
            return;
        };
        let since = match &self.window {
            Some(w) => w.since,
            None => previous.unwrap_or(self.cfg.start_time),
        };
        let w = self.window.get_or_insert_with(|| OpenWindow {
            row: WindowRow {
                from: b.number,
                ..Default::default()
            },
            since,
        });
        w.row.to = b.number;
        w.row.blocks += 1;
        w.row.txs += b.txs;
        w.row.ours += ours;
        w.row.reverted += reverted;
        if w.row.blocks >= size.max(1) {
            self.close_window(b.time());
        }
    }

    fn close_window(&mut self, end: f64) {
        if let Some(mut w) = self.window.take() {
            let seconds = (end - w.since).max(0.0);
            w.row.seconds = seconds;
            w.row.tps = w.row.ours as f64 / seconds.max(1e-9);
            w.row.tps_all = w.row.txs as f64 / seconds.max(1e-9);
            self.windows.push(w.row.clone());
            self.out.push(Line::Window(w.row));
        }
    }

    /// Finishes every second that can no longer change, the agent's clock
    /// being at `now` (seconds since the run began).
    pub fn settle(&mut self, now: f64) {
        let limit = (now - SETTLE_SECONDS).min(self.block_clock).floor();
        while (self.next_second as f64) < limit {
            self.finish_second();
        }
    }

    fn finish_second(&mut self) {
        let s = self.next_second;
        let mut open = self.open.remove(&s).unwrap_or_default();
        open.row.second = s;
        let sending = self.send_end.is_none_or(|end| (s as f64) < end.floor());
        if sending {
            open.row.offered = self.cfg.schedule.rate_at(s as f64);
        }
        if !open.observed.is_empty() {
            let mut h = LogHist::default();
            open.observed.iter().for_each(|v| h.record(*v));
            open.row.latency_ms = Some(h.latency());
        }
        if let (Some(r), false) = (open.row.reads.as_mut(), open.read_ms.is_empty()) {
            let mut h = LogHist::default();
            open.read_ms.iter().for_each(|v| h.record(*v));
            r.latency_ms = Some(h.latency());
        }
        self.series.push(open.row.clone());
        self.out.push(Line::Second(open.row));
        self.next_second += 1;
    }

    /// Sending ended at `at` (seconds since the run began): no offered rate after it.
    pub fn sending_ended(&mut self, at: f64) {
        self.send_end.get_or_insert(at);
    }

    /// Finishes everything: every open second and the last, partial window.
    pub fn close(&mut self) {
        while let Some((&last, _)) = self.open.last_key_value() {
            if self.next_second > last {
                break;
            }
            self.finish_second();
        }
        let end = self.last_time.unwrap_or(self.cfg.start_time);
        // The last block's own header time: a lower bound of its commit time.
        self.commit_latencies(end - self.cfg.run_start_unix);
        self.close_window(end);
    }

    /// Sidecar lines finished since the last call.
    pub fn drain_lines(&mut self) -> Vec<Line> {
        std::mem::take(&mut self.out)
    }

    /// Blocks read so far.
    pub fn blocks_read(&self) -> u64 {
        self.blocks.pushed()
    }

    /// The latest finished seconds (see [`Self::dropped`]).
    pub fn series(&self) -> Vec<Second> {
        self.series.to_vec()
    }

    /// The latest blocks read, in height order.
    pub fn block_rows(&self) -> Vec<BlockRow> {
        self.blocks.to_vec()
    }

    /// The latest finished windows.
    pub fn windows(&self) -> Vec<WindowRow> {
        self.windows.to_vec()
    }

    /// The oldest rows left out of memory.
    pub fn dropped(&self) -> Dropped {
        Dropped {
            seconds: self.series.dropped(),
            blocks: self.blocks.dropped(),
            windows: self.windows.dropped(),
        }
    }

    /// Blocks by their transaction count.
    pub fn txs_per_block(&self) -> Vec<TxsPerBlock> {
        self.per_block
            .iter()
            .map(|(&txs, &blocks)| TxsPerBlock { txs, blocks })
            .collect()
    }

    /// Both latency measures.
    pub fn latencies(&self) -> Latencies {
        Latencies {
            to_block_time: self.to_block_time.latency(),
            to_observed: self.to_observed.latency(),
            block_time_resolution_ms: if self.ns_clock { 0.000_001 } else { 1000.0 },
        }
    }

    /// Committed figures from the first block read to the last holding one
    /// of ours.
    pub fn chain(&self) -> ChainFigures {
        let (Some(first), Some(last)) = (self.first_block, self.last_ours) else {
            return ChainFigures::default();
        };
        let seconds = if self.ns_clock {
            (last.time - self.cfg.start_time).max(1e-3)
        } else {
            last.timestamp
                .saturating_sub(self.cfg.start_timestamp)
                .max(1) as f64
        };
        let all_txs = last.all_txs;
        ChainFigures {
            first_block: first,
            last_block: last.number,
            start_time: self.cfg.start_timestamp,
            seconds,
            all_txs,
            committed_tps: self.totals.included as f64 / seconds,
            committed_tps_all: all_txs as f64 / seconds,
            gas_used: last.all_gas,
            gas_per_second: last.all_gas as f64 / seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally() -> Tally {
        Tally::new(TallyConfig {
            run_start_unix: 1000.0,
            schedule: RateSchedule::Closed,
            window_blocks: None,
            start_time: 1000.0,
            start_timestamp: 1000,
        })
    }

    fn block(number: u64, time: f64, ns: bool) -> BlockFacts {
        BlockFacts {
            number,
            timestamp: time as u64,
            time_ns: ns.then_some((time * 1e9) as i64),
            txs: 1,
            gas_used: 21_000 * number,
            seen: time - 1000.0 + 0.1,
        }
    }

    fn ours(intended: f64) -> [Inclusion; 1] {
        [Inclusion {
            intended,
            reverted: false,
        }]
    }

    #[test]
    fn a_cometbft_block_is_committed_at_the_next_header_time() {
        let mut t = tally();
        // Sent at 1.2 s; its block's BFT header time (1.0 s) precedes it,
        // the next header (1.5 s) is the commit.
        t.block(&block(1, 1001.0, true), &ours(1.2));
        assert_eq!(t.to_block_time.latency().max, 0.0);
        assert!(t.awaits_commit_time());
        t.block(&block(2, 1001.5, true), &[]);
        assert!(!t.awaits_commit_time());
        let l = t.to_block_time.latency();
        assert!((l.p50 - 300.0).abs() < 3.0, "{l:?}");
        // The last block's own time stands in at the close (the scanner
        // waits a little for the next header first).
        t.block(&block(3, 1002.0, true), &ours(1.7));
        t.close();
        assert!((t.to_block_time.latency().max - 300.0).abs() < 3.0);
    }

    #[test]
    fn reads_land_in_the_second_they_ended_with_their_latency() {
        let mut t = tally();
        let read = |at, end, took_ms| ReadDone { at, end, took_ms };
        t.reads(&[
            read(0.2, ReadEnd::Right, Some(10.0)),
            read(0.9, ReadEnd::Wrong, Some(30.0)),
            read(1.5, ReadEnd::Failed, None),
            read(1.6, ReadEnd::Skipped, None),
        ]);
        t.block(&block(1, 1003.0, false), &ours(0.5));
        t.close();
        let rows = t.series();
        let first = rows[0].reads.as_ref().unwrap();
        assert_eq!(
            (first.ok, first.wrong, first.failed, first.skipped),
            (1, 1, 0, 0)
        );
        let l = first.latency_ms.as_ref().unwrap();
        assert!(l.p50 >= 9.0 && l.max >= 29.0 && l.max <= 31.0, "{l:?}");
        let second = rows[1].reads.as_ref().unwrap();
        assert_eq!((second.ok, second.failed, second.skipped), (0, 1, 1));
        assert_eq!(second.latency_ms, None, "nothing answered in that second");
        assert_eq!(rows[2].reads, None, "no read ended then");
    }

    #[test]
    fn a_web3_timestamp_is_the_blocks_own() {
        let mut t = tally();
        t.block(&block(1, 1002.0, false), &ours(0.5));
        let l = t.to_block_time.latency();
        assert!((l.p50 - 1500.0).abs() < 8.0, "{l:?}");
    }

    #[test]
    fn gas_per_second_counts_the_blocks_up_to_the_last_of_ours() {
        let mut t = tally();
        t.block(&block(1, 1001.0, true), &ours(0.2));
        t.block(&block(2, 1002.0, true), &ours(1.2));
        // A later block without ours is outside the window.
        t.block(&block(3, 1004.0, true), &[]);
        let c = t.chain();
        assert_eq!((c.first_block, c.last_block), (1, 2));
        assert_eq!(c.gas_used, 63_000);
        assert!((c.seconds - 2.0).abs() < 1e-9, "{c:?}");
        assert!((c.gas_per_second - 31_500.0).abs() < 1e-6, "{c:?}");
    }
}
