//! The transactions the agent still has to account for, and the run's
//! figures ([`Tally`]) for the rest.
//!
//! Memory follows what is in flight, not what was sent:
//! - a submitted transaction is kept (with its signed bytes, to resend them)
//!   until it is read in a block; then only its contribution to the figures
//!   remains;
//! - a refused one is kept [`GRACE`] more seconds (a "nonce too low" may be
//!   our own earlier submission, included after all: inclusion wins), then
//!   counted as rejected;
//! - the hashes included in the last [`RECENT`] seconds are kept to fold a
//!   resubmission of the same bytes.
//!
//! A hash is counted once: registering one already held (identical bytes
//! signed again by the nonce recovery) folds into it and is counted in
//! [`super::report::Totals::duplicates_folded`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use alloy_primitives::{Bytes, B256};

use super::metrics::LoadMetrics;
use super::tally::{BlockFacts, Inclusion, Tally};

/// Seconds a refused transaction is kept.
pub const GRACE: f64 = 30.0;
/// Seconds an included hash is kept.
pub const RECENT: f64 = 10.0;

/// What the node said about a submitted transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxStatus {
    /// Submitted, no definite answer yet (e.g. still being retried).
    Pending,
    /// Accepted into the mempool (or already known there).
    Accepted,
}

/// A transaction not yet in a block.
#[derive(Debug, Clone)]
pub struct Live {
    /// Sender's index in the keys file.
    pub account: u32,
    /// Nonce.
    pub nonce: u64,
    /// Signed bytes, kept to resend the very same transaction.
    pub raw: Bytes,
    /// Intended send time, seconds since the run began.
    pub intended: f64,
    /// Current status.
    pub status: TxStatus,
}

#[derive(Debug, Clone)]
struct Refused {
    live: Live,
    reason: String,
}

/// What registering a signed transaction found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    /// A new hash.
    New,
    /// A hash already held (in flight, refused or recently included), folded.
    Folded,
}

/// A first submission, as the engine registers it.
#[derive(Debug, Clone)]
pub struct Submission {
    /// Hash.
    pub hash: B256,
    /// The transaction.
    pub live: Live,
    /// First submission, seconds since the run began.
    pub at: f64,
    /// Schedule lag and the agent's own part, ms (open loop only).
    pub lag: Option<(f64, f64)>,
}

/// The transactions in flight and the figures (see the module docs).
#[derive(Debug)]
pub struct Ledger {
    live: HashMap<B256, Live>,
    refused: HashMap<B256, Refused>,
    refused_order: VecDeque<(f64, B256)>,
    recent: HashSet<B256>,
    recent_order: VecDeque<(f64, B256)>,
    /// The figures.
    pub tally: Tally,
    metrics: Option<Arc<LoadMetrics>>,
}

impl Ledger {
    /// An empty ledger feeding `tally` (and the live `metrics`, if any).
    pub fn new(tally: Tally, metrics: Option<Arc<LoadMetrics>>) -> Self {
        Self {
            live: HashMap::new(),
            refused: HashMap::new(),
            refused_order: VecDeque::new(),
            recent: HashSet::new(),
            recent_order: VecDeque::new(),
            tally,
            metrics,
        }
    }

    /// Registers a first submission; a hash already held is folded into it.
    pub fn register(&mut self, s: Submission) -> Registered {
        if self.recent.contains(&s.hash) || self.live.contains_key(&s.hash) {
            self.tally.totals.duplicates_folded += 1;
            return Registered::Folded;
        }
        if let Some(old) = self.refused.remove(&s.hash) {
            // Its refusal is void: it is in flight again, as first sent.
            self.tally.totals.duplicates_folded += 1;
            self.live.insert(s.hash, old.live);
            return Registered::Folded;
        }
        self.tally.sent(s.at, s.lag);
        if let (Some(m), Some((total, _))) = (&self.metrics, s.lag) {
            m.observe_lag(total / 1000.0);
        }
        self.live.insert(s.hash, s.live);
        Registered::New
    }

    /// A node accepted `hash` at `at` (counted once per hash).
    pub fn accept(&mut self, hash: &B256, at: f64) {
        if let Some(live) = self.live.get_mut(hash) {
            if live.status == TxStatus::Pending {
                live.status = TxStatus::Accepted;
                self.tally.accepted(at);
            }
        }
    }

    /// The pending transaction `old` was re-signed as `new` (same nonce, a
    /// higher fee, signed bytes `raw`) to be sent in its place: one
    /// transaction in the figures, followed under its new hash.
    pub fn resigned(&mut self, old: &B256, new: B256, raw: Bytes) {
        if let Some(mut live) = self.live.remove(old) {
            live.raw = raw;
            self.live.insert(new, live);
        }
    }

    /// A node refused `hash` at `at`. One already accepted stays in flight
    /// (an earlier submission of it is in a mempool).
    pub fn refuse(&mut self, hash: &B256, reason: &str, at: f64) {
        if self
            .live
            .get(hash)
            .is_some_and(|l| l.status == TxStatus::Pending)
        {
            if let Some(live) = self.live.remove(hash) {
                let reason = reason.to_string();
                self.refused.insert(*hash, Refused { live, reason });
                self.refused_order.push_back((at, *hash));
            }
        }
    }

    /// Whether `hash` is still to be accounted for (in flight or refused
    /// within the grace period).
    pub fn holds(&self, hash: &B256) -> bool {
        self.live.contains_key(hash) || self.refused.contains_key(hash)
    }

    /// The signed bytes of `hash`, while in flight.
    pub fn raw(&self, hash: &B256) -> Option<Bytes> {
        self.live.get(hash).map(|l| l.raw.clone())
    }

    /// Transactions in flight.
    pub fn in_flight(&self) -> usize {
        self.live.len()
    }

    /// The accepted transactions not yet in a block: sender, nonce, bytes.
    pub fn missing(&self) -> Vec<(u32, u64, Bytes)> {
        self.live
            .values()
            .filter(|l| l.status == TxStatus::Accepted)
            .map(|l| (l.account, l.nonce, l.raw.clone()))
            .collect()
    }

    /// A block read from the chain at `now`: `hashes` are its transactions,
    /// `reverted` tells which of ours reverted. Returns ours in it (sender,
    /// nonce).
    pub fn block(
        &mut self,
        b: &BlockFacts,
        hashes: &[B256],
        reverted: impl Fn(&B256) -> bool,
        now: f64,
    ) -> Vec<(u32, u64)> {
        let mut ours = Vec::new();
        let mut inclusions = Vec::new();
        for h in hashes {
            let live = match self.live.remove(h) {
                Some(l) => l,
                None => match self.refused.remove(h) {
                    Some(r) => r.live,
                    None => continue,
                },
            };
            inclusions.push(Inclusion {
                intended: live.intended,
                reverted: reverted(h),
            });
            ours.push((live.account, live.nonce));
            if let Some(m) = &self.metrics {
                m.observe_inclusion((b.seen - live.intended).max(0.0));
            }
            self.recent.insert(*h);
            self.recent_order.push_back((now, *h));
        }
        self.tally.block(b, &inclusions);
        ours
    }

    /// Settles what has waited long enough by `now`: refusals older than
    /// [`GRACE`] become rejections, hashes included more than [`RECENT`]
    /// seconds ago are forgotten.
    pub fn expire(&mut self, now: f64) {
        self.expire_before(now - GRACE, now - RECENT);
    }

    fn expire_before(&mut self, cutoff: f64, recent_cutoff: f64) {
        while let Some(&(at, hash)) = self.refused_order.front() {
            if at > cutoff {
                break;
            }
            self.refused_order.pop_front();
            if let Some(r) = self.refused.remove(&hash) {
                self.tally.rejected(&r.reason);
            }
        }
        while let Some(&(at, hash)) = self.recent_order.front() {
            if at > recent_cutoff {
                break;
            }
            self.recent_order.pop_front();
            self.recent.remove(&hash);
        }
    }

    /// Ends the run's accounting: refusals are final, what is still in flight
    /// is unresolved, every second and window is finished.
    pub fn close(&mut self) {
        self.expire_before(f64::INFINITY, f64::INFINITY);
        self.tally.totals.unresolved = self.live.len() as u64;
        self.tally.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pick::RateSchedule;
    use crate::tally::TallyConfig;

    fn ledger() -> Ledger {
        let cfg = TallyConfig {
            run_start_unix: 1000.0,
            schedule: RateSchedule::Closed,
            window_blocks: Some(2),
            start_time: 1000.0,
            start_timestamp: 1000,
        };
        Ledger::new(Tally::new(cfg), None)
    }

    fn submit(l: &mut Ledger, i: u8) -> Registered {
        l.register(Submission {
            hash: B256::repeat_byte(i),
            live: Live {
                account: 0,
                nonce: i as u64,
                raw: Bytes::from(vec![i; 110]),
                intended: 0.5,
                status: TxStatus::Pending,
            },
            at: 0.5,
            lag: None,
        })
    }

    fn block(number: u64, timestamp: u64, txs: u64) -> BlockFacts {
        BlockFacts {
            number,
            timestamp,
            time_ns: None,
            txs,
            gas_used: 21_000 * txs,
            seen: 2.0,
        }
    }

    #[test]
    fn fates_add_up_inclusion_wins_and_rejections_wait_their_grace() {
        let mut l = ledger();
        for i in 1..=4 {
            assert_eq!(submit(&mut l, i), Registered::New);
        }
        let h = B256::repeat_byte;
        l.accept(&h(1), 0.6);
        l.accept(&h(2), 0.6);
        l.refuse(&h(3), "nonce too low", 0.6);
        l.refuse(&h(4), "insufficient funds", 0.6);
        // Refused, then found in a block: included.
        let ours = l.block(
            &block(10, 1002, 5),
            &[h(1), h(3), h(9)],
            |x| *x == h(3),
            2.0,
        );
        assert_eq!(ours, vec![(0, 1), (0, 3)]);
        l.expire(40.0);
        assert_eq!(l.tally.totals.rejected, 1);
        l.close();
        let t = &l.tally.totals;
        assert_eq!((t.signed, t.included, t.reverted), (4, 2, 1));
        assert_eq!((t.rejected, t.unresolved), (1, 1));
        assert_eq!(t.rejected_by_reason["insufficient funds"], 1);
        let series = l.tally.series();
        assert_eq!((series[0].sent, series[0].accepted), (4, 2));
        assert_eq!((series[2].included, series[2].reverted), (2, 1));
        let lat = series[2].latency_ms.clone().unwrap();
        assert!((lat.p50 - 1500.0).abs() < 8.0, "{lat:?}");
        let chain = l.tally.chain();
        assert_eq!((chain.committed_tps, chain.committed_tps_all), (1.0, 2.5));
        assert_eq!(l.tally.block_rows()[0].ours, 2);
        // One partial window of one block.
        assert_eq!(l.tally.windows()[0].blocks, 1);
    }

    #[test]
    fn a_hash_signed_again_is_counted_once() {
        let mut l = ledger();
        let h = B256::repeat_byte;
        submit(&mut l, 1);
        l.refuse(&h(1), "nonce too low", 0.6);
        // The recovery signs the very same bytes again: folded, in flight again.
        assert_eq!(submit(&mut l, 1), Registered::Folded);
        l.accept(&h(1), 0.7);
        assert_eq!(submit(&mut l, 1), Registered::Folded);
        l.block(&block(10, 1002, 1), &[h(1)], |_| false, 2.0);
        // Included, then signed once more: still one.
        assert_eq!(submit(&mut l, 1), Registered::Folded);
        l.close();
        let t = &l.tally.totals;
        assert_eq!((t.signed, t.included, t.rejected), (1, 1, 0));
        assert_eq!(t.duplicates_folded, 3);
    }

    #[test]
    fn memory_follows_what_is_in_flight() {
        let mut l = ledger();
        let h = B256::repeat_byte;
        for i in 1..=3 {
            submit(&mut l, i);
        }
        assert_eq!(l.in_flight(), 3);
        l.block(&block(10, 1002, 3), &[h(1), h(2), h(3)], |_| false, 2.0);
        assert_eq!((l.in_flight(), l.raw(&h(1))), (0, None));
        l.expire(40.0);
        assert!(l.recent.is_empty() && l.refused.is_empty());
        // The second finished once a later block was read and the clock moved on.
        l.block(&block(11, 1004, 0), &[], |_| false, 4.0);
        l.tally.settle(10.0);
        assert_eq!(l.tally.series().len(), 4);
        assert_eq!(l.tally.series()[2].included, 3);
        assert_eq!(l.tally.windows().len(), 1);
    }
}
