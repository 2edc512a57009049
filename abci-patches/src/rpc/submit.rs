//! `eth_sendRawTransaction`: without `app-mempool`, forwarded to CometBFT's
//! RPC (`broadcast_tx_sync`, which runs CheckTx over the mempool connection);
//! with it, admitted by CheckTx on a blocking worker into the node's own
//! pool ([`crate::app_pool`]) and forwarded to the peers' pools
//! ([`super::forward`]). Both answer alike: the hash, or geth's error text
//! with abcid's code in `data.abci_code`.
//!
//! With `app-mempool`, `abcid_forwardTransactions [[RAW, …]]` is how a peer
//! forwards: each admitted as `eth_sendRawTransaction` would, in order,
//! never forwarded again; the answer counts what was admitted, known and
//! refused.

use std::time::Instant;

use alloy_primitives::{keccak256, Bytes, B256};
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;

use super::comet::BroadcastError;
use super::error::{
    internal, internal_failure, invalid_params, server_error, unavailable, RpcResult, SERVER_ERROR,
};
use super::forward::{self, Received};
use super::Web3;
use crate::app_pool::PoolError;
use crate::mempool::CheckKind;
use crate::node::Refused;
use crate::patches::{Patch, Patches};

/// Registers `eth_sendRawTransaction` for the route `patches` choose.
pub fn register(m: &mut RpcModule<Web3>, patches: Patches) -> anyhow::Result<()> {
    if patches.has(Patch::AppMempool) {
        m.register_blocking_method("eth_sendRawTransaction", |p, w, _| {
            let raw: Bytes = p.one()?;
            match w.submit(&raw)? {
                Some(Ok(hash)) => {
                    if let Some(forward) = &w.forward {
                        forward.offer(&raw);
                    }
                    RpcResult::Ok(hash)
                }
                Some(Err(refused)) => Err(answer(refused.into())),
                None => Err(internal_failure("the node has no pool")),
            }
        })?;
        m.register_blocking_method(forward::METHOD, |p, w, _| {
            let batch: Vec<Bytes> = p.one()?;
            receive(&w, &batch)
        })?;
    } else {
        m.register_async_method("eth_sendRawTransaction", |p, w, _| async move {
            let raw: Bytes = p.one()?;
            w.node.recover_ahead(&raw);
            w.comet.broadcast_tx_sync(&raw).await.map_err(answer)?;
            RpcResult::Ok(keccak256(&raw))
        })?;
    }
    Ok(())
}

impl Web3 {
    /// `app-mempool`: [`crate::node::Node::submit`], its CheckTx timed in the metrics (a
    /// transaction the pool refuses before CheckTx is not).
    fn submit(&self, raw: &Bytes) -> RpcResult<Option<Result<B256, Refused>>> {
        let started = Instant::now();
        let submitted = self.node.submit(raw).map_err(internal)?;
        if let (Some(metrics), Some(verdict)) = (&self.metrics, &submitted) {
            if !matches!(verdict, Err(Refused::Pool(_))) {
                metrics.check_tx(CheckKind::New, started.elapsed(), verdict.is_ok());
            }
        }
        Ok(submitted)
    }
}

/// A peer's forwarded `batch`, admitted in order without being forwarded
/// again.
fn receive(w: &Web3, batch: &[Bytes]) -> RpcResult<Received> {
    if batch.len() > forward::MAX_BATCH {
        return Err(invalid_params(format!(
            "{} forwards at most {} transactions in one call, not {}",
            forward::METHOD,
            forward::MAX_BATCH,
            batch.len()
        )));
    }
    let mut received = Received::default();
    for raw in batch {
        match w.submit(raw)? {
            Some(Ok(_)) => received.admitted += 1,
            Some(Err(Refused::Pool(PoolError::Known))) => received.known += 1,
            Some(Err(_)) => received.refused += 1,
            None => return Err(internal_failure("the node has no pool")),
        }
    }
    Ok(received)
}

impl From<Refused> for BroadcastError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Tx(e) => BroadcastError::Rejected {
                code: e.code(),
                log: e.to_string(),
            },
            Refused::Pool(PoolError::Known) => BroadcastError::AlreadyKnown,
            Refused::Pool(full @ PoolError::Full { .. }) => {
                BroadcastError::MempoolFull(full.to_string())
            }
        }
    }
}

/// The JSON-RPC error for a transaction not taken.
fn answer(e: BroadcastError) -> ErrorObjectOwned {
    match e {
        BroadcastError::Rejected { code, log } => ErrorObjectOwned::owned(
            SERVER_ERROR,
            log,
            Some(serde_json::json!({ "abci_code": code })),
        ),
        e @ BroadcastError::Unavailable(_) => unavailable(e.to_string()),
        other => server_error(other.to_string()),
    }
}
