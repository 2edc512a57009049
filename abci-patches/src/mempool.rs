//! The check state: nonces and balances as CheckTx sees them, ahead of the
//! committed state by the transactions accepted into the mempool.
//!
//! It is cleared at every Commit; CometBFT then rechecks the transactions left
//! in its mempool, in order, which rebuilds it on top of the new state.

use std::collections::HashMap;

use alloy_consensus::Transaction;
use alloy_primitives::{Address, U256};

use crate::error::TxError;
use crate::exec::check_account;
use crate::state::AccountRecord;
use crate::tx::VerifiedTx;

/// Pending nonce and spendable balance per sender.
#[derive(Debug, Default)]
pub struct CheckState {
    pending: HashMap<Address, (u64, U256)>,
}

impl CheckState {
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

    /// Checks `tx` and, when it passes, advances the sender's pending nonce
    /// and reserves its maximal cost.
    pub fn admit(
        &mut self,
        tx: &VerifiedTx,
        committed: Option<AccountRecord>,
    ) -> Result<(), TxError> {
        let current = self.view(&tx.sender, committed);
        check_account(tx, current)?;
        let account = current.unwrap_or_default();
        self.pending.insert(
            tx.sender,
            (tx.envelope.nonce() + 1, account.balance - tx.max_cost()),
        );
        Ok(())
    }

    /// Forgets everything (after Commit).
    pub fn reset(&mut self) {
        self.pending.clear();
    }
}
