//! The logs of committed blocks in the shape web3 serves them.

use alloy_primitives::keccak256;
use alloy_rpc_types_eth::Log;

use crate::node::{Node, NodeError};
use crate::store::BlockRecord;

/// Every log of `block`, in geth's order (by transaction, then by position
/// within it), with block, transaction and log indices filled in. A reverted
/// or halted transaction has no logs: the EVM discards them.
pub fn block_logs(node: &Node, block: &BlockRecord) -> Result<Vec<Log>, NodeError> {
    let mut logs = Vec::new();
    for hash in &block.tx_hashes {
        let Some(tx) = node.tx(hash)? else { continue };
        let tx_hash = keccak256(&tx.raw);
        for log in &tx.receipt.logs {
            logs.push(Log {
                inner: log.clone(),
                block_hash: Some(block.hash),
                block_number: Some(block.number),
                block_timestamp: Some(block.timestamp),
                transaction_hash: Some(tx_hash),
                transaction_index: Some(tx.index),
                log_index: Some(logs.len() as u64),
                removed: false,
            });
        }
    }
    Ok(logs)
}
