//! The calls abcid makes to CometBFT's RPC: `broadcast_tx_sync`, which runs
//! CheckTx and puts the transaction in the mempool, and the mempool reads
//! behind `txpool_*` (`num_unconfirmed_txs`, `unconfirmed_txs`).

use std::time::Duration;

use base64::Engine;
use serde::Deserialize;

/// Why CometBFT did not take a transaction.
#[derive(Debug, thiserror::Error)]
pub enum BroadcastError {
    /// CheckTx refused it.
    #[error("{log}")]
    Rejected {
        /// abcid's code.
        code: u32,
        /// abcid's message.
        log: String,
    },
    /// The mempool holds as many transactions or bytes as it may.
    #[error("txpool is full")]
    MempoolFull(String),
    /// The same bytes are already in the mempool (or its cache).
    #[error("already known")]
    AlreadyKnown,
    /// CometBFT could not be reached or answered something unexpected.
    #[error("consensus node unavailable: {0}")]
    Unavailable(String),
}

/// A keep-alive HTTP client of CometBFT's RPC.
#[derive(Debug, Clone)]
pub struct CometClient {
    http: reqwest::Client,
    url: String,
}

/// A JSON-RPC reply of CometBFT: its result, or its error.
#[derive(Deserialize)]
struct RpcReply<T> {
    result: Option<T>,
    error: Option<RpcError>,
}

#[derive(Deserialize)]
struct BroadcastResult {
    code: u32,
    #[serde(default)]
    log: String,
}

#[derive(Deserialize)]
struct RpcError {
    #[serde(default)]
    message: String,
    #[serde(default)]
    data: String,
}

impl CometClient {
    /// A client of the CometBFT RPC at `url` (for example `http://127.0.0.1:26657`).
    pub fn new(url: &str) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .timeout(Duration::from_secs(30))
            .build()?;
        Ok(Self {
            http,
            url: url.trim_end_matches('/').to_string(),
        })
    }

    /// The CometBFT RPC this client talks to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Calls `method` with `params`; `Err` is the transport's failure.
    async fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<RpcReply<T>, reqwest::Error> {
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.http
            .post(&self.url)
            .json(&body)
            .send()
            .await?
            .json()
            .await
    }

    /// Submits `raw` through CheckTx.
    pub async fn broadcast_tx_sync(&self, raw: &[u8]) -> Result<(), BroadcastError> {
        let tx = base64::engine::general_purpose::STANDARD.encode(raw);
        let reply: RpcReply<BroadcastResult> = self
            .call("broadcast_tx_sync", serde_json::json!({ "tx": tx }))
            .await
            .map_err(|e| BroadcastError::Unavailable(e.to_string()))?;
        match (reply.result, reply.error) {
            (Some(r), _) if r.code == 0 => Ok(()),
            (Some(r), _) => Err(BroadcastError::Rejected {
                code: r.code,
                log: r.log,
            }),
            (None, Some(e)) => Err(classify(&format!("{} {}", e.message, e.data))),
            (None, None) => Err(BroadcastError::Unavailable(
                "empty reply from broadcast_tx_sync".to_string(),
            )),
        }
    }
}

/// CometBFT's mempool: how many transactions it holds, and the first of them.
#[derive(Debug, Clone, Default)]
pub struct Mempool {
    /// Transactions in the mempool.
    pub total: u64,
    /// The raw bytes of the first ones (at most CometBFT's page of 100).
    pub txs: Vec<Vec<u8>>,
}

#[derive(Deserialize)]
struct MempoolResult {
    total: String,
    #[serde(default)]
    txs: Option<Vec<String>>,
}

impl CometClient {
    /// The mempool's size, with the raw bytes of up to `limit` of its
    /// transactions (CometBFT serves at most 100 at a time).
    pub async fn mempool(&self, limit: u32) -> Result<Mempool, String> {
        let (method, params) = if limit == 0 {
            ("num_unconfirmed_txs", serde_json::json!({}))
        } else {
            (
                "unconfirmed_txs",
                serde_json::json!({ "limit": limit.to_string() }),
            )
        };
        let reply: RpcReply<MempoolResult> = self
            .call(method, params)
            .await
            .map_err(|e| format!("consensus node unavailable: {e}"))?;
        let result = match (reply.result, reply.error) {
            (Some(r), _) => r,
            (None, Some(e)) => return Err(format!("{method}: {} {}", e.message, e.data)),
            (None, None) => return Err(format!("empty reply from {method}")),
        };
        let total = result
            .total
            .parse()
            .map_err(|_| format!("{method}: total {:?} is not a number", result.total))?;
        let txs = result
            .txs
            .unwrap_or_default()
            .iter()
            .map(|tx| base64::engine::general_purpose::STANDARD.decode(tx))
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{method}: a transaction is not base64: {e}"))?;
        Ok(Mempool { total, txs })
    }
}

fn classify(text: &str) -> BroadcastError {
    if text.contains("mempool is full") {
        BroadcastError::MempoolFull(text.trim().to_string())
    } else if text.contains("already exists in cache") {
        BroadcastError::AlreadyKnown
    } else {
        BroadcastError::Unavailable(text.trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_cometbft_errors() {
        assert!(matches!(
            classify("Internal error mempool is full: number of txs 10 (max: 10), total txs bytes 1000 (max: 1073741824)"),
            BroadcastError::MempoolFull(_)
        ));
        assert!(matches!(
            classify("Internal error tx already exists in cache"),
            BroadcastError::AlreadyKnown
        ));
        assert!(matches!(
            classify("something else"),
            BroadcastError::Unavailable(_)
        ));
    }
}
