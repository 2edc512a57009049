//! `txpool_status` and `txpool_content`, read from the pool abcid's
//! transactions wait in: CometBFT's mempool, or with `app-mempool` the
//! node's own pool. abcid admits no nonce gaps, so every
//! transaction is `pending` and `queued` is always empty. CometBFT's RPC
//! lists at most 100 mempool transactions, so `txpool_content` shows the
//! first 100 while `txpool_status` counts them all.

use std::collections::BTreeMap;

use alloy_consensus::transaction::Recovered;
use alloy_primitives::U64;
use alloy_rpc_types_eth::Transaction;
use jsonrpsee::RpcModule;
use serde::Serialize;

use super::comet::Mempool;
use super::error::{internal, server_error, RpcResult};
use super::Web3;

/// The most transactions CometBFT's `unconfirmed_txs` lists.
const CONTENT_LIMIT: u32 = 100;

/// `txpool_status`.
#[derive(Debug, Clone, Serialize)]
struct Status {
    pending: U64,
    queued: U64,
}

/// Transactions by sender (EIP-55 checksummed, as geth writes them), then by
/// nonce (decimal).
type BySender = BTreeMap<String, BTreeMap<String, Transaction>>;

/// `txpool_content`.
#[derive(Debug, Clone, Serialize)]
struct Content {
    pending: BySender,
    queued: BySender,
}

/// Registers `txpool_status` and `txpool_content`.
pub fn register(m: &mut RpcModule<Web3>) -> anyhow::Result<()> {
    m.register_async_method("txpool_status", |_, w, _| async move {
        let pool = mempool(&w, 0).await?;
        RpcResult::Ok(Status {
            pending: U64::from(pool.total),
            queued: U64::ZERO,
        })
    })?;
    m.register_async_method("txpool_content", |_, w, _| async move {
        let pool = mempool(&w, CONTENT_LIMIT).await?;
        let mut pending = BySender::new();
        for raw in &pool.txs {
            // A transaction CheckTx admitted verifies; one that no longer
            // does (a recheck is pending) is left out.
            let Ok(tx) = w.node.verify(raw).map_err(internal)? else {
                continue;
            };
            let nonce = alloy_consensus::Transaction::nonce(&tx.envelope).to_string();
            let rpc = Transaction {
                inner: Recovered::new_unchecked(tx.envelope, tx.sender),
                block_hash: None,
                block_number: None,
                transaction_index: None,
                effective_gas_price: None,
                block_timestamp: None,
            };
            let sender = tx.sender.to_checksum(None);
            pending.entry(sender).or_default().insert(nonce, rpc);
        }
        RpcResult::Ok(Content {
            pending,
            queued: BTreeMap::new(),
        })
    })?;
    Ok(())
}

/// The pool's size and its first `limit` transactions: the node's own
/// (`app-mempool`), else CometBFT's.
async fn mempool(w: &Web3, limit: u32) -> RpcResult<Mempool> {
    if let Some((total, txs)) = w.node.pooled(limit as usize).map_err(internal)? {
        return Ok(Mempool {
            total: total as u64,
            txs: txs.into_iter().map(Vec::from).collect(),
        });
    }
    w.comet.mempool(limit).await.map_err(server_error)
}
