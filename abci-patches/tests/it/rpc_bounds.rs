//! Every bound of the EVM and fee-history methods and of filters: the
//! request just inside it is served, the one just outside it is refused with
//! geth's code and message (abci-patches/README.md, "Bounds").

use std::time::Duration;

use abcid::rpc::{RpcConfig, Web3};
use alloy_primitives::{Address, Bytes};
use jsonrpsee::server::ServerHandle;
use jsonrpsee::RpcModule;
use serde_json::{json, Value};

use crate::common::*;

/// Init code of a contract that loops until it runs out of gas
/// (`JUMPDEST PUSH1 0 JUMP`).
fn loop_init() -> Bytes {
    hex::decode("6004600c60003960046000f35b600056")
        .expect("valid hex")
        .into()
}

/// A node with the loop contract deployed, and its web3 module with `config`.
fn fixture(config: RpcConfig) -> (TestNode, RpcModule<Web3>, Address) {
    let node = TestNode::new();
    let a = key(1);
    let response = node.block(&[Tx::deploy(0, loop_init()).sign(&a)]);
    assert_eq!(response.tx_results[0].code, 0);
    let rpc = abcid::rpc::module(node.node.clone(), &closed_port_url(), config).expect("module");
    (node, rpc, a.address.create(0))
}

/// [`fixture`]'s node behind a real web3 server on 127.0.0.1: the node, the
/// server's URL and handle, and the loop contract.
async fn served(config: RpcConfig) -> (TestNode, String, ServerHandle, Address) {
    let (node, _rpc, looping) = fixture(config.clone());
    let (addr, handle) = abcid::rpc::serve(
        node.node.clone(),
        "127.0.0.1:0".parse().expect("an address"),
        &closed_port_url(),
        config,
        None,
    )
    .await
    .expect("the server starts");
    (node, format!("http://{addr}"), handle, looping)
}

fn assert_error(result: Result<Value, Value>, code: i64, message: &str) {
    let error = result.expect_err(message);
    assert_eq!(error["code"], code, "{error}");
    assert_eq!(error["message"], message, "{error}");
}

#[tokio::test]
async fn fee_history_takes_at_most_100_ascending_percentiles_within_0_and_100() {
    let (_node, rpc, _) = fixture(RpcConfig::default());
    let fee_history = |percentiles: Value| {
        call(
            &rpc,
            "eth_feeHistory",
            json!(["0x2", "latest", percentiles]),
        )
    };
    let hundred: Vec<f64> = (0..100).map(f64::from).collect();
    let answer = fee_history(json!(hundred)).await.expect("100 percentiles");
    assert_eq!(answer["reward"][0].as_array().map(Vec::len), Some(100));
    let hundred_and_one: Vec<f64> = (0..101).map(|p| f64::from(p) * 0.99).collect();
    assert_error(
        fee_history(json!(hundred_and_one)).await,
        -32000,
        "invalid reward percentile: over the query limit 100",
    );
    assert!(fee_history(json!([0.0, 100.0])).await.is_ok());
    assert_error(
        fee_history(json!([100.5])).await,
        -32000,
        "invalid reward percentile: 100.500000",
    );
    assert_error(
        fee_history(json!([-1])).await,
        -32000,
        "invalid reward percentile: -1.000000",
    );
    assert_error(
        fee_history(json!([10, 10])).await,
        -32000,
        "invalid reward percentile: #0:10.000000 >= #1:10.000000",
    );
}

#[tokio::test]
async fn fee_history_truncates_the_block_count_and_refuses_a_block_past_the_head() {
    let (_node, rpc, _) = fixture(RpcConfig::default());
    let all = call(&rpc, "eth_feeHistory", json!(["0x401", "latest", [50]]))
        .await
        .expect("1025 blocks are truncated, not refused");
    assert_eq!(all["oldestBlock"], "0x0");
    assert_eq!(all["gasUsedRatio"].as_array().map(Vec::len), Some(2));
    assert_error(
        call(&rpc, "eth_feeHistory", json!(["0x1", "0x2", []])).await,
        -32000,
        "request beyond head block: requested 2, head 1",
    );
    assert!(call(&rpc, "eth_feeHistory", json!(["0x1", "0x1", []]))
        .await
        .is_ok());
}

/// The gas a call used, as `eth_createAccessList` reports it.
async fn gas_used(rpc: &RpcModule<Web3>, to: Address, gas: u64) -> u64 {
    let answer = call(
        rpc,
        "eth_createAccessList",
        json!([{"to": to, "gas": format!("{gas:#x}")}]),
    )
    .await
    .expect("an access list");
    let hex = answer["gasUsed"].as_str().expect("gasUsed");
    u64::from_str_radix(&hex[2..], 16).expect("hex")
}

#[tokio::test]
async fn calls_run_with_at_most_the_gas_cap() {
    let cap = 100_000;
    let config = RpcConfig {
        gas_cap: cap,
        ..RpcConfig::default()
    };
    let (_node, rpc, looping) = fixture(config);
    // A loop burns all the gas it is given: just inside the cap it gets
    // what it asks, above it the cap.
    assert_eq!(gas_used(&rpc, looping, cap - 1).await, cap - 1);
    assert_eq!(gas_used(&rpc, looping, cap).await, cap);
    assert_eq!(gas_used(&rpc, looping, cap + 1).await, cap);
    assert_eq!(gas_used(&rpc, looping, 30_000_000).await, cap);
    assert_error(
        call(&rpc, "eth_estimateGas", json!([{"to": looping}])).await,
        -32000,
        "gas required exceeds allowance (100000)",
    );
}

#[tokio::test]
async fn a_call_past_its_deadline_is_aborted_with_geths_message() {
    let config = RpcConfig {
        evm_timeout: Duration::from_millis(1),
        ..RpcConfig::default()
    };
    let (_node, rpc, looping) = fixture(config);
    // A transfer runs no instruction: the clock is not even read.
    let transfer = json!([{"from": key(1).address, "to": key(2).address, "value": "0x1"}]);
    assert_eq!(
        call(&rpc, "eth_call", transfer.clone()).await,
        Ok(json!("0x"))
    );
    assert_eq!(
        call(&rpc, "eth_estimateGas", transfer).await,
        Ok(json!("0x5208"))
    );
    // Millions of instructions take longer than a millisecond anywhere.
    let looped = json!([{"to": looping, "gas": "0x1c9c380"}]);
    assert_error(
        call(&rpc, "eth_call", looped.clone()).await,
        -32000,
        "execution aborted (timeout = 1ms)",
    );
    assert_error(
        call(&rpc, "eth_estimateGas", looped).await,
        -32000,
        "execution aborted (timeout = 1ms)",
    );
}

#[tokio::test]
async fn one_in_process_caller_installs_at_most_its_filters() {
    let config = RpcConfig {
        max_filters_per_client: 2,
        ..RpcConfig::default()
    };
    let (_node, rpc, _) = fixture(config);
    let first = call(&rpc, "eth_newBlockFilter", json!([]))
        .await
        .expect("first");
    call(&rpc, "eth_newFilter", json!([{}]))
        .await
        .expect("second");
    assert_error(
        call(&rpc, "eth_newPendingTransactionFilter", json!([])).await,
        -32000,
        "too many filters installed by this client (2): uninstall some with eth_uninstallFilter",
    );
    assert_eq!(
        call(&rpc, "eth_uninstallFilter", json!([first])).await,
        Ok(json!(true))
    );
    assert!(call(&rpc, "eth_newBlockFilter", json!([])).await.is_ok());
}

/// Every kind of subscription takes a place: one connection holds at most
/// its bound, refused by name, and a place is freed when its subscription
/// ends. (In process a connection is its own client: the per-client bound,
/// by peer address over the network, is the lower one here.)
#[tokio::test]
async fn one_connection_opens_at_most_its_subscriptions_of_every_kind() {
    let config = RpcConfig {
        max_subscriptions_per_connection: 3,
        max_subscriptions_per_client: 2,
        ..RpcConfig::default()
    };
    let (_node, rpc, _) = fixture(config);
    let logs = ("logs", json!({}));
    let first = rpc
        .subscribe_unbounded("eth_subscribe", logs.clone())
        .await
        .expect("the first subscription");
    let _heads = rpc
        .subscribe_unbounded("eth_subscribe", ["newHeads"])
        .await
        .expect("the second");
    let third = rpc
        .subscribe_unbounded("eth_subscribe", ["newPendingTransactions"])
        .await;
    let Err(error) = third else {
        panic!("a third subscription of this client is refused");
    };
    let error = error.to_string();
    assert!(
        error.contains("too many subscriptions from this client address (2): unsubscribe some first, or raise --rpc-max-subscriptions-per-client"),
        "{error}"
    );
    drop(first);
    // The place is freed once the subscription ends (asynchronously).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if rpc
            .subscribe_unbounded("eth_subscribe", ["newPendingTransactions"])
            .await
            .is_ok()
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the place was never freed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The connection's bound, when it is the lower, refuses by name too.
#[tokio::test]
async fn a_subscription_over_the_connections_bound_is_refused_naming_its_flag() {
    let config = RpcConfig {
        max_subscriptions_per_connection: 1,
        max_subscriptions_per_client: 3,
        ..RpcConfig::default()
    };
    let (_node, rpc, _) = fixture(config);
    let _heads = rpc
        .subscribe_unbounded("eth_subscribe", ["newHeads"])
        .await
        .expect("the first subscription");
    let Err(error) = rpc
        .subscribe_unbounded("eth_subscribe", ["newPendingTransactions"])
        .await
    else {
        panic!("a second subscription on this connection is refused");
    };
    let error = error.to_string();
    assert!(
        error.contains("too many subscriptions on this connection (1): unsubscribe some first, or raise --rpc-max-subscriptions"),
        "{error}"
    );
}

/// `eth_newBlockFilter` over HTTP from `client`: the filter id, or the
/// error message.
async fn new_block_filter(client: &reqwest::Client, url: &str) -> Result<String, String> {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_newBlockFilter", "params": []});
    let answer: Value = client
        .post(url)
        .json(&request)
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    match answer["result"].as_str() {
        Some(id) => Ok(id.to_string()),
        None => Err(answer["error"]["message"].to_string()),
    }
}

#[tokio::test]
async fn one_client_address_installs_at_most_its_filters_over_any_connections() {
    let config = RpcConfig {
        max_filters_per_client: 2,
        ..RpcConfig::default()
    };
    let (_node, url, handle, _) = served(config).await;
    // No connection is kept: every request comes on a new one.
    let from = |ip: [u8; 4]| {
        reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .local_address(std::net::IpAddr::from(ip))
            .build()
            .expect("a client")
    };
    let (one, other) = (from([127, 0, 0, 1]), from([127, 0, 0, 2]));
    for _ in 0..2 {
        new_block_filter(&one, &url).await.expect("within the cap");
    }
    assert_eq!(
        new_block_filter(&one, &url).await,
        Err("\"too many filters installed by this client (2): uninstall some with eth_uninstallFilter\"".into()),
        "a third filter from the same address, on a new connection"
    );
    new_block_filter(&other, &url)
        .await
        .expect("another address has its own cap");
    handle.stop().expect("stops");
}

#[tokio::test]
async fn one_batch_runs_at_most_its_budget_of_executions() {
    let config = RpcConfig {
        batch_executions: 2,
        ..RpcConfig::default()
    };
    let (_node, url, handle, looping) = served(config).await;
    let request = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "eth_call",
               "params": [{"to": looping, "gas": "0x5208"}]})
    };
    let client = reqwest::Client::new();
    let batch = |n: u64| {
        let body: Vec<Value> = (0..n).map(request).collect();
        client.post(&url).json(&body).send()
    };
    let errors = |answers: Vec<Value>| -> Vec<String> {
        answers
            .iter()
            .filter_map(|a| a["error"]["message"].as_str().map(str::to_string))
            .collect()
    };
    // Each call halts out of gas (an error of its own); none is over budget.
    let inside: Vec<Value> = batch(2).await.expect("sent").json().await.expect("JSON");
    assert_eq!(inside.len(), 2);
    assert!(errors(inside)
        .iter()
        .all(|e| e.starts_with("execution halted")));
    let outside: Vec<Value> = batch(3).await.expect("sent").json().await.expect("JSON");
    let over: Vec<String> = errors(outside)
        .into_iter()
        .filter(|e| !e.starts_with("execution halted"))
        .collect();
    assert_eq!(
        over,
        ["batch exceeds its budget of 2 EVM executions: send the remaining calls in another batch"]
    );
    // Single requests are not batches: no budget applies.
    for id in 0..3 {
        let one: Value = client
            .post(&url)
            .json(&request(id))
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("JSON");
        assert!(one["error"]["message"]
            .as_str()
            .is_some_and(|e| e.starts_with("execution halted")));
    }
    handle.stop().expect("stops");
}

/// Sends `head` (and nothing more) on a new connection to `url`'s server
/// and reads what it answers within 10 s; the open connection is returned.
async fn ask(url: &str, head: &str) -> (tokio::net::TcpStream, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("listens");
    stream.write_all(head.as_bytes()).await.expect("sent");
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut answer))
        .await
        .expect("an answer within 10 s")
        .expect("readable");
    (stream, String::from_utf8_lossy(&answer[..n]).into_owned())
}

fn block_number_request() -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;
    format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Two kept-alive connections served under `config`, then a third refused
/// with `status` and a `-32005` error holding `message` and naming `flag`;
/// once the first closes, a new one is served (polled: the server notices
/// the close when it reads the end).
async fn third_connection_refused(config: RpcConfig, status: &str, message: &str, flag: &str) {
    let (_node, url, handle, _) = served(config).await;
    let (first, answer) = ask(&url, &block_number_request()).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (_second, answer) = ask(&url, &block_number_request()).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Both idle now, kept alive.
    let (_, answer) = ask(&url, &block_number_request()).await;
    assert!(
        answer.starts_with(&format!("HTTP/1.1 {status}")),
        "{answer}"
    );
    assert!(
        answer.contains("-32005") && answer.contains(message) && answer.contains(flag),
        "{answer}"
    );
    drop(first);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (_, answer) = ask(&url, &block_number_request()).await;
        if answer.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{answer}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.stop().expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_address_holds_at_most_its_connections() {
    let config = RpcConfig {
        max_connections_per_client: 2,
        ..RpcConfig::default()
    };
    let message = "too many connections from this client address (2)";
    third_connection_refused(config, "429", message, "--rpc-max-connections-per-client").await;
}

/// The server's bound counts connections kept alive with no request in
/// flight (jsonrpsee's own counted requests): two idle ones hold it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_kept_alive_connections_count_against_the_servers_bound() {
    let config = RpcConfig {
        max_connections: 2,
        ..RpcConfig::default()
    };
    let message = "too many connections on this server (2)";
    third_connection_refused(config, "503", message, "--rpc-max-connections").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_is_refused_naming_the_limit_and_its_flag() {
    let config = RpcConfig {
        max_request_bytes: 1_000,
        ..RpcConfig::default()
    };
    let (_node, url, handle, _) = served(config).await;
    let head = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1001\r\n\r\n";
    let (_, answer) = ask(&url, head).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.contains("request body of 1001 bytes is over the limit of 1000")
            && answer.contains("--rpc-max-request-bytes"),
        "{answer}"
    );
    // Just inside it is served.
    let (_, answer) = ask(&url, &block_number_request()).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(
        RpcConfig::default().max_request_bytes,
        5 << 20,
        "geth's limit"
    );
    handle.stop().expect("stops");
}

/// A POST of `body` in chunks of at most 400 bytes, its length unannounced.
fn chunked_request(body: &str) -> String {
    let mut request = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_string();
    for chunk in body.as_bytes().chunks(400) {
        let text = std::str::from_utf8(chunk).expect("ASCII");
        request += &format!("{:x}\r\n{text}\r\n", chunk.len());
    }
    request + "0\r\n\r\n"
}

/// A chunked body is read within the limit: one over it is refused by
/// name as one that announces its length is (jsonrpsee's own read answered
/// `500`), and one inside it is served whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunked_body_over_the_limit_is_refused_naming_the_limit_and_its_flag() {
    let config = RpcConfig {
        max_request_bytes: 1_000,
        ..RpcConfig::default()
    };
    let (_node, url, handle, _) = served(config).await;
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"eth_chainId","params":[]}"#;
    // The call padded with whitespace, which JSON allows after a value.
    let padded = |length: usize| format!("{call}{}", " ".repeat(length - call.len()));
    let (_, answer) = ask(&url, &chunked_request(&padded(1_001))).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.contains("request body (chunked) is over the limit of 1000 bytes")
            && answer.contains("--rpc-max-request-bytes"),
        "{answer}"
    );
    let (mut stream, mut answer) = ask(&url, &chunked_request(&padded(1_000))).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Its answer may come in two reads: the head, then the body.
    while !answer.contains(r#""id":7"#) {
        use tokio::io::AsyncReadExt;
        let mut more = vec![0u8; 4096];
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut more));
        let n = read.await.expect("the body within 10 s").expect("readable");
        assert_ne!(n, 0, "closed before the body: {answer}");
        answer += &String::from_utf8_lossy(&more[..n]);
    }
    assert!(answer.contains(r#""result":"0x"#), "{answer}");
    handle.stop().expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_address_has_at_most_its_requests_in_flight() {
    let config = RpcConfig {
        max_inflight_per_client: 1,
        evm_timeout: Duration::from_secs(30),
        gas_cap: u64::MAX,
        ..RpcConfig::default()
    };
    let (_node, url, handle, looping) = served(config).await;
    // A call looping through 30 M gas holds the client's one place (sent
    // again whenever it ends, however fast this machine runs it)…
    let slow_call = || {
        let url = url.clone();
        let looped = json!([{"to": looping, "gas": "0x1c9c380"}]);
        tokio::spawn(async move { call_http(&url, "eth_call", looped).await })
    };
    let mut slow = slow_call();
    // …so a request on another connection is refused while it runs.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let refused = loop {
        if let Err(error) = call_http(&url, "eth_blockNumber", json!([])).await {
            break error;
        }
        assert!(std::time::Instant::now() < deadline, "never refused");
        if slow.is_finished() {
            slow = slow_call();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(refused["code"], -32005, "{refused}");
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("(1)") && message.contains("--rpc-max-inflight-per-client"),
        "{refused}"
    );
    // Once it is answered (out of gas), the client is served again.
    let answer = slow.await.expect("the call ends");
    assert!(answer.is_err_and(|e| e["message"] == "execution halted: OutOfGas(Basic)"));
    assert!(call_http(&url, "eth_blockNumber", json!([])).await.is_ok());
    handle.stop().expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_limit_is_refused_naming_the_limit_and_its_flag() {
    let config = RpcConfig {
        max_response_bytes: 300,
        ..RpcConfig::default()
    };
    let (_node, url, handle, _) = served(config).await;
    // A small answer is served; a block with its header is over 300 bytes.
    assert!(call_http(&url, "eth_blockNumber", json!([])).await.is_ok());
    let error = call_http(&url, "eth_getBlockByNumber", json!(["latest", false]))
        .await
        .expect_err("over the limit");
    assert_eq!(error["code"], -32008, "{error}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("over the limit of 300 bytes")
            && message.contains("--rpc-max-response-bytes"),
        "{error}"
    );
    handle.stop().expect("stops");
}

/// A batch of `calls` `eth_blockNumber`s over HTTP: its answer.
async fn post_batch(url: &str, calls: usize) -> Value {
    let batch: Vec<Value> = (0..calls)
        .map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "eth_blockNumber", "params": []}))
        .collect();
    reqwest::Client::new()
        .post(url)
        .json(&batch)
        .send()
        .await
        .expect("the node answers")
        .json()
        .await
        .expect("JSON")
}

/// A batch of more calls than `--rpc-max-batch`, and a batch whose answer is
/// over `--rpc-max-response-bytes`, are refused naming the limit and the
/// flag (jsonrpsee's own refusals name neither).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_over_a_limit_is_refused_naming_the_limit_and_its_flag() {
    let config = RpcConfig {
        max_batch: 3,
        max_response_bytes: 100,
        ..RpcConfig::default()
    };
    let (_node, url, handle, _) = served(config).await;
    let answer = post_batch(&url, 2).await;
    assert_eq!(answer.as_array().map(Vec::len), Some(2), "{answer}");
    let answer = post_batch(&url, 4).await;
    assert_eq!(answer["error"]["code"], -32010, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "batch of 4 calls is over the limit of 3: send fewer, or raise --rpc-max-batch"
    );
    // Each answer is 40 bytes (`{"id":0,"jsonrpc":"2.0","result":"0x1"}`):
    // two fit in 100, three do not.
    let answer = post_batch(&url, 3).await;
    assert_eq!(answer["error"]["code"], -32011, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("batch's response is over the limit of 100 bytes")
            && message.contains("--rpc-max-response-bytes"),
        "{answer}"
    );
    handle.stop().expect("stops");
}
