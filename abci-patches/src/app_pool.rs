//! `app-mempool`: the node's own pool of admitted transactions, for a
//! CometBFT whose mempool is off (`mempool.type = "nop"`).
//!
//! Without the patch, `eth_sendRawTransaction` forwards the bytes to
//! CometBFT's RPC (`broadcast_tx_sync`), whose mempool connection runs
//! CheckTx one transaction at a time over the ABCI socket, and
//! PrepareProposal proposes what CometBFT's mempool hands it. With it, the
//! web3 worker runs the same CheckTx itself and keeps the transaction here,
//! in admission order; PrepareProposal proposes from here; Commit drops what
//! the block included and rechecks the rest, as CometBFT's recheck does.
//! The verdicts are CheckTx's either way; what goes is the HTTP hop, the
//! ABCI round trip and CometBFT's mempool bookkeeping per transaction.
//!
//! The pool reaps in block-building order: by effective tip, each sender's
//! transactions in admission order, which is nonce order (CheckTx refuses a
//! gap; with `nonce-queue`, PrepareProposal puts each sender's in nonce order
//! after the reap), so a sender paying more is proposed first and one
//! claiming much gas for little tip cannot hold it back. A full pool takes a
//! newcomer paying a higher effective tip in place of its cheapest
//! transaction that is its sender's last ([`AppPool::room_for`]), so one
//! sender cannot own the pool against those who pay more; and a newcomer
//! whose sender holds fewer than [`PoolLimits::account_slots`] transactions
//! paying as much as the last transaction of the sender holding the most,
//! above its slots, in that one's place (geth's 16 slots per account), so
//! one sender cannot own it against those who pay the same either. The pool
//! is bounded by transactions and bytes, as CometBFT's mempool is
//! (`mempool.size`, `mempool.max_txs_bytes`).

use std::cmp::Reverse;
use std::collections::{HashMap, HashSet, VecDeque};

use alloy_primitives::{Address, Bytes, B256};

use crate::pool_journal::{Journal, JournalError};
use crate::proposal::{self, Origin};

/// The pool's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolLimits {
    /// Most transactions held.
    pub max_txs: usize,
    /// Most raw bytes held, all transactions together.
    pub max_bytes: u64,
    /// Transactions each sender may hold in a full pool against one of a
    /// sender holding more (geth's `AccountSlots`).
    pub account_slots: usize,
}

impl Default for PoolLimits {
    /// The devnet's CometBFT mempool bounds (10,000 transactions, 1 GiB)
    /// and geth's 16 slots per sender.
    fn default() -> Self {
        Self {
            max_txs: 10_000,
            max_bytes: 1 << 30,
            account_slots: 16,
        }
    }
}

/// A sender's transactions in the pool.
#[derive(Debug, Clone, Copy)]
struct Holding {
    /// How many.
    count: usize,
    /// The highest nonce.
    last_nonce: u64,
    /// Where the transaction of that nonce is in the pool.
    last: usize,
}

/// Why the pool did not take a transaction before CheckTx ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// The same bytes are in the pool already.
    #[error("already known")]
    Known,
    /// Taking it would pass a bound.
    #[error("txpool is full: {txs} transactions of {max_txs} at most, {bytes} bytes of {max_bytes} at most")]
    Full {
        /// Transactions held.
        txs: usize,
        /// The bound on transactions.
        max_txs: usize,
        /// Bytes held.
        bytes: u64,
        /// The bound on bytes.
        max_bytes: u64,
    },
}

/// Where a newcomer goes ([`AppPool::room_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    /// The bounds leave room.
    Free,
    /// The pool is full: admitting the newcomer evicts this transaction,
    /// which pays less.
    Evicting(B256),
}

/// One admitted transaction.
#[derive(Debug, Clone)]
struct Pooled {
    hash: B256,
    raw: Bytes,
    /// The gas it claims of a block, as CheckTx answered (none when queued).
    gas: u64,
    /// Its sender, nonce and fees, as CheckTx read them.
    origin: Origin,
}

/// Admitted transactions in admission order, within [`PoolLimits`].
#[derive(Debug)]
pub struct AppPool {
    txs: VecDeque<Pooled>,
    known: HashSet<B256>,
    bytes: u64,
    limits: PoolLimits,
    /// Where each admission is recorded, once attached.
    journal: Option<Journal>,
}

impl AppPool {
    /// An empty pool within `limits`.
    pub fn new(limits: PoolLimits) -> Self {
        Self {
            txs: VecDeque::new(),
            known: HashSet::new(),
            bytes: 0,
            limits,
            journal: None,
        }
    }

    /// Records every admission from now on in `journal`, rewritten first
    /// with what the pool holds.
    pub fn attach(&mut self, mut journal: Journal) -> Result<(), JournalError> {
        journal.rotate(self.txs.iter().map(|tx| tx.raw.as_ref()))?;
        self.journal = Some(journal);
        Ok(())
    }

    /// Transactions held.
    pub fn len(&self) -> usize {
        self.txs.len()
    }

    /// Whether the pool holds nothing.
    pub fn is_empty(&self) -> bool {
        self.txs.is_empty()
    }

    /// Whether a transaction of `len` bytes with `hash`, paying an effective
    /// `tip` over `base_fee`, may be admitted, and where: asked before
    /// CheckTx, so that a refused one reserves nothing. In a full pool it
    /// takes the place of a transaction that is its sender's last (so no
    /// sender is left a gap):
    /// - the cheapest, when it pays a higher effective tip, as geth's pool
    ///   evicts the cheapest for a better-paying newcomer;
    /// - else, when its sender (`sender`, asked only of a full pool) holds
    ///   fewer than [`PoolLimits::account_slots`], the last of the sender
    ///   holding the most, above its slots, when it pays at least as much.
    pub fn room_for(
        &self,
        hash: &B256,
        len: usize,
        tip: u128,
        base_fee: u128,
        sender: impl FnOnce() -> Option<Address>,
    ) -> Result<Room, PoolError> {
        if self.known.contains(hash) {
            return Err(PoolError::Known);
        }
        let len = len as u64;
        let fits = |held: usize, bytes: u64| {
            held < self.limits.max_txs && bytes.saturating_add(len) <= self.limits.max_bytes
        };
        if fits(self.txs.len(), self.bytes) {
            return Ok(Room::Free);
        }
        let freed = |i: usize| {
            fits(
                self.txs.len() - 1,
                self.bytes.saturating_sub(self.txs[i].raw.len() as u64),
            )
        };
        let holdings = self.holdings();
        let evict = match self.cheapest_last(&holdings, base_fee) {
            Some((i, its_tip)) if its_tip < tip => Some(i),
            _ => sender().and_then(|s| self.over_its_slots(&holdings, s, tip, base_fee)),
        };
        match evict {
            Some(i) if freed(i) => Ok(Room::Evicting(self.txs[i].hash)),
            _ => Err(PoolError::Full {
                txs: self.txs.len(),
                max_txs: self.limits.max_txs,
                bytes: self.bytes,
                max_bytes: self.limits.max_bytes,
            }),
        }
    }

    /// Each sender's count and last transaction.
    fn holdings(&self) -> HashMap<Address, Holding> {
        let mut held: HashMap<Address, Holding> = HashMap::new();
        for (i, tx) in self.txs.iter().enumerate() {
            let h = held.entry(tx.origin.sender).or_insert(Holding {
                count: 0,
                last_nonce: tx.origin.nonce,
                last: i,
            });
            h.count += 1;
            if tx.origin.nonce >= h.last_nonce {
                (h.last_nonce, h.last) = (tx.origin.nonce, i);
            }
        }
        held
    }

    /// Of each sender's last transaction, where the one paying the least
    /// effective tip over `base_fee` is (the latest on a tie), with that tip.
    fn cheapest_last(
        &self,
        holdings: &HashMap<Address, Holding>,
        base_fee: u128,
    ) -> Option<(usize, u128)> {
        holdings
            .values()
            .map(|h| (h.last, self.txs[h.last].origin.effective_tip(base_fee)))
            .min_by_key(|&(i, tip)| (tip, Reverse(i)))
    }

    /// Where the last transaction of the sender holding the most is, when
    /// that sender holds more than its slots, `newcomer` fewer, and the
    /// newcomer's `tip` is at least that transaction's.
    fn over_its_slots(
        &self,
        holdings: &HashMap<Address, Holding>,
        newcomer: Address,
        tip: u128,
        base_fee: u128,
    ) -> Option<usize> {
        let slots = self.limits.account_slots;
        if holdings.get(&newcomer).is_some_and(|h| h.count >= slots) {
            return None;
        }
        let (_, most) = holdings.iter().max_by_key(|(_, h)| (h.count, h.last))?;
        let its_tip = self.txs[most.last].origin.effective_tip(base_fee);
        (most.count > slots && its_tip <= tip).then_some(most.last)
    }

    /// Removes `hash` from the pool (a transaction [`Self::room_for`] chose
    /// to evict); false when it is not there.
    pub fn evict(&mut self, hash: &B256) -> bool {
        let Some(i) = self.txs.iter().position(|tx| tx.hash == *hash) else {
            return false;
        };
        if let Some(tx) = self.txs.remove(i) {
            self.known.remove(&tx.hash);
            self.bytes = self.bytes.saturating_sub(tx.raw.len() as u64);
        }
        true
    }

    /// Puts a transaction CheckTx admitted as a replacement by fee in the
    /// place of `old`, keeping its sender's transactions in nonce order;
    /// journaled as [`Self::push`] does. False, and nothing changed, when
    /// `old` is not there (evicted meanwhile).
    pub fn replace(
        &mut self,
        old: &B256,
        hash: B256,
        raw: Bytes,
        gas: u64,
        origin: Origin,
    ) -> bool {
        let Some(slot) = self.txs.iter_mut().find(|tx| tx.hash == *old) else {
            return false;
        };
        journal(&mut self.journal, &hash, &raw);
        self.bytes = self
            .bytes
            .saturating_sub(slot.raw.len() as u64)
            .saturating_add(raw.len() as u64);
        self.known.remove(old);
        self.known.insert(hash);
        *slot = Pooled {
            hash,
            raw,
            gas,
            origin,
        };
        true
    }

    /// Appends a transaction CheckTx admitted (after [`Self::room_for`])
    /// with the gas it claims and its origin.
    /// Recorded in the journal when one is attached (a failure is logged:
    /// the transaction stays admitted).
    pub fn push(&mut self, hash: B256, raw: Bytes, gas: u64, origin: Origin) {
        if self.known.insert(hash) {
            journal(&mut self.journal, &hash, &raw);
            self.bytes = self.bytes.saturating_add(raw.len() as u64);
            self.txs.push_back(Pooled {
                hash,
                raw,
                gas,
                origin,
            });
        }
    }

    /// A proposal's worth: the transactions in block-building order (by
    /// effective tip over `base_fee`, each sender's in admission order:
    /// [`proposal::order_by_tip`]), the first ones whose bytes add up to at
    /// most `max_bytes` and whose claimed gas to at most `max_gas`.
    pub fn reap(&self, max_bytes: u64, max_gas: u64, base_fee: u128) -> Vec<Bytes> {
        let (mut bytes, mut gas) = (0u64, 0u64);
        let pooled: Vec<&Pooled> = self.txs.iter().collect();
        proposal::order_by_tip(pooled, |tx| Some(tx.origin), base_fee)
            .into_iter()
            .take_while(|tx| {
                bytes = bytes.saturating_add(tx.raw.len() as u64);
                gas = gas.saturating_add(tx.gas);
                bytes <= max_bytes && gas <= max_gas
            })
            .map(|tx| tx.raw.clone())
            .collect()
    }

    /// The first `n` transactions (for `txpool_content`).
    pub fn first(&self, n: usize) -> Vec<Bytes> {
        self.txs.iter().take(n).map(|tx| tx.raw.clone()).collect()
    }

    /// After a block: drops the transactions it `included`, then keeps each
    /// of the others, in order, only if `recheck` admits it again; `recheck`
    /// is given the hash computed at admission with the bytes, so nothing is
    /// hashed again. Returns how many the recheck dropped; stops at the first
    /// error of `recheck`, keeping the unchecked rest.
    pub fn after_block<E>(
        &mut self,
        included: &HashSet<B256>,
        mut recheck: impl FnMut(&B256, &[u8]) -> Result<bool, E>,
    ) -> Result<usize, E> {
        let mut kept = VecDeque::with_capacity(self.txs.len());
        let mut dropped = 0;
        let mut outcome = Ok(());
        while let Some(tx) = self.txs.pop_front() {
            let keep = match outcome {
                Err(_) => true,
                Ok(()) if included.contains(&tx.hash) => false,
                Ok(()) => match recheck(&tx.hash, &tx.raw) {
                    Ok(admitted) => {
                        dropped += usize::from(!admitted);
                        admitted
                    }
                    Err(e) => {
                        outcome = Err(e);
                        true
                    }
                },
            };
            if keep {
                kept.push_back(tx);
            } else {
                self.known.remove(&tx.hash);
                self.bytes = self.bytes.saturating_sub(tx.raw.len() as u64);
            }
        }
        self.txs = kept;
        self.rotate_if_due();
        outcome.map(|()| dropped)
    }

    /// Rewrites the journal with what the pool holds once it has grown
    /// past its bound (a failure is logged; appends go on).
    fn rotate_if_due(&mut self) {
        let Some(journal) = self.journal.as_mut() else {
            return;
        };
        if journal.due(self.txs.len()) {
            if let Err(e) = journal.rotate(self.txs.iter().map(|tx| tx.raw.as_ref())) {
                tracing::warn!("{e}");
            }
        }
    }
}

/// Appends `raw` (hashed `hash`), admitted, to `journal` when one is
/// attached; a failure is logged, and the transaction stays admitted.
fn journal(journal: &mut Option<Journal>, hash: &B256, raw: &Bytes) {
    if let Some(Err(e)) = journal.as_mut().map(|j| j.append(raw)) {
        tracing::warn!(%hash, "admitted, not journaled: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx(n: u8, len: usize) -> (B256, Bytes) {
        (B256::repeat_byte(n), Bytes::from(vec![n; len]))
    }

    /// Sender `n`'s nonce 0, paying `tip` over any base fee.
    fn from(n: u8, tip: u128) -> Origin {
        Origin {
            sender: alloy_primitives::Address::repeat_byte(n),
            nonce: 0,
            tip,
            fee_cap: tip + 1_000,
        }
    }

    /// A pool holding transactions 1..=n of 10 bytes and 21,000 gas each.
    fn holding(n: u8) -> AppPool {
        let mut p = pool(10, 1_000);
        for n in 1..=n {
            let (h, r) = tx(n, 10);
            p.push(h, r, 21_000, from(h.0[0], 1));
        }
        p
    }

    fn pool(max_txs: usize, max_bytes: u64) -> AppPool {
        AppPool::new(PoolLimits {
            max_txs,
            max_bytes,
            account_slots: 2,
        })
    }

    #[test]
    fn refuses_a_known_hash_and_what_passes_either_bound() {
        let mut p = pool(2, 100);
        let (h1, r1) = tx(1, 60);
        assert_eq!(p.room_for(&h1, r1.len(), 1, 0, || None), Ok(Room::Free));
        p.push(h1, r1, 21_000, from(h1.0[0], 1));
        assert_eq!(p.room_for(&h1, 60, 1, 0, || None), Err(PoolError::Known));
        let (h2, _) = tx(2, 41);
        assert!(matches!(
            p.room_for(&h2, 41, 1, 0, || None),
            Err(PoolError::Full { bytes: 60, .. })
        ));
        p.room_for(&h2, 40, 1, 0, || None).unwrap();
        p.push(h2, Bytes::from(vec![2; 40]), 21_000, from(2, 1));
        let (h3, _) = tx(3, 0);
        let full = p.room_for(&h3, 0, 1, 0, || None).unwrap_err();
        assert!(full.to_string().contains("2 transactions of 2"), "{full}");
    }

    #[test]
    fn a_full_pool_evicts_its_cheapest_last_transaction_for_one_paying_more() {
        let mut p = pool(3, 1_000);
        // Sender 1 holds nonces 0 and 1 at tip 5, sender 2 nonce 0 at tip 3.
        for (n, sender, nonce, tip) in [(1, 1, 0, 5), (2, 1, 1, 5), (3, 2, 0, 3)] {
            let (h, r) = tx(n, 10);
            p.push(
                h,
                r,
                21_000,
                Origin {
                    nonce,
                    ..from(sender, tip)
                },
            );
        }
        let (h4, _) = tx(4, 10);
        // Paying no more than the cheapest (3): refused, nothing evicted.
        assert!(matches!(
            p.room_for(&h4, 10, 3, 0, || None),
            Err(PoolError::Full { .. })
        ));
        // Paying more: it takes sender 2's place (its last and cheapest).
        assert_eq!(
            p.room_for(&h4, 10, 4, 0, || None),
            Ok(Room::Evicting(tx(3, 0).0))
        );
        assert!(p.evict(&tx(3, 0).0));
        assert!(!p.evict(&tx(3, 0).0));
        assert_eq!((p.len(), p.bytes), (2, 20));
        // Sender 1's nonce 0 is never evicted before its nonce 1: at tip 6
        // the cheapest last is nonce 1 (tip 5), leaving nonce 0 in place.
        let (h5, r5) = tx(5, 10);
        p.push(h5, r5, 21_000, from(5, 9));
        assert_eq!(
            p.room_for(&h4, 10, 6, 0, || None),
            Ok(Room::Evicting(tx(2, 0).0))
        );
        // Tips are effective: over a base fee of 1,004 sender 1's fee caps
        // (1,005) leave it 1, so a newcomer paying 2 takes its place.
        assert_eq!(
            p.room_for(&h4, 10, 2, 1_004, || None),
            Ok(Room::Evicting(tx(2, 0).0))
        );
    }

    /// Sender 1 fills a pool of 4 at tip 5, over its 2 slots: sender 2,
    /// paying the same, takes the place of its last transaction, and so on
    /// until sender 1 holds its slots; no one paying less does.
    #[test]
    fn a_sender_over_its_slots_gives_way_to_one_under_them_paying_as_much() {
        let mut p = pool(4, 1_000);
        for nonce in 0..4u8 {
            let (h, r) = tx(10 + nonce, 10);
            p.push(
                h,
                r,
                21_000,
                Origin {
                    nonce: nonce.into(),
                    ..from(1, 5)
                },
            );
        }
        let sender = |n: u8| move || Some(Address::repeat_byte(n));
        let (h, _) = tx(20, 10);
        assert!(matches!(
            p.room_for(&h, 10, 4, 0, sender(2)),
            Err(PoolError::Full { .. })
        ));
        // Not asked for the sender when paying more than the cheapest.
        let asked = || -> Option<Address> { panic!("the sender is not needed") };
        assert_eq!(
            p.room_for(&h, 10, 6, 0, asked),
            Ok(Room::Evicting(tx(13, 0).0))
        );
        assert_eq!(
            p.room_for(&h, 10, 5, 0, sender(2)),
            Ok(Room::Evicting(tx(13, 0).0))
        );
        // Sender 1 itself gets nothing by it, nor one whose sender is unknown.
        assert!(p.room_for(&h, 10, 5, 0, sender(1)).is_err());
        assert!(p.room_for(&h, 10, 5, 0, || None).is_err());
        for (n, nonce, last) in [(20, 0, 13), (21, 1, 12)] {
            assert_eq!(
                p.room_for(&tx(n, 0).0, 10, 5, 0, sender(2)),
                Ok(Room::Evicting(tx(last, 0).0))
            );
            p.evict(&tx(last, 0).0);
            let (h, r) = tx(n, 10);
            p.push(
                h,
                r,
                21_000,
                Origin {
                    nonce,
                    ..from(2, 5)
                },
            );
        }
        // Both hold their 2 slots now: a third sender paying as much waits.
        assert!(p.room_for(&tx(30, 0).0, 10, 5, 0, sender(3)).is_err());
        assert_eq!(p.len(), 4);
    }

    #[test]
    fn a_replacement_takes_the_old_ones_place() {
        let mut p = pool(3, 1_000);
        for (n, sender, nonce) in [(1, 1, 0), (2, 1, 1), (3, 2, 0)] {
            let (h, r) = tx(n, 10);
            p.push(
                h,
                r,
                21_000,
                Origin {
                    nonce,
                    ..from(sender, 1)
                },
            );
        }
        let (h9, r9) = tx(9, 20);
        assert!(p.replace(&tx(1, 0).0, h9, r9, 30_000, from(1, 5)));
        assert!(
            !p.replace(&tx(1, 0).0, h9, tx(9, 1).1, 1, from(1, 5)),
            "gone"
        );
        // In its place: sender 1's nonce 0 before its nonce 1, paying 5 now.
        assert_eq!(
            p.first(3).iter().map(|r| r[0]).collect::<Vec<_>>(),
            [9, 2, 3]
        );
        assert_eq!(
            p.reap(1_000, u64::MAX, 0)
                .iter()
                .map(|r| r[0])
                .collect::<Vec<_>>(),
            [9, 2, 3]
        );
        assert_eq!((p.len(), p.bytes), (3, 40));
        // The old hash is forgotten: refused as full, not as known.
        assert!(matches!(
            p.room_for(&tx(1, 0).0, 0, 1, 0, || None),
            Err(PoolError::Full { .. })
        ));
        assert_eq!(p.room_for(&h9, 0, 1, 0, || None), Err(PoolError::Known));
    }

    #[test]
    fn reaps_a_prefix_in_admission_order_within_the_bytes_and_the_gas() {
        let p = holding(4);
        let first = p.reap(35, u64::MAX, 0);
        assert_eq!(first.iter().map(|r| r[0]).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(p.reap(9, u64::MAX, 0).is_empty());
        assert_eq!(p.reap(1_000, 2 * 21_000 + 20_999, 0).len(), 2);
        assert_eq!(p.reap(1_000, 4 * 21_000, 0).len(), 4);
        assert_eq!(p.first(2).len(), 2);
    }

    #[test]
    fn reaps_the_higher_tips_first_each_senders_in_order() {
        let mut p = pool(10, 1_000);
        // Sender 1 stuffs two transactions claiming 30 M gas at tip 1, then
        // sender 2 pays 100.
        for (n, sender, nonce, tip, gas) in [
            (1, 1, 0, 1, 30_000_000),
            (2, 1, 1, 1, 30_000_000),
            (3, 2, 0, 100, 21_000),
        ] {
            let (h, r) = tx(n, 10);
            let origin = Origin {
                nonce,
                ..from(sender, tip)
            };
            p.push(h, r, gas, origin);
        }
        let firsts =
            |max_gas| -> Vec<u8> { p.reap(1_000, max_gas, 0).iter().map(|r| r[0]).collect() };
        assert_eq!(firsts(u64::MAX), [3, 1, 2]);
        // A block with room for one stuffer still takes the payer.
        assert_eq!(firsts(30_021_000), [3, 1]);
        // The tip is what the fee cap leaves over the base fee: at a base
        // fee of 1,000 the payer's cap (1,100) leaves it 100 still.
        assert_eq!(p.reap(1_000, u64::MAX, 1_000)[0][0], 3);
    }

    #[test]
    fn after_a_block_drops_the_included_and_what_recheck_refuses() {
        let mut p = holding(4);
        let included: HashSet<B256> = [B256::repeat_byte(1)].into();
        let mut rechecked = Vec::new();
        let dropped = p
            .after_block(&included, |hash, raw| {
                rechecked.push((*hash, raw[0]));
                Ok::<_, ()>(raw[0] != 3)
            })
            .unwrap();
        assert_eq!(dropped, 1);
        // Each recheck is given the hash the pool took at admission (here not
        // the bytes' keccak): the pool hashes nothing again.
        let admitted = |n: u8| (B256::repeat_byte(n), n);
        assert_eq!(rechecked, [admitted(2), admitted(3), admitted(4)]);
        assert_eq!(p.len(), 2);
        assert_eq!(p.first(5).iter().map(|r| r[0]).collect::<Vec<_>>(), [2, 4]);
        // What left is forgotten: it may come again, and its bytes are free.
        p.room_for(&B256::repeat_byte(3), 10, 1, 0, || None)
            .unwrap();
        assert_eq!(p.bytes, 20);
    }

    #[test]
    fn a_failed_recheck_keeps_the_unchecked_rest() {
        let mut p = holding(3);
        let err = p
            .after_block(&HashSet::new(), |_, raw| match raw[0] {
                2 => Err("poisoned"),
                _ => Ok(false),
            })
            .unwrap_err();
        assert_eq!(err, "poisoned");
        assert_eq!(p.first(5).iter().map(|r| r[0]).collect::<Vec<_>>(), [2, 3]);
    }
}
