//! What a node's answer to one submitted transaction means to the engine
//! (the refusal's kind read by [`crate::refusal`], as funding reads it).

use crate::eth::RpcError;
use crate::refusal::{self, Refusal};

/// A node's answer to one transaction, classified.
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
            Refusal::Other => Outcome::Rejected(message),
        },
        Err(RpcError::Transport { .. }) => Outcome::Timeout,
        Err(RpcError::Decode { message, .. }) => {
            Outcome::Rejected(format!("bad answer: {message}"))
        }
    }
}
