//! What a node's answer to one submitted transaction means to the engine.

use crate::eth::RpcError;

/// A node's answer to one transaction, classified.
pub(super) enum Outcome {
    /// Taken into the mempool (or already known there).
    Accepted,
    /// A full mempool or a rate limit: back off, send the same again.
    Busy,
    /// The sender cannot pay (the reason as the node put it).
    InsufficientFunds(String),
    /// No answer: the same bytes go again after a back-off.
    Timeout,
    /// The nonce is used already.
    NonceTooLow,
    /// A nonce is missing before this one.
    NonceTooHigh,
    /// Refused for good, for this reason.
    Rejected(String),
}

/// Classifies a node's answer to `eth_sendRawTransaction`.
pub(super) fn classify(result: Result<alloy_primitives::B256, RpcError>) -> Outcome {
    match result {
        Ok(_) => Outcome::Accepted,
        Err(RpcError::Rpc { message, .. }) => {
            let m = message.to_ascii_lowercase();
            if m.contains("already known")
                || m.contains("already exists")
                || m.contains("alreadyknown")
            {
                Outcome::Accepted
            } else if crate::fund::is_busy(&m) {
                Outcome::Busy
            } else if m.contains("nonce too low") {
                Outcome::NonceTooLow
            } else if m.contains("nonce too high") {
                Outcome::NonceTooHigh
            } else if m.contains("insufficient funds") {
                Outcome::InsufficientFunds(reason(&message))
            } else {
                Outcome::Rejected(reason(&message))
            }
        }
        Err(RpcError::Transport { .. }) => Outcome::Timeout,
        Err(RpcError::Decode { message, .. }) => {
            Outcome::Rejected(format!("bad answer: {message}"))
        }
    }
}

/// A rejection message without its per-transaction numbers, to count by reason.
fn reason(message: &str) -> String {
    message
        .split(':')
        .next()
        .unwrap_or(message)
        .trim()
        .to_string()
}
