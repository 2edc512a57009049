//! PrepareProposal: how much of what CometBFT reaped from the mempool goes
//! into the block abcid proposes, and in which order;
//! ProcessProposal's rules: every transaction passes the stateless rules but
//! the signature's and the fee cap's and the gas limits fit in the block
//! ([`check_proposal`]), then, against the committed state, every signature
//! recovers and every transaction is payable at its sender's next nonce
//! ([`check_payable`]; PrepareProposal proposes by the same rules,
//! [`payable_prefix`]).
//!
//! The candidates are put in block-building order ([`order_by_tip`]: the
//! highest effective tip first, each sender's transactions in their order, as
//! geth's builder takes them), and the proposal is the longest prefix whose
//! raw sizes fit in `max_tx_bytes` (tendermint-abci's default behaviour) and
//! whose gas limits fit in the block gas limit (CometBFT's rule for
//! `block.max_gas`: gas wanted, not gas used, which is unknown before
//! execution). A prefix keeps each sender's order, so its later nonces never
//! go in without the earlier ones.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};

use alloy_consensus::{Transaction, TxEnvelope};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::Address;

use crate::error::TxError;
use crate::tx::VerifiedTx;

mod ledger;

pub use ledger::{check_payable, payable_prefix, BlockRoom, ProposalLedger};

/// Why ProcessProposal refuses a proposal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProposalFault {
    /// A transaction breaks a stateless rule: CheckTx admits none such, so
    /// only a faulty or hostile proposer includes it.
    #[error("transaction {index} is invalid: {error}")]
    InvalidTx {
        /// Its position in the proposal.
        index: usize,
        /// The rule it breaks.
        error: TxError,
    },
    /// The gas limits add up beyond the block gas limit.
    #[error("transactions ask for {wanted} gas, beyond the block gas limit {max}")]
    GasBeyondBlock {
        /// The sum of the gas limits (saturating at `u64::MAX`).
        wanted: u64,
        /// The block gas limit.
        max: u64,
    },
}

/// Whether `error` of a stateless check is a reason to refuse a proposal.
/// The fee cap is not: it is judged against the block's base fee, which
/// FinalizeBlock knows and a base fee that moves may change.
fn refuses_proposal(error: &TxError) -> bool {
    !matches!(error, TxError::FeeCapTooLow { .. })
}

/// ProcessProposal's stateless rules: each of `txs` passes `decode` (the
/// verifier's rules without the signature, which FinalizeBlock recovers)
/// and the gas limits add up to at most `max_gas`.
pub fn check_proposal<T: AsRef<[u8]>>(
    txs: &[T],
    decode: impl Fn(&[u8]) -> Result<TxEnvelope, TxError>,
    max_gas: u64,
) -> Result<(), ProposalFault> {
    let mut wanted = 0u64;
    for (index, raw) in txs.iter().enumerate() {
        match decode(raw.as_ref()) {
            Ok(tx) => wanted = wanted.saturating_add(tx.gas_limit()),
            Err(error) if refuses_proposal(&error) => {
                return Err(ProposalFault::InvalidTx { index, error })
            }
            // Counted by its envelope's gas limit when it decodes at all.
            Err(_) => wanted = wanted.saturating_add(gas_wanted(raw.as_ref()).unwrap_or(0)),
        }
    }
    if wanted > max_gas {
        return Err(ProposalFault::GasBeyondBlock {
            wanted,
            max: max_gas,
        });
    }
    Ok(())
}

/// PrepareProposal: `txs` without those [`check_proposal`] would refuse
/// the proposal for (CheckTx admits none, so only a mempool fed otherwise
/// holds one), in the same order.
pub fn without_invalid<T: AsRef<[u8]> + Clone>(
    txs: &[T],
    decode: impl Fn(&[u8]) -> Result<TxEnvelope, TxError>,
) -> Vec<T> {
    txs.iter()
        .filter(|raw| match decode(raw.as_ref()) {
            Ok(_) => true,
            Err(error) => !refuses_proposal(&error),
        })
        .cloned()
        .collect()
}

/// Who sent a transaction, with which nonce, offering which tip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    /// The sender.
    pub sender: Address,
    /// The transaction's nonce.
    pub nonce: u64,
    /// Its priority fee per gas (the gas price of a legacy transaction).
    pub tip: u128,
    /// Its fee cap per gas (the gas price of a legacy transaction).
    pub fee_cap: u128,
}

impl Origin {
    /// The origin of a verified transaction.
    pub fn of(tx: &VerifiedTx) -> Self {
        let (tip, fee_cap) = fees(&tx.envelope);
        Origin {
            sender: tx.sender,
            nonce: tx.envelope.nonce(),
            tip,
            fee_cap,
        }
    }

    /// What the transaction pays its proposer per gas over `base_fee`: its
    /// tip, at most what its fee cap leaves above the base fee (EIP-1559).
    pub fn effective_tip(&self, base_fee: u128) -> u128 {
        effective(self.tip, self.fee_cap, base_fee)
    }
}

/// The priority fee and the fee cap per gas `tx` offers (a legacy
/// transaction's gas price for both).
pub fn fees(tx: &TxEnvelope) -> (u128, u128) {
    let cap = tx.max_fee_per_gas();
    (tx.max_priority_fee_per_gas().unwrap_or(cap), cap)
}

/// geth's replacement rule (its pool's `PriceBump`): a transaction taking
/// the place of another of the same sender and nonce offers at least 10 %
/// more tip and fee cap; each `(tip, cap)` as [`fees`] gives them.
pub fn pays_enough_more(new: (u128, u128), old: (u128, u128)) -> bool {
    let bumped = |new: u128, old: u128| new.saturating_mul(10) >= old.saturating_mul(11);
    bumped(new.0, old.0) && bumped(new.1, old.1)
}

/// `tip`, at most what `cap` leaves above `base_fee`.
fn effective(tip: u128, cap: u128, base_fee: u128) -> u128 {
    tip.min(cap.saturating_sub(base_fee))
}

/// `txs` in the order a block builder takes them (geth's
/// `TransactionsByPriceAndNonce`): at each step, of every sender's next
/// transaction, the one paying the most effective tip over `base_fee` (the
/// earlier on a tie); each sender's own transactions keep their order, so
/// its nonces stay in sequence. So a sender paying more is proposed first
/// whatever the order of arrival, and one claiming much gas for little tip
/// cannot hold it back. Transactions of unknown origin (they do not verify)
/// go last, for FinalizeBlock to refuse.
pub fn order_by_tip<T: Clone>(
    txs: &[T],
    origin: impl Fn(&T) -> Option<Origin>,
    base_fee: u128,
) -> Vec<T> {
    let mut queues: HashMap<Address, VecDeque<(usize, u128)>> = HashMap::new();
    let mut unknown = Vec::new();
    for (i, tx) in txs.iter().enumerate() {
        match origin(tx) {
            Some(o) => queues
                .entry(o.sender)
                .or_default()
                .push_back((i, o.effective_tip(base_fee))),
            None => unknown.push(i),
        }
    }
    let head = |sender: &Address, queue: &VecDeque<(usize, u128)>| {
        queue.front().map(|(i, tip)| (*tip, Reverse(*i), *sender))
    };
    let mut heads: BinaryHeap<(u128, Reverse<usize>, Address)> =
        queues.iter().filter_map(|(s, q)| head(s, q)).collect();
    let mut out = Vec::with_capacity(txs.len());
    while let Some((_, Reverse(i), sender)) = heads.pop() {
        out.push(txs[i].clone());
        if let Some(queue) = queues.get_mut(&sender) {
            queue.pop_front();
            heads.extend(head(&sender, queue));
        }
    }
    out.extend(unknown.into_iter().map(|i| txs[i].clone()));
    out
}

/// `nonce-queue`: `txs` with each sender's transactions in nonce order, from
/// `next(sender)` on and without a gap: one whose predecessor is missing (or
/// whose nonce is used) is left out, and of two with the same nonce the
/// higher tip (then the earlier) stays. Senders keep the mempool's slots: the
/// k-th slot of a sender carries its k-th nonce. A transaction of unknown
/// origin (it does not verify) keeps its place, for FinalizeBlock to refuse.
pub fn order_by_nonce<T: Clone>(
    txs: &[T],
    origin: impl Fn(&T) -> Option<Origin>,
    next: impl Fn(&Address) -> u64,
) -> Vec<T> {
    let origins: Vec<Option<Origin>> = txs.iter().map(origin).collect();
    let mut best: HashMap<Address, BTreeMap<u64, usize>> = HashMap::new();
    for (i, o) in origins.iter().enumerate() {
        let Some(o) = o else { continue };
        let slot = best
            .entry(o.sender)
            .or_default()
            .entry(o.nonce)
            .or_insert(i);
        if origins[*slot].is_some_and(|kept| kept.tip < o.tip) {
            *slot = i;
        }
    }
    let mut chains: HashMap<Address, VecDeque<usize>> = HashMap::new();
    for (sender, by_nonce) in &best {
        let mut expected = next(sender);
        let chain = chains.entry(*sender).or_default();
        while let Some(i) = by_nonce.get(&expected) {
            chain.push_back(*i);
            expected += 1;
        }
    }
    let mut out = Vec::with_capacity(txs.len());
    for (i, o) in origins.iter().enumerate() {
        match o {
            None => out.push(txs[i].clone()),
            Some(o) => {
                if let Some(j) = chains.get_mut(&o.sender).and_then(VecDeque::pop_front) {
                    out.push(txs[j].clone());
                }
            }
        }
    }
    out
}

/// The gas limit `raw` asks for; `None` when it does not decode.
///
/// Decoding the envelope is enough: signature and the other rules are
/// FinalizeBlock's business.
pub fn gas_wanted(raw: &[u8]) -> Option<u64> {
    let mut buf = raw;
    TxEnvelope::decode_2718(&mut buf)
        .ok()
        .map(|tx| tx.gas_limit())
}

/// The effective tip per gas `raw` pays over `base_fee` (see
/// [`Origin::effective_tip`]), read without recovering its sender; `None`
/// when it does not decode.
pub fn effective_tip(raw: &[u8], base_fee: u128) -> Option<u128> {
    let mut buf = raw;
    let tx = TxEnvelope::decode_2718(&mut buf).ok()?;
    let (tip, cap) = fees(&tx);
    Some(effective(tip, cap, base_fee))
}

/// How many of `txs`, from the first, fit in a block of `max_bytes` raw bytes
/// and `max_gas` gas. A transaction that does not decode counts its bytes
/// but no gas: it is kept, and FinalizeBlock refuses it with its own code
/// (CheckTx admits none, so only another mempool could hand one over).
pub fn fitting_prefix<T: AsRef<[u8]>>(txs: &[T], max_bytes: u64, max_gas: u64) -> usize {
    let mut room = BlockRoom::new(max_bytes, max_gas);
    txs.iter().take_while(|raw| room.take(raw.as_ref())).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_consensus::{SignableTransaction, TxLegacy};
    use alloy_eips::eip2718::Encodable2718;
    use alloy_primitives::{Address, Signature, TxKind, U256};

    /// A transfer asking for `gas` (the signature is not checked here).
    fn tx(gas: u64) -> Vec<u8> {
        let tx = TxLegacy {
            chain_id: Some(9000),
            gas_limit: gas,
            gas_price: 1_000_000_000,
            to: TxKind::Call(Address::ZERO),
            value: U256::from(1),
            ..Default::default()
        };
        let sig = Signature::new(U256::from(1), U256::from(1), false);
        TxEnvelope::from(tx.into_signed(sig)).encoded_2718()
    }

    #[test]
    fn reads_the_gas_limit_of_the_envelope() {
        assert_eq!(gas_wanted(&tx(21_000)), Some(21_000));
        assert_eq!(gas_wanted(&[0xde, 0xad]), None);
    }

    #[test]
    fn keeps_the_prefix_within_the_gas_limit() {
        let txs = [tx(21_000), tx(50_000), tx(30_000), tx(21_000)];
        assert_eq!(fitting_prefix(&txs, u64::MAX, 100_000), 2);
        assert_eq!(fitting_prefix(&txs, u64::MAX, 101_000), 3);
        assert_eq!(fitting_prefix(&txs, u64::MAX, 122_000), 4);
        assert_eq!(fitting_prefix(&txs, u64::MAX, 20_999), 0);
        // A later, smaller transaction does not jump the queue.
        assert_eq!(
            fitting_prefix(&[tx(50_000), tx(21_000)], u64::MAX, 40_000),
            0
        );
    }

    #[test]
    fn keeps_the_prefix_within_the_byte_limit() {
        let txs = [tx(21_000), tx(21_000), tx(21_000)];
        let size = txs[0].len() as u64;
        assert_eq!(fitting_prefix(&txs, 2 * size, u64::MAX), 2);
        assert_eq!(fitting_prefix(&txs, 2 * size - 1, u64::MAX), 1);
        assert_eq!(fitting_prefix(&txs, 3 * size, 63_000), 3);
    }

    #[test]
    fn undecodable_transactions_count_bytes_but_no_gas() {
        let junk = vec![0xde, 0xad, 0xbe, 0xef];
        let txs = [tx(21_000), junk.clone(), tx(21_000)];
        assert_eq!(fitting_prefix(&txs, u64::MAX, 42_000), 3);
        let size = txs[0].len() as u64;
        assert_eq!(fitting_prefix(&txs, size + 3, u64::MAX), 1);
        assert_eq!(fitting_prefix(&txs, size + 4, u64::MAX), 2);
    }

    fn origin(sender: u8, nonce: u64, tip: u128) -> Option<Origin> {
        Some(Origin {
            sender: Address::repeat_byte(sender),
            nonce,
            tip,
            fee_cap: tip + 10,
        })
    }

    #[test]
    fn orders_by_effective_tip_keeping_each_senders_order() {
        // (sender, nonce, tip): sender 1 stuffs at tip 1, sender 2 pays 50
        // after it, sender 3's second transaction pays more than its first.
        let txs = [
            origin(1, 0, 1),
            origin(1, 1, 1),
            origin(2, 0, 50),
            origin(3, 0, 5),
            origin(3, 1, 80),
            None,
            origin(1, 2, 1),
        ];
        let ordered = order_by_tip(&txs, |o| *o, 0);
        let order: Vec<Option<(u8, u64)>> = ordered
            .iter()
            .map(|o| o.map(|o| (o.sender.0[0], o.nonce)))
            .collect();
        assert_eq!(
            order,
            [
                Some((2, 0)),
                Some((3, 0)),
                Some((3, 1)),
                Some((1, 0)),
                Some((1, 1)),
                Some((1, 2)),
                None
            ]
        );
        // The tip is capped by what the fee cap leaves over the base fee:
        // at base fee 5, sender 2 (cap 60) still leads, and sender 3's first
        // (cap 15) pays 5 against sender 1's 1.
        let capped = Origin {
            fee_cap: 12,
            ..origin(4, 0, 50).unwrap()
        };
        assert_eq!(capped.effective_tip(5), 7);
        assert_eq!(capped.effective_tip(20), 0);
        // Equal tips keep the order of arrival.
        let same = [origin(7, 0, 3), origin(6, 0, 3), origin(5, 0, 3)];
        assert_eq!(order_by_tip(&same, |o| *o, 0), same);
    }

    /// Transactions as (sender, nonce, tip) triples; `None` does not verify.
    fn order(txs: &[Option<Origin>], next: u64) -> Vec<Option<Origin>> {
        order_by_nonce(txs, |o| *o, |_| next)
    }

    #[test]
    fn orders_each_senders_nonces_and_drops_gaps_and_outbid_duplicates() {
        // a: 2, 0, 1 arrive out of order; b: 5 (gap), 3, 4; c: 0 twice.
        let txs = [
            origin(0xa, 2, 1),
            origin(0xb, 5, 1),
            origin(0xa, 0, 1),
            None,
            origin(0xb, 3, 1),
            origin(0xc, 0, 1),
            origin(0xa, 1, 1),
            origin(0xc, 0, 9),
        ];
        let next = |s: &Address| match s.0[0] {
            0xb => 3,
            _ => 0,
        };
        let out = order_by_nonce(&txs, |o| *o, next);
        assert_eq!(
            out,
            vec![
                origin(0xa, 0, 1),
                origin(0xb, 3, 1),
                origin(0xa, 1, 1),
                None,
                origin(0xc, 0, 9),
                origin(0xa, 2, 1),
            ]
        );
    }

    #[test]
    fn a_sender_whose_next_nonce_is_missing_proposes_nothing() {
        let txs = [origin(0xa, 1, 1), origin(0xa, 2, 1)];
        assert!(order(&txs, 0).is_empty());
        assert_eq!(order(&txs, 1), txs.to_vec());
    }
}
