//! `eth_sendRawTransaction`: without `app-mempool`, forwarded to CometBFT's
//! RPC (`broadcast_tx_sync`, which runs CheckTx over the mempool connection);
//! with it, admitted by CheckTx on a blocking worker into the node's own
//! pool ([`crate::app_pool`]). Both answer alike: the hash, or geth's error
//! text with abcid's code in `data.abci_code`.

use alloy_primitives::{keccak256, Bytes};
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;

use super::comet::BroadcastError;
use super::error::{
    internal, internal_failure, server_error, unavailable, RpcResult, SERVER_ERROR,
};
use super::Web3;
use crate::app_pool::PoolError;
use crate::node::Refused;
use crate::patches::{Patch, Patches};

/// Registers `eth_sendRawTransaction` for the route `patches` choose.
pub fn register(m: &mut RpcModule<Web3>, patches: Patches) -> anyhow::Result<()> {
    if patches.has(Patch::AppMempool) {
        m.register_blocking_method("eth_sendRawTransaction", |p, w, _| {
            let raw: Bytes = p.one()?;
            match w.node.submit(&raw).map_err(internal)? {
                Some(Ok(hash)) => RpcResult::Ok(hash),
                Some(Err(refused)) => Err(answer(refused.into())),
                None => Err(internal_failure("the node has no pool")),
            }
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
