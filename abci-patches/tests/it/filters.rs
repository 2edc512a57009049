//! Polled filters and subscriptions through the web3 module, in-process:
//! what each delivers as blocks commit and CheckTx admits transactions, their
//! expiry and bounds, and a subscriber too slow to keep up being dropped.

use std::time::Duration;

use abcid::rpc::RpcConfig;
use jsonrpsee::core::server::{MethodsError, Subscription};
use serde_json::{json, Value};
use tendermint_proto::v0_38::abci::CheckTxType;

use crate::common::*;
use crate::logs::{assert_error, chain, note, rpc, summary, NOTE, X, Y};

/// The next notification, within a bound; `None` once the subscription is closed.
async fn next(sub: &mut Subscription) -> Option<Value> {
    tokio::time::timeout(Duration::from_secs(10), sub.next::<Value>())
        .await
        .expect("a notification or the end within 10 s")
        .map(|r| r.expect("a JSON notification").0)
}

#[tokio::test]
async fn log_block_and_pending_filters_report_what_happened_since_the_last_poll() {
    let c = chain();
    let rpc = rpc(&c, RpcConfig::default());
    let (a, b) = (key(1), key(2));
    let logs_id = call(
        &rpc,
        "eth_newFilter",
        json!([{"address": c.emitter, "topics": [NOTE, X]}]),
    )
    .await
    .unwrap();
    let blocks_id = call(&rpc, "eth_newBlockFilter", json!([])).await.unwrap();
    let pending_id = call(&rpc, "eth_newPendingTransactionFilter", json!([]))
        .await
        .unwrap();
    assert_ne!(logs_id, blocks_id);

    // Nothing yet: the filters start after the head.
    for id in [&logs_id, &blocks_id, &pending_id] {
        assert_eq!(
            call(&rpc, "eth_getFilterChanges", json!([id])).await,
            Ok(json!([]))
        );
    }
    let tx = Tx::call(4, c.emitter, note(X, 7, false)).sign(&a);
    let admitted = c.node.check(&tx, CheckTxType::New);
    assert_eq!(admitted.code, 0, "{admitted:?}");
    c.node.block(&[
        tx.clone(),
        Tx::call(2, c.emitter, note(Y, 8, false)).sign(&b),
    ]);
    c.node.block(&[]);

    let changes = call(&rpc, "eth_getFilterChanges", json!([logs_id]))
        .await
        .unwrap();
    assert_eq!(summary(&changes), vec![(5, 7)]);
    assert_eq!(changes[0]["transactionHash"], json!(tx_hash(&tx)));
    let hashes = call(&rpc, "eth_getFilterChanges", json!([blocks_id]))
        .await
        .unwrap();
    let mut expected = Vec::new();
    for n in ["0x5", "0x6"] {
        expected.push(
            call(&rpc, "eth_getBlockByNumber", json!([n, false]))
                .await
                .unwrap()["hash"]
                .clone(),
        );
    }
    assert_eq!(hashes, Value::Array(expected));
    let pending = call(&rpc, "eth_getFilterChanges", json!([pending_id]))
        .await
        .unwrap();
    assert_eq!(pending, json!([tx_hash(&tx)]));
    // A second poll reports nothing new.
    for id in [&logs_id, &blocks_id, &pending_id] {
        assert_eq!(
            call(&rpc, "eth_getFilterChanges", json!([id])).await,
            Ok(json!([]))
        );
    }
    // eth_getFilterLogs answers the filter's whole query (from latest by default).
    let since_genesis = call(
        &rpc,
        "eth_newFilter",
        json!([{"fromBlock": "0x0", "topics": [NOTE, X]}]),
    )
    .await
    .unwrap();
    let all = call(&rpc, "eth_getFilterLogs", json!([since_genesis]))
        .await
        .unwrap();
    assert_eq!(summary(&all), vec![(2, 1), (4, 4), (5, 7)]);
    assert_error(
        call(&rpc, "eth_getFilterLogs", json!([blocks_id])).await,
        -32000,
        "filter not found",
    );

    assert_eq!(
        call(&rpc, "eth_uninstallFilter", json!([logs_id])).await,
        Ok(json!(true))
    );
    assert_eq!(
        call(&rpc, "eth_uninstallFilter", json!([logs_id])).await,
        Ok(json!(false))
    );
    assert_error(
        call(&rpc, "eth_getFilterChanges", json!([logs_id])).await,
        -32000,
        "filter not found",
    );
    assert_error(
        call(
            &rpc,
            "eth_getFilterChanges",
            json!(["0x0123456789abcdef0123456789abcdef"]),
        )
        .await,
        -32000,
        "filter not found",
    );
}

#[tokio::test]
async fn idle_filters_expire_and_their_number_is_bounded() {
    let c = chain();
    let timeout = Duration::from_millis(50);
    let config = RpcConfig {
        filter_timeout: timeout,
        max_filters: 2,
        ..RpcConfig::default()
    };
    let rpc = rpc(&c, config);
    let kept = call(&rpc, "eth_newBlockFilter", json!([])).await.unwrap();
    let idle = call(&rpc, "eth_newBlockFilter", json!([])).await.unwrap();
    let refused = call(&rpc, "eth_newBlockFilter", json!([])).await;
    assert_error(
        refused,
        -32000,
        "too many filters installed (2): uninstall some with eth_uninstallFilter",
    );
    // Polled every 10 ms, one filter lives on while the other, never
    // polled, passes its timeout.
    let deadline = std::time::Instant::now() + timeout * 3;
    while std::time::Instant::now() < deadline {
        assert_eq!(
            call(&rpc, "eth_getFilterChanges", json!([kept])).await,
            Ok(json!([]))
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_error(
        call(&rpc, "eth_getFilterChanges", json!([idle])).await,
        -32000,
        "filter not found",
    );
    // Its place is free again.
    assert!(call(&rpc, "eth_newBlockFilter", json!([])).await.is_ok());
}

#[tokio::test]
async fn subscriptions_deliver_heads_logs_and_pending_transactions_in_order() {
    let c = chain();
    let rpc = rpc(&c, RpcConfig::default());
    let (a, b) = (key(1), key(2));
    let mut heads = rpc
        .subscribe_unbounded("eth_subscribe", ["newHeads"])
        .await
        .unwrap();
    let mut logs = rpc
        .subscribe_unbounded("eth_subscribe", ("logs", json!({"topics": [NOTE, [X]]})))
        .await
        .unwrap();
    let mut pending = rpc
        .subscribe_unbounded("eth_subscribe", ["newPendingTransactions"])
        .await
        .unwrap();

    let first = Tx::call(4, c.emitter, note(X, 5, false)).sign(&a);
    assert_eq!(c.node.check(&first, CheckTxType::New).code, 0);
    let txs = [
        first.clone(),
        Tx::call(2, c.emitter, note(Y, 6, false)).sign(&b),
        Tx::call(5, c.emitter, note(X, 7, true)).sign(&a),
        Tx::call(6, c.emitter, note(X, 8, false)).sign(&a),
    ];
    c.node.block(&txs);
    c.node.block(&[]);
    c.node
        .block(&[Tx::call(3, c.emitter, note(X, 9, false)).sign(&b)]);

    for height in 5..=7u64 {
        let head = next(&mut heads).await.expect("a head");
        let block = call(
            &rpc,
            "eth_getBlockByNumber",
            json!([format!("{height:#x}"), false]),
        )
        .await
        .unwrap();
        assert_eq!(head["number"], json!(format!("{height:#x}")));
        assert_eq!(head["hash"], block["hash"]);
        assert_eq!(head["logsBloom"], block["logsBloom"]);
        assert_eq!(head["parentHash"], block["parentHash"]);
    }
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(next(&mut logs).await.expect("a log"));
    }
    assert_eq!(
        summary(&Value::Array(seen.clone())),
        vec![(5, 5), (5, 8), (7, 9)]
    );
    // Block-wide log indices: the reverted call has none, Y's is index 1.
    assert_eq!(seen[0]["logIndex"], "0x0");
    assert_eq!(seen[1]["logIndex"], "0x2");
    assert_eq!(seen[1]["transactionIndex"], "0x3");
    let hash = next(&mut pending).await.expect("a pending hash");
    assert_eq!(hash, json!(tx_hash(&first)));
}

#[tokio::test]
async fn a_subscriber_that_does_not_read_is_dropped_and_blocks_go_on() {
    let c = chain();
    let config = RpcConfig {
        subscriber_timeout: Duration::from_millis(100),
        ..RpcConfig::default()
    };
    let rpc = rpc(&c, config);
    // Room for one notification, never read while blocks come.
    let mut slow = rpc
        .subscribe("eth_subscribe", ["newHeads"], 1)
        .await
        .unwrap();
    let mut fast = rpc
        .subscribe_unbounded("eth_subscribe", ["newHeads"])
        .await
        .unwrap();
    for _ in 0..5 {
        c.node.block(&[]);
    }
    for height in 5..=9u64 {
        let head = next(&mut fast).await.expect("every head");
        assert_eq!(head["number"], json!(format!("{height:#x}")));
    }
    // The slow one's heads from 6 on are dropped, never waited for; the
    // first block after its connection has taken none for 100 ms closes it.
    // Blocks come every 20 ms for ten times that (the unit test
    // `pubsub::a_subscriber_that_reads_nothing…` polls the counters).
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(1) {
        c.node.block(&[]);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // It got what fit, then was closed (the close ends `next`).
    let mut got = Vec::new();
    while let Some(head) = next(&mut slow).await {
        got.push(head["number"].clone());
    }
    assert_eq!(got, vec![json!("0x5")]);
    assert!(c.node.node.head().unwrap().number > 9);
}

#[tokio::test]
async fn bad_subscriptions_are_refused_clearly() {
    let c = chain();
    let rpc = rpc(&c, RpcConfig::default());
    let refusal = |answer: Result<Subscription, MethodsError>| match answer {
        Err(MethodsError::JsonRpc(e)) => (e.code(), e.message().to_string()),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("accepted"),
    };
    let unknown = rpc
        .subscribe_unbounded("eth_subscribe", ["newBlocks"])
        .await;
    assert_eq!(
        refusal(unknown),
        (
            -32601,
            "no \"newBlocks\" subscription in eth namespace".to_string()
        )
    );
    let bad_topic = rpc
        .subscribe_unbounded("eth_subscribe", ("logs", json!({"topics": ["0x12"]})))
        .await;
    assert_eq!(
        refusal(bad_topic),
        (
            -32602,
            "invalid argument 0: hex has invalid length 1 after decoding; expected 32 for topic"
                .to_string()
        )
    );
}
