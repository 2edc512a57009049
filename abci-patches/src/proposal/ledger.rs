//! The rules a proposal's transactions meet against the committed state,
//! the same for ProcessProposal, which refuses a proposal breaking them
//! ([`check_payable`]), and for PrepareProposal, which proposes only
//! transactions meeting them ([`payable_prefix`]), so that an honest
//! proposal is never refused.
//!
//! Each transaction's signature recovers (through the sender cache, so a
//! transaction CheckTx saw costs a hash and a lookup), its fee cap covers the
//! block's base fee, its nonce is its sender's next one, and the sender's
//! balance covers its maximal cost (`value + gas_limit × max_fee_per_gas`)
//! after the maximal costs of the sender's earlier transactions in the
//! proposal: CheckTx's own ledger. A transaction that meets them cannot be
//! refused by FinalizeBlock for its sender, nonce, funds or fee, so a
//! proposer can no longer make every validator recover and refuse
//! transactions that pay nothing.

use std::collections::HashMap;

use alloy_consensus::Transaction;
use alloy_primitives::Address;

use super::{Candidate, ProposalFault};
use crate::error::TxError;
use crate::exec::{check_account, Spend};
use crate::fee_market;
use crate::state::AccountRecord;
use crate::tx::VerifiedTx;

/// A proposal's senders as its block will find them: each one's committed
/// account, moved past its earlier transactions in the proposal at their
/// nonces and maximal costs.
pub struct ProposalLedger<F> {
    base_fee: u64,
    committed: F,
    accounts: HashMap<Address, AccountRecord>,
}

impl<F: Fn(&Address) -> Option<AccountRecord>> ProposalLedger<F> {
    /// Nothing admitted yet, for a block of `base_fee` over the accounts
    /// `committed` reads.
    pub fn new(base_fee: u64, committed: F) -> Self {
        Self {
            base_fee,
            committed,
            accounts: HashMap::new(),
        }
    }

    /// Admits `tx` after the transactions admitted before it, or says which
    /// rule it breaks (and then leaves its sender as it was).
    pub fn admit(&mut self, tx: &VerifiedTx) -> Result<(), TxError> {
        fee_market::covers(tx, self.base_fee)?;
        let spend = Spend::from(tx);
        let committed = &self.committed;
        let account = self
            .accounts
            .entry(tx.sender)
            .or_insert_with(|| committed(&tx.sender).unwrap_or_default());
        check_account(&spend, Some(*account))?;
        account.nonce = account.nonce.checked_add(1).ok_or(TxError::NonceMax)?;
        // `check_account` saw the balance cover the cost.
        account.balance = account.balance.saturating_sub(spend.max_cost);
        Ok(())
    }
}

/// ProcessProposal: the first of `txs` that does not `verify` (signature
/// included), that `ledger` does not admit after the ones before it, or
/// whose gas limit takes the proposal beyond `max_gas`. Each transaction is
/// verified once, and none after the first fault.
pub fn check_payable<T: AsRef<[u8]>, F: Fn(&Address) -> Option<AccountRecord>>(
    txs: &[T],
    verify: impl Fn(&[u8]) -> Result<VerifiedTx, TxError>,
    ledger: &mut ProposalLedger<F>,
    max_gas: u64,
) -> Result<(), ProposalFault> {
    let mut wanted = 0u64;
    for (index, raw) in txs.iter().enumerate() {
        let tx = verify(raw.as_ref())
            .and_then(|tx| ledger.admit(&tx).map(|()| tx))
            .map_err(|error| ProposalFault::InvalidTx { index, error })?;
        wanted = wanted.saturating_add(tx.envelope.gas_limit());
        if wanted > max_gas {
            return Err(ProposalFault::GasBeyondBlock {
                wanted,
                max: max_gas,
            });
        }
    }
    Ok(())
}

/// PrepareProposal: the bytes of `candidates`, in their order, without
/// those `ledger` does not admit after the ones before them (which
/// [`check_payable`] would refuse the proposal for), up to the first that
/// would take the block beyond `room` (the proposal's bytes and gas). Once
/// one of a sender's transactions is left out, its later ones are too:
/// their nonces no longer follow.
pub fn payable_prefix<T: AsRef<[u8]>, F: Fn(&Address) -> Option<AccountRecord>>(
    candidates: Vec<Candidate<T>>,
    ledger: &mut ProposalLedger<F>,
    mut room: BlockRoom,
) -> Vec<T> {
    let mut out = Vec::with_capacity(candidates.len());
    for Candidate { raw, tx } in candidates {
        if ledger.admit(&tx).is_err() {
            continue;
        }
        if !room.take(raw.as_ref().len(), tx.envelope.gas_limit()) {
            break;
        }
        out.push(raw);
    }
    out
}

/// What is left of a proposal's bytes and gas: CometBFT's `max_tx_bytes`
/// for the raw transactions, and the block gas limit for their gas limits
/// (`block.max_gas` counts gas wanted).
#[derive(Debug, Clone, Copy)]
pub struct BlockRoom {
    bytes: u64,
    gas: u64,
}

impl BlockRoom {
    /// A proposal of at most `max_bytes` and `max_gas`.
    pub fn new(max_bytes: u64, max_gas: u64) -> Self {
        Self {
            bytes: max_bytes,
            gas: max_gas,
        }
    }

    /// Takes a transaction of `bytes` raw bytes asking for `gas`; false (and
    /// nothing taken) when they do not fit in what is left.
    pub fn take(&mut self, bytes: usize, gas: u64) -> bool {
        let bytes = u64::try_from(bytes)
            .ok()
            .and_then(|b| self.bytes.checked_sub(b));
        let gas = self.gas.checked_sub(gas);
        match (bytes, gas) {
            (Some(bytes), Some(gas)) => {
                (self.bytes, self.gas) = (bytes, gas);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use alloy_consensus::TxEip1559;
    use alloy_primitives::{Address, TxKind, U256};

    use super::*;
    use crate::testkit::{key, sign};
    use crate::tx::{verify, Ecrecover, TxRules};

    const RULES: TxRules = TxRules {
        chain_id: 9000,
        max_tx_bytes: 1 << 20,
        max_tx_gas: 30_000_000,
        base_fee: 1,
    };

    /// A transfer of `value` by key `n` at `nonce`, 21,000 gas at `fee` per
    /// gas: its maximal cost is `21_000 × fee + value`.
    fn transfer(n: u8, nonce: u64, fee: u128, value: u64) -> Vec<u8> {
        let tx = TxEip1559 {
            chain_id: 9000,
            nonce,
            gas_limit: 21_000,
            max_fee_per_gas: fee,
            to: TxKind::Call(Address::repeat_byte(9)),
            value: U256::from(value),
            ..Default::default()
        };
        sign(tx, &key(n).0)
    }

    fn verified(raw: &[u8]) -> Result<VerifiedTx, TxError> {
        verify(raw, &RULES, Ecrecover::C)
    }

    /// Key 1 holds `balance` at nonce 3; everyone else nothing.
    fn committed(balance: u64) -> impl Fn(&Address) -> Option<AccountRecord> {
        move |a: &Address| {
            (*a == key(1).1).then(|| AccountRecord {
                nonce: 3,
                balance: U256::from(balance),
                ..Default::default()
            })
        }
    }

    fn check(txs: &[Vec<u8>], balance: u64) -> Result<(), ProposalFault> {
        check_payable(
            txs,
            verified,
            &mut ProposalLedger::new(10, committed(balance)),
            u64::MAX,
        )
    }

    fn fault(txs: &[Vec<u8>], balance: u64) -> (usize, TxError) {
        match check(txs, balance) {
            Err(ProposalFault::InvalidTx { index, error }) => (index, error),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn an_honest_sequence_passes_and_each_rule_refuses_its_transaction() {
        // Each costs 210,000 + 1 at 10 per gas: two fit in 420,002.
        let honest = [transfer(1, 3, 10, 1), transfer(1, 4, 10, 1)];
        assert_eq!(check(&honest, 420_002), Ok(()));
        // The second's cost counts the first's: one wei short.
        let (index, error) = fault(&honest, 420_001);
        assert_eq!(index, 1);
        assert!(
            matches!(error, TxError::InsufficientFunds { .. }),
            "{error}"
        );
        // A nonce used, a nonce ahead (a gap), an unfunded sender.
        let used = fault(&[transfer(1, 2, 10, 1)], u64::MAX).1;
        assert!(
            matches!(
                used,
                TxError::NonceTooLow {
                    expected: 3,
                    got: 2
                }
            ),
            "{used}"
        );
        let gap = fault(&[transfer(1, 3, 10, 1), transfer(1, 5, 10, 1)], u64::MAX);
        assert!(
            matches!(
                gap,
                (
                    1,
                    TxError::NonceTooHigh {
                        expected: 4,
                        got: 5
                    }
                )
            ),
            "{gap:?}"
        );
        let unfunded = fault(&[transfer(1, 3, 10, 1), transfer(2, 0, 10, 1)], u64::MAX);
        assert!(
            matches!(unfunded, (1, TxError::InsufficientFunds { .. })),
            "{unfunded:?}"
        );
        // A fee cap under the block's base fee (10).
        let cheap = fault(&[transfer(1, 3, 9, 1)], u64::MAX).1;
        assert!(
            matches!(
                cheap,
                TxError::FeeCapTooLow {
                    max_fee: 9,
                    base_fee: 10
                }
            ),
            "{cheap}"
        );
    }

    #[test]
    fn a_bad_signature_or_a_foreign_chain_refuses_the_proposal() {
        let mut forged = transfer(1, 3, 10, 1);
        // The last byte is in the signature's `s`.
        let last = forged.len() - 1;
        forged[last] ^= 1;
        // It recovers to no key, or to a stranger with nothing at nonce 0.
        let (index, error) = fault(&[transfer(1, 3, 10, 1), forged], u64::MAX);
        assert_eq!(index, 1, "{error}");
        let foreign = sign(
            TxEip1559 {
                chain_id: 1,
                nonce: 3,
                gas_limit: 21_000,
                max_fee_per_gas: 10,
                to: TxKind::Call(Address::ZERO),
                ..Default::default()
            },
            &key(1).0,
        );
        assert!(matches!(
            fault(&[foreign], u64::MAX).1,
            TxError::WrongChainId { .. }
        ));
    }

    /// `txs` verified, as PrepareProposal hands them to [`payable_prefix`]:
    /// those that do not verify are left out.
    fn candidates(txs: &[Vec<u8>]) -> Vec<Candidate<Vec<u8>>> {
        txs.iter()
            .filter_map(|raw| {
                let tx = verified(raw).ok()?;
                Some(Candidate {
                    raw: raw.clone(),
                    tx,
                })
            })
            .collect()
    }

    #[test]
    fn prepare_proposes_what_process_accepts_and_stops_at_the_first_that_does_not_fit() {
        // Sender 1 can pay for two; its third, sender 2's (unfunded) and a
        // forged one are left out, and so is sender 1's nonce after the cut.
        let mut forged = transfer(1, 9, 10, 1);
        let last = forged.len() - 1;
        forged[last] ^= 1;
        let offered = vec![
            transfer(1, 3, 10, 1),
            transfer(2, 0, 10, 1),
            forged,
            transfer(1, 4, 10, 1),
            transfer(1, 5, 10, 1),
            transfer(1, 6, 10, 1),
        ];
        let room = BlockRoom::new(u64::MAX, u64::MAX);
        let mut ledger = ProposalLedger::new(10, committed(420_002));
        let proposed = payable_prefix(candidates(&offered), &mut ledger, room);
        assert_eq!(proposed, vec![offered[0].clone(), offered[3].clone()]);
        assert_eq!(check(&proposed, 420_002), Ok(()));
        // Room for one transaction's gas: the first only.
        let room = BlockRoom::new(u64::MAX, 21_000);
        let mut ledger = ProposalLedger::new(10, committed(u64::MAX));
        let proposed = payable_prefix(candidates(&offered), &mut ledger, room);
        assert_eq!(proposed, vec![offered[0].clone()]);
        // Room for one transaction's bytes and a byte short of the second.
        let size = offered[0].len() as u64;
        let room = BlockRoom::new(2 * size - 1, u64::MAX);
        let mut ledger = ProposalLedger::new(10, committed(u64::MAX));
        let proposed = payable_prefix(candidates(&offered), &mut ledger, room);
        assert_eq!(proposed, vec![offered[0].clone()]);
    }

    #[test]
    fn a_proposal_asking_for_more_gas_than_the_block_is_refused_at_the_first_beyond() {
        let txs = [
            transfer(1, 3, 10, 1),
            transfer(1, 4, 10, 1),
            transfer(1, 5, 10, 1),
        ];
        let limit = |max_gas| {
            check_payable(
                &txs,
                verified,
                &mut ProposalLedger::new(10, committed(u64::MAX)),
                max_gas,
            )
        };
        assert_eq!(limit(63_000), Ok(()));
        assert_eq!(
            limit(62_999),
            Err(ProposalFault::GasBeyondBlock {
                wanted: 63_000,
                max: 62_999
            })
        );
        assert_eq!(
            limit(21_000),
            Err(ProposalFault::GasBeyondBlock {
                wanted: 42_000,
                max: 21_000
            })
        );
    }

    #[test]
    fn the_room_takes_what_fits_and_nothing_of_what_does_not() {
        let mut room = BlockRoom::new(250, 100_000);
        assert!(room.take(100, 50_000));
        // Over the gas: nothing taken, a smaller one still fits.
        assert!(!room.take(10, 50_001));
        assert!(room.take(100, 50_000));
        // Over the bytes by one.
        assert!(!room.take(51, 0));
        assert!(room.take(50, 0));
        assert!(!room.take(1, 0));
        assert!(!room.take(usize::MAX, 0));
    }
}
