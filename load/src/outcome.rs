//! What a node's answer to one submitted transaction means to the engine
//! (the refusal's kind read by [`crate::refusal`], as funding reads it).

use crate::refusal::{self, Refusal};
use feth_chain::eth::RpcError;

/// A node's answer to one transaction, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Taken into the mempool (or already known there).
    Accepted,
    /// A full mempool or a rate limit: back off, send the same again.
    Busy,
    /// The fee is below what the node takes now (its base fee): re-sign
    /// with a higher fee (the node's text).
    FeeTooLow(String),
    /// The sender cannot pay (the node's text).
    InsufficientFunds(String),
    /// No answer: the same bytes go again after a back-off.
    Timeout,
    /// The nonce is used already.
    NonceTooLow,
    /// A nonce is missing before this one.
    NonceTooHigh,
    /// Refused for good: the node's whole text (counted by its kind).
    Rejected(String),
}

/// Classifies a node's answer to `eth_sendRawTransaction`.
pub(super) fn classify(result: Result<alloy_primitives::B256, RpcError>) -> Outcome {
    match result {
        Ok(_) => Outcome::Accepted,
        Err(RpcError::Rpc { message, .. }) => match refusal::classify(&message) {
            Refusal::AlreadyKnown => Outcome::Accepted,
            Refusal::MempoolFull | Refusal::RateLimited => Outcome::Busy,
            Refusal::NonceTooLow => Outcome::NonceTooLow,
            Refusal::NonceTooHigh => Outcome::NonceTooHigh,
            Refusal::FeeTooLow => Outcome::FeeTooLow(message),
            Refusal::InsufficientFunds => Outcome::InsufficientFunds(message),
            // Nothing was taken, as when the node itself did not answer.
            Refusal::Unavailable => Outcome::Timeout,
            Refusal::Other => Outcome::Rejected(message),
        },
        Err(RpcError::Transport { .. }) => Outcome::Timeout,
        Err(RpcError::Decode { message, .. }) => {
            Outcome::Rejected(format!("bad answer: {message}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(message: &str) -> Result<alloy_primitives::B256, RpcError> {
        Err(RpcError::Rpc {
            code: -32000,
            message: message.to_string(),
        })
    }

    /// Real answers of geth, abcid, CometBFT and Cosmos EVM nodes, and what
    /// the engine does with each.
    #[test]
    fn each_answer_maps_to_what_the_engine_does() {
        use Outcome::*;
        let text = |t: &str| t.to_string();
        let fee = "max fee per gas less than block base fee: address 0x3f, maxFeePerGas: 7, baseFee: 875000000";
        let cosmos_fee = "inserting tx: max fee per gas (6335077) is lower than the base fee (6688250): insufficient fee";
        let funds =
            "insufficient funds for gas * price + value: address 0x3f have 0 want 21000000000000";
        let gas = "exceeds block gas limit: gas 40000000, limit 30000000";
        let cases = [
            // geth
            (refused("already known"), Accepted),
            (refused("known transaction: 0x5e2b"), Accepted),
            (refused("txpool is full"), Busy),
            (refused("nonce too low: address 0x3f, tx: 4 state: 9"), NonceTooLow),
            (refused("nonce too high"), NonceTooHigh),
            (refused(fee), FeeTooLow(text(fee))),
            (refused("replacement transaction underpriced"), FeeTooLow(text("replacement transaction underpriced"))),
            (refused(funds), InsufficientFunds(text(funds))),
            (refused(gas), Rejected(text(gas))),
            // abcid
            (refused("nonce too high: next nonce 3, tx nonce 90; at most 64 nonces ahead are queued"), NonceTooHigh),
            (refused("txpool is full: 4096 queued transactions already wait for their predecessors"), Busy),
            // CometBFT
            (refused("tx already exists in cache"), Accepted),
            (refused("mempool is full: number of txs 5000 (max: 5000), total txs bytes 1290000 (max: 1073741824)"), Busy),
            // Cosmos EVM / Cosmos SDK
            (refused(cosmos_fee), FeeTooLow(text(cosmos_fee))),
            (refused("invalid nonce; got 3, expected 5: invalid sequence"), NonceTooLow),
            (refused("invalid nonce; got 9, expected 5: invalid sequence"), NonceTooHigh),
            (refused("rate limit exceeded"), Busy),
            // abcid restarted before its CometBFT
            (refused("consensus node unavailable: error sending request for url (http://127.0.0.1:35827/)"), Timeout),
            // Case does not matter.
            (refused("Already Known"), Accepted),
        ];
        for (answer, outcome) in cases {
            let shown = format!("{answer:?}");
            assert_eq!(classify(answer), outcome, "{shown}");
        }
    }

    #[test]
    fn no_answer_is_a_timeout_and_a_bad_one_a_rejection() {
        assert_eq!(
            classify(Ok(alloy_primitives::B256::ZERO)),
            Outcome::Accepted
        );
        let unreachable = RpcError::Transport {
            url: "http://127.0.0.1:8545".to_string(),
            message: "connection refused".to_string(),
            timeout: false,
        };
        assert_eq!(classify(Err(unreachable)), Outcome::Timeout);
        let garbled = RpcError::Decode {
            method: "eth_sendRawTransaction".to_string(),
            message: "not a hash".to_string(),
        };
        assert_eq!(
            classify(Err(garbled)),
            Outcome::Rejected("bad answer: not a hash".to_string())
        );
    }
}
