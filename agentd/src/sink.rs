//! An Ethereum JSON-RPC sink for benchmarks: accepts every transaction and
//! answers the few reads the agent makes. A minimal HTTP/1.1 server with
//! keep-alive; loopback only.

use std::net::SocketAddr;

use alloy_primitives::keccak256;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Serves the sink on `addr` until the process ends.
pub async fn serve(addr: SocketAddr) -> Result<()> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot bind the sink to {addr}"))?;
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(async move {
            // A client that goes away mid-request is not an error here.
            let _ = connection(stream).await;
        });
    }
}

async fn connection(stream: TcpStream) -> Result<()> {
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
        let reply = answer(&body).to_string();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            reply.len()
        );
        write.write_all(head.as_bytes()).await?;
        write.write_all(reply.as_bytes()).await?;
    }
}

fn answer(body: &[u8]) -> Value {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}});
    };
    if let Value::Array(calls) = request {
        return Value::Array(calls.iter().map(one).collect());
    }
    one(&request)
}

fn one(request: &Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let result = match method {
        "eth_chainId" => json!("0x2328"),
        "eth_blockNumber" => json!("0x1"),
        "eth_getTransactionCount" => json!("0x0"),
        "eth_gasPrice" => json!("0x3b9aca00"),
        "eth_maxPriorityFeePerGas" => json!("0x1"),
        "eth_getBlockByNumber" => json!({
            "number": "0x1", "timestamp": "0x1", "transactions": [], "gasUsed": "0x0",
            "baseFeePerGas": "0x3b9aca00"
        }),
        "eth_sendRawTransaction" => {
            let raw = request["params"][0].as_str().unwrap_or_default();
            let bytes = hex::decode(raw.trim_start_matches("0x")).unwrap_or_default();
            json!(keccak256(bytes))
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
pub(crate) async fn start_local() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    tokio::spawn(serve(addr));
    for _ in 0..100 {
        if TcpStream::connect(addr).await.is_ok() {
            return format!("http://{addr}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the sink did not come up on {addr}");
}
