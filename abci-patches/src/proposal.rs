//! PrepareProposal: how much of what CometBFT reaped from the mempool goes
//! into the block abcid proposes.
//!
//! The proposal is the longest prefix of CometBFT's transactions whose raw
//! sizes fit in `max_tx_bytes` (tendermint-abci's default behaviour) and whose
//! gas limits fit in the block gas limit (CometBFT's rule for `block.max_gas`:
//! gas wanted, not gas used, which is unknown before execution). A prefix
//! keeps the mempool's order, so a sender's later nonces never go in without
//! the earlier ones.

use alloy_consensus::{Transaction, TxEnvelope};
use alloy_eips::eip2718::Decodable2718;

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

/// How many of `txs`, from the first, fit in a block of `max_bytes` raw bytes
/// and `max_gas` gas. A transaction that does not decode counts its bytes
/// but no gas: it is kept, and FinalizeBlock refuses it with its own code
/// (CheckTx admits none, so only another mempool could hand one over).
pub fn fitting_prefix<T: AsRef<[u8]>>(txs: &[T], max_bytes: u64, max_gas: u64) -> usize {
    let (mut bytes, mut gas) = (0u64, 0u64);
    for (n, raw) in txs.iter().enumerate() {
        let raw = raw.as_ref();
        bytes = bytes.saturating_add(raw.len() as u64);
        gas = gas.saturating_add(gas_wanted(raw).unwrap_or(0));
        if bytes > max_bytes || gas > max_gas {
            return n;
        }
    }
    txs.len()
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
}
