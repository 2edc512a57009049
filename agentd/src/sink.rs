//! An Ethereum JSON-RPC sink for benchmarks: accepts every transaction and
//! answers the few reads the agent makes. A minimal HTTP/1.1 server with
//! keep-alive; loopback only.
//!
//! Without inclusion its chain stays at block 1 and every transaction stays
//! in the agent's flight; with it, each `eth_blockNumber` seals what was
//! accepted since into a new block (timestamped now, every receipt status 1),
//! so the agent completes every transaction. The last 1,024 blocks are kept.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use crate::sync::lock;
use alloy_primitives::{keccak256, B256};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Blocks kept for the agent to read.
const KEPT_BLOCKS: usize = 1024;

/// The sink's chain (see the module docs).
#[derive(Debug, Default)]
struct Chain {
    include: bool,
    height: u64,
    pending: Vec<B256>,
    blocks: VecDeque<(u64, u64, Vec<B256>)>,
}

impl Chain {
    fn block_number(&mut self) -> u64 {
        if self.include && !self.pending.is_empty() {
            self.height += 1;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let txs = std::mem::take(&mut self.pending);
            self.blocks.push_back((self.height, now, txs));
            if self.blocks.len() > KEPT_BLOCKS {
                self.blocks.pop_front();
            }
        }
        self.height.max(1)
    }

    fn block(&self, number: u64) -> Option<&(u64, u64, Vec<B256>)> {
        self.blocks.iter().find(|b| b.0 == number)
    }
}

type Shared = Arc<Mutex<Chain>>;

/// Serves the sink on `addr` until the process ends; with `include`, it
/// makes blocks of what it accepts.
pub async fn serve(addr: SocketAddr, include: bool) -> Result<()> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot bind the sink to {addr}"))?;
    let chain: Shared = Arc::new(Mutex::new(Chain {
        include,
        ..Default::default()
    }));
    loop {
        let (stream, _) = listener.accept().await?;
        let chain = chain.clone();
        tokio::spawn(async move {
            // A client that goes away mid-request is not an error here.
            let _ = connection(stream, chain).await;
        });
    }
}

async fn connection(stream: TcpStream, chain: Shared) -> Result<()> {
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut line = String::new();
    loop {
        let mut length = 0usize;
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        loop {
            line.clear();
            reader.read_line(&mut line).await?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).await?;
        let reply = answer(&body, &chain).to_string();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            reply.len()
        );
        write.write_all(head.as_bytes()).await?;
        write.write_all(reply.as_bytes()).await?;
    }
}

fn answer(body: &[u8], chain: &Shared) -> Value {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}});
    };
    let mut chain = lock(chain);
    if let Value::Array(calls) = request {
        return Value::Array(calls.iter().map(|c| one(c, &mut chain)).collect());
    }
    one(&request, &mut chain)
}

/// Block `number` of `chain` as `eth_getBlockByNumber` answers it.
fn block_json(chain: &Chain, number: u64) -> Value {
    let (txs, time) = chain
        .block(number)
        .map_or((Vec::new(), 1), |(_, t, txs)| (txs.clone(), *t));
    json!({
        "number": format!("0x{number:x}"), "timestamp": format!("0x{time:x}"),
        "transactions": txs, "gasUsed": "0x0", "baseFeePerGas": "0x3b9aca00"
    })
}

fn one(request: &Value, chain: &mut Chain) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let result = match method {
        "eth_chainId" => json!("0x2328"),
        "eth_blockNumber" => json!(format!("0x{:x}", chain.block_number())),
        "eth_getTransactionCount" => json!("0x0"),
        "eth_gasPrice" => json!("0x3b9aca00"),
        "eth_maxPriorityFeePerGas" => json!("0x1"),
        "eth_getBlockByNumber" => {
            let number = request["params"][0]
                .as_str()
                .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok())
                .unwrap_or(chain.height.max(1));
            block_json(chain, number)
        }
        "eth_getBlockReceipts" => {
            let number = request["params"][0]
                .as_str()
                .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok())
                .unwrap_or(0);
            let txs = chain.block(number).map_or(Vec::new(), |b| b.2.clone());
            json!(txs
                .iter()
                .map(|h| json!({"transactionHash": h, "status": "0x1"}))
                .collect::<Vec<_>>())
        }
        "eth_sendRawTransaction" => {
            let raw = request["params"][0].as_str().unwrap_or_default();
            let bytes = hex::decode(raw.trim_start_matches("0x")).unwrap_or_default();
            let hash = keccak256(bytes);
            if chain.include {
                chain.pending.push(hash);
            }
            json!(hash)
        }
        _ => {
            return json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})
        }
    };
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// Starts a sink on a free loopback port in this process; returns its URL
/// once it answers.
#[cfg(test)]
pub(crate) async fn start_local(include: bool) -> String {
    let port = crate::devnet::free_port().unwrap();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    tokio::spawn(serve(addr, include));
    for _ in 0..100 {
        if TcpStream::connect(addr).await.is_ok() {
            return format!("http://{addr}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the sink did not come up on {addr}");
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use alloy_primitives::Address;
    use feth_chain::eth::EthClient;

    use super::*;

    #[tokio::test]
    async fn the_client_gets_one_answer_per_batched_call_in_order() {
        let url = start_local(false).await;
        let client = EthClient::new(&url, Duration::from_secs(5)).unwrap();
        let raws: Vec<Vec<u8>> = (0u8..5).map(|i| vec![i; 3]).collect();
        let refs: Vec<&[u8]> = raws.iter().map(Vec::as_slice).collect();
        let hashes = client.send_raw_batch(&refs).await;
        let expected: Vec<B256> = raws.iter().map(alloy_primitives::keccak256).collect();
        let got: Vec<B256> = hashes.into_iter().map(Result::unwrap).collect();
        assert_eq!(got, expected);
        let addresses = [Address::repeat_byte(1), Address::repeat_byte(2)];
        let nonces = client.nonces(&addresses, true).await;
        assert_eq!(nonces.len(), 2);
        assert!(nonces.iter().all(|n| matches!(n, Ok(0))));
        assert_eq!(client.nonce(addresses[0], false).await.unwrap(), 0);
    }
}
