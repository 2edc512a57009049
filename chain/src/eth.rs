//! A small, fast Ethereum JSON-RPC client over HTTP keep-alive: exactly the
//! calls feth makes, against any standard node (abcid, geth, …).
//!
//! Reads are retried over transient transport errors (reset, refused,
//! timeout: [`feth_comet::retry`], 5 tries, 100 ms doubling to 2 s) and counted
//! ([`EthClient::retries`]). `eth_sendRawTransaction` is not retried here: a
//! timed-out submission may have been applied, so the caller decides (the
//! load engine resends the very same signed bytes after its own per-sender
//! back-off and counts it as a resend; the same bytes can never be applied
//! twice, at worst they answer `already known` or `nonce too low`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use alloy_primitives::{Address, Bytes, B256, U256, U64};
use anyhow::Context;
use feth_comet::retry::{is_transient, retry, Backoff, RetryCounter, POOL_IDLE};
use futures::{StreamExt, TryStreamExt};
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
    /// Block gas limit.
    #[serde(rename = "gasLimit", default)]
    pub gas_limit: Option<U64>,
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

/// A typed reply to one hot-path call (alone or in a batch).
#[derive(Deserialize)]
struct Reply<T> {
    #[serde(default)]
    id: u64,
    result: Option<T>,
    error: Option<ReplyError>,
}

impl<T> Reply<T> {
    /// The result or the node's error; `None` when the reply holds neither.
    fn into_result(self) -> Option<Result<T, RpcError>> {
        match (self.result, self.error) {
            (_, Some(e)) => Some(Err(RpcError::Rpc {
                code: e.code,
                message: e.message,
            })),
            (Some(value), None) => Some(Ok(value)),
            (None, None) => None,
        }
    }
}

const SEND_RAW: &str = "eth_sendRawTransaction";
const NONCE: &str = "eth_getTransactionCount";
const BALANCE: &str = "eth_getBalance";

/// Whether `method` submits a transaction (not retried blindly).
fn is_send(method: &str) -> bool {
    method.starts_with("eth_send")
}

/// Appends `n` in decimal.
fn push_u64(body: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    body.extend_from_slice(&digits[i..]);
}

/// Appends `bytes` as a quoted `0x…` hex string.
fn push_hex(body: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    body.reserve(bytes.len() * 2 + 4);
    body.extend_from_slice(b"\"0x");
    for b in bytes {
        body.push(DIGITS[usize::from(b >> 4)]);
        body.push(DIGITS[usize::from(b & 0xf)]);
    }
    body.push(b'"');
}

/// Appends the opening of a request object, up to its params' `[`.
fn push_call_head(body: &mut Vec<u8>, id: u64, method: &str) {
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    push_u64(body, id);
    body.extend_from_slice(br#","method":""#);
    body.extend_from_slice(method.as_bytes());
    body.extend_from_slice(br#"","params":["#);
}

/// Appends one `eth_sendRawTransaction` request object to `body`.
fn push_send_call(body: &mut Vec<u8>, id: u64, raw: &[u8]) {
    push_call_head(body, id, SEND_RAW);
    push_hex(body, raw);
    body.extend_from_slice(b"]}");
}

/// Appends one `eth_getTransactionCount` request object to `body`.
fn push_nonce_call(body: &mut Vec<u8>, id: u64, address: Address, pending: bool) {
    push_address_call(body, id, NONCE, address, pending);
}

/// Appends one request object of `method(address, "pending"|"latest")`.
fn push_address_call(body: &mut Vec<u8>, id: u64, method: &str, address: Address, pending: bool) {
    push_call_head(body, id, method);
    push_hex(body, address.as_slice());
    body.extend_from_slice(if pending {
        br#","pending"]}"#.as_slice()
    } else {
        br#","latest"]}"#.as_slice()
    });
}

/// A JSON-RPC batch request body of `n` calls written by `push_call`
/// (given each call's index), numbered from `first_id`.
fn batch_body(
    first_id: u64,
    n: usize,
    per_call: usize,
    mut push_call: impl FnMut(&mut Vec<u8>, u64, usize),
) -> Vec<u8> {
    let mut body = Vec::with_capacity(n * per_call + 2);
    body.push(b'[');
    for i in 0..n {
        if i > 0 {
            body.push(b',');
        }
        push_call(&mut body, first_id + i as u64, i);
    }
    body.push(b']');
    body
}

#[derive(Deserialize)]
struct ReplyError {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
}

/// Block reads [`EthClient::blocks`] keeps in flight.
pub const BLOCKS_IN_FLIGHT: usize = 8;

/// A keep-alive JSON-RPC client of one endpoint.
#[derive(Debug)]
pub struct EthClient {
    http: reqwest::Client,
    url: String,
    /// `url`, parsed once rather than on every request.
    target: reqwest::Url,
    next_id: AtomicU64,
    retries: RetryCounter,
}

impl EthClient {
    /// A client of `url` whose requests time out after `timeout`.
    pub fn new(url: &str, timeout: Duration) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .pool_max_idle_per_host(1024)
            .pool_idle_timeout(POOL_IDLE)
            .tcp_nodelay(true)
            .build()
            .context("cannot build the HTTP client")?;
        let target = reqwest::Url::parse(url).with_context(|| format!("bad endpoint URL {url}"))?;
        Ok(Self {
            http,
            url: url.to_string(),
            target,
            next_id: AtomicU64::new(1),
            retries: RetryCounter::default(),
        })
    }

    /// Reads sent again after a transient transport error so far.
    pub fn retries(&self) -> u64 {
        self.retries.get()
    }

    /// POSTs `body` (JSON; each try shares its bytes) and returns the status
    /// and the answer's bytes;
    /// retried over transient transport errors when `idempotent`.
    async fn exchange(
        &self,
        body: Bytes,
        idempotent: bool,
    ) -> Result<(reqwest::StatusCode, Bytes), RpcError> {
        let once = || async {
            let reply = self
                .http
                .post(self.target.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.0.clone())
                .send()
                .await?;
            let status = reply.status();
            Ok::<_, reqwest::Error>((status, Bytes::from(reply.bytes().await?)))
        };
        let policy = if idempotent {
            Backoff::default()
        } else {
            Backoff {
                tries: 1,
                ..Backoff::default()
            }
        };
        retry(policy, Some(&self.retries), is_transient, once)
            .await
            .map_err(|e| self.transport(e))
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
        let body = serde_json::to_vec(&body).map_err(|e| RpcError::Decode {
            method: method.to_string(),
            message: format!("cannot encode the request: {e}"),
        })?;
        let (status, bytes) = self.exchange(body.into(), !is_send(method)).await?;
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
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut body = Vec::with_capacity(128);
        push_nonce_call(&mut body, id, address, pending);
        Ok(self.typed_call::<U64>(NONCE, body).await?.to())
    }

    /// `eth_gasPrice`.
    pub async fn gas_price(&self) -> Result<u128, RpcError> {
        Ok(self.call::<U256>("eth_gasPrice", json!([])).await?.to())
    }

    /// Posts a JSON body written by hand (calls of `method`); returns the
    /// reply's bytes.
    async fn post(&self, method: &str, body: Vec<u8>) -> Result<impl AsRef<[u8]>, RpcError> {
        Ok(self.exchange(body.into(), !is_send(method)).await?.1)
    }

    /// One hot-path call whose request `body` is written by hand; the reply
    /// is decoded into a typed struct (no `serde_json::Value`).
    async fn typed_call<T: DeserializeOwned>(
        &self,
        method: &str,
        body: Vec<u8>,
    ) -> Result<T, RpcError> {
        let reply = self.post(method, body).await?;
        let bytes = reply.as_ref();
        let reply: Reply<T> = serde_json::from_slice(bytes).map_err(|e| RpcError::Decode {
            method: method.to_string(),
            message: format!(
                "{e}: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
            ),
        })?;
        reply.into_result().unwrap_or_else(|| {
            Err(RpcError::Decode {
                method: method.to_string(),
                message: "neither result nor error".to_string(),
            })
        })
    }

    /// Posts a batch `body` of `n` calls of `method` numbered from
    /// `first_id`; one result per call, in order. `None` when the node
    /// refused the batch (its answer is not an array).
    async fn typed_batch<T: DeserializeOwned>(
        &self,
        method: &str,
        body: Vec<u8>,
        first_id: u64,
        n: usize,
    ) -> Option<Vec<Result<T, RpcError>>> {
        let bytes = match self.post(method, body).await {
            Ok(bytes) => bytes,
            Err(err) => return Some((0..n).map(|_| Err(err.clone())).collect()),
        };
        let replies = serde_json::from_slice::<Vec<Reply<T>>>(bytes.as_ref()).ok()?;
        let mut out: Vec<Option<Result<T, RpcError>>> = (0..n).map(|_| None).collect();
        for reply in replies {
            let Some(slot) = reply
                .id
                .checked_sub(first_id)
                .and_then(|i| out.get_mut(usize::try_from(i).ok()?))
            else {
                continue;
            };
            *slot = reply.into_result();
        }
        Some(
            out.into_iter()
                .map(|r| {
                    r.unwrap_or_else(|| {
                        Err(RpcError::Decode {
                            method: method.to_string(),
                            message: "no reply for this call in the batch".to_string(),
                        })
                    })
                })
                .collect(),
        )
    }

    /// `eth_getTransactionCount` of several addresses in one JSON-RPC batch;
    /// one result per address, in order. A node that refuses batches is
    /// asked one address at a time.
    pub async fn nonces(&self, addresses: &[Address], pending: bool) -> Vec<Result<u64, RpcError>> {
        if addresses.len() != 1 {
            let first_id = self
                .next_id
                .fetch_add(addresses.len() as u64, Ordering::Relaxed);
            let body = batch_body(first_id, addresses.len(), 120, |body, id, i| {
                push_nonce_call(body, id, addresses[i], pending);
            });
            let batch = self.typed_batch::<U64>(NONCE, body, first_id, addresses.len());
            if let Some(results) = batch.await {
                return results.into_iter().map(|r| r.map(|n| n.to())).collect();
            }
        }
        let mut out = Vec::with_capacity(addresses.len());
        for address in addresses {
            out.push(self.nonce(address.to_owned(), pending).await);
        }
        out
    }

    /// `eth_getBalance` at `latest` of several addresses in one JSON-RPC
    /// batch; one result per address, in order. A node that refuses batches
    /// is asked one address at a time.
    pub async fn balances(&self, addresses: &[Address]) -> Vec<Result<U256, RpcError>> {
        if addresses.len() != 1 {
            let first_id = self
                .next_id
                .fetch_add(addresses.len() as u64, Ordering::Relaxed);
            let body = batch_body(first_id, addresses.len(), 120, |body, id, i| {
                push_address_call(body, id, BALANCE, addresses[i], false);
            });
            let batch = self.typed_batch::<U256>(BALANCE, body, first_id, addresses.len());
            if let Some(results) = batch.await {
                return results;
            }
        }
        let mut out = Vec::with_capacity(addresses.len());
        for address in addresses {
            out.push(self.balance(address.to_owned()).await);
        }
        out
    }

    /// `eth_sendRawTransaction`, the hot path: the body is written by hand
    /// and the reply decoded into a typed struct (no `serde_json::Value`).
    pub async fn send_raw(&self, raw: &[u8]) -> Result<B256, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut body = Vec::with_capacity(raw.len() * 2 + 96);
        push_send_call(&mut body, id, raw);
        self.typed_call(SEND_RAW, body).await
    }

    /// Several `eth_sendRawTransaction` calls in one JSON-RPC batch; one
    /// result per transaction, in order. A node that refuses batches gets
    /// the transactions one by one.
    pub async fn send_raw_batch(&self, raws: &[&[u8]]) -> Vec<Result<B256, RpcError>> {
        if raws.len() != 1 {
            let first_id = self.next_id.fetch_add(raws.len() as u64, Ordering::Relaxed);
            let per_call = raws.iter().map(|r| r.len()).max().unwrap_or(0) * 2 + 96;
            let body = batch_body(first_id, raws.len(), per_call, |body, id, i| {
                push_send_call(body, id, raws[i]);
            });
            if let Some(results) = self.typed_batch(SEND_RAW, body, first_id, raws.len()).await {
                return results;
            }
            // Batches refused (or too large): send one by one.
        }
        let mut out = Vec::with_capacity(raws.len());
        for raw in raws {
            out.push(self.send_raw(raw).await);
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

    /// Blocks `heights`, in order, read [`BLOCKS_IN_FLIGHT`] at a time (one
    /// round trip per block would leave a distant or slow reader behind the
    /// chain); `None` where the node has no such block.
    pub async fn blocks(
        &self,
        heights: std::ops::RangeInclusive<u64>,
    ) -> Result<Vec<Option<BlockSummary>>, RpcError> {
        futures::stream::iter(heights)
            .map(|h| self.block(h))
            .buffered(BLOCKS_IN_FLIGHT)
            .try_collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_written_bodies_are_json_rpc_batches() {
        let raws: [&[u8]; 2] = [&[0x02, 0xab], &[0xff; 3]];
        let body = batch_body(7, raws.len(), 16, |body, id, i| {
            push_send_call(body, id, raws[i]);
        });
        let calls: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            calls,
            json!([
                {"jsonrpc": "2.0", "id": 7, "method": SEND_RAW, "params": ["0x02ab"]},
                {"jsonrpc": "2.0", "id": 8, "method": SEND_RAW, "params": ["0xffffff"]},
            ])
        );
        let mut body = Vec::new();
        push_nonce_call(&mut body, u64::MAX, Address::repeat_byte(0xa1), true);
        let call: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            call,
            json!({"jsonrpc": "2.0", "id": u64::MAX, "method": NONCE,
                   "params": [Address::repeat_byte(0xa1), "pending"]})
        );
        let mut zero = Vec::new();
        push_u64(&mut zero, 0);
        assert_eq!(zero, b"0");
    }
}
