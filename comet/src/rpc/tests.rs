//! [`Rpc::fetch`] against a fake node on 127.0.0.1 that answers like
//! CometBFT: `/blockchain` (newest first, one height pruned),
//! `/block_results` JSON-RPC batches (at most [`BATCH_LIMIT`] per batch,
//! a batch of one answered with a bare object, one height failing), and
//! `/num_unconfirmed_txs` ([`WAITING`] transactions), and `/status`,
//! `/consensus_params` and `/abci_info` as CometBFT v0.38 writes them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{AbciInfo, BlockParams, Mempool, Rpc};
use crate::facts::{BlockFacts, TimeSource};

/// Requests per batch the fake node accepts.
const BATCH_LIMIT: usize = 2;
/// The height the fake node has no header for.
const PRUNED: u64 = 3;
/// The height whose results the fake node cannot load.
const NO_RESULTS: u64 = 6;
/// Transactions in the fake node's mempool.
const WAITING: u64 = 4321;

/// Header time of `h`: 10:00:00 UTC plus `h` seconds and a fraction.
fn header_time(h: u64) -> String {
    format!("2026-11-21T10:00:{h:02}.25Z")
}

fn header_ns(h: u64) -> i64 {
    let base = 1_795_255_200_i64 * 1_000_000_000; // 2026-11-21T10:00:00Z
    base + i64::try_from(h).expect("small") * 1_000_000_000 + 250_000_000
}

/// Height `h` has `h % 4` txs; the first is invalid when `h` is even.
fn tx_codes(h: u64) -> Vec<u32> {
    (0..h % 4)
        .map(|i| u32::from(i == 0 && h.is_multiple_of(2)))
        .collect()
}

fn blockchain(query: &str) -> Value {
    let param = |k: &str| -> u64 {
        let v = query
            .split('&')
            .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
            .expect("height param");
        v.parse().expect("height")
    };
    let metas: Vec<Value> = (param("minHeight")..=param("maxHeight"))
        .rev()
        .filter(|h| *h != PRUNED)
        .map(|h| {
            json!({"header": {"height": h.to_string(), "time": header_time(h)},
                   "num_txs": (h % 4).to_string()})
        })
        .collect();
    json!({"jsonrpc": "2.0", "id": -1, "result": {"last_height": "30", "block_metas": metas}})
}

fn block_result(req: &Value) -> Value {
    let id = req["id"].clone();
    let h: u64 = req["params"]["height"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("height param");
    if h == NO_RESULTS {
        return json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603,
            "message": "Internal error", "data": format!("could not find results for height #{h}")}});
    }
    let txs: Vec<Value> = tx_codes(h)
        .into_iter()
        .map(|c| json!({"code": c}))
        .collect();
    let txs = if txs.is_empty() {
        Value::Null
    } else {
        Value::Array(txs)
    };
    json!({"jsonrpc": "2.0", "id": id, "result": {"height": h.to_string(), "txs_results": txs}})
}

fn block_results(batch: &[Value]) -> Value {
    if batch.len() > BATCH_LIMIT {
        return json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600,
            "message": "Invalid Request",
            "data": format!("batch request exceeds maximum ({BATCH_LIMIT}) allowed number of requests")}});
    }
    if let [one] = batch {
        return block_result(one);
    }
    Value::Array(batch.iter().map(block_result).collect())
}

/// How the fake node answers `/block_results` batches: the size of each
/// batch asked is recorded, and one of more than `cut_over` heights gets
/// half its answer, then the connection closes (as CometBFT's RPC does when
/// its write timeout passes).
#[derive(Clone, Default)]
struct Batches {
    cut_over: Option<usize>,
    sizes: Arc<Mutex<Vec<usize>>>,
}

/// Reads one HTTP/1.1 request, answers it and closes the connection.
async fn serve(mut conn: TcpStream, batches: Batches) {
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
    let answer = if let Some(q) = target.strip_prefix("/blockchain?") {
        blockchain(q)
    } else if target == "/num_unconfirmed_txs" {
        // CometBFT's shape: `n_txs` is how many are listed (none here), `total` the size.
        json!({"jsonrpc": "2.0", "id": -1, "result": {"n_txs": "0",
            "total": WAITING.to_string(), "total_bytes": "123456", "txs": null}})
    } else if let Some(result) = node_facts(target) {
        json!({"jsonrpc": "2.0", "id": -1, "result": result})
    } else {
        let batch: Vec<Value> = serde_json::from_slice(&buf[head_end..]).expect("batch body");
        batches.sizes.lock().expect("sizes").push(batch.len());
        let cut = batches.cut_over.is_some_and(|n| batch.len() > n);
        let answer = block_results(&batch).to_string();
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            answer.len()
        );
        let sent = if cut { answer.len() / 2 } else { answer.len() };
        let reply = [reply.as_bytes(), &answer.as_bytes()[..sent]].concat();
        conn.write_all(&reply).await.expect("write");
        return;
    };
    let body = answer.to_string();
    let reply = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(reply.as_bytes()).await.expect("write");
}

/// `/status`, `/consensus_params` and `/abci_info` in CometBFT v0.38.17's
/// words (as a devnet's node answers, trimmed of what is not read).
fn node_facts(target: &str) -> Option<Value> {
    Some(match target {
        "/status" => json!({
            "node_info": {"protocol_version": {"p2p": "8", "block": "11", "app": "1"},
                "network": "feth-devnet", "version": "0.38.17", "moniker": "node0",
                "other": {"tx_index": "on", "rpc_address": "tcp://127.0.0.1:26657"}},
            "sync_info": {"latest_block_height": "42", "earliest_block_height": "1",
                "latest_block_time": header_time(42), "catching_up": true},
            "validator_info": {"voting_power": "10"}}),
        // Asked at a stored height only (the caller passes /status's 42).
        "/consensus_params?height=42" => json!({"block_height": "42", "consensus_params": {
            "block": {"max_bytes": "22020096", "max_gas": "10000000"},
            "evidence": {"max_age_num_blocks": "100000", "max_bytes": "1048576"},
            "validator": {"pub_key_types": ["ed25519"]}, "version": {"app": "0"},
            "abci": {"vote_extensions_enable_height": "0"}}}),
        // An application that leaves `data` empty: the field is omitted.
        "/abci_info" => json!({"response": {"version": "0.1.0", "app_version": "1",
            "last_block_height": "42", "last_block_app_hash": "q83vEg=="}}),
        _ => return None,
    })
}

async fn fake_node() -> String {
    fake_node_with(Batches::default()).await
}

async fn fake_node_with(batches: Batches) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            tokio::spawn(serve(conn, batches.clone()));
        }
    });
    url
}

#[tokio::test]
async fn fetch_merges_headers_and_results_and_splits_refused_batches() {
    let rpc = Rpc::new(&fake_node().await, 5, 3).expect("client");
    // 1..=25 spans two /blockchain calls; results for 1..=9 in batches of
    // 5 (refused by the node, split to 2+3, then 1+2) and 4.
    let heights: Vec<u64> = (1..=25).collect();
    let need: Vec<u64> = (1..=9).collect();
    let (facts, missing) = rpc.fetch(&heights, &need).await.expect("fetch");

    let mut want = BTreeMap::new();
    for h in heights.iter().copied() {
        let mut f = BlockFacts {
            txs: Some(h % 4),
            ..BlockFacts::default()
        };
        if h != PRUNED {
            f.time_ns = Some(header_ns(h));
            f.time_src = Some(TimeSource::Rpc);
        }
        if need.contains(&h) && h != NO_RESULTS {
            let codes = tx_codes(h);
            let invalid = codes.iter().filter(|c| **c != 0).count() as u64;
            f.valid = Some(codes.len() as u64 - invalid);
            f.invalid = Some(invalid);
        }
        want.insert(h, f);
    }
    // Spot checks of the fake node's arithmetic: 2 txs, the first invalid.
    assert_eq!(
        (want[&2].valid, want[&2].invalid, want[&PRUNED].time_ns),
        (Some(1), Some(1), None)
    );
    assert_eq!(facts, want);
    assert_eq!(
        missing,
        vec![
            (
                PRUNED,
                "no header (pruned, or not yet committed on this node)".to_string()
            ),
            (
                NO_RESULTS,
                "\"could not find results for height #6\"".to_string()
            ),
        ]
    );
}

#[tokio::test]
async fn a_batch_whose_answer_is_cut_off_is_asked_in_halves_and_later_ones_are_smaller() {
    let batches = Batches {
        cut_over: Some(1),
        ..Batches::default()
    };
    let rpc = Rpc::new(&fake_node_with(batches.clone()).await, 4, 1).expect("client");
    // Batches of 4 (1..=4, 5..=8); the node answers no more than one
    // height whole.
    let need: Vec<u64> = (1..=8).collect();
    let (facts, missing) = rpc.fetch(&need, &need).await.expect("fetch");
    for h in need.iter().filter(|&&h| h != NO_RESULTS) {
        let codes = tx_codes(*h);
        let valid = codes.iter().filter(|c| **c == 0).count() as u64;
        assert_eq!(facts[h].valid, Some(valid), "height {h}");
    }
    assert_eq!(
        missing.iter().map(|m| m.0).collect::<Vec<_>>(),
        [PRUNED, NO_RESULTS]
    );
    // The first batch of 4 is cut off, then its first half of 2: from
    // then on, one height a request; no request was refused or lost.
    let sizes = batches.sizes.lock().expect("sizes").clone();
    assert_eq!(sizes, [4, 2, 1, 1, 1, 1, 1, 1, 1, 1]);
}

#[tokio::test]
async fn mempool_reads_the_waiting_total_not_the_listed_count() {
    let rpc = Rpc::new(&fake_node().await, 5, 3).expect("client");
    assert_eq!(
        rpc.mempool().await.expect("mempool"),
        Mempool {
            txs: WAITING,
            bytes: 123_456
        }
    );
}

#[tokio::test]
async fn status_params_and_abci_info_are_read_as_cometbft_writes_them() {
    let rpc = Rpc::new(&fake_node().await, 5, 3).expect("client");
    let status = rpc.status().await.expect("status");
    assert_eq!(
        (
            status.version.as_str(),
            status.latest_height,
            status.catching_up
        ),
        ("0.38.17", 42, true)
    );
    assert_eq!(
        rpc.block_params(42).await.expect("consensus params"),
        BlockParams {
            max_gas: 10_000_000,
            max_bytes: 22_020_096
        }
    );
    assert_eq!(
        rpc.abci_info().await.expect("abci info"),
        AbciInfo {
            data: String::new(),
            version: "0.1.0".into(),
            app_version: 1
        }
    );
}
