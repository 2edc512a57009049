//! What a node's refusal of a submitted transaction means, read from the
//! whole text of its answer: one classification for every part of feth
//! that submits (the load engine, funding, the refill).
//!
//! Texts of geth, abcid, CometBFT and the Cosmos SDK / Cosmos EVM differ in
//! wording and order ("max fee per gas less than block base fee", "max fee
//! per gas (…) is lower than the base fee (…): insufficient fee",
//! "transaction underpriced"), so a kind is recognised by phrases anywhere in
//! the text, case-insensitively, never by its first words.

use serde::{Deserialize, Serialize};

/// The kind of a node's refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// The transaction's fee is below what the node takes now (the base fee,
    /// a minimum gas price, a replacement's bump): re-sign with a higher fee.
    FeeTooLow,
    /// The nonce is used already.
    NonceTooLow,
    /// A nonce is missing before this one.
    NonceTooHigh,
    /// The mempool (txpool) is full: send the same again later.
    MempoolFull,
    /// A rate limit: send the same again later.
    RateLimited,
    /// The node holds this transaction already: as good as accepted.
    AlreadyKnown,
    /// The sender cannot pay.
    InsufficientFunds,
    /// The node could not reach what takes transactions (abcid's CometBFT,
    /// a proxy's backend): nothing was taken; send the same again later.
    Unavailable,
    /// Anything else.
    Other,
}

impl Refusal {
    /// The kind's name, as reports show it.
    pub fn name(self) -> &'static str {
        match self {
            Refusal::FeeTooLow => "fee below base fee",
            Refusal::NonceTooLow => "nonce too low",
            Refusal::NonceTooHigh => "nonce too high",
            Refusal::MempoolFull => "mempool full",
            Refusal::RateLimited => "rate limited",
            Refusal::AlreadyKnown => "already known",
            Refusal::InsufficientFunds => "insufficient funds",
            Refusal::Unavailable => "node unavailable",
            Refusal::Other => "other",
        }
    }

    /// Whether the same transaction should simply go again after a back-off.
    pub fn is_busy(self) -> bool {
        matches!(
            self,
            Refusal::MempoolFull | Refusal::RateLimited | Refusal::Unavailable
        )
    }
}

const ALREADY_KNOWN: &[&str] = &[
    "already known",
    "alreadyknown",
    "already exists",
    "already in the mempool",
    "known transaction",
    "tx already in mempool",
];
const MEMPOOL_FULL: &[&str] = &[
    "txpool is full",
    "mempool is full",
    "tx pool is full",
    "transaction pool is full",
    "mempool full",
];
const RATE_LIMITED: &[&str] = &["rate limit", "too many requests"];
// Last of all: a kind named in the text wins over the transport's words.
const UNAVAILABLE: &[&str] = &[
    "unavailable",
    "connection refused",
    "connection reset",
    "error sending request",
    "i/o timeout",
];
// Before the funds and fee phrases: "insufficient funds" is not a fee refusal.
const INSUFFICIENT_FUNDS: &[&str] = &["insufficient funds", "insufficient balance"];
const FEE_TOO_LOW: &[&str] = &[
    "base fee",
    "basefee",
    "underpriced",
    "insufficient fee",
    "fee too low",
    "gas price too low",
    "gas price below",
    "min gas price",
    "minimum gas price",
    "minimum global fee",
    "fee cap less than",
];

/// Classifies a node's refusal `message` (its whole text).
pub fn classify(message: &str) -> Refusal {
    let m = message.to_ascii_lowercase();
    let any = |phrases: &[&str]| phrases.iter().any(|p| m.contains(p));
    if any(ALREADY_KNOWN) {
        Refusal::AlreadyKnown
    } else if any(MEMPOOL_FULL) {
        Refusal::MempoolFull
    } else if any(RATE_LIMITED) {
        Refusal::RateLimited
    } else if m.contains("nonce too low") {
        Refusal::NonceTooLow
    } else if m.contains("nonce too high") {
        Refusal::NonceTooHigh
    } else if let Some(kind) = sequence_mismatch(&m) {
        kind
    } else if any(INSUFFICIENT_FUNDS) {
        Refusal::InsufficientFunds
    } else if any(FEE_TOO_LOW) {
        Refusal::FeeTooLow
    } else if any(UNAVAILABLE) {
        Refusal::Unavailable
    } else {
        Refusal::Other
    }
}

/// The Cosmos SDK's nonce texts name both numbers ("invalid nonce; got 3,
/// expected 5", "account sequence mismatch, expected 5, got 3"): low or high
/// by comparing them.
fn sequence_mismatch(m: &str) -> Option<Refusal> {
    if !(m.contains("invalid nonce") || m.contains("sequence mismatch")) {
        return None;
    }
    let number_after = |key: &str| -> Option<u64> {
        let rest = &m[m.find(key)? + key.len()..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    let (got, expected) = (number_after("got")?, number_after("expected")?);
    Some(if got < expected {
        Refusal::NonceTooLow
    } else {
        Refusal::NonceTooHigh
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real answers of geth, abcid, CometBFT and Cosmos EVM nodes.
    #[test]
    fn real_texts_get_their_kind() {
        let cases = [
            // geth (core/txpool, core/error.go)
            ("max fee per gas less than block base fee: address 0x3f…, maxFeePerGas: 7, baseFee: 875000000", Refusal::FeeTooLow),
            ("transaction underpriced", Refusal::FeeTooLow),
            ("replacement transaction underpriced", Refusal::FeeTooLow),
            ("nonce too low: address 0x3f…, tx: 4 state: 9", Refusal::NonceTooLow),
            ("nonce too high", Refusal::NonceTooHigh),
            ("already known", Refusal::AlreadyKnown),
            ("txpool is full", Refusal::MempoolFull),
            ("insufficient funds for gas * price + value: address 0x3f… have 0 want 21000000000000", Refusal::InsufficientFunds),
            // abcid
            ("max fee per gas less than block base fee: maxFeePerGas: 1, baseFee: 1000000000", Refusal::FeeTooLow),
            ("txpool is full: 4096 queued transactions already wait for their predecessors", Refusal::MempoolFull),
            ("nonce too high: next nonce 3, tx nonce 90; at most 64 nonces ahead are queued", Refusal::NonceTooHigh),
            // CometBFT
            ("mempool is full: number of txs 5000 (max: 5000), total txs bytes 1290000 (max: 1073741824)", Refusal::MempoolFull),
            ("tx already exists in cache", Refusal::AlreadyKnown),
            // Cosmos EVM / Cosmos SDK
            ("inserting tx: max fee per gas (6335077) is lower than the base fee (6688250): insufficient fee", Refusal::FeeTooLow),
            ("provided fee < minimum global fee (100aatom < 2000aatom). Please increase the gas price.: insufficient fee", Refusal::FeeTooLow),
            ("invalid nonce; got 3, expected 5: invalid sequence", Refusal::NonceTooLow),
            ("invalid nonce; got 9, expected 5: invalid sequence", Refusal::NonceTooHigh),
            ("account sequence mismatch, expected 12, got 11: incorrect account sequence", Refusal::NonceTooLow),
            ("failed to check sender balance: sender balance < tx cost (0 < 21000): insufficient funds", Refusal::InsufficientFunds),
            ("rate limit exceeded", Refusal::RateLimited),
            ("exceeds block gas limit: gas 40000000, limit 30000000", Refusal::Other),
            // A node whose consensus part is down (abcid restarting before
            // its CometBFT; a Cosmos EVM node's broadcast to a stopped RPC)
            ("consensus node unavailable: error sending request for url (http://127.0.0.1:35827/)", Refusal::Unavailable),
            ("failed to broadcast transaction: post failed: Post \"http://localhost:26657\": dial tcp 127.0.0.1:26657: connect: connection refused", Refusal::Unavailable),
            ("503 Service Unavailable", Refusal::Unavailable),
            ("consensus node unavailable: mempool is full", Refusal::MempoolFull),
        ];
        for (text, kind) in cases {
            assert_eq!(classify(text), kind, "{text}");
        }
    }

    #[test]
    fn case_and_position_do_not_matter() {
        assert_eq!(classify("Already Known"), Refusal::AlreadyKnown);
        assert_eq!(classify("rpc error: Mempool Is Full"), Refusal::MempoolFull);
        assert!(classify("TOO MANY REQUESTS").is_busy());
        assert!(!classify("nonce too low").is_busy());
        assert!(classify("Consensus node UNAVAILABLE").is_busy());
    }
}
