//! Rejection reasons of transactions, each with its own stable ABCI code.
//!
//! The messages follow go-ethereum's wording so that standard clients and
//! load tools classify them the same way they do for geth. The table is part
//! of abcid's documented interface (abci-patches/README.md, "CheckTx /
//! FinalizeBlock codes").

use alloy_primitives::U256;

/// ABCI codespace of every non-zero code abcid returns.
pub const CODESPACE: &str = "abcid";

/// Why a transaction was refused by CheckTx or not executed by FinalizeBlock.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxError {
    /// The bytes are not a valid EIP-2718 transaction.
    #[error("invalid transaction encoding: {0}")]
    Decode(String),
    /// The EIP-155 chain id is missing or belongs to another chain.
    #[error("invalid chain id: have {}, want {expected}", got.map_or("none".to_string(), |g| g.to_string()))]
    WrongChainId {
        /// This chain's id.
        expected: u64,
        /// The id the transaction carries, if any.
        got: Option<u64>,
    },
    /// The signature does not recover to a public key, or is malleable.
    #[error("invalid sender: bad signature")]
    BadSignature,
    /// The nonce was already used.
    #[error("nonce too low: next nonce {expected}, tx nonce {got}")]
    NonceTooLow {
        /// The nonce the account expects next.
        expected: u64,
        /// The transaction's nonce.
        got: u64,
    },
    /// The nonce leaves a gap after the account's next nonce.
    #[error("nonce too high: next nonce {expected}, tx nonce {got}")]
    NonceTooHigh {
        /// The nonce the account expects next.
        expected: u64,
        /// The transaction's nonce.
        got: u64,
    },
    /// The sender cannot pay `value + gas_limit × max_fee`.
    #[error("insufficient funds for gas * price + value: balance {balance}, tx cost {cost}")]
    InsufficientFunds {
        /// What the sender holds (pending state).
        balance: U256,
        /// What the transaction may cost at most.
        cost: U256,
    },
    /// The raw transaction is larger than allowed.
    #[error("oversized data: transaction size {size}, limit {max}")]
    Oversized {
        /// Raw size in bytes.
        size: usize,
        /// Limit in bytes.
        max: usize,
    },
    /// The gas limit does not cover the intrinsic gas, or EIP-7623's
    /// calldata floor when that is higher.
    #[error("intrinsic gas too low: gas {gas}, minimum needed {needed}")]
    IntrinsicGas {
        /// The transaction's gas limit.
        gas: u64,
        /// The larger of its intrinsic gas and its calldata floor.
        needed: u64,
    },
    /// The gas limit exceeds the per-transaction cap (`max_tx_gas`, or the
    /// block gas limit when that is lower).
    #[error("exceeds block gas limit: gas {gas}, limit {max}")]
    GasLimitTooHigh {
        /// The transaction's gas limit.
        gas: u64,
        /// The cap.
        max: u64,
    },
    /// The fee cap is below the base fee.
    #[error(
        "max fee per gas less than block base fee: maxFeePerGas: {max_fee}, baseFee: {base_fee}"
    )]
    FeeCapTooLow {
        /// The transaction's fee cap.
        max_fee: u128,
        /// The chain's base fee.
        base_fee: u64,
    },
    /// The priority fee is above the fee cap.
    #[error("max priority fee per gas higher than max fee per gas")]
    TipAboveFeeCap,
    /// Blob and set-code transactions are not accepted.
    #[error("transaction type not supported: type {0}")]
    UnsupportedType(u8),
    /// revm refused the transaction when executing the block.
    #[error("execution rejected: {0}")]
    Execution(String),
    /// FinalizeBlock only: the transaction's gas limit exceeds what is left
    /// of the block gas limit (a proposer included more gas than the block
    /// allows). geth's `ErrGasLimitReached`.
    #[error("gas limit reached: gas {gas}, block gas left {left}")]
    BlockGasExhausted {
        /// The transaction's gas limit.
        gas: u64,
        /// The block gas limit minus the gas used by the block so far.
        left: u64,
    },
    /// A contract creation's init code is larger than EIP-3860 allows.
    #[error("max initcode size exceeded: code size {size}, limit {max}")]
    InitCodeTooLarge {
        /// Init code size in bytes.
        size: usize,
        /// The limit (49,152 bytes).
        max: usize,
    },
    /// `nonce-queue`: the nonce is further ahead than the queue waits for.
    #[error("nonce too high: next nonce {expected}, tx nonce {got}; at most {window} nonces ahead are queued")]
    NonceGapTooWide {
        /// The nonce the account expects next (pending state).
        expected: u64,
        /// The transaction's nonce.
        got: u64,
        /// How far ahead a nonce may be.
        window: u64,
    },
    /// `nonce-queue`: a queued transaction of the same nonce pays at least
    /// as much (geth asks for a 10 % higher fee cap and tip).
    #[error("replacement transaction underpriced")]
    ReplacementUnderpriced,
    /// `nonce-queue`: the queue holds as many transactions as it may.
    #[error("txpool is full: {max} queued transactions already wait for their predecessors")]
    QueueFull {
        /// The bound on queued transactions.
        max: usize,
    },
    /// `nonce-queue`: the transaction waited in the queue longer than
    /// allowed for its predecessor (recheck only).
    #[error("queued transaction expired: nonce {got} waited {waited_secs} s for nonce {expected}")]
    QueuedExpired {
        /// The nonce the account still expects.
        expected: u64,
        /// The transaction's nonce.
        got: u64,
        /// How long it waited, in whole seconds.
        waited_secs: u64,
    },
    /// `nonce-queue`: a transaction of the same nonce with a higher fee
    /// replaced this one while both waited (recheck only).
    #[error("replaced by a transaction with a higher fee")]
    Replaced,
    /// `value + gas_limit × max_fee_per_gas` does not fit in 256 bits: no
    /// balance can pay it. Worded as geth's insufficient funds, which is what
    /// geth (with unbounded integers) answers.
    #[error("insufficient funds for gas * price + value: tx cost overflows 256 bits (value {value}, gas {gas}, max fee per gas {max_fee})")]
    CostOverflow {
        /// The transaction's value.
        value: U256,
        /// Its gas limit.
        gas: u64,
        /// Its fee cap (the gas price of a legacy transaction).
        max_fee: u128,
    },
    /// The nonce is `2^64 − 1`, which can never be followed (EIP-2681).
    #[error("nonce has max value")]
    NonceMax,
    /// `nonce-queue`: the sender has as many transactions queued as one
    /// sender may.
    #[error("txpool is full: sender has {max} queued transactions already")]
    SenderQueueFull {
        /// The bound on one sender's queued transactions.
        max: usize,
    },
}

impl TxError {
    /// The stable, non-zero ABCI result code of this reason.
    pub fn code(&self) -> u32 {
        match self {
            Self::Decode(_) => 1,
            Self::WrongChainId { .. } => 2,
            Self::BadSignature => 3,
            Self::NonceTooLow { .. } => 4,
            Self::NonceTooHigh { .. } => 5,
            Self::InsufficientFunds { .. } => 6,
            Self::Oversized { .. } => 7,
            Self::IntrinsicGas { .. } => 8,
            Self::GasLimitTooHigh { .. } => 9,
            Self::FeeCapTooLow { .. } => 10,
            Self::TipAboveFeeCap => 11,
            Self::UnsupportedType(_) => 12,
            Self::Execution(_) => 13,
            Self::BlockGasExhausted { .. } => 14,
            Self::InitCodeTooLarge { .. } => 15,
            Self::NonceGapTooWide { .. } => 16,
            Self::ReplacementUnderpriced => 17,
            Self::QueueFull { .. } => 18,
            Self::QueuedExpired { .. } => 19,
            Self::Replaced => 20,
            Self::CostOverflow { .. } => 21,
            Self::NonceMax => 22,
            Self::SenderQueueFull { .. } => 23,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_non_zero() {
        let all = [
            TxError::Decode(String::new()),
            TxError::WrongChainId {
                expected: 1,
                got: None,
            },
            TxError::BadSignature,
            TxError::NonceTooLow {
                expected: 1,
                got: 0,
            },
            TxError::NonceTooHigh {
                expected: 1,
                got: 2,
            },
            TxError::InsufficientFunds {
                balance: U256::ZERO,
                cost: U256::from(1),
            },
            TxError::Oversized { size: 2, max: 1 },
            TxError::IntrinsicGas { gas: 1, needed: 2 },
            TxError::GasLimitTooHigh { gas: 2, max: 1 },
            TxError::FeeCapTooLow {
                max_fee: 1,
                base_fee: 2,
            },
            TxError::TipAboveFeeCap,
            TxError::UnsupportedType(3),
            TxError::Execution(String::new()),
            TxError::BlockGasExhausted { gas: 2, left: 1 },
            TxError::InitCodeTooLarge { size: 2, max: 1 },
            TxError::NonceGapTooWide {
                expected: 1,
                got: 100,
                window: 64,
            },
            TxError::ReplacementUnderpriced,
            TxError::QueueFull { max: 1 },
            TxError::QueuedExpired {
                expected: 1,
                got: 2,
                waited_secs: 60,
            },
            TxError::Replaced,
            TxError::CostOverflow {
                value: U256::MAX,
                gas: 21_000,
                max_fee: 1,
            },
            TxError::NonceMax,
            TxError::SenderQueueFull { max: 16 },
        ];
        let mut codes: Vec<u32> = all.iter().map(TxError::code).collect();
        assert!(codes.iter().all(|c| *c != 0));
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
        assert_eq!(
            TxError::WrongChainId {
                expected: 9000,
                got: Some(1)
            }
            .to_string(),
            "invalid chain id: have 1, want 9000"
        );
    }
}
