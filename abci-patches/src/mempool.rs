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
    /// The pending transaction of the same sender and nonce it replaced by
    /// fee ([`CheckState::replace`]), if any.
    pub replaces: Option<B256>,
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
            replaces: None,
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
    /// The admitted transactions by sender and nonce, the ones a newcomer
    /// may replace by fee.
    held: HashMap<(Address, u64), Admitted>,
    /// Hashes replaced by fee (pending ones, and with `nonce-queue` queued
    /// ones) since the last Commit, and between the two last: their
    /// rechecks refuse them, and proposals leave them out.
    replaced: HashSet<B256>,
    replaced_before: HashSet<B256>,
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

    /// `nonce-queue`: the queue, to promote from.
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

    /// `nonce-queue`: queues `tx` ([`NonceQueue::queue`]), marking the
    /// queued transaction it replaces, if any, as replaced.
    pub fn queue_up(
        &mut self,
        tx: VerifiedTx,
        expected: u64,
        spendable: U256,
    ) -> Result<(), TxError> {
        if let Some(old) = self.queue.queue(tx, expected, spendable)? {
            self.replaced.insert(old);
        }
        Ok(())
    }

    /// Keeps `tx`, admitted, as the one a newcomer of its sender and nonce
    /// would replace.
    pub fn hold(&mut self, tx: Admitted) {
        self.held.insert((tx.spend.sender, tx.spend.nonce), tx);
    }

    /// Whether `hash` was replaced by fee ([`Self::replace`]) since the
    /// Commit before the last.
    pub fn was_replaced(&self, hash: &B256) -> bool {
        self.replaced.contains(hash) || self.replaced_before.contains(hash)
    }

    /// Whether any transaction was replaced by fee since the Commit before
    /// the last.
    pub fn any_replaced(&self) -> bool {
        !(self.replaced.is_empty() && self.replaced_before.is_empty())
    }

    /// The held transaction `new` would replace: the one of its sender and
    /// nonce (below the pending one, `current`: the account as
    /// [`Self::view`] shows it), when `new` pays at least 10 % more tip and
    /// fee cap ([`proposal::pays_enough_more`]) and the balance covers it in
    /// that one's place (geth's overdraft rule). `None` when nothing of that
    /// sender and nonce is held (or `new` itself is).
    pub fn replaceable(&self, new: &Admitted, current: AccountRecord) -> Option<Verdict> {
        let old = *self.held.get(&(new.spend.sender, new.spend.nonce))?;
        if old.hash == new.hash {
            return None;
        }
        if !proposal::pays_enough_more((new.tip, new.fee_cap), (old.tip, old.fee_cap)) {
            return Some(Err(TxError::ReplacementUnderpriced));
        }
        let spendable = current.balance.saturating_add(old.spend.max_cost);
        if new.spend.max_cost > spendable {
            return Some(Err(TxError::InsufficientFunds {
                balance: spendable,
                cost: new.spend.max_cost,
            }));
        }
        Some(Ok(old))
    }

    /// Admits `new` in place of `old`, as [`Self::replaceable`] allowed:
    /// `old`'s maximal cost is given back and `new`'s reserved, the pending
    /// nonce unchanged, and `old` marked replaced. Returns `new`, naming the
    /// hash it replaces.
    pub fn replace(
        &mut self,
        old: &Admitted,
        mut new: Admitted,
        current: AccountRecord,
        committed: Option<AccountRecord>,
        lite_recheck: bool,
    ) -> Admitted {
        let spendable = current.balance.saturating_add(old.spend.max_cost);
        let left = spendable.saturating_sub(new.spend.max_cost);
        self.pending.insert(new.spend.sender, (current.nonce, left));
        self.admitted.remove(&old.hash);
        self.replaced.insert(old.hash);
        new.replaces = Some(old.hash);
        self.hold(new);
        if lite_recheck {
            self.record(new, committed);
        }
        new
    }

    /// `check-tx-lite` off: gives `amount` back to `sender` in the executed
    /// effects (a replaced transaction's maximal cost), so that they hold at
    /// least the ledger's spendable balance still (see `checkexec`).
    pub fn give_back(&mut self, sender: &Address, amount: U256) {
        if let Some(Some(account)) = self.executed.accounts.get_mut(sender) {
            account.balance = account.balance.saturating_add(amount);
        }
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
            self.hold(tx);
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
        self.held.clear();
        self.replaced_before = std::mem::take(&mut self.replaced);
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
            replaces: None,
        }
    }

    /// Admits and records `tx` as CheckTx does with `lite-recheck`.
    fn check(state: &mut CheckState, tx: Admitted, committed: Option<AccountRecord>) {
        state.admit(&tx.spend, committed).unwrap();
        state.record(tx, committed);
        state.hold(tx);
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
    fn a_replacement_pays_ten_percent_more_gives_back_the_old_cost_and_reserves_its_own() {
        let mut state = CheckState::default();
        for nonce in 0..2 {
            check(&mut state, tx(1, nonce), funded(1_000));
        }
        let sender = Address::repeat_byte(1);
        let current = |state: &CheckState| state.view(&sender, funded(1_000)).unwrap();
        let dearer = |cost: u64, tip: u128| Admitted {
            hash: B256::repeat_byte(0xee),
            spend: Spend {
                max_cost: U256::from(cost),
                ..tx(1, 0).spend
            },
            tip,
            fee_cap: 3,
            ..tx(1, 0)
        };
        let replace = |state: &mut CheckState, new: Admitted| {
            let current = current(state);
            let old = state.replaceable(&new, current)?;
            Some(old.map(|old| state.replace(&old, new, current, funded(1_000), true)))
        };
        // A tip of 1 is not 10 % more than 1.
        let cheap = replace(&mut state, dearer(100, 1));
        assert!(
            matches!(cheap, Some(Err(TxError::ReplacementUnderpriced))),
            "{cheap:?}"
        );
        // 1,000 − 100 (nonce 1) leaves 900 for nonce 0's replacement.
        let over = replace(&mut state, dearer(901, 2));
        assert!(
            matches!(over, Some(Err(TxError::InsufficientFunds { .. }))),
            "{over:?}"
        );
        assert_eq!(current(&state).balance, U256::from(800), "nothing changed");
        let admitted = replace(&mut state, dearer(900, 2)).unwrap().unwrap();
        assert_eq!(admitted.replaces, Some(tx(1, 0).hash));
        assert_eq!(pending_nonce(&state, 1), Some(2), "the nonce stays");
        assert_eq!(current(&state).balance, U256::ZERO);
        assert!(state.was_replaced(&tx(1, 0).hash) && !state.was_replaced(&tx(1, 1).hash));
        // Nothing held at nonce 2: no replacement, CheckTx's refusal stands.
        let unheld = Admitted {
            tip: 9,
            fee_cap: 9,
            ..tx(1, 2)
        };
        assert_eq!(replace(&mut state, unheld), None);
        // The replacement itself again: no replacement either.
        assert_eq!(replace(&mut state, admitted), None);
        // The recheck after Commit knows the replacement, not the old one;
        // the old hash stays marked until the Commit after.
        state.commit(&StateDiff::default(), true);
        assert!(state.was_replaced(&tx(1, 0).hash));
        assert_eq!(state.recheck(&tx(1, 0).hash, |_| Err(())), Ok(None));
        assert_eq!(
            state.recheck(&admitted.hash, |_| Err(())),
            Ok(Some(Ok(admitted)))
        );
        state.commit(&StateDiff::default(), true);
        assert!(!state.any_replaced());
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
