//! What the node keeps of each block and executed transaction: the records
//! the store persists, the codec encodes and the web3 API serves.

use alloy_primitives::{Address, Bloom, Bytes, Log, B256};
use serde::{Deserialize, Serialize};

/// A block as the web3 API serves it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BlockRecord {
    /// Height.
    pub number: u64,
    /// CometBFT block hash (also the EVM block hash).
    pub hash: B256,
    /// Hash of the previous block.
    pub parent_hash: B256,
    /// Header time, seconds since the epoch.
    pub timestamp: u64,
    /// Header time, nanoseconds within the second.
    pub timestamp_nanos: u32,
    /// Gas used by the block's valid transactions.
    pub gas_used: u64,
    /// Block gas limit.
    pub gas_limit: u64,
    /// Base fee per gas.
    pub base_fee: u64,
    /// Fee recipient.
    pub miner: Address,
    /// App hash after this block.
    pub app_hash: B256,
    /// Hashes of the transactions that executed (code 0), in order.
    pub tx_hashes: Vec<B256>,
    /// Transactions CometBFT included but abcid refused (non-zero code).
    pub invalid_txs: u32,
    /// Total size of the block's raw transactions, in bytes.
    pub size: u64,
    /// The bloom of every log of the block's transactions; `None` in records
    /// stored before abcid kept it (read back as unknown, never as empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs_bloom: Option<Bloom>,
}

/// The receipt of an executed transaction.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReceiptRecord {
    /// `true` when execution succeeded, `false` on revert or halt.
    pub status: bool,
    /// Gas charged to this transaction.
    pub gas_used: u64,
    /// Gas used by this and earlier transactions of the block.
    pub cumulative_gas_used: u64,
    /// Price per gas actually paid.
    pub effective_gas_price: u128,
    /// Logs emitted.
    pub logs: Vec<Log>,
    /// The created contract, for a deployment.
    pub contract_address: Option<Address>,
}

/// An executed transaction and where it sits.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TxRecord {
    /// The raw EIP-2718 bytes.
    pub raw: Bytes,
    /// The recovered sender.
    pub sender: Address,
    /// Block height.
    pub block_number: u64,
    /// Block hash.
    pub block_hash: B256,
    /// Position among the block's executed transactions.
    pub index: u64,
    /// Execution outcome.
    pub receipt: ReceiptRecord,
    /// Where the block's numbering of logs starts for this transaction (the
    /// logs of the transactions before it), and the block's header time in
    /// seconds, kept at execution so that a receipt is read from this record
    /// alone; `None` in a record stored before abcid kept them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<ReceiptPlace>,
}

/// What a receipt needs of its block ([`TxRecord::place`]).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReceiptPlace {
    /// The block-wide index of the transaction's first log.
    pub first_log_index: u64,
    /// The block's header time, seconds since the epoch.
    pub block_timestamp: u64,
}
