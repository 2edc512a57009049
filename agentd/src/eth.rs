//! A small, fast Ethereum JSON-RPC client over HTTP keep-alive: exactly the
//! calls feth makes, against any standard node (abcid, geth, …).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use alloy_primitives::{Address, B256, U256, U64};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

/// A JSON-RPC failure.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RpcError {
    /// The node could not be reached, or the connection broke or timed out.
    #[error("{url}: {message}")]
    Transport {
        /// Endpoint.
        url: String,
        /// What happened.
        message: String,
        /// Whether the request timed out (it may still have been applied).
        timeout: bool,
    },
    /// The node answered with a JSON-RPC error.
    #[error("{message} (code {code})")]
    Rpc {
        /// JSON-RPC error code.
        code: i64,
        /// Error message.
        message: String,
    },
    /// The answer did not have the expected shape.
    #[error("{method}: unexpected answer: {message}")]
    Decode {
        /// Method called.
        method: String,
        /// What was wrong.
        message: String,
    },
}

/// A block as feth reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct BlockSummary {
    /// Height.
    pub number: U64,
    /// Header time, seconds.
    pub timestamp: U64,
    /// Transaction hashes.
    pub transactions: Vec<B256>,
    /// Gas used.
    #[serde(rename = "gasUsed")]
    pub gas_used: U64,
    /// Base fee, when the chain has EIP-1559.
    #[serde(rename = "baseFeePerGas", default)]
    pub base_fee_per_gas: Option<U256>,
}

/// A receipt as feth reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct ReceiptSummary {
    /// Height of the including block.
    #[serde(rename = "blockNumber")]
    pub block_number: U64,
    /// `0x1` success, `0x0` failure.
    pub status: Option<U64>,
    /// Gas used.
    #[serde(rename = "gasUsed")]
    pub gas_used: U64,
    /// Created contract.
    #[serde(rename = "contractAddress", default)]
    pub contract_address: Option<Address>,
}

/// A reply to `eth_sendRawTransaction` (alone or in a batch).
#[derive(Deserialize)]
struct SendReply {
    #[serde(default)]
    id: u64,
    result: Option<B256>,
    error: Option<SendError>,
}

impl SendReply {
    /// The hash or the node's error; `None` when the reply holds neither.
    fn into_result(self) -> Option<Result<B256, RpcError>> {
        match (self.result, self.error) {
            (_, Some(e)) => Some(Err(RpcError::Rpc {
                code: e.code,
                message: e.message,
            })),
            (Some(hash), None) => Some(Ok(hash)),
            (None, None) => None,
        }
    }
}

/// Appends one `eth_sendRawTransaction` request object to `body`.
fn push_send_call(body: &mut String, id: u64, raw: &[u8]) {
    body.push_str(r#"{"jsonrpc":"2.0","id":"#);
    body.push_str(&id.to_string());
    body.push_str(r#","method":"eth_sendRawTransaction","params":["0x"#);
    body.push_str(&hex::encode(raw));
    body.push_str(r#""]}"#);
}

#[derive(Deserialize)]
struct SendError {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
}

/// A keep-alive JSON-RPC client of one endpoint.
#[derive(Debug)]
pub struct EthClient {
    http: reqwest::Client,
    url: String,
    next_id: AtomicU64,
}

impl EthClient {
    /// A client of `url` whose requests time out after `timeout`.
    pub fn new(url: &str, timeout: Duration) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .pool_max_idle_per_host(1024)
            .tcp_nodelay(true)
            .build()?;
        Ok(Self {
            http,
            url: url.to_string(),
            next_id: AtomicU64::new(1),
        })
    }

    /// The endpoint URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Calls `method` with `params` and decodes the result.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<T, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let reply = self
            .http
            .post(&self.url)
            .json(&body)
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        let status = reply.status();
        let bytes = reply.bytes().await.map_err(|e| self.transport(e))?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| RpcError::Decode {
            method: method.to_string(),
            message: format!(
                "HTTP {status}: {e}: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
            ),
        })?;
        if let Some(err) = value.get("error") {
            return Err(RpcError::Rpc {
                code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
                    .to_string(),
            });
        }
        let result = value.get("result").cloned().unwrap_or(Value::Null);
        serde_json::from_value(result).map_err(|e| RpcError::Decode {
            method: method.to_string(),
            message: e.to_string(),
        })
    }

    fn transport(&self, e: reqwest::Error) -> RpcError {
        RpcError::Transport {
            url: self.url.clone(),
            message: e.to_string(),
            timeout: e.is_timeout(),
        }
    }

    /// `eth_chainId`.
    pub async fn chain_id(&self) -> Result<u64, RpcError> {
        Ok(self.call::<U64>("eth_chainId", json!([])).await?.to())
    }

    /// `eth_blockNumber`.
    pub async fn block_number(&self) -> Result<u64, RpcError> {
        Ok(self.call::<U64>("eth_blockNumber", json!([])).await?.to())
    }

    /// `eth_getBalance` at `latest`.
    pub async fn balance(&self, address: Address) -> Result<U256, RpcError> {
        self.call("eth_getBalance", json!([address, "latest"]))
            .await
    }

    /// `eth_getTransactionCount` at `pending` or `latest`.
    pub async fn nonce(&self, address: Address, pending: bool) -> Result<u64, RpcError> {
        let tag = if pending { "pending" } else { "latest" };
        Ok(self
            .call::<U64>("eth_getTransactionCount", json!([address, tag]))
            .await?
            .to())
    }

    /// `eth_gasPrice`.
    pub async fn gas_price(&self) -> Result<u128, RpcError> {
        Ok(self.call::<U256>("eth_gasPrice", json!([])).await?.to())
    }

    /// `eth_sendRawTransaction`, the hot path: the body is written by hand
    /// and the reply decoded into a typed struct (no `serde_json::Value`).
    pub async fn send_raw(&self, raw: &[u8]) -> Result<B256, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut body = String::with_capacity(raw.len() * 2 + 96);
        push_send_call(&mut body, id, raw);
        let reply = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        let bytes = reply.bytes().await.map_err(|e| self.transport(e))?;
        let reply: SendReply = serde_json::from_slice(&bytes).map_err(|e| RpcError::Decode {
            method: "eth_sendRawTransaction".to_string(),
            message: format!(
                "{e}: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
            ),
        })?;
        reply.into_result().unwrap_or_else(|| {
            Err(RpcError::Decode {
                method: "eth_sendRawTransaction".to_string(),
                message: "neither result nor error".to_string(),
            })
        })
    }

    /// Several `eth_sendRawTransaction` calls in one JSON-RPC batch; one
    /// result per transaction, in order. A node that refuses batches gets
    /// the transactions one by one.
    pub async fn send_raw_batch(&self, raws: &[&[u8]]) -> Vec<Result<B256, RpcError>> {
        if raws.len() == 1 {
            return vec![self.send_raw(raws[0]).await];
        }
        let first_id = self.next_id.fetch_add(raws.len() as u64, Ordering::Relaxed);
        let mut body =
            String::with_capacity(raws.iter().map(|r| r.len() * 2 + 96).sum::<usize>() + 2);
        body.push('[');
        for (i, raw) in raws.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            push_send_call(&mut body, first_id + i as u64, raw);
        }
        body.push(']');
        let sent = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await;
        let bytes = match sent {
            Ok(reply) => reply.bytes().await,
            Err(e) => Err(e),
        };
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) => {
                let err = self.transport(e);
                return raws.iter().map(|_| Err(err.clone())).collect();
            }
        };
        let Ok(replies) = serde_json::from_slice::<Vec<SendReply>>(&bytes) else {
            // Not an array: batches refused (or too large); send one by one.
            let mut out = Vec::with_capacity(raws.len());
            for raw in raws {
                out.push(self.send_raw(raw).await);
            }
            return out;
        };
        let mut out: Vec<Result<B256, RpcError>> = raws
            .iter()
            .map(|_| {
                Err(RpcError::Decode {
                    method: "eth_sendRawTransaction".to_string(),
                    message: "no reply for this transaction in the batch".to_string(),
                })
            })
            .collect();
        for reply in replies {
            let Some(slot) = reply
                .id
                .checked_sub(first_id)
                .and_then(|i| out.get_mut(i as usize))
            else {
                continue;
            };
            if let Some(result) = reply.into_result() {
                *slot = result;
            }
        }
        out
    }

    /// `eth_getTransactionReceipt`.
    pub async fn receipt(&self, hash: B256) -> Result<Option<ReceiptSummary>, RpcError> {
        self.call("eth_getTransactionReceipt", json!([hash])).await
    }

    /// `eth_getBlockByNumber` with transaction hashes.
    pub async fn block(&self, number: u64) -> Result<Option<BlockSummary>, RpcError> {
        self.call("eth_getBlockByNumber", json!([U64::from(number), false]))
            .await
    }

    /// `eth_getBlockByNumber("latest")`.
    pub async fn latest_block(&self) -> Result<BlockSummary, RpcError> {
        self.call::<Option<BlockSummary>>("eth_getBlockByNumber", json!(["latest", false]))
            .await?
            .ok_or_else(|| RpcError::Decode {
                method: "eth_getBlockByNumber".to_string(),
                message: "no latest block".to_string(),
            })
    }
}
