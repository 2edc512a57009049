//! `app-mempool`: `eth_sendRawTransaction` admitted by CheckTx into the
//! node's own pool (CometBFT is not reachable here: nothing is forwarded),
//! proposed by PrepareProposal with nothing offered by CometBFT, and
//! rechecked at Commit.

use abcid::app_pool::PoolLimits;
use abcid::node::NodeConfig;
use abcid::patches::{Patch, Patches};
use abcid::rpc::Web3;
use std::time::Duration;

use alloy_primitives::Bytes;
use jsonrpsee::RpcModule;
use serde_json::{json, Value};

use crate::common::*;

fn web3(node: &TestNode) -> RpcModule<Web3> {
    abcid::rpc::module(node.node.clone(), &closed_port_url(), Default::default()).expect("module")
}

async fn send(rpc: &RpcModule<Web3>, raw: &Bytes) -> Result<Value, Value> {
    call(rpc, "eth_sendRawTransaction", json!([raw])).await
}

async fn pending(rpc: &RpcModule<Web3>) -> Value {
    let status = call(rpc, "txpool_status", json!([])).await.expect("status");
    assert_eq!(status["queued"], "0x0");
    status["pending"].clone()
}

/// `txpool_dropped` of `raw`: why it was dropped, or null.
async fn dropped(rpc: &RpcModule<Web3>, raw: &Bytes) -> Value {
    call(rpc, "txpool_dropped", json!([tx_hash(raw)]))
        .await
        .expect("txpool_dropped answers")
}

/// `txpool_status`'s drop counts.
async fn drop_counts(rpc: &RpcModule<Web3>) -> Value {
    let status = call(rpc, "txpool_status", json!([])).await.expect("status");
    status["dropped"].clone()
}

#[tokio::test]
async fn admits_over_web3_proposes_in_order_and_empties_on_commit() {
    for patches in [
        Patches::ALL.with(Patch::AppMempool),
        Patches::only(Patch::AppMempool),
    ] {
        let node = TestNode::with_patches(&funded_keys(), patches);
        let rpc = web3(&node);
        let (a, b) = (key(1), key(2));
        let txs = [
            Tx::transfer(0, b.address, 1).sign(&a),
            Tx::transfer(0, a.address, 1).sign(&b),
            Tx::transfer(1, b.address, 1).sign(&a),
        ];
        for raw in &txs {
            let hash = send(&rpc, raw).await.expect("admitted");
            assert_eq!(hash, json!(tx_hash(raw)), "{patches}");
        }
        let again = send(&rpc, &txs[0]).await.expect_err("a duplicate");
        assert_eq!(again["message"], "already known");
        let gap = send(&rpc, &Tx::transfer(5, b.address, 1).sign(&a))
            .await
            .expect_err("a nonce gap");
        assert_eq!(gap["message"], "nonce too high: next nonce 2, tx nonce 5");
        assert_eq!(gap["data"]["abci_code"], 5);
        assert_eq!(pending(&rpc).await, "0x3", "{patches}");
        let content = call(&rpc, "txpool_content", json!([])).await.unwrap();
        let of_a = &content["pending"][a.address.to_checksum(None)];
        assert_eq!(of_a.as_object().map(|m| m.len()), Some(2), "{content}");

        // Room for two transfers' bytes: the first two, in admission order.
        let two = (txs[0].len() + txs[1].len()) as i64;
        assert_eq!(node.propose(two), txs[..2].to_vec());
        let proposal = node.propose(1 << 20);
        assert_eq!(proposal, txs.to_vec());
        let results = node.block(&proposal);
        assert!(results.tx_results.iter().all(|r| r.code == 0));
        assert_eq!(pending(&rpc).await, "0x0", "{patches}");
        assert_eq!((node.nonce(a.address), node.nonce(b.address)), (2, 1));
        assert!(node.propose(1 << 20).is_empty());
        // The ledger follows the committed state: the next nonce is admitted.
        send(&rpc, &Tx::transfer(2, b.address, 1).sign(&a))
            .await
            .expect("admitted after the block");
    }
}

#[tokio::test]
async fn commit_rechecks_the_pool_and_drops_what_the_block_made_invalid() {
    let node = TestNode::with_patches(&funded_keys(), Patches::ALL.with(Patch::AppMempool));
    let rpc = web3(&node);
    let (a, b, c) = (key(1), key(2), key(3));
    let pooled = Tx::transfer(0, b.address, 1).sign(&a);
    let other = Tx::transfer(0, c.address, 7).sign(&a);
    let untouched = Tx::transfer(0, a.address, 1).sign(&b);
    send(&rpc, &pooled).await.expect("admitted");
    send(&rpc, &untouched).await.expect("admitted");
    // A block proposed by another validator spends a's nonce 0 otherwise.
    let height = node.next_height();
    let results = node.finalize(height, std::slice::from_ref(&other));
    assert!(results.tx_results[0].code == 0);
    let line = node.node.enter().unwrap().commit().unwrap();
    // The recheck is reported, and is part of Commit's time.
    assert_eq!(line.recheck_dropped, 1, "{line:?}");
    assert!(line.recheck > Duration::ZERO, "{line:?}");
    assert!(line.commit >= line.store + line.recheck, "{line:?}");
    assert_eq!(pending(&rpc).await, "0x1");
    assert_eq!(node.propose(1 << 20), vec![untouched.clone()]);
    // The dropped one answers why; the one still pooled was not dropped.
    let why = dropped(&rpc, &pooled).await;
    assert_eq!(why["kind"], "invalid", "{why}");
    let reason = why["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("nonce too low"), "{why}");
    assert_eq!(dropped(&rpc, &untouched).await, Value::Null);
    let counts = drop_counts(&rpc).await;
    assert_eq!(counts, json!({"evicted": 0, "replaced": 0, "invalid": 1}));
    let next = Tx::transfer(1, b.address, 1).sign(&a);
    send(&rpc, &next).await.expect("a's next nonce is 1 now");
}

/// A pending transaction is replaced by one of its sender and nonce paying
/// 10 % more fee cap and tip (geth's bump), in its place, if the balance
/// covers it there; the old one is dropped as `replaced`.
#[tokio::test]
async fn a_pending_transaction_is_replaced_by_one_paying_ten_percent_more() {
    let node = TestNode::with_patches(&funded_keys(), Patches::ALL);
    let rpc = web3(&node);
    let a = key(1);
    // Key 1 pays key 3 `value` at `nonce`, tipping `tip`.
    let pay = |nonce, value, tip| Tx::tipping(nonce, key(3).address, value, tip).sign(&a);
    let (old, next) = (pay(0, 1, 10 * GWEI), pay(1, 1, 10 * GWEI));
    for raw in [&old, &next] {
        send(&rpc, raw).await.expect("admitted");
    }
    // 9.9 % more tip: refused; the same tip, a higher cap: refused.
    for (tip, cap) in [(10_990_000_000, 20 * GWEI), (10 * GWEI, 20 * GWEI)] {
        let short = Tx {
            fee: Fee::Eip1559 { max_fee: cap, tip },
            ..Tx::transfer(0, key(3).address, 1)
        };
        let refused = send(&rpc, &short.sign(&a)).await.expect_err("underpriced");
        assert_eq!(refused["message"], "replacement transaction underpriced");
    }
    // Its balance cannot cover a replacement sending everything it holds.
    let overdraft = send(&rpc, &pay(0, FUNDED, 12 * GWEI)).await;
    let refused = overdraft.expect_err("over the balance");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("insufficient funds"),
        "{refused}"
    );
    let new = pay(0, 2, 12 * GWEI);
    let hash = send(&rpc, &new).await.expect("replaced");
    assert_eq!(hash, json!(tx_hash(&new)));
    assert_eq!(pending(&rpc).await, "0x2");
    let why = dropped(&rpc, &old).await;
    assert_eq!(why["kind"], "replaced", "{why}");
    assert_eq!(
        why["reason"],
        format!("replaced by {}, paying more", tx_hash(&new)).as_str()
    );
    assert_eq!(
        send(&rpc, &new).await.expect_err("known")["message"],
        "already known"
    );
    // In the old one's place, before its sender's next nonce; committed.
    let proposal = node.propose(1 << 20);
    assert_eq!(proposal, vec![new.clone(), next.clone()]);
    let before = node.balance(key(3).address);
    let results = node.block(&proposal);
    assert!(
        results.tx_results.iter().all(|r| r.code == 0),
        "{results:?}"
    );
    assert_eq!(node.nonce(a.address), 2);
    assert_eq!(
        node.balance(key(3).address) - before,
        alloy_primitives::U256::from(3)
    );
    assert_eq!(pending(&rpc).await, "0x0");
    let stale = send(&rpc, &old).await.expect_err("its nonce is used");
    assert!(
        stale["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("nonce too low"),
        "{stale}"
    );
}

/// Sends `raw` and checks that the full pool refused it.
async fn refused_full(rpc: &RpcModule<Web3>, raw: &Bytes) {
    let full = send(rpc, raw).await.expect_err("the pool is full");
    assert!(
        full["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("txpool is full")),
        "{full}"
    );
}

/// A node whose own pool holds two transactions at most.
fn two_slot_pool() -> TestNode {
    small_pool(2, PoolLimits::default().account_slots)
}

/// A node whose own pool holds `max_txs` transactions at most, and keeps a
/// sender's `account_slots` against others paying as much.
fn small_pool(max_txs: usize, account_slots: usize) -> TestNode {
    let config = NodeConfig {
        pool: PoolLimits {
            max_txs,
            max_bytes: 1 << 20,
            account_slots,
        },
        ..NodeConfig::new(Patches::ALL.with(Patch::AppMempool))
    };
    TestNode::with_config(&funded_keys(), config)
}

#[tokio::test]
async fn a_full_pool_refuses_and_reserves_nothing() {
    let node = two_slot_pool();
    let rpc = web3(&node);
    let (a, b, c) = (key(1), key(2), key(3));
    send(&rpc, &Tx::transfer(0, b.address, 1).sign(&a))
        .await
        .unwrap();
    send(&rpc, &Tx::transfer(0, a.address, 1).sign(&b))
        .await
        .unwrap();
    let late = Tx::transfer(0, a.address, 1).sign(&c);
    refused_full(&rpc, &late).await;
    let proposal = node.propose(1 << 20);
    node.block(&proposal);
    // Refused before CheckTx: c's nonce 0 was never reserved.
    send(&rpc, &late)
        .await
        .expect("admitted once there is room");
}

#[tokio::test]
async fn txpool_tells_queued_from_pending_and_inspects_as_geth() {
    let patches = Patches::ALL.with(Patch::AppMempool).with(Patch::NonceQueue);
    let node = TestNode::with_patches(&funded_keys(), patches);
    let rpc = web3(&node);
    let (a, b) = (key(1), key(2));
    for raw in [
        Tx::transfer(0, b.address, 1).sign(&a),
        Tx::transfer(2, b.address, 3).sign(&a),
        Tx::transfer(3, b.address, 4).sign(&a),
        Tx::transfer(0, a.address, 5).sign(&b),
    ] {
        send(&rpc, &raw).await.expect("admitted or queued");
    }
    let status = call(&rpc, "txpool_status", json!([])).await.unwrap();
    let none = json!({"evicted": 0, "replaced": 0, "invalid": 0});
    assert_eq!(
        status,
        json!({"pending": "0x2", "queued": "0x2", "dropped": none})
    );
    let nonces = |listing: &Value, part: &str, who: &Key| -> Vec<String> {
        listing[part][who.address.to_checksum(None)]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let content = call(&rpc, "txpool_content", json!([])).await.unwrap();
    assert_eq!(nonces(&content, "pending", &a), ["0"], "{content}");
    assert_eq!(nonces(&content, "queued", &a), ["2", "3"], "{content}");
    assert_eq!(nonces(&content, "pending", &b), ["0"], "{content}");
    let queued = &content["queued"][a.address.to_checksum(None)]["2"];
    assert_eq!(queued["nonce"], "0x2", "{queued}");
    let inspect = call(&rpc, "txpool_inspect", json!([])).await.unwrap();
    let line = &inspect["queued"][a.address.to_checksum(None)]["3"];
    let fee_cap = queued["maxFeePerGas"].as_str().expect("a fee cap");
    let fee_cap = u128::from_str_radix(fee_cap.trim_start_matches("0x"), 16).unwrap();
    let to = b.address.to_checksum(None);
    assert_eq!(
        line,
        &json!(format!("{to}: 4 wei + 21000 gas × {fee_cap} wei"))
    );
    // The missing nonce arrives: the queued ones are pending now.
    send(&rpc, &Tx::transfer(1, b.address, 2).sign(&a))
        .await
        .expect("admitted");
    let status = call(&rpc, "txpool_status", json!([])).await.unwrap();
    assert_eq!(
        (&status["pending"], &status["queued"]),
        (&json!("0x5"), &json!("0x0"))
    );
    let content = call(&rpc, "txpool_content", json!([])).await.unwrap();
    assert_eq!(nonces(&content, "pending", &a), ["0", "1", "2", "3"]);
}

#[tokio::test]
async fn a_full_pool_takes_a_better_paying_transaction_in_place_of_the_cheapest() {
    let node = two_slot_pool();
    let rpc = web3(&node);
    let (a, b, c) = (key(1), key(2), key(3));
    let owner = [
        Tx::transfer(0, c.address, 1).sign(&a),
        Tx::transfer(1, c.address, 1).sign(&a),
    ];
    for raw in &owner {
        send(&rpc, raw).await.expect("admitted");
    }
    // One sender owns the pool; a victim paying 100 × the tip takes the
    // place of its last transaction (evicting its first would leave a gap).
    let victim = Tx {
        fee: Fee::Eip1559 {
            max_fee: 200 * GWEI,
            tip: 100 * GWEI,
        },
        ..Tx::transfer(0, c.address, 1)
    }
    .sign(&b);
    send(&rpc, &victim).await.expect("admitted by eviction");
    assert_eq!(pending(&rpc).await, "0x2");
    let proposal = node.propose(1 << 20);
    assert_eq!(proposal, vec![victim.clone(), owner[0].clone()]);
    // Paying no more than what is left: refused, as before.
    let late = Tx::transfer(0, a.address, 1).sign(&c);
    refused_full(&rpc, &late).await;
    let results = node.block(&proposal);
    assert!(results.tx_results.iter().all(|r| r.code == 0));
    let why = dropped(&rpc, &owner[1]).await;
    assert_eq!(why["kind"], "evicted", "{why}");
    let by = format!("evicted from the full pool by {}", tx_hash(&victim));
    assert_eq!(why["reason"], by.as_str());
    assert_eq!(drop_counts(&rpc).await["evicted"], 1);
    // After the block the evicted nonce is free again: its sender resends
    // it, and it is no longer dropped.
    send(&rpc, &owner[1])
        .await
        .expect("admitted after the block");
    assert_eq!(dropped(&rpc, &owner[1]).await, Value::Null);
    assert_eq!(drop_counts(&rpc).await["evicted"], 1, "counted still");
}

/// One sender fills the pool at the usual fee: others paying the same take
/// the places of its last transactions, one each, until it holds its slot;
/// then the pool is full for everyone paying that fee.
#[tokio::test]
async fn a_sender_owning_a_full_pool_gives_way_to_others_paying_as_much() {
    let node = small_pool(3, 1);
    let rpc = web3(&node);
    let (a, b, c, d) = (key(1), key(2), key(3), key(4));
    let owner: Vec<Bytes> = (0..3)
        .map(|nonce| Tx::transfer(nonce, d.address, 1).sign(&a))
        .collect();
    for raw in &owner {
        send(&rpc, raw).await.expect("admitted");
    }
    let others = [
        Tx::transfer(0, d.address, 1).sign(&b),
        Tx::transfer(0, d.address, 1).sign(&c),
    ];
    for raw in &others {
        send(&rpc, raw)
            .await
            .expect("admitted in place of a's last");
    }
    refused_full(&rpc, &Tx::transfer(0, a.address, 1).sign(&d)).await;
    refused_full(&rpc, &Tx::transfer(1, d.address, 1).sign(&b)).await;
    let proposal = node.propose(1 << 20);
    assert_eq!(
        proposal,
        [owner[0].clone(), others[0].clone(), others[1].clone()]
    );
    let results = node.block(&proposal);
    assert!(results.tx_results.iter().all(|r| r.code == 0));
    // a's evicted nonces were never its: they go again after the block.
    for raw in &owner[1..] {
        send(&rpc, raw).await.expect("admitted after the block");
    }
}

/// What the pool accepted survives a restart: its journal is read back and
/// each transaction admitted again through CheckTx, in order; one a block
/// included before the restart is refused and gone; what is admitted after
/// the reload is journaled too.
#[tokio::test]
async fn the_pool_reloads_what_it_accepted_after_a_restart() {
    use abcid::node::Reloaded;
    let node = TestNode::with_patches(&funded_keys(), Patches::ALL.with(Patch::AppMempool));
    let journal = node.dir.path().join("pool.journal");
    let nothing = Reloaded {
        read: 0,
        admitted: 0,
    };
    assert_eq!(node.node.reload_pool(&journal).unwrap(), Some(nothing));
    let rpc = web3(&node);
    let (a, b) = (key(1), key(2));
    let included = Tx::transfer(0, b.address, 1).sign(&a);
    send(&rpc, &included).await.expect("admitted");
    assert_eq!(
        node.block(std::slice::from_ref(&included)).tx_results[0].code,
        0
    );
    let waiting = [
        Tx::transfer(1, b.address, 1).sign(&a),
        Tx::transfer(0, a.address, 1).sign(&b),
    ];
    for raw in &waiting {
        send(&rpc, raw).await.expect("admitted");
    }
    drop(rpc);

    let node = node.reopen();
    assert!(
        node.propose(1 << 20).is_empty(),
        "nothing before the reload"
    );
    let reloaded = node.node.reload_pool(&journal).unwrap();
    let want = Reloaded {
        read: 3,
        admitted: 2,
    };
    assert_eq!(reloaded, Some(want));
    assert_eq!(node.propose(1 << 20), waiting.to_vec());

    let rpc = web3(&node);
    let later = Tx::transfer(2, b.address, 1).sign(&a);
    send(&rpc, &later).await.expect("admitted after the reload");
    drop(rpc);
    let node = node.reopen();
    let reloaded = node.node.reload_pool(&journal).unwrap();
    let want = Reloaded {
        read: 3,
        admitted: 3,
    };
    assert_eq!(
        reloaded,
        Some(want),
        "rewritten at the reload, then appended"
    );
    let mut all = waiting.to_vec();
    all.push(later);
    assert_eq!(node.propose(1 << 20), all);
}

/// Without `app-mempool` there is no pool to journal.
#[test]
fn without_the_pool_nothing_is_journaled() {
    let without = Patches::ALL.without(Patch::AppMempool);
    let node = TestNode::with_patches(&funded_keys(), without);
    let journal = node.dir.path().join("pool.journal");
    assert_eq!(node.node.reload_pool(&journal).unwrap(), None);
    assert!(!journal.exists());
}

/// Forwarding between pools (`--pool-peers`): what a client sends to A is
/// admitted into B's pool in order; B forwards none of it again, and a
/// batch forwarded twice is known, not admitted twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_sent_to_one_node_reaches_its_peers_pool_once() {
    use abcid::metrics::Metrics;
    use abcid::rpc::RpcConfig;
    use std::sync::Arc;
    let patches = Patches::ALL.with(Patch::AppMempool);
    let b = TestNode::with_patches(&funded_keys(), patches);
    // B's own peer is down: a transaction B forwarded would count as failed.
    let b_config = RpcConfig {
        pool_peers: vec![closed_port_url()],
        ..Default::default()
    };
    let listen = "127.0.0.1:0".parse().unwrap();
    let metrics = Arc::new(Metrics::new(patches, b.node.speculations()));
    let (b_addr, _b_server) = abcid::rpc::serve(
        b.node.clone(),
        listen,
        &closed_port_url(),
        b_config,
        Some(metrics.clone()),
    )
    .await
    .expect("B serves web3");
    let b_url = format!("http://{b_addr}");
    let a = TestNode::with_patches(&funded_keys(), patches);
    let a_config = RpcConfig {
        pool_peers: vec![b_url.clone()],
        ..Default::default()
    };
    let a_rpc = abcid::rpc::module(a.node.clone(), &closed_port_url(), a_config).expect("module");
    let (k1, k2) = (key(1), key(2));
    let txs = [
        Tx::transfer(0, k2.address, 1).sign(&k1),
        Tx::transfer(0, k1.address, 1).sign(&k2),
        Tx::transfer(1, k2.address, 1).sign(&k1),
    ];
    for raw in &txs {
        send(&a_rpc, raw).await.expect("admitted by A");
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while b.propose(1 << 20).len() < txs.len() {
        assert!(
            std::time::Instant::now() < deadline,
            "B's pool never got them"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(b.propose(1 << 20), txs.to_vec());
    // A counts a batch once B has answered, just after B pooled it.
    let counts = json!({"sent": 3, "failed": 0, "overflowed": 0});
    loop {
        let a_status = call(&a_rpc, "txpool_status", json!([])).await.unwrap();
        if a_status["forwarded"] == counts {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{a_status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // B timed each forwarded transaction's CheckTx.
    let checked = r#"abcid_check_tx_duration_seconds_count{type="new"} 3"#;
    assert!(metrics.encode().contains(checked), "{}", metrics.encode());
    let b_status = call_http(&b_url, "txpool_status", json!([])).await.unwrap();
    let none = json!({"sent": 0, "failed": 0, "overflowed": 0});
    assert_eq!(
        b_status["forwarded"], none,
        "B forwards what it was forwarded"
    );

    let again = call_http(&b_url, "abcid_forwardTransactions", json!([txs])).await;
    let known = json!({"admitted": 0, "known": 3, "refused": 0});
    assert_eq!(again, Ok(known));
    let too_many = vec![txs[0].clone(); 257];
    let e = call_http(&b_url, "abcid_forwardTransactions", json!([too_many]))
        .await
        .expect_err("over the batch bound");
    assert_eq!(e["code"], -32602, "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("at most 256 transactions in one call, not 257"),
        "{e}"
    );
}
