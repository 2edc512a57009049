//! `app-mempool` ([`crate::app_pool`]): transactions received over web3
//! admitted by CheckTx into the node's own pool, proposed from it, and
//! rechecked after every block.
//!
//! Lock order: the pool ([`Rank::Pool`]) is held across a CheckTx, so that
//! admission order is pool order; Commit holds it from before the check
//! state is reset until the pool is rechecked, so that no submission sees
//! a ledger the pool's transactions are not in yet.

use std::collections::HashSet;
use std::path::Path;
use std::sync::MutexGuard;

use alloy_primitives::{keccak256, Bytes, B256};
use feth_profiler_rpc::Work;

use super::{Consensus, Node, NodeError};
use crate::app_pool::{AppPool, PoolError, Room};
use crate::dropped::DropKind;
use crate::error::TxError;
use crate::exec::TxOutcome;
use crate::locks::{Poisoned, Rank, Ranked};
use crate::mempool::CheckKind;
use crate::pool_journal::Journal;
use crate::proposal;
use crate::tx::VerifiedTx;

/// What [`Node::reload_pool`] found in the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reloaded {
    /// Transactions read back.
    pub read: usize,
    /// Of those, admitted again.
    pub admitted: usize,
}

/// The pool, locked; `None` without `app-mempool`.
pub(super) type PoolGuard<'a> = Option<Ranked<MutexGuard<'a, AppPool>>>;

/// Why a transaction submitted to the pool was not admitted.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The pool would not take it (already there, or full).
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// CheckTx refused it.
    #[error(transparent)]
    Tx(#[from] TxError),
}

impl Node {
    /// The pool, locked ([`Rank::Pool`]); `None` without `app-mempool`.
    pub(super) fn pool(&self) -> Result<PoolGuard<'_>, NodeError> {
        let Some(pool) = self.pool.as_ref() else {
            return Ok(None);
        };
        Ok(Some(Ranked::take(Rank::Pool, || {
            pool.lock().map_err(|_| Poisoned)
        })?))
    }

    /// `app-mempool`: CheckTx of `raw`, received over web3, and on admission
    /// its place at the end of the pool, or the place of the pending
    /// transaction it replaces by fee; its hash when admitted. `Ok(None)`
    /// without the patch: the caller forwards the bytes to CometBFT.
    /// Marked as admission work ([`Work::CheckTx`]) on the web3 worker it runs on.
    pub fn submit(&self, raw: &Bytes) -> Result<Option<Result<B256, Refused>>, NodeError> {
        Work::CheckTx.run(|| self.submit_unmarked(raw))
    }

    /// [`Self::submit`]'s work.
    fn submit_unmarked(&self, raw: &Bytes) -> Result<Option<Result<B256, Refused>>, NodeError> {
        if self.pool.is_none() {
            return Ok(None);
        }
        // Outside the locks, as without the patch (`web3-recover`).
        self.recover_ahead(raw);
        let node = self.enter()?;
        let base_fee = u128::from(self.next_base_fee()?);
        let Some(mut pool) = self.pool()? else {
            return Ok(None);
        };
        let hash = keccak256(raw);
        // Undecodable bytes pay nothing; CheckTx refuses them with the reason.
        let tip = proposal::effective_tip(raw, base_fee).unwrap_or(0);
        // Its sender only when the pool is full (cached by `web3-recover`).
        let sender = || Some(self.origin(&self.verifier().ok()?, raw)?.sender);
        let room = match pool.room_for(&hash, raw.len(), tip, base_fee, sender) {
            Ok(room) => room,
            Err(e) => return Ok(Some(Err(e.into()))),
        };
        Ok(Some(match node.check_tx(raw, CheckKind::New)? {
            Ok(admitted) => {
                let gas = self.gas_wanted(&admitted);
                let origin = admitted.origin();
                // In the old one's place, which frees what it took (unless
                // it was evicted meanwhile: then as any newcomer).
                if let Some(old) = admitted.replaces {
                    if pool.replace(&old, hash, raw.clone(), gas, origin) {
                        let reason = format!("replaced by {hash}, paying more");
                        self.drops()?.record(old, DropKind::Replaced, reason);
                        return Ok(Some(Ok(hash)));
                    }
                }
                if let Room::Evicting(cheapest) = room {
                    pool.evict(&cheapest);
                    tracing::info!(%cheapest, by = %hash, "pool full: the cheapest evicted");
                    let reason = format!("evicted from the full pool by {hash}");
                    self.drops()?.record(cheapest, DropKind::Evicted, reason);
                }
                pool.push(hash, raw.clone(), gas, origin);
                Ok(hash)
            }
            Err(e) => Err(e.into()),
        }))
    }

    /// `app-mempool`: opens the pool's journal at `path`, admits again
    /// through CheckTx, in order, each transaction it holds (what the state
    /// no longer admits, included or invalid meanwhile, is gone), rewrites
    /// it with what was admitted and records every admission in it from
    /// then on. Returns how many were read and admitted; `None` without the
    /// patch. Called once, before the node serves anyone.
    pub fn reload_pool(&self, path: &Path) -> Result<Option<Reloaded>, NodeError> {
        if self.pool.is_none() {
            return Ok(None);
        }
        let (journal, txs) = Journal::open(path)?;
        let mut admitted = 0;
        if self.chain()?.is_some() {
            for raw in &txs {
                admitted += usize::from(matches!(self.submit(raw)?, Some(Ok(_))));
            }
        }
        if let Some(mut pool) = self.pool()? {
            pool.attach(journal)?;
        }
        Ok(Some(Reloaded {
            read: txs.len(),
            admitted,
        }))
    }

    /// `nonce-queue`: how many transactions wait for a predecessor (0
    /// without the patch).
    pub fn queued_len(&self) -> Result<usize, NodeError> {
        Ok(self.check()?.queue().len())
    }

    /// `nonce-queue`: the transactions that wait for a predecessor (queued,
    /// as opposed to pending): all their hashes, and the first `n` of them.
    /// Empty without the patch.
    pub fn queued(&self, n: usize) -> Result<(HashSet<B256>, Vec<VerifiedTx>), NodeError> {
        let check = self.check()?;
        let queue = check.queue();
        let hashes = queue.iter().map(|q| q.tx.hash).collect();
        Ok((hashes, queue.iter().take(n).map(|q| q.tx.clone()).collect()))
    }

    /// `app-mempool`: how many transactions the pool holds, and the first
    /// `n` of them; `None` without the patch.
    pub fn pooled(&self, n: usize) -> Result<Option<(usize, Vec<Bytes>)>, NodeError> {
        Ok(self.pool()?.map(|pool| (pool.len(), pool.first(n))))
    }
}

impl Consensus<'_> {
    /// `app-mempool`: the pool's first transactions in block-building order
    /// over the next block's base fee, within `max_bytes` and `max_gas`
    /// ([`AppPool::reap`]), for PrepareProposal; none without the patch.
    pub fn proposable(&self, max_bytes: u64, max_gas: u64) -> Result<Vec<Bytes>, NodeError> {
        let base_fee = u128::from(self.node.next_base_fee()?);
        Ok(self
            .node
            .pool()?
            .map(|pool| pool.reap(max_bytes, max_gas, base_fee))
            .unwrap_or_default())
    }

    /// `app-mempool`, at the end of Commit: drops from `pool` what the block
    /// included, and rechecks the rest in order (what no longer passes is
    /// dropped). Returns how many the recheck dropped.
    pub(super) fn recheck_pool(
        &self,
        pool: &mut AppPool,
        outcomes: &[TxOutcome],
    ) -> Result<usize, NodeError> {
        let included: HashSet<B256> = outcomes.iter().map(TxOutcome::hash).collect();
        pool.after_block(&included, |hash, raw| {
            Ok(self
                .check_tx_hashed(raw, *hash, CheckKind::Recheck)?
                .is_ok())
        })
    }
}
