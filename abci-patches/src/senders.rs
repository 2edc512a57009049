//! The `sender-cache` patch: senders recovered by CheckTx, kept by
//! transaction hash so that recheck and FinalizeBlock do not recover them
//! again.
//!
//! The key is the Keccak-256 of the raw bytes, which cover the signature: a
//! hit is always the sender those very bytes recover to.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use alloy_primitives::{Address, B256};

/// How many senders the node keeps: 2^17 = 131,072.
///
/// An entry must live from CheckTx to the block that includes its
/// transaction, so the cache must hold a full mempool (devnets run CometBFT
/// with `mempool.size` 10,000; benchmarks raise it) plus what flows through
/// CheckTx meanwhile and is refused by the ledger or dropped. Thirteen times
/// the default mempool leaves room for both; at about 100 bytes an entry
/// (hash, address, map and queue slots) it costs some 13 MiB at most. A miss
/// only costs one recovery, so the bound trades memory, never correctness.
pub const SENDER_CACHE_CAPACITY: usize = 1 << 17;

/// A bounded map transaction hash → sender, oldest entries evicted first.
#[derive(Debug)]
pub struct SenderCache {
    capacity: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    senders: HashMap<B256, Address>,
    /// Insertion order; may still name entries already taken out.
    order: VecDeque<B256>,
}

impl Default for SenderCache {
    fn default() -> Self {
        Self::with_capacity(SENDER_CACHE_CAPACITY)
    }
}

impl SenderCache {
    /// A cache of at most `capacity` senders (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::new(Entries::default()),
        }
    }

    /// The sender of the transaction `hash`, if known.
    pub fn get(&self, hash: &B256) -> Option<Address> {
        self.entries().senders.get(hash).copied()
    }

    /// Takes the sender of `hash` out of the cache (its transaction is in a
    /// block and will not be checked again).
    pub fn take(&self, hash: &B256) -> Option<Address> {
        self.entries().senders.remove(hash)
    }

    /// Remembers that `hash` was signed by `sender`, evicting the oldest
    /// entry when full.
    pub fn insert(&self, hash: B256, sender: Address) {
        let mut entries = self.entries();
        if entries.senders.insert(hash, sender).is_some() {
            return;
        }
        if entries.order.len() == self.capacity {
            if let Some(oldest) = entries.order.pop_front() {
                entries.senders.remove(&oldest);
            }
        }
        entries.order.push_back(hash);
    }

    /// How many senders are kept.
    pub fn len(&self) -> usize {
        self.entries().senders.len()
    }

    /// Whether no sender is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries. A panic elsewhere cannot leave them inconsistent in a way
    /// that matters (a wrong entry is impossible, a missing one is a miss),
    /// so a poisoned lock is used as is.
    fn entries(&self) -> MutexGuard<'_, Entries> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(n: u64) -> B256 {
        B256::left_padding_from(&n.to_be_bytes())
    }

    fn sender(n: u64) -> Address {
        Address::left_padding_from(&n.to_be_bytes())
    }

    #[test]
    fn keeps_at_most_its_capacity_and_evicts_the_oldest() {
        let cache = SenderCache::with_capacity(4);
        for n in 0..10 {
            cache.insert(hash(n), sender(n));
            assert!(cache.len() <= 4, "{} entries after {n}", cache.len());
        }
        assert_eq!(cache.len(), 4);
        for n in 0..6 {
            assert_eq!(cache.get(&hash(n)), None, "{n} was evicted");
        }
        for n in 6..10 {
            assert_eq!(cache.get(&hash(n)), Some(sender(n)));
        }
    }

    #[test]
    fn a_taken_entry_is_gone_and_the_bound_still_holds() {
        let cache = SenderCache::with_capacity(3);
        cache.insert(hash(1), sender(1));
        cache.insert(hash(1), sender(1));
        assert_eq!(cache.len(), 1, "a second insert of a hash adds nothing");
        assert_eq!(cache.take(&hash(1)), Some(sender(1)));
        assert_eq!(cache.take(&hash(1)), None);
        assert!(cache.is_empty());
        // Taken out, then inserted again: the stale queue slot may evict it
        // early (a miss), but never lets the cache grow past its bound.
        for n in 0..50 {
            cache.insert(hash(n % 5), sender(n % 5));
            if n % 3 == 0 {
                cache.take(&hash(n % 5));
            }
            assert!(cache.len() <= 3);
        }
    }

    #[test]
    fn the_node_bound_holds_a_large_mempool() {
        let cache = SenderCache::default();
        for n in 0..(SENDER_CACHE_CAPACITY as u64 + 1) {
            cache.insert(hash(n), sender(n));
        }
        assert_eq!(cache.len(), SENDER_CACHE_CAPACITY);
        assert_eq!(cache.get(&hash(0)), None);
        assert_eq!(cache.get(&hash(1)), Some(sender(1)));
    }
}
