//! A stand-in for a node's RPC on 127.0.0.1 that serves a fixture's recorded
//! ground truth (`tests/fixtures/*.truth.json`: per height the header time,
//! the tx count and each tx's result code, as the real node answered):
//! `/status`, `/blockchain` (newest first, at most 20) and JSON-RPC batches
//! of `block_results`, shaped like CometBFT's answers.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One recorded height.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Block {
    pub height: u64,
    /// Header time, RFC 3339.
    pub time: String,
    pub txs: u64,
    pub codes: Vec<u32>,
}

impl Block {
    pub fn time_ns(&self) -> i64 {
        let t: jiff::Timestamp = self.time.parse().expect("rfc3339 header time");
        i64::try_from(t.as_nanosecond()).expect("fits")
    }

    pub fn invalid(&self) -> u64 {
        self.codes.iter().filter(|c| **c != 0).count() as u64
    }
}

/// A fixture's ground truth.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Truth {
    pub chain_id: String,
    /// The version the node's `/status` reported.
    pub node_version: String,
    pub blocks: Vec<Block>,
}

impl Truth {
    pub fn read(name: &str) -> Self {
        let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("truth fixture");
        let t: Truth = serde_json::from_str(&text).expect("truth json");
        for b in &t.blocks {
            assert_eq!(b.codes.len() as u64, b.txs, "{path}: height {}", b.height);
        }
        t
    }

    pub fn by_height(&self) -> BTreeMap<u64, &Block> {
        self.blocks.iter().map(|b| (b.height, b)).collect()
    }

    fn top(&self) -> u64 {
        self.blocks.iter().map(|b| b.height).max().unwrap_or(0)
    }
}

fn envelope(result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": -1, "result": result})
}

fn status(t: &Truth) -> Value {
    envelope(json!({
        "node_info": {"network": t.chain_id, "version": t.node_version},
        "sync_info": {"latest_block_height": t.top().to_string(), "earliest_block_height": "1"}
    }))
}

fn blockchain(t: &Truth, query: &str) -> Value {
    let param = |k: &str| -> u64 {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .expect("height param")
    };
    let (lo, hi) = (param("minHeight"), param("maxHeight"));
    let metas: Vec<Value> = t
        .blocks
        .iter()
        .rev()
        .filter(|b| (lo..=hi).contains(&b.height))
        .take(20)
        .map(|b| {
            json!({"header": {"height": b.height.to_string(), "time": b.time},
                   "num_txs": b.txs.to_string()})
        })
        .collect();
    envelope(json!({"last_height": t.top().to_string(), "block_metas": metas}))
}

fn block_result(t: &Truth, req: &Value) -> Value {
    let id = req["id"].clone();
    let h: u64 = req["params"]["height"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("height param");
    let Some(b) = t.blocks.iter().find(|b| b.height == h) else {
        return json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603,
            "message": "Internal error", "data": format!("height {h} must be less than or equal to the current blockchain height {}", t.top())}});
    };
    let txs = if b.codes.is_empty() {
        Value::Null
    } else {
        b.codes.iter().map(|c| json!({"code": c})).collect()
    };
    json!({"jsonrpc": "2.0", "id": id, "result": {"height": h.to_string(), "txs_results": txs}})
}

/// Reads one HTTP/1.1 request, answers it and closes the connection.
async fn serve(t: std::sync::Arc<Truth>, mut conn: TcpStream) {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = conn.read(&mut chunk).await.expect("read");
        assert!(n > 0, "request cut short");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let mut chunk = [0u8; 4096];
        let n = conn.read(&mut chunk).await.expect("read body");
        assert!(n > 0, "body cut short");
        buf.extend_from_slice(&chunk[..n]);
    }
    let target = head.split_whitespace().nth(1).expect("request target");
    let answer = if target == "/status" {
        status(&t)
    } else if let Some(q) = target.strip_prefix("/blockchain?") {
        blockchain(&t, q)
    } else {
        let body: Value = serde_json::from_slice(&buf[head_end..]).expect("JSON-RPC body");
        match body {
            Value::Array(batch) => batch.iter().map(|r| block_result(&t, r)).collect(),
            one => block_result(&t, &one),
        }
    };
    let body = answer.to_string();
    let reply = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(reply.as_bytes()).await.expect("write");
}

/// Starts the stand-in on a free 127.0.0.1 port; returns its URL. It lives
/// as long as the test's runtime.
pub async fn serve_truth(t: &Truth) -> String {
    serve_truth_dropping_first(t, 0).await
}

/// [`serve_truth`], but the first `drop` connections are closed unanswered,
/// as a restarting node or a proxy closing idle connections does.
pub async fn serve_truth_dropping_first(t: &Truth, drop: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let t = std::sync::Arc::new(t.clone());
    tokio::spawn(async move {
        let mut dropped = 0;
        while let Ok((conn, _)) = listener.accept().await {
            if dropped < drop {
                dropped += 1;
                continue;
            }
            tokio::spawn(serve(t.clone(), conn));
        }
    });
    url
}
