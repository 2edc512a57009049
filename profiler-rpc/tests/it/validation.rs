//! Bad inputs get JSON-RPC errors; one session at a time; disabling mid-block.

use std::time::Duration;

use feth_profiler_rpc::api::codes;
use feth_profiler_rpc::{EnableParams, SessionState};
use jsonrpsee::core::client::{ClientT, Error as RpcError};
use jsonrpsee::core::params::{ArrayParams, ObjectParams};
use jsonrpsee::http_client::HttpClientBuilder;
use serde_json::{json, Value};

use crate::common::{drive_blocks, serial, Node, TEST_HZ};

fn object(fields: Value) -> ObjectParams {
    let mut params = ObjectParams::new();
    for (name, value) in fields.as_object().expect("object").clone() {
        params.insert(&name, value).expect("param");
    }
    params
}

/// Asserts that `result` is a JSON-RPC error with `code`, returning its message.
fn rpc_error(result: Result<Value, RpcError>, code: i32, what: &str) -> String {
    match result {
        Err(RpcError::Call(error)) => {
            assert_eq!(error.code(), code, "{what}: {}", error.message());
            error.message().to_string()
        }
        other => panic!("{what}: expected JSON-RPC error {code}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_get_json_rpc_errors() {
    let _turn = serial().await;
    let node = Node::start("validation-chain").await;
    let raw = HttpClientBuilder::default()
        .build(node.server.url())
        .expect("client");

    // (params, what the message must name: the parameter, or the offending value)
    let bad_enables = [
        (json!({"blocks": -1}), "blocks"),
        (json!({"blocks": 0}), "blocks"),
        (json!({"blocks": 1_000_000}), "blocks"),
        (json!({"blocks": 201}), "blocks"), // above the retention count (200)
        (json!({"blocks": 1e30}), "floating point"),
        (json!({"blocks": "3"}), "string"),
        (json!({"frequency_hz": 0}), "frequency_hz"),
        (json!({"frequency_hz": 1001}), "frequency_hz"),
        (json!({"frequency_hz": -99}), "frequency_hz"),
        (json!({"block": 3}), "unknown field `block`"),
    ];
    for (params, mentions) in bad_enables {
        let result = raw
            .request::<Value, _>("profiler_enable", object(params.clone()))
            .await;
        let message = rpc_error(result, codes::INVALID_PARAMS, &params.to_string());
        assert!(message.contains(mentions), "{params}: {message}");
    }
    let mut positional = ArrayParams::new();
    positional.insert(3).expect("param");
    positional.insert(5000).expect("param");
    let result = raw.request::<Value, _>("profiler_enable", positional).await;
    rpc_error(result, codes::INVALID_PARAMS, "positional [3, 5000]");

    let bad_fetches = [
        json!({"height": "../../etc/passwd"}),
        json!({"height": "/etc/passwd"}),
        json!({"height": -1}),
        json!({"height": 1.5}),
        json!({"height": 1, "kind": "../../../etc/passwd"}),
        json!({"height": 1, "kind": "svg/../pb"}),
        json!({"height": 1, "role": "check_tx/../../x"}),
        json!({"height": 1, "file": "meta.json"}),
        json!({"kind": "svg"}),
    ];
    for params in bad_fetches {
        let result = raw
            .request::<Value, _>("profiler_fetch", object(params.clone()))
            .await;
        rpc_error(result, codes::INVALID_PARAMS, &params.to_string());
    }
    let result = raw
        .request::<Value, _>("profiler_fetch", object(json!({"height": 999})))
        .await;
    let message = rpc_error(result, codes::NOT_FOUND, "unknown height");
    assert!(message.contains("999"), "{message}");
    let result = raw
        .request::<Value, _>("profiler_fetch", object(json!({"height": "latest"})))
        .await;
    rpc_error(result, codes::NOT_FOUND, "latest with nothing captured");

    let mut extra = ArrayParams::new();
    extra.insert(1).expect("param");
    let result = raw.request::<Value, _>("profiler_status", extra).await;
    rpc_error(result, codes::INVALID_PARAMS, "status with params");

    // None of it armed anything.
    let status = node.client.status().await.expect("status");
    assert!(!status.armed);
    assert!(status.session.is_none());

    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_at_a_time_and_disable_discards_the_open_block() {
    let _turn = serial().await;
    let node = Node::start("session-chain").await;
    let two_blocks = EnableParams {
        blocks: Some(2),
        frequency_hz: Some(TEST_HZ),
    };

    let first = node
        .client
        .enable(two_blocks.clone())
        .await
        .expect("enable");
    let second = node.client.enable(EnableParams::default()).await;
    let error = second.expect_err("second session refused");
    assert_eq!(error.rpc_code(), Some(codes::SESSION_ACTIVE), "{error}");
    assert!(error.to_string().contains("already armed"), "{error}");

    let disabled = node.client.disable().await.expect("disable");
    assert!(disabled.was_armed);
    assert_eq!(disabled.discarded_height, None);
    assert_eq!(
        disabled.session.as_ref().map(|s| s.state),
        Some(SessionState::Disabled)
    );
    let again = node.client.disable().await.expect("disable twice");
    assert!(!again.was_armed);

    // After disabling, a new session may start; after it completes, another may too.
    let second = node
        .client
        .enable(two_blocks.clone())
        .await
        .expect("re-enable");
    assert!(second.id > first.id);
    node.run_blocks(10..13).await;
    let status = node.client.status().await.expect("status");
    assert_eq!(
        status.session.map(|s| (s.id, s.state)),
        Some((second.id, SessionState::Completed))
    );
    let listed: Vec<u64> = node
        .client
        .list()
        .await
        .expect("list")
        .iter()
        .map(|p| p.height)
        .collect();
    assert_eq!(listed, vec![11, 12]);

    // Disabling in the middle of a block throws that block away.
    node.client
        .enable(EnableParams {
            blocks: Some(1),
            frequency_hz: Some(TEST_HZ),
        })
        .await
        .expect("enable after completion");
    node.profiler.end_block(19);
    node.profiler.begin_block(20);
    let disabled = node.client.disable().await.expect("disable");
    assert_eq!(disabled.discarded_height, Some(20));
    node.profiler.end_block(20);
    let status = node
        .client
        .wait_idle(Duration::from_secs(60))
        .await
        .expect("idle");
    let session = status.session.expect("session");
    assert_eq!(session.blocks_discarded, 1);
    assert_eq!(session.blocks_captured, 0);
    assert_eq!(status.failures_total, 0, "{:?}", status.last_error);
    assert!(!node.chain_dir().join("20").exists());
    assert_eq!(node.client.list().await.expect("list").len(), 2);

    node.shutdown().await;
}

/// `ProfilerClient::session`: arms, waits for the armed blocks and their renders, and
/// counts what the node wrote; with no block produced it times out naming the state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_counts_its_profiles_and_times_out_without_blocks() {
    let _turn = serial().await;
    let node = Node::start("session-chain").await;
    let params = EnableParams {
        blocks: Some(2),
        frequency_hz: Some(TEST_HZ),
    };

    let stalled = node
        .client
        .session(params.clone(), Duration::from_millis(600))
        .await
        .expect_err("no block was produced");
    assert!(
        stalled.to_string().contains("armed: true"),
        "the timeout names the state: {stalled}"
    );
    node.client.disable().await.expect("disable");

    let profiler = node.profiler.clone();
    let client = node.client.clone();
    let chain = tokio::spawn(async move {
        client
            .wait_until(Duration::from_secs(30), |s| s.armed)
            .await
            .expect("armed");
        tokio::task::spawn_blocking(move || drive_blocks(&profiler, 30..34))
            .await
            .expect("block driver panicked");
    });
    let outcome = node
        .client
        .session(params, Duration::from_secs(120))
        .await
        .expect("session");
    chain.await.expect("chain task");
    assert_eq!(outcome.profiles_written(), 2);
    assert!(
        outcome.failure().is_none(),
        "{:?}",
        outcome.after.last_error
    );
    assert!(outcome.after.is_idle());
    let listed: Vec<u64> = node
        .client
        .list()
        .await
        .expect("list")
        .iter()
        .map(|p| p.height)
        .collect();
    // A block is captured from the end of the previous block's Commit: block
    // 30, the first after arming, opens the window; 31 and 32 are captured.
    assert_eq!(listed, vec![31, 32]);

    node.shutdown().await;
}
