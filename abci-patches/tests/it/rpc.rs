//! The web3 handlers, called in-process through jsonrpsee's [`RpcModule`]
//! (no socket), on a node with two committed blocks.

use abcid::patches::{Patch, Patches};
use abcid::rpc::Web3;
use alloy_primitives::{Address, Bytes, B256, U256};
use jsonrpsee::RpcModule;
use serde_json::{json, Value};
use tendermint_proto::v0_38::abci::CheckTxType;

use crate::common::*;

/// A node with block 1 = [a → b transfer of 12 345 wei, deployment of the
/// store contract] and block 2 = [a stores 0x2a in it], and its web3 module.
struct Fixture {
    node: TestNode,
    rpc: RpcModule<Web3>,
    transfer: Bytes,
    deploy: Bytes,
    store: Bytes,
    contract: Address,
    app_hash_1: Bytes,
}

fn fixture() -> Fixture {
    let node = TestNode::new();
    let (a, b) = (key(1), key(2));
    let transfer = Tx::transfer(0, b.address, 12_345).sign(&a);
    let deploy = Tx::deploy(1, store_init()).sign(&a);
    let contract = a.address.create(1);
    let store = Tx::call(2, contract, word(0x2a)).sign(&a);
    let first = node.block(&[transfer.clone(), deploy.clone()]);
    let second = node.block(std::slice::from_ref(&store));
    assert!(first
        .tx_results
        .iter()
        .chain(&second.tx_results)
        .all(|r| r.code == 0));
    let rpc = abcid::rpc::module(node.node.clone(), &closed_port_url(), Default::default())
        .expect("module");
    Fixture {
        node,
        rpc,
        transfer,
        deploy,
        store,
        contract,
        app_hash_1: Bytes(first.app_hash),
    }
}

fn hex_u(value: impl Into<U256>) -> Value {
    json!(format!("{:#x}", value.into()))
}

fn assert_historical(error: Result<Value, Value>) {
    let error = error.expect_err("an older block is refused");
    assert_eq!(error["code"], -32000);
    assert_eq!(
        error["message"],
        "historical state is not available: abcid keeps only the latest state (block 2)"
    );
}

#[tokio::test]
async fn balances_and_nonces_latest_pending_and_historical() {
    let f = fixture();
    let (a, b) = (key(1), key(2));
    assert_eq!(
        call(&f.rpc, "eth_chainId", json!([])).await,
        Ok(json!("0x2328"))
    );
    assert_eq!(
        call(&f.rpc, "eth_blockNumber", json!([])).await,
        Ok(json!("0x2"))
    );
    let balance = call(&f.rpc, "eth_getBalance", json!([b.address, "latest"])).await;
    assert_eq!(balance, Ok(hex_u(U256::from(FUNDED + 12_345))));
    let balance = call(&f.rpc, "eth_getBalance", json!([a.address, "0x2"])).await;
    assert_eq!(balance, Ok(hex_u(f.node.balance(a.address))));
    let unknown = call(&f.rpc, "eth_getBalance", json!([key(9).address])).await;
    assert_eq!(unknown, Ok(json!("0x0")));
    assert_historical(call(&f.rpc, "eth_getBalance", json!([b.address, "0x1"])).await);
    assert_historical(call(&f.rpc, "eth_getTransactionCount", json!([a.address, "0x1"])).await);
    assert_historical(
        call(
            &f.rpc,
            "eth_call",
            json!([{"to": f.contract, "data": word(1)}, "0x1"]),
        )
        .await,
    );

    let count =
        |tag: &'static str| call(&f.rpc, "eth_getTransactionCount", json!([a.address, tag]));
    assert_eq!(count("latest").await, Ok(json!("0x3")));
    assert_eq!(count("pending").await, Ok(json!("0x3")));
    let next = Tx::transfer(3, b.address, 1);
    assert_eq!(f.node.check(&next.sign(&a), CheckTxType::New).code, 0);
    assert_eq!(count("latest").await, Ok(json!("0x3")));
    assert_eq!(count("pending").await, Ok(json!("0x4")));
    let pending = call(&f.rpc, "eth_getBalance", json!([a.address, "pending"])).await;
    assert_eq!(
        pending,
        Ok(hex_u(f.node.balance(a.address) - next.max_cost()))
    );
}

#[tokio::test]
async fn receipts_have_geth_shape_status_and_logs() {
    let f = fixture();
    let a = key(1);
    let store_hash = tx_hash(&f.store);
    let receipt = call(&f.rpc, "eth_getTransactionReceipt", json!([store_hash]))
        .await
        .expect("a receipt");
    let record = f.node.node.tx(&store_hash).unwrap().expect("stored");
    assert_eq!(receipt["status"], "0x1");
    assert_eq!(receipt["type"], "0x2");
    assert_eq!(receipt["transactionHash"], json!(store_hash));
    assert_eq!(receipt["blockNumber"], "0x2");
    assert_eq!(receipt["blockHash"], json!(block_hash(2)));
    assert_eq!(receipt["transactionIndex"], "0x0");
    assert_eq!(receipt["from"], json!(a.address));
    assert_eq!(receipt["to"], json!(f.contract));
    assert_eq!(receipt["contractAddress"], Value::Null);
    assert_eq!(
        receipt["gasUsed"],
        hex_u(U256::from(record.receipt.gas_used))
    );
    assert_eq!(receipt["cumulativeGasUsed"], receipt["gasUsed"]);
    assert_eq!(receipt["effectiveGasPrice"], hex_u(U256::from(2 * GWEI)));
    let logs = receipt["logs"].as_array().expect("logs");
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0]["address"], json!(f.contract));
    assert_eq!(logs[0]["topics"], json!([a.address.into_word()]));
    assert_eq!(logs[0]["data"], json!(word(0x2a)));
    assert_eq!(logs[0]["logIndex"], "0x0");
    assert_eq!(logs[0]["transactionHash"], json!(store_hash));
    assert_eq!(logs[0]["blockNumber"], "0x2");

    let deploy = call(
        &f.rpc,
        "eth_getTransactionReceipt",
        json!([tx_hash(&f.deploy)]),
    )
    .await
    .expect("a receipt");
    assert_eq!(deploy["contractAddress"], json!(f.contract));
    assert_eq!(deploy["to"], Value::Null);
    assert_eq!(deploy["transactionIndex"], "0x1");
    let gas = |r: &Value, k: &str| u64::from_str_radix(&r[k].as_str().unwrap()[2..], 16).unwrap();
    assert_eq!(
        gas(&deploy, "cumulativeGasUsed"),
        TRANSFER_GAS + gas(&deploy, "gasUsed")
    );
    let unknown = call(
        &f.rpc,
        "eth_getTransactionReceipt",
        json!([B256::repeat_byte(1)]),
    )
    .await;
    assert_eq!(unknown, Ok(Value::Null));
}

#[tokio::test]
async fn blocks_by_number_with_hashes_or_full_transactions() {
    let f = fixture();
    let block = call(&f.rpc, "eth_getBlockByNumber", json!(["0x1", false]))
        .await
        .expect("block 1");
    let genesis = f.node.node.block(0).unwrap().expect("genesis block");
    assert_eq!(block["number"], "0x1");
    assert_eq!(block["hash"], json!(block_hash(1)));
    assert_eq!(block["parentHash"], json!(genesis.hash));
    assert_eq!(block["stateRoot"], json!(f.app_hash_1));
    assert_eq!(block["miner"], json!(fee_recipient()));
    assert_eq!(block["baseFeePerGas"], "0x3b9aca00");
    assert_eq!(block["timestamp"], hex_u(U256::from(1_800_000_001u64)));
    assert_eq!(
        block["transactions"],
        json!([tx_hash(&f.transfer), tx_hash(&f.deploy)])
    );
    let receipt = f
        .node
        .node
        .tx(&tx_hash(&f.deploy))
        .unwrap()
        .unwrap()
        .receipt;
    assert_eq!(
        block["gasUsed"],
        hex_u(U256::from(receipt.cumulative_gas_used))
    );

    let latest = call(&f.rpc, "eth_getBlockByNumber", json!(["latest", true]))
        .await
        .expect("block 2");
    assert_eq!(latest["number"], "0x2");
    assert_eq!(latest["parentHash"], json!(block_hash(1)));
    let tx = &latest["transactions"][0];
    assert_eq!(tx["hash"], json!(tx_hash(&f.store)));
    assert_eq!(tx["from"], json!(key(1).address));
    assert_eq!(tx["nonce"], "0x2");
    assert_eq!(tx["blockNumber"], "0x2");
    assert_eq!(tx["input"], json!(word(0x2a)));

    let future = call(&f.rpc, "eth_getBlockByNumber", json!(["0x3", false])).await;
    assert_eq!(future, Ok(Value::Null));
}

#[tokio::test]
async fn eth_call_returns_data_or_revert_without_changing_state() {
    let f = fixture();
    let stored = call(
        &f.rpc,
        "eth_call",
        json!([{"to": f.contract, "data": word(5)}, "latest"]),
    )
    .await;
    assert_eq!(stored, Ok(json!(word(0x2a))), "returns the previous value");
    assert_eq!(
        f.node.node.storage(&f.contract, &U256::ZERO).unwrap(),
        U256::from(0x2a),
        "a call changes nothing"
    );
    let reverted = call(&f.rpc, "eth_call", json!([{"to": f.contract}]))
        .await
        .expect_err("the contract reverts without calldata");
    assert_eq!(reverted["code"], 3);
    assert_eq!(reverted["message"], "execution reverted");
    assert_eq!(reverted["data"], json!(word(0xdead)));
}

#[tokio::test]
async fn estimate_gas_is_the_least_that_succeeds() {
    let f = fixture();
    let (a, b) = (key(1), key(2));
    let transfer = call(
        &f.rpc,
        "eth_estimateGas",
        json!([{"from": a.address, "to": b.address, "value": "0x1"}]),
    )
    .await;
    assert_eq!(transfer, Ok(json!("0x5208")));

    let request = json!({"from": a.address, "to": f.contract, "data": word(9)});
    let estimate = call(&f.rpc, "eth_estimateGas", json!([request]))
        .await
        .expect("an estimate");
    let gas = u64::from_str_radix(&estimate.as_str().unwrap()[2..], 16).unwrap();
    assert!(gas > TRANSFER_GAS, "{gas}");
    let with_gas = |gas: u64| {
        let mut r = request.clone();
        r["gas"] = hex_u(U256::from(gas));
        call(&f.rpc, "eth_call", json!([r]))
    };
    assert!(with_gas(gas).await.is_ok());
    let short = with_gas(gas - 1).await.expect_err("one gas less fails");
    assert_eq!(short["code"], -32000);

    // A transaction with exactly the estimate executes successfully.
    let mut tx = Tx::call(3, f.contract, word(9));
    tx.gas_limit = gas;
    let response = f.node.block(&[tx.sign(&a)]);
    assert_eq!(
        response.tx_results[0].code, 0,
        "{}",
        response.tx_results[0].log
    );
    assert_eq!(
        attribute(&response.tx_results[0], "status").as_deref(),
        Some("1")
    );
    assert_eq!(
        f.node.node.storage(&f.contract, &U256::ZERO).unwrap(),
        U256::from(9)
    );
}

/// Without `app-mempool` a transaction goes through CometBFT's RPC, here
/// unreachable; with it (in `all`) the node's own pool takes it.
#[tokio::test]
async fn send_raw_transaction_reports_bad_hex_and_an_unreachable_cometbft() {
    let f = fixture();
    let bad = call(&f.rpc, "eth_sendRawTransaction", json!(["0xzz"]))
        .await
        .expect_err("not hex");
    assert_eq!(bad["code"], -32602, "{bad}");
    let raw = Tx::transfer(3, key(2).address, 1).sign(&key(1));
    let pooled = call(&f.rpc, "eth_sendRawTransaction", json!([raw])).await;
    assert_eq!(pooled, Ok(json!(tx_hash(&raw))));
    let node = TestNode::with_patches(&funded_keys(), Patches::ALL.without(Patch::AppMempool));
    let rpc = abcid::rpc::module(node.node.clone(), &closed_port_url(), Default::default())
        .expect("module");
    let unreachable = call(&rpc, "eth_sendRawTransaction", json!([raw]))
        .await
        .expect_err("nothing listens");
    assert_eq!(unreachable["code"], -32002, "EIP-1474 resource unavailable");
    let message = unreachable["message"].as_str().unwrap();
    assert!(
        message.starts_with("consensus node unavailable: "),
        "{message}"
    );
}

#[tokio::test]
async fn the_patches_in_force_are_reported() {
    let patches: abcid::patches::Patches = "rwlock,sender-cache".parse().expect("valid names");
    let node = TestNode::with_patches(&[], patches);
    let rpc = abcid::rpc::module(node.node.clone(), &closed_port_url(), Default::default())
        .expect("module");
    let version = call(&rpc, "web3_clientVersion", json!([])).await;
    let version = version.expect("a version");
    assert!(
        version.as_str().is_some_and(
            |v| v.starts_with("abcid/v") && v.ends_with("/patches=rwlock,sender-cache")
        ),
        "{version}"
    );
    let list = call(&rpc, "abcid_patches", json!([])).await;
    assert_eq!(list, Ok(json!(["rwlock", "sender-cache"])));
}

#[tokio::test]
async fn the_cometbft_rpc_transactions_go_to_is_reported() {
    let node = TestNode::new();
    let url = closed_port_url();
    let rpc = abcid::rpc::module(node.node.clone(), &format!("{url}/"), Default::default())
        .expect("module");
    let answer = call(&rpc, "abcid_cometbftRpc", json!([])).await;
    assert_eq!(answer, Ok(json!(url)));
}

/// A receipt (and its transaction by hash) is read from its transaction's
/// record alone: the same work in a 1,000-transaction block as in a
/// 5-transaction one, counted in records decoded, not timed. Log indices
/// stay block-wide: the store call after 1,000 transfers has log index 0,
/// the one after another store call 1.
#[tokio::test]
async fn a_receipt_costs_one_record_whatever_the_size_of_its_block() {
    let node = TestNode::new();
    let rpc = abcid::rpc::module(node.node.clone(), &closed_port_url(), Default::default())
        .expect("module");
    let (a, b) = (key(1), key(2));
    let deploy = Tx::deploy(0, store_init()).sign(&b);
    assert_eq!(node.block(&[deploy]).tx_results[0].code, 0);
    let contract = b.address.create(0);
    let mut nonce = 0;
    for size in [5u64, 1_000] {
        let mut txs: Vec<Bytes> = (nonce..nonce + size)
            .map(|n| Tx::transfer(n, key(3).address, 1).sign(&a))
            .collect();
        nonce += size;
        let b_nonce = node.nonce(b.address);
        txs.push(Tx::call(b_nonce, contract, word(size)).sign(&b));
        txs.push(Tx::call(b_nonce + 1, contract, word(size + 1)).sign(&b));
        let results = node.block(&txs);
        assert!(results.tx_results.iter().all(|r| r.code == 0), "{size}");
        for (at, raw) in txs.iter().enumerate().skip(size as usize - 1) {
            let before = node.node.records_read();
            let hash = json!([tx_hash(raw)]);
            let receipt = call(&rpc, "eth_getTransactionReceipt", hash.clone())
                .await
                .unwrap();
            let tx = call(&rpc, "eth_getTransactionByHash", hash).await.unwrap();
            let after = node.node.records_read();
            assert_eq!(receipt["transactionIndex"], hex_u(U256::from(at)), "{size}");
            assert_eq!(tx["blockNumber"], receipt["blockNumber"], "{size}");
            let read = (after.blocks - before.blocks, after.txs - before.txs);
            assert_eq!(read, (0, 2), "{size}: blocks and transactions read");
            let first_log = receipt["logs"][0]["logIndex"].clone();
            // The last transfer logs nothing; the store calls 0, then 1.
            let expected = (at as u64)
                .checked_sub(size)
                .map_or(Value::Null, |i| hex_u(U256::from(i)));
            assert_eq!(first_log, expected, "{size}: {receipt}");
        }
    }
}
