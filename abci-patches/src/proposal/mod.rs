//! PrepareProposal: how much of what CometBFT reaped from the mempool goes
//! into the block abcid proposes, and in which order; ProcessProposal's
//! rules: against the committed state, every signature recovers, every
//! transaction passes the stateless rules and is payable at its sender's
//! next nonce, and the gas limits fit in the block ([`check_payable`];
//! PrepareProposal proposes by the same rules, [`payable_prefix`]).
//!
//! PrepareProposal verifies each candidate once ([`Candidate`]; through the
//! sender cache, what CheckTx saw costs a hash and a lookup) and leaves out
//! those that do not verify. The candidates are put in block-building order
//! ([`order_by_tip`]: the highest effective tip first, each sender's
//! transactions in their order, as geth's builder takes them), and the
//! proposal is the longest prefix whose raw sizes fit in `max_tx_bytes`
//! (tendermint-abci's default behaviour) and whose gas limits fit in the
//! block gas limit (CometBFT's rule for `block.max_gas`: gas wanted, not gas
//! used, which is unknown before execution). A prefix keeps each sender's
//! order, so its later nonces never go in without the earlier ones.

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
    /// A transaction breaks a rule: it does not verify, or it is not
    /// payable at its sender's next nonce after the proposal's earlier ones.
    /// CheckTx admits none such, so only a faulty or hostile proposer
    /// includes it.
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
        /// The sum of the gas limits up to the first beyond the limit.
        wanted: u64,
        /// The block gas limit.
        max: u64,
    },
}

/// A transaction offered for a proposal, verified once: its bytes as
/// CometBFT's mempool or the node's pool handed them over, and what
/// verifying them found. PrepareProposal orders, prices and fits these
/// without decoding the bytes again.
#[derive(Debug, Clone)]
pub struct Candidate<T> {
    /// The bytes proposed.
    pub raw: T,
    /// The verified transaction they hold.
    pub tx: VerifiedTx,
}

impl<T> Candidate<T> {
    /// Who sent it, with which nonce and fees.
    pub fn origin(&self) -> Origin {
        Origin::of(&self.tx)
    }
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
pub fn order_by_tip<T>(
    txs: Vec<T>,
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
    let mut order = Vec::with_capacity(txs.len());
    while let Some((_, Reverse(i), sender)) = heads.pop() {
        order.push(i);
        if let Some(queue) = queues.get_mut(&sender) {
            queue.pop_front();
            heads.extend(head(&sender, queue));
        }
    }
    order.extend(unknown);
    pick(txs, &order)
}

/// `nonce-queue`: `txs` with each sender's transactions in nonce order, from
/// `next(sender)` on and without a gap: one whose predecessor is missing (or
/// whose nonce is used) is left out, and of two with the same nonce the
/// higher tip (then the earlier) stays. Senders keep the mempool's slots: the
/// k-th slot of a sender carries its k-th nonce. A transaction of unknown
/// origin (it does not verify) keeps its place, for FinalizeBlock to refuse.
pub fn order_by_nonce<T>(
    txs: Vec<T>,
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
    let mut order = Vec::with_capacity(txs.len());
    for (i, o) in origins.iter().enumerate() {
        match o {
            None => order.push(i),
            Some(o) => order.extend(chains.get_mut(&o.sender).and_then(VecDeque::pop_front)),
        }
    }
    pick(txs, &order)
}

/// The items of `items` at the positions `order` names, in that order
/// (each position at most once), moved rather than copied.
fn pick<T>(items: Vec<T>, order: &[usize]) -> Vec<T> {
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order
        .iter()
        .filter_map(|&i| slots.get_mut(i).and_then(Option::take))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let ordered = order_by_tip(txs.to_vec(), |o| *o, 0);
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
        assert_eq!(order_by_tip(same.to_vec(), |o| *o, 0), same);
    }

    /// Transactions as (sender, nonce, tip) triples; `None` does not verify.
    fn order(txs: &[Option<Origin>], next: u64) -> Vec<Option<Origin>> {
        order_by_nonce(txs.to_vec(), |o| *o, |_| next)
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
        let out = order_by_nonce(txs.to_vec(), |o| *o, next);
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
