//! The check state: nonces and balances as CheckTx sees them, ahead of the
//! committed state by the transactions accepted into the mempool.
//!
//! Its ledger (pending nonce and spendable balance per sender) gives every
//! CheckTx verdict, whatever the patches. It is cleared at every Commit;
//! CometBFT then rechecks the transactions left in its mempool, in order,
//! which rebuilds it on top of the new state:
//!
//! - without `lite-recheck`, each recheck is a full CheckTx;
//! - with it, a transaction admitted since the previous Commit is re-admitted
//!   from what was recorded of it ([`Admitted`]) by the same nonce and funds
//!   rule, against the sender's committed account as read before the block
//!   when the block did not touch the sender, read again when it did.
//!
//! Rebuilding the ledger from the rechecks, rather than keeping the entries
//! of untouched senders, keeps it exact when CometBFT drops a transaction
//! CheckTx admitted (its mempool filled up before the answer came back, or a
//! TTL expired): the dropped transaction is never rechecked, so it reserves
//! nothing after the next Commit, as with full rechecks.

use std::collections::{HashMap, HashSet};

use alloy_consensus::Transaction;
use alloy_primitives::{Address, B256, U256};

use crate::error::TxError;
use crate::exec::{check_account, Spend};
use crate::nonce_queue::{NonceQueue, QueueConfig};
use crate::proposal::{self, Origin};
use crate::state::{AccountRecord, StateDiff};
use crate::tx::VerifiedTx;

/// Which CheckTx CometBFT asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckKind {
    /// A transaction new to the mempool.
    New,
    /// A transaction left in the mempool after a Commit.
    Recheck,
}

/// What CheckTx answers for an admitted transaction, and all that
/// `lite-recheck` keeps of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    /// Keccak-256 of the raw bytes.
    pub hash: B256,
    /// Sender, nonce and maximal cost.
    pub spend: Spend,
    /// The gas limit.
    pub gas_limit: u64,
    /// `nonce-queue`: admitted to wait for a predecessor (queued), not
    /// executable in the next block.
    pub queued: bool,
    /// Priority fee per gas (the gas price of a legacy transaction).
    pub tip: u128,
    /// Fee cap per gas (the gas price of a legacy transaction).
    pub fee_cap: u128,
}

impl Admitted {
    /// Who sent it, with which nonce, offering which fees.
    pub fn origin(&self) -> Origin {
        Origin {
            sender: self.spend.sender,
            nonce: self.spend.nonce,
            tip: self.tip,
            fee_cap: self.fee_cap,
        }
    }

    /// CheckTx's `gas_wanted`, which CometBFT (and the app pool) count
    /// against the block's gas when they reap a proposal: the gas limit of an
    /// executable transaction; none for a queued one, which cannot be in the
    /// next block and must not take room from those that can (a real pool
    /// keeps future nonces out of block building).
    pub fn gas_wanted(&self) -> u64 {
        if self.queued {
            0
        } else {
            self.gas_limit
        }
    }
}

impl From<&VerifiedTx> for Admitted {
    fn from(tx: &VerifiedTx) -> Self {
        let (tip, fee_cap) = proposal::fees(&tx.envelope);
        Self {
            hash: tx.hash,
            spend: Spend::from(tx),
            gas_limit: tx.envelope.gas_limit(),
            queued: false,
            tip,
            fee_cap,
        }
    }
}

/// CheckTx's verdict.
pub type Verdict = Result<Admitted, TxError>;

/// Pending nonce and spendable balance per sender, and what the patches in
/// force keep beside them.
#[derive(Debug, Default)]
pub struct CheckState {
    /// The ledger: next nonce and spendable balance per sender.
    pending: HashMap<Address, (u64, U256)>,
    /// `check-tx-lite` off: what the transactions executed since the last
    /// Commit changed, over the committed world.
    executed: StateDiff,
    /// `lite-recheck`: the transactions admitted since the last Commit.
    admitted: HashMap<B256, Admitted>,
    /// `lite-recheck`: those admitted before the last Commit and not
    /// rechecked yet; what is still here at the next Commit is forgotten.
    unrechecked: HashMap<B256, Admitted>,
    /// `lite-recheck`: the committed account of each sender, as read when
    /// its transactions were admitted; valid until a block touches it.
    committed: HashMap<Address, Option<AccountRecord>>,
    /// `nonce-queue`: transactions waiting for their predecessors.
    queue: NonceQueue,
}

impl CheckState {
    /// An empty check state whose nonce queue (used with `nonce-queue`)
    /// keeps within `queue`.
    pub fn new(queue: QueueConfig) -> Self {
        Self {
            queue: NonceQueue::new(queue),
            ..Self::default()
        }
    }

    /// `nonce-queue`: the transactions waiting for their predecessors.
    pub fn queue(&self) -> &NonceQueue {
        &self.queue
    }

    /// `nonce-queue`: the queue, to add to or promote from.
    pub fn queue_mut(&mut self) -> &mut NonceQueue {
        &mut self.queue
    }

    /// The account as the mempool sees it, falling back to `committed`.
    pub fn view(
        &self,
        address: &Address,
        committed: Option<AccountRecord>,
    ) -> Option<AccountRecord> {
        match self.pending.get(address) {
            Some((nonce, balance)) => Some(AccountRecord {
                nonce: *nonce,
                balance: *balance,
                ..committed.unwrap_or_default()
            }),
            None => committed,
        }
    }

    /// Checks `tx`'s nonce and funds against the ledger over `committed`,
    /// without admitting it; returns the account it was checked against.
    pub fn admissible(
        &self,
        tx: &Spend,
        committed: Option<AccountRecord>,
    ) -> Result<AccountRecord, TxError> {
        let current = self.view(&tx.sender, committed);
        check_account(tx, current)?;
        Ok(current.unwrap_or_default())
    }

    /// Admits `tx`, checked against `current` by [`Self::admissible`]:
    /// advances the sender's pending nonce and reserves the maximal cost.
    pub fn reserve(&mut self, tx: &Spend, current: AccountRecord) {
        self.pending.insert(
            tx.sender,
            (tx.nonce + 1, current.balance.saturating_sub(tx.max_cost)),
        );
    }

    /// Checks `tx` and, when it passes, admits it.
    pub fn admit(&mut self, tx: &Spend, committed: Option<AccountRecord>) -> Result<(), TxError> {
        let current = self.admissible(tx, committed)?;
        self.reserve(tx, current);
        Ok(())
    }

    /// `lite-recheck`: records an admitted transaction and the committed
    /// account of its sender, for the recheck after the next Commit.
    pub fn record(&mut self, tx: Admitted, committed: Option<AccountRecord>) {
        self.committed.insert(tx.spend.sender, committed);
        self.admitted.insert(tx.hash, tx);
    }

    /// `lite-recheck`: rechecks the transaction `hash` from what was recorded
    /// of it, if anything was. The sender's committed account comes from
    /// before the block when the block did not touch it, from `read` when it
    /// did. Re-admitted, it is recorded again.
    pub fn recheck<E>(
        &mut self,
        hash: &B256,
        read: impl FnOnce(&Address) -> Result<Option<AccountRecord>, E>,
    ) -> Result<Option<Verdict>, E> {
        let Some(tx) = self.unrechecked.remove(hash) else {
            return Ok(None);
        };
        let committed = match self.committed.get(&tx.spend.sender) {
            Some(account) => *account,
            None => {
                let account = read(&tx.spend.sender)?;
                self.committed.insert(tx.spend.sender, account);
                account
            }
        };
        let verdict = self.admit(&tx.spend, committed).map(|()| {
            self.record(tx, committed);
            tx
        });
        Ok(Some(verdict))
    }

    /// The effects of the transactions executed since the last Commit
    /// (`check-tx-lite` off).
    pub fn executed(&self) -> &StateDiff {
        &self.executed
    }

    /// The effects of the transactions executed since the last Commit, to
    /// add to (`check-tx-lite` off).
    pub fn executed_mut(&mut self) -> &mut StateDiff {
        &mut self.executed
    }

    /// After Commit of a block that changed `block`: forgets the ledger and
    /// the executed effects. With `lite_recheck`, what was admitted awaits
    /// its recheck, and the committed accounts of its senders are kept
    /// unless the block touched them; without, everything is forgotten.
    pub fn commit(&mut self, block: &StateDiff, lite_recheck: bool) {
        self.pending.clear();
        self.executed = StateDiff::default();
        self.queue.commit();
        if !lite_recheck {
            self.admitted.clear();
            self.unrechecked.clear();
            self.committed.clear();
            return;
        }
        self.unrechecked = std::mem::take(&mut self.admitted);
        let waiting: HashSet<Address> = self.unrechecked.values().map(|t| t.spend.sender).collect();
        self.committed
            .retain(|sender, _| waiting.contains(sender) && !block.accounts.contains_key(sender));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COST: u64 = 100;

    fn funded(balance: u64) -> Option<AccountRecord> {
        Some(AccountRecord {
            balance: U256::from(balance),
            ..Default::default()
        })
    }

    fn tx(sender: u8, nonce: u64) -> Admitted {
        Admitted {
            hash: B256::left_padding_from(&[sender, nonce as u8]),
            spend: Spend {
                sender: Address::repeat_byte(sender),
                nonce,
                max_cost: U256::from(COST),
            },
            gas_limit: 21_000,
            queued: false,
            tip: 1,
            fee_cap: 2,
        }
    }

    /// Admits and records `tx` as CheckTx does with `lite-recheck`.
    fn check(state: &mut CheckState, tx: Admitted, committed: Option<AccountRecord>) {
        state.admit(&tx.spend, committed).unwrap();
        state.record(tx, committed);
    }

    fn touching(sender: u8, account: Option<AccountRecord>) -> StateDiff {
        let mut diff = StateDiff::default();
        diff.accounts.insert(Address::repeat_byte(sender), account);
        diff
    }

    fn pending_nonce(state: &CheckState, sender: u8) -> Option<u64> {
        state
            .pending
            .get(&Address::repeat_byte(sender))
            .map(|p| p.0)
    }

    #[test]
    fn an_untouched_sender_is_readmitted_without_reading_the_state() {
        let mut state = CheckState::default();
        for nonce in 0..3 {
            check(&mut state, tx(1, nonce), funded(1_000));
        }
        state.commit(&touching(9, funded(1)), true);
        assert_eq!(pending_nonce(&state, 1), None, "the ledger starts over");
        for nonce in 0..3 {
            let verdict = state
                .recheck(&tx(1, nonce).hash, |_| Err("the state was read"))
                .unwrap();
            assert_eq!(verdict, Some(Ok(tx(1, nonce))));
        }
        assert_eq!(pending_nonce(&state, 1), Some(3));
        let spendable = state.pending[&Address::repeat_byte(1)].1;
        assert_eq!(spendable, U256::from(1_000 - 3 * COST));
    }

    #[test]
    fn a_touched_sender_is_revalidated_against_the_new_state() {
        let mut state = CheckState::default();
        for nonce in 0..3 {
            check(&mut state, tx(1, nonce), funded(1_000));
        }
        // The block used nonce 0 elsewhere and left 150 wei: nonce 1 can
        // still pay, nonce 2 cannot.
        let after = Some(AccountRecord {
            nonce: 1,
            balance: U256::from(150),
            ..Default::default()
        });
        state.commit(&touching(1, after), true);
        let mut reads = 0;
        let mut recheck = |state: &mut CheckState, nonce| {
            state
                .recheck(&tx(1, nonce).hash, |_| {
                    reads += 1;
                    Ok::<_, ()>(after)
                })
                .unwrap()
                .unwrap()
        };
        assert!(matches!(
            recheck(&mut state, 0),
            Err(TxError::NonceTooLow {
                expected: 1,
                got: 0
            })
        ));
        assert_eq!(recheck(&mut state, 1), Ok(tx(1, 1)));
        assert!(matches!(
            recheck(&mut state, 2),
            Err(TxError::InsufficientFunds { .. })
        ));
        assert_eq!(reads, 1, "read once, then kept with the admitted tx");
        assert_eq!(pending_nonce(&state, 1), Some(2));
    }

    #[test]
    fn what_is_not_rechecked_is_forgotten_and_reserves_nothing() {
        let mut state = CheckState::default();
        for nonce in 0..3 {
            check(&mut state, tx(1, nonce), funded(1_000));
        }
        state.commit(&StateDiff::default(), true);
        // CometBFT dropped nonce 2 (its mempool was full): only 0 and 1 come back.
        for nonce in 0..2 {
            let verdict = state.recheck(&tx(1, nonce).hash, |_| Err(()));
            assert_eq!(verdict, Ok(Some(Ok(tx(1, nonce)))));
        }
        assert_eq!(pending_nonce(&state, 1), Some(2), "nonce 2 may come again");
        state.commit(&StateDiff::default(), true);
        assert_eq!(state.recheck(&tx(1, 2).hash, |_| Err(())), Ok(None));
        assert_eq!(state.unrechecked.len(), 2);
        state.commit(&StateDiff::default(), true);
        assert!(state.unrechecked.is_empty() && state.committed.is_empty());
    }

    #[test]
    fn an_unknown_hash_is_left_to_a_full_check_and_without_the_patch_all_is_reset() {
        let mut state = CheckState::default();
        check(&mut state, tx(1, 0), funded(1_000));
        state.executed.accounts.insert(Address::ZERO, None);
        state.commit(&StateDiff::default(), false);
        assert_eq!(state.recheck(&tx(1, 0).hash, |_| Err(())), Ok(None));
        assert!(state.pending.is_empty() && state.executed.accounts.is_empty());
        assert!(state.committed.is_empty());
    }
}
