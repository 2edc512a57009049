//! `txpool_status`, `txpool_content` and `txpool_inspect`, read from the
//! pool abcid's transactions wait in: CometBFT's mempool, or with
//! `app-mempool` the node's own pool. Without `nonce-queue` abcid admits no
//! nonce gap, so every transaction is `pending`; with it, those waiting for a
//! predecessor are `queued` (they sit in the same pool, and are told apart by
//! the node's queue). CometBFT's RPC lists at most 100 mempool transactions,
//! so the listings show the first 100 pending and 100 queued while
//! `txpool_status` counts them all. `txpool_status` also counts the
//! transactions dropped after they were accepted, by reason, and
//! `txpool_dropped` tells why one was ([`crate::dropped`]). A node that
//! forwards its pool (`--pool-peers`) adds `forwarded`: what its peers were
//! sent, what failed and what their full queues left out.

use std::collections::BTreeMap;

use alloy_consensus::transaction::Recovered;
use alloy_consensus::Transaction as _;
use alloy_primitives::{TxKind, B256, U64};
use alloy_rpc_types_eth::Transaction;
use jsonrpsee::RpcModule;
use serde::Serialize;

use super::comet::Mempool;
use super::error::{internal, internal_failure, server_error, RpcResult};
use super::forward::{ForwardCounts, Forwarder};
use super::Web3;
use crate::dropped::DropCounts;
use crate::tx::VerifiedTx;

/// The most transactions CometBFT's `unconfirmed_txs` lists, and the most
/// queued ones listed.
const CONTENT_LIMIT: u32 = 100;

/// `txpool_status`: geth's two counts, and abcid's drops by reason since
/// it started.
#[derive(Debug, Clone, Serialize)]
struct Status {
    pending: U64,
    queued: U64,
    dropped: DropCounts,
    #[serde(skip_serializing_if = "Option::is_none")]
    forwarded: Option<ForwardCounts>,
}

/// Entries by sender (EIP-55 checksummed, as geth writes them), then by
/// nonce (decimal).
type BySender<T> = BTreeMap<String, BTreeMap<String, T>>;

/// `txpool_content` (`T` = a transaction) and `txpool_inspect` (`T` = its
/// one-line summary).
#[derive(Debug, Clone, Serialize)]
struct Listing<T> {
    pending: BySender<T>,
    queued: BySender<T>,
}

/// Registers `txpool_status`, `txpool_content`, `txpool_inspect` and
/// `txpool_dropped` (why a transaction accepted earlier was dropped: `null`
/// when it was not, or is no longer remembered; [`crate::dropped`]).
pub fn register(m: &mut RpcModule<Web3>) -> anyhow::Result<()> {
    m.register_async_method("txpool_status", |_, w, _| async move {
        let pool = mempool(&w, 0).await?;
        let queued = w.node.queued_len().map_err(internal)? as u64;
        RpcResult::Ok(Status {
            pending: U64::from(pool.total.saturating_sub(queued)),
            queued: U64::from(queued),
            dropped: w.node.drop_counts().map_err(internal)?,
            forwarded: w.forward.as_ref().map(Forwarder::counts),
        })
    })?;
    m.register_method("txpool_dropped", |p, w, _| {
        let hash: B256 = p.one()?;
        w.node.dropped(&hash).map_err(internal)
    })?;
    m.register_async_method("txpool_content", |_, w, _| async move {
        listing(&w, rpc_transaction).await
    })?;
    m.register_async_method("txpool_inspect", |_, w, _| async move {
        listing(&w, summary).await
    })?;
    Ok(())
}

/// The pool's first pending and queued transactions, each shown by `show`.
async fn listing<T>(w: &Web3, show: fn(VerifiedTx) -> T) -> RpcResult<Listing<T>> {
    let pool = mempool(w, CONTENT_LIMIT).await?;
    let (queued_hashes, queued) = w.node.queued(CONTENT_LIMIT as usize).map_err(internal)?;
    let mut listing = Listing {
        pending: BySender::new(),
        queued: BySender::new(),
    };
    for raw in &pool.txs {
        // A transaction CheckTx admitted verifies; one that no longer does
        // (a recheck is pending) is left out.
        let Ok(tx) = w.node.verify(raw).map_err(internal)? else {
            continue;
        };
        if !queued_hashes.contains(&tx.hash) {
            insert(&mut listing.pending, tx, show);
        }
    }
    for tx in queued {
        insert(&mut listing.queued, tx, show);
    }
    Ok(listing)
}

/// Files `tx`, shown by `show`, under its sender and nonce.
fn insert<T>(by_sender: &mut BySender<T>, tx: VerifiedTx, show: fn(VerifiedTx) -> T) {
    let sender = tx.sender.to_checksum(None);
    let nonce = tx.envelope.nonce().to_string();
    by_sender.entry(sender).or_default().insert(nonce, show(tx));
}

/// A pooled transaction as `eth_getTransactionByHash` shows a pending one.
fn rpc_transaction(tx: VerifiedTx) -> Transaction {
    Transaction {
        inner: Recovered::new_unchecked(tx.envelope, tx.sender),
        block_hash: None,
        block_number: None,
        transaction_index: None,
        effective_gas_price: None,
        block_timestamp: None,
    }
}

/// geth's `txpool_inspect` line: `TO: VALUE wei + GAS gas × PRICE wei` (the
/// fee cap for a dynamic-fee transaction, as geth's `GasPrice` is).
fn summary(tx: VerifiedTx) -> String {
    let e = &tx.envelope;
    let to = match e.kind() {
        TxKind::Call(to) => to.to_checksum(None),
        TxKind::Create => "contract creation".to_string(),
    };
    format!(
        "{to}: {} wei + {} gas × {} wei",
        e.value(),
        e.gas_limit(),
        e.max_fee_per_gas()
    )
}

/// The pool's size and its first `limit` transactions: the node's own
/// (`app-mempool`, read on the blocking pool: Commit holds the pool while
/// it rechecks it, and the server's workers never wait for that), else
/// CometBFT's.
async fn mempool(w: &Web3, limit: u32) -> RpcResult<Mempool> {
    let node = w.node.clone();
    let pooled = tokio::task::spawn_blocking(move || node.pooled(limit as usize))
        .await
        .map_err(|e| internal_failure(format!("the pool read failed: {e}")))?;
    if let Some((total, txs)) = pooled.map_err(internal)? {
        return Ok(Mempool {
            total: total as u64,
            txs: txs.into_iter().map(Vec::from).collect(),
        });
    }
    w.comet.mempool(limit).await.map_err(server_error)
}
