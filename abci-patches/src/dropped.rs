//! Transactions let go of after they were accepted, without a block
//! including them: counted by reason, and each hash remembered with its
//! reason until [`REMEMBERED`] later drops have pushed it out. A sender
//! asking after a transaction that never came is told why
//! (`txpool_dropped`), where CometBFT's mempool and geth's pool forget it
//! silently.
//!
//! The node drops a transaction when its recheck after a block refuses it
//! (CometBFT's mempool then lets it go, as abcid's own pool does), when a
//! transaction of the same nonce paying more replaced it (`nonce-queue`),
//! and when a full pool evicts it for a newcomer (`app-mempool`). One
//! admitted again is forgotten.

use std::collections::{HashMap, VecDeque};

use alloy_primitives::B256;
use serde::Serialize;

/// How many dropped hashes are remembered, the latest.
pub const REMEMBERED: usize = 10_000;

/// Why a transaction was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropKind {
    /// A full pool took a newcomer in its place.
    Evicted,
    /// A transaction of the same sender and nonce paying more took its
    /// place.
    Replaced,
    /// Its recheck after a block refused it: the block used its nonce,
    /// spent the balance it needed, or raised the base fee past its cap.
    Invalid,
}

/// One dropped transaction's reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// The kind of reason.
    pub kind: DropKind,
    /// The reason in words (a recheck's refusal as CheckTx words it).
    pub reason: String,
}

/// How many transactions were dropped, by reason, since the node started.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DropCounts {
    /// [`DropKind::Evicted`].
    pub evicted: u64,
    /// [`DropKind::Replaced`].
    pub replaced: u64,
    /// [`DropKind::Invalid`].
    pub invalid: u64,
}

/// The drops: counts, and the latest [`REMEMBERED`] hashes with reasons.
#[derive(Debug, Default)]
pub struct DropLog {
    /// Hashes in the order they were dropped, each with its drop's number.
    order: VecDeque<(B256, u64)>,
    /// Each remembered hash's latest drop, with its number.
    by_hash: HashMap<B256, (u64, Dropped)>,
    /// The next drop's number.
    next: u64,
    counts: DropCounts,
}

impl DropLog {
    /// Counts and remembers the drop of `hash`, forgetting the oldest
    /// beyond [`REMEMBERED`].
    pub fn record(&mut self, hash: B256, kind: DropKind, reason: String) {
        let count = match kind {
            DropKind::Evicted => &mut self.counts.evicted,
            DropKind::Replaced => &mut self.counts.replaced,
            DropKind::Invalid => &mut self.counts.invalid,
        };
        *count = count.saturating_add(1);
        let number = self.next;
        self.next = self.next.wrapping_add(1);
        self.by_hash
            .insert(hash, (number, Dropped { kind, reason }));
        self.order.push_back((hash, number));
        while self.order.len() > REMEMBERED {
            let Some((old, n)) = self.order.pop_front() else {
                break;
            };
            // Only that drop: the hash may have been dropped again since.
            if self.by_hash.get(&old).is_some_and(|(m, _)| *m == n) {
                self.by_hash.remove(&old);
            }
        }
    }

    /// Forgets `hash`: admitted again, it is no longer dropped.
    pub fn forget(&mut self, hash: &B256) {
        if !self.by_hash.is_empty() {
            self.by_hash.remove(hash);
        }
    }

    /// Why `hash` was dropped, while it is remembered.
    pub fn get(&self, hash: &B256) -> Option<&Dropped> {
        self.by_hash.get(hash).map(|(_, d)| d)
    }

    /// The counts by reason.
    pub fn counts(&self) -> DropCounts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(n: u64) -> B256 {
        B256::left_padding_from(&n.to_be_bytes())
    }

    #[test]
    fn counts_by_reason_and_remembers_the_latest_only() {
        let mut log = DropLog::default();
        log.record(hash(1), DropKind::Evicted, "full".into());
        log.record(hash(2), DropKind::Invalid, "nonce too low".into());
        let got = log.get(&hash(2)).unwrap();
        assert_eq!(
            (got.kind, got.reason.as_str()),
            (DropKind::Invalid, "nonce too low")
        );
        for n in 3..(REMEMBERED as u64 + 2) {
            log.record(hash(n), DropKind::Replaced, "paid more".into());
        }
        let counts = log.counts();
        assert_eq!((counts.evicted, counts.invalid), (1, 1));
        assert_eq!(counts.replaced, REMEMBERED as u64 - 1);
        assert_eq!(log.get(&hash(1)), None, "pushed out");
        assert!(log.get(&hash(2)).is_some() && log.get(&hash(3)).is_some());
        assert_eq!(log.by_hash.len(), REMEMBERED);
    }

    #[test]
    fn a_hash_admitted_again_is_forgotten_and_a_second_drop_outlives_the_first() {
        let mut log = DropLog::default();
        log.record(hash(1), DropKind::Evicted, "full".into());
        log.forget(&hash(1));
        assert_eq!(log.get(&hash(1)), None);
        assert_eq!(log.counts().evicted, 1, "counted still");
        log.record(hash(1), DropKind::Invalid, "spent".into());
        // The first drop leaves the window; the second is still remembered.
        for n in 2..(REMEMBERED as u64) {
            log.record(hash(n), DropKind::Invalid, "spent".into());
        }
        assert_eq!(log.order.len(), REMEMBERED);
        log.record(hash(REMEMBERED as u64), DropKind::Invalid, "x".into());
        assert_eq!(log.get(&hash(1)).map(|d| d.kind), Some(DropKind::Invalid));
    }
}
