//! abcid's web3 server on a real devnet: CometBFT's mempool as `txpool_*`,
//! and bounded work: a batch over the limit and an oversized body get clear
//! errors, blocks keep coming while the RPC is hammered with log and
//! receipt queries (and every client is answered), and `eth_feeHistory` bodies up to the body limit keep
//! abcid's peak RSS bounded.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{wait_until, TestNet};
use alloy_network::TransactionBuilder;
use alloy_primitives::{Address, U256};
use alloy_provider::Provider;
use alloy_rpc_types_eth::TransactionRequest;
use serde_json::{json, Value};

async fn post(url: &str, body: &Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .json(body)
        .send()
        .await
        .expect("the web3 server answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON answer"))
}

/// Sends only the headers of a POST announcing `length` bytes of body, and
/// returns what the server answers (within 10 s).
async fn announce_body(net: &TestNet, length: usize) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = ("127.0.0.1", net.devnet.state.options.web3_port);
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("web3 listens");
    let head = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    );
    stream
        .write_all(head.as_bytes())
        .await
        .expect("headers sent");
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut answer))
        .await
        .expect("an answer before the body")
        .expect("readable");
    String::from_utf8_lossy(&answer[..n]).into_owned()
}

/// With 3 s between blocks, transactions sent just after a commit wait in
/// CometBFT's mempool (`all,-app-mempool`), where `txpool_status` counts
/// them and `txpool_content` lists them by sender and nonce.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn txpool_shows_what_waits_in_cometbfts_mempool() {
    let net = TestNet::start_with(|o| {
        o.timeout_commit = feth_devnet::GoDuration::from_millis(3000);
        o.patches = "all,-app-mempool".to_string();
    })
    .await;
    let p = net.wallet(&net.root);
    let web3 = net.web3();
    net.wait_blocks(1).await;
    let nonce = p.get_transaction_count(net.root_address).await.unwrap();
    let mut hashes = Vec::new();
    for i in 0..3u64 {
        let tx = TransactionRequest::default()
            .with_to(Address::repeat_byte(0x51))
            .with_value(U256::from(1 + i))
            .with_nonce(nonce + i)
            .with_gas_limit(21_000);
        hashes.push(*p.send_transaction(tx).await.unwrap().tx_hash());
    }
    let (_, status) = post(
        &web3,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "txpool_status", "params": []}),
    )
    .await;
    let r = &status["result"];
    assert_eq!(
        (&r["pending"], &r["queued"]),
        (&json!("0x3"), &json!("0x0")),
        "{status}"
    );
    let none = json!({"evicted": 0, "replaced": 0, "invalid": 0});
    assert_eq!(r["dropped"], none, "{status}");
    let (_, content) = post(
        &web3,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "txpool_content", "params": []}),
    )
    .await;
    let mine = &content["result"]["pending"][net.root_address.to_string()];
    for (i, hash) in hashes.iter().enumerate() {
        let tx = &mine[(nonce + i as u64).to_string()];
        assert_eq!(tx["hash"], json!(hash), "{content}");
        assert_eq!(tx["from"], json!(net.root_address));
        assert_eq!(tx["blockNumber"], Value::Null);
    }
    assert_eq!(content["result"]["queued"], json!({}));
    // They are then committed, and leave the pool.
    for hash in &hashes {
        wait_until(
            "the transaction is committed",
            Duration::from_secs(20),
            || async { p.get_transaction_receipt(*hash).await.unwrap().is_some() },
        )
        .await;
    }
    // CometBFT drops them from its mempool just after the block's Commit.
    let status = json!({"jsonrpc": "2.0", "id": 1, "method": "txpool_status", "params": []});
    wait_until("the mempool is empty", Duration::from_secs(10), || async {
        post(&web3, &status).await.1["result"]["pending"] == "0x0"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_requests_are_refused_and_blocks_go_on_under_heavy_queries() {
    let net =
        TestNet::start_with(|o| o.timeout_commit = feth_devnet::GoDuration::from_millis(300)).await;
    let web3 = net.web3();
    net.wait_blocks(2).await;

    // 1,001 calls in one batch: over the 1,000 limit.
    let batch: Vec<Value> = (0..1_001)
        .map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "eth_blockNumber", "params": []}))
        .collect();
    let (_, answer) = post(&web3, &Value::Array(batch.clone())).await;
    assert_eq!(answer["error"]["code"], -32010, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "batch of 1001 calls is over the limit of 1000: send fewer, or raise --rpc-max-batch"
    );
    let (_, answer) = post(&web3, &Value::Array(batch[..1_000].to_vec())).await;
    assert_eq!(answer.as_array().map(Vec::len), Some(1_000));

    // A body announced over geth's 5 MiB is refused before it is read,
    // naming the flag that raises the limit.
    let answer = announce_body(&net, (5 << 20) + 1).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("--rpc-max-request-bytes"), "{answer}");

    // Sixteen clients asking for every log, the latest receipts and full
    // blocks as fast as they can until the chain has gone 5 blocks on:
    // blocks keep coming and every client is answered. How many blocks and
    // answers a second is the machine's figure, printed only.
    let client = net.client();
    let before = client.block_number().await.unwrap();
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let hammer: Vec<_> = (0..16)
        .map(|i| {
            let (web3, stop) = (web3.clone(), stop.clone());
            tokio::spawn(async move {
                let http = reqwest::Client::new();
                let mut answered = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let (method, params) = match i % 3 {
                        0 => ("eth_getLogs", json!([{"fromBlock": "earliest"}])),
                        1 => ("eth_getBlockReceipts", json!(["latest"])),
                        _ => ("eth_getBlockByNumber", json!(["latest", true])),
                    };
                    let body =
                        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
                    let answer: Value = http
                        .post(&web3)
                        .json(&body)
                        .send()
                        .await
                        .unwrap()
                        .json()
                        .await
                        .unwrap();
                    assert!(answer.get("result").is_some(), "{method}: {answer}");
                    answered += 1;
                }
                answered
            })
        })
        .collect();
    wait_until(
        "5 blocks while the RPC is hammered",
        Duration::from_secs(120),
        || async { client.block_number().await.unwrap() >= before + 5 },
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    let answered: Vec<u64> = futures::future::join_all(hammer)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    eprintln!(
        "5 blocks in {:.1} s while {answered:?} heavy queries were answered",
        started.elapsed().as_secs_f64()
    );
    assert!(answered.iter().all(|&n| n > 0), "{answered:?}");
}

/// abcid's peak resident memory (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("abcid runs");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("a VmHWM line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmHWM in kB");
    kib * 1024
}

/// The most abcid's peak RSS may reach while a client sends the largest
/// `eth_feeHistory` bodies the server takes (5 MiB): before the percentiles
/// were bounded, 400,000 of them took it to 454 MB on a 30-block chain.
const FEE_HISTORY_RSS_BOUND: u64 = 160 << 20;

/// eth_feeHistory within geth's bounds is answered, beyond them refused
/// with geth's text, and bodies up to the 5 MiB limit keep abcid's peak
/// RSS under [`FEE_HISTORY_RSS_BOUND`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fee_history_bodies_up_to_the_limit_keep_abcid_small() {
    let net =
        TestNet::start_with(|o| o.timeout_commit = feth_devnet::GoDuration::from_millis(100)).await;
    let web3 = net.web3();
    net.wait_blocks(10).await;
    let pid = net.devnet.state.abcid_pid.expect("abcid runs");
    let fee_history = |percentiles: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "eth_feeHistory",
               "params": ["0x400", "latest", percentiles]})
    };
    // The largest request served: 1,024 blocks (all there are), 100 percentiles.
    let hundred: Vec<u32> = (0..100).collect();
    let (_, answer) = post(&web3, &fee_history(json!(hundred))).await;
    let rows = answer["result"]["reward"].as_array().map(Vec::len);
    assert!(rows.is_some_and(|n| n >= 10), "{answer}");
    // The read-side attack: 400,000 percentiles.
    let many: Vec<f64> = (0..400_000).map(|i| f64::from(i) / 4_000.0).collect();
    let (_, answer) = post(&web3, &fee_history(json!(many))).await;
    assert_eq!(answer["error"]["code"], -32000, "{answer:.200}");
    assert_eq!(
        answer["error"]["message"],
        "invalid reward percentile: over the query limit 100"
    );
    // Bodies just under the limit, four times.
    let limit = abcid::rpc::RpcConfig::default().max_request_bytes as usize;
    let head = r#"{"jsonrpc":"2.0","id":1,"method":"eth_feeHistory","params":["0x400","latest",[0"#;
    let tail = "]]}";
    let zeros = (limit - head.len() - tail.len()) / 2;
    let body = format!("{head}{}{tail}", ",0".repeat(zeros));
    assert!(body.len() <= limit);
    let client = reqwest::Client::new();
    for _ in 0..4 {
        let answer: Value = client
            .post(&web3)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .expect("the web3 server answers")
            .json()
            .await
            .expect("JSON");
        assert_eq!(
            answer["error"]["message"], "invalid reward percentile: over the query limit 100",
            "{answer:.200}"
        );
    }
    let peak = peak_rss(pid);
    assert!(
        peak < FEE_HISTORY_RSS_BOUND,
        "abcid's peak RSS reached {} MiB",
        peak >> 20
    );
    // And the node still makes blocks.
    net.wait_blocks(2).await;
}
