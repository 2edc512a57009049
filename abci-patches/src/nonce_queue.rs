//! `nonce-queue`: transactions whose nonce is ahead of their sender's next
//! one, kept until their predecessors arrive.
//!
//! CometBFT's mempool is FIFO and knows nothing of nonces; a client with
//! several transactions of one sender in flight can have them arrive out of
//! order. With the patch, CheckTx admits a nonce up to [`QueueConfig::window`]
//! ahead, queues it here (at most [`QueueConfig::max_queued`] in all and
//! [`QueueConfig::max_per_sender`] of one sender, each sender's queued
//! transactions reserving their maximal costs from its balance), and
//! promotes it into the check state's ledger once its predecessor is
//! admitted. A queued transaction can be replaced by one of the same nonce
//! paying at least 10 % more fee cap and tip (geth's rule); the check state
//! marks the replaced one, as it marks a pending one replaced by fee, and
//! its next recheck refuses it. One that waits longer than
//! [`QueueConfig::ttl`] for its predecessor is refused at a recheck, which
//! evicts it from CometBFT's mempool.
//!
//! The queue is rebuilt after every Commit, like the ledger: CometBFT rechecks
//! what is left in its mempool, and a still-early nonce is queued again. What
//! survives a Commit is when each queued transaction first arrived, so expiry
//! holds across blocks.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use alloy_consensus::Transaction;
use alloy_primitives::{Address, B256, U256};

use crate::error::TxError;
use crate::proposal;
use crate::tx::VerifiedTx;

/// The bounds of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    /// How far ahead of the sender's next nonce a transaction may be.
    pub window: u64,
    /// Most queued transactions, all senders together.
    pub max_queued: usize,
    /// Most queued transactions of one sender (geth's `AccountQueue`).
    pub max_per_sender: usize,
    /// How long a queued transaction may wait for its predecessor.
    pub ttl: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            window: 64,
            max_queued: 10_000,
            max_per_sender: 64,
            ttl: Duration::from_secs(60),
        }
    }
}

/// A queued transaction.
#[derive(Debug, Clone)]
pub struct Queued {
    /// The transaction, verified.
    pub tx: VerifiedTx,
    /// When it first arrived.
    pub since: Instant,
}

/// Future-nonce transactions by sender and nonce.
#[derive(Debug, Default)]
pub struct NonceQueue {
    config: QueueConfig,
    by_sender: HashMap<Address, BTreeMap<u64, Queued>>,
    len: usize,
    /// When each transaction queued before the last Commit first arrived.
    arrived: HashMap<B256, Instant>,
}

impl NonceQueue {
    /// An empty queue within `config`.
    pub fn new(config: QueueConfig) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }

    /// Queues `tx`, whose nonce is ahead of `expected`; replaces a queued
    /// transaction of the same nonce when `tx` pays enough more, and then
    /// returns the replaced one's hash. A
    /// transaction queued before the last Commit keeps its arrival time, and
    /// is refused once it waited longer than the configured time.
    ///
    /// The sender's queued transactions reserve their maximal costs:
    /// `spendable` (the sender's balance as the mempool sees it) must cover
    /// them all with `tx` (less the one `tx` replaces), so a key that cannot
    /// pay queues nothing.
    pub fn queue(
        &mut self,
        tx: VerifiedTx,
        expected: u64,
        spendable: U256,
    ) -> Result<Option<B256>, TxError> {
        let nonce = tx.envelope.nonce();
        if nonce.saturating_sub(expected) > self.config.window {
            return Err(TxError::NonceGapTooWide {
                expected,
                got: nonce,
                window: self.config.window,
            });
        }
        let since = self
            .arrived
            .get(&tx.hash)
            .copied()
            .unwrap_or_else(Instant::now);
        let waited = since.elapsed();
        if waited > self.config.ttl {
            self.arrived.remove(&tx.hash);
            return Err(TxError::QueuedExpired {
                expected,
                got: nonce,
                waited_secs: waited.as_secs(),
            });
        }
        let full = self.len >= self.config.max_queued;
        let reserved = self.reserved(&tx.sender, nonce);
        let cost = reserved.saturating_add(tx.max_cost());
        if cost > spendable {
            return Err(TxError::InsufficientFunds {
                balance: spendable,
                cost,
            });
        }
        let slots = self.by_sender.entry(tx.sender).or_default();
        if let Some(old) = slots.get(&nonce) {
            if old.tx.hash == tx.hash {
                return Ok(None);
            }
            if !pays_enough_more(&tx, &old.tx) {
                return Err(TxError::ReplacementUnderpriced);
            }
            let replaced = old.tx.hash;
            slots.insert(nonce, Queued { tx, since });
            return Ok(Some(replaced));
        }
        if full {
            return Err(TxError::QueueFull {
                max: self.config.max_queued,
            });
        }
        if slots.len() >= self.config.max_per_sender {
            return Err(TxError::SenderQueueFull {
                max: self.config.max_per_sender,
            });
        }
        slots.insert(nonce, Queued { tx, since });
        self.len += 1;
        Ok(None)
    }

    /// The maximal costs of `sender`'s queued transactions but the one at
    /// `except` (the nonce a newcomer would replace).
    fn reserved(&self, sender: &Address, except: u64) -> U256 {
        self.by_sender.get(sender).map_or(U256::ZERO, |slots| {
            slots
                .iter()
                .filter(|(nonce, _)| **nonce != except)
                .fold(U256::ZERO, |sum, (_, q)| {
                    sum.saturating_add(q.tx.max_cost())
                })
        })
    }

    /// Takes the queued transaction of `sender` at `nonce`, if any.
    pub fn take(&mut self, sender: &Address, nonce: u64) -> Option<Queued> {
        let slots = self.by_sender.get_mut(sender)?;
        let queued = slots.remove(&nonce)?;
        if slots.is_empty() {
            self.by_sender.remove(sender);
        }
        self.len -= 1;
        Some(queued)
    }

    /// How many transactions wait.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The waiting transactions, by sender, each sender's in nonce order.
    pub fn iter(&self) -> impl Iterator<Item = &Queued> {
        self.by_sender.values().flat_map(BTreeMap::values)
    }

    /// At Commit: empties the queue for the rechecks to rebuild, remembering
    /// when each waiting transaction arrived.
    pub fn commit(&mut self) {
        self.arrived = self
            .by_sender
            .drain()
            .flat_map(|(_, slots)| slots.into_values())
            .map(|q| (q.tx.hash, q.since))
            .collect();
        self.len = 0;
    }
}

/// geth's replacement rule ([`proposal::pays_enough_more`]).
fn pays_enough_more(new: &VerifiedTx, old: &VerifiedTx) -> bool {
    proposal::pays_enough_more(proposal::fees(&new.envelope), proposal::fees(&old.envelope))
}
