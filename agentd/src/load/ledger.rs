//! Every transaction the agent submitted, and what became of it.

use alloy_primitives::{Bytes, B256};
use serde::Serialize;

/// What the node said about a submitted transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxStatus {
    /// Submitted, no definite answer yet (e.g. still being retried).
    Pending,
    /// Accepted into the mempool (or already known there).
    Accepted,
    /// Refused with a reason; it will not be included.
    Rejected(String),
}

/// One submitted transaction.
#[derive(Debug, Clone)]
pub struct TxEntry {
    /// Hash.
    pub hash: B256,
    /// Sender's index in the keys file.
    pub account: u32,
    /// Nonce.
    pub nonce: u64,
    /// Signed bytes, kept to resend the very same transaction.
    pub raw: Bytes,
    /// Intended send time, seconds since the run began.
    pub intended: f64,
    /// First submission, seconds since the run began.
    pub first_sent: f64,
    /// When the node accepted it, seconds since the run began.
    pub accepted_at: Option<f64>,
    /// Current status.
    pub status: TxStatus,
}

/// The final fate of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fate {
    /// Found in a block.
    Included,
    /// Refused by the node and not in any block.
    Rejected,
    /// Neither, after the bounded wait.
    Unresolved,
}
