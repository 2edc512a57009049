//! Logs through the web3 module, in-process: `eth_getLogs` with its address,
//! topic and block criteria, geth's errors and bounds, `eth_getBlockReceipts`,
//! receipts' log indices and the blooms of receipts and blocks.

use abcid::rpc::{RpcConfig, Web3};
use alloy_primitives::{Address, Bloom, BloomInput, Bytes, B256};
use jsonrpsee::RpcModule;
use serde_json::{json, Value};

use crate::common::*;

/// The first topic of every log of the emitter.
pub const NOTE: B256 = B256::repeat_byte(0x11);

/// Init code of the emitter: its runtime logs `LOG2(NOTE, word0)` with
/// `word1` as data, then reverts when `word2` is not zero.
pub fn emitter_init() -> Bytes {
    let runtime = format!(
        concat!(
            "602035600052600035", // mem[0] = word1; push word0 (topic 1)
            "7f{}",               // push NOTE (topic 0)
            "60206000a2",         // LOG2(0, 32, NOTE, word0)
            "604035603657",       // if word2 != 0 jump to the revert
            "00",                 // STOP
            "5b600080fd",         // JUMPDEST REVERT(0, 0)
        ),
        hex::encode(NOTE)
    );
    let runtime = hex::decode(runtime).expect("hex");
    assert_eq!(runtime.len(), 0x3b, "the init code copies 0x3b bytes");
    let mut init = hex::decode("603b600c600039603b6000f3").expect("hex");
    init.extend_from_slice(&runtime);
    init.into()
}

/// Calldata of one emitter call.
pub fn note(topic: B256, data: u64, revert: bool) -> Bytes {
    let mut input = topic.to_vec();
    input.extend_from_slice(&word(data));
    input.extend_from_slice(&word(u64::from(revert)));
    input.into()
}

/// A chain with logs: block 1 deploys the emitter; block 2 holds a's note X,
/// b's note Y and a's reverted note X; block 3 a transfer; block 4 b's note X.
pub struct Chain {
    pub node: TestNode,
    pub emitter: Address,
    pub txs: Vec<Bytes>,
}

pub const X: B256 = B256::repeat_byte(0xaa);
pub const Y: B256 = B256::repeat_byte(0xbb);

pub fn chain() -> Chain {
    let node = TestNode::new();
    let (a, b) = (key(1), key(2));
    let emitter = a.address.create(0);
    let txs = vec![
        Tx::deploy(0, emitter_init()).sign(&a),
        Tx::call(1, emitter, note(X, 1, false)).sign(&a),
        Tx::call(0, emitter, note(Y, 2, false)).sign(&b),
        Tx::call(2, emitter, note(X, 3, true)).sign(&a),
        Tx::transfer(3, b.address, 5).sign(&a),
        Tx::call(1, emitter, note(X, 4, false)).sign(&b),
    ];
    for block in [&txs[0..1], &txs[1..4], &txs[4..5], &txs[5..6]] {
        let result = node.block(block);
        assert!(result.tx_results.iter().all(|r| r.code == 0), "{result:?}");
    }
    Chain { node, emitter, txs }
}

pub fn rpc(chain: &Chain, config: RpcConfig) -> RpcModule<Web3> {
    abcid::rpc::module(chain.node.node.clone(), &closed_port_url(), config).expect("module")
}

/// `(block, data word)` of each log, for comparisons.
pub fn summary(logs: &Value) -> Vec<(u64, u64)> {
    logs.as_array()
        .expect("a list of logs")
        .iter()
        .map(|log| {
            let block = u64::from_str_radix(&log["blockNumber"].as_str().unwrap()[2..], 16);
            let data = u64::from_str_radix(&log["data"].as_str().unwrap()[2..], 16);
            (block.unwrap(), data.unwrap())
        })
        .collect()
}

async fn get_logs(rpc: &RpcModule<Web3>, filter: Value) -> Result<Value, Value> {
    call(rpc, "eth_getLogs", json!([filter])).await
}

#[tokio::test]
async fn get_logs_matches_addresses_topics_and_blocks_in_geths_order() {
    let c = chain();
    let rpc = rpc(&c, RpcConfig::default());
    let all = get_logs(&rpc, json!({"fromBlock": "0x1", "address": c.emitter}))
        .await
        .unwrap();
    // The reverted note (data 3) left no log.
    assert_eq!(summary(&all), vec![(2, 1), (2, 2), (4, 4)]);
    let first = &all[0];
    assert_eq!(first["topics"], json!([NOTE, X]));
    assert_eq!(first["logIndex"], "0x0");
    assert_eq!(first["transactionIndex"], "0x0");
    assert_eq!(first["transactionHash"], json!(tx_hash(&c.txs[1])));
    assert_eq!(all[1]["logIndex"], "0x1");
    assert_eq!(all[1]["transactionIndex"], "0x1");
    assert_eq!(all[2]["logIndex"], "0x0");
    assert_eq!(all[2]["removed"], false);
    let block_2 = call(&rpc, "eth_getBlockByNumber", json!(["0x2", false]))
        .await
        .unwrap();
    assert_eq!(first["blockHash"], block_2["hash"]);

    let cases = [
        (
            json!({"fromBlock": "earliest", "topics": [NOTE, X]}),
            vec![(2, 1), (4, 4)],
        ),
        (
            json!({"fromBlock": "0x0", "topics": [null, [X, Y]]}),
            vec![(2, 1), (2, 2), (4, 4)],
        ),
        (
            json!({"fromBlock": "0x0", "topics": [null, Y]}),
            vec![(2, 2)],
        ),
        (
            json!({"fromBlock": "0x0", "topics": [[NOTE, null]]}),
            vec![(2, 1), (2, 2), (4, 4)],
        ),
        // A third position the logs do not have matches nothing.
        (json!({"fromBlock": "0x0", "topics": [NOTE, X, X]}), vec![]),
        (
            json!({"fromBlock": "0x0", "topics": [null, null, null]}),
            vec![],
        ),
        (
            json!({"fromBlock": "0x3", "toBlock": "latest"}),
            vec![(4, 4)],
        ),
        (
            json!({"fromBlock": "0x0", "toBlock": "0x2", "address": [Address::ZERO, c.emitter]}),
            vec![(2, 1), (2, 2)],
        ),
        (
            json!({"fromBlock": "0x0", "address": Address::ZERO}),
            vec![],
        ),
        (
            json!({"blockHash": block_2["hash"], "topics": [NOTE, Y]}),
            vec![(2, 2)],
        ),
        // Defaults: latest to latest.
        (json!({}), vec![(4, 4)]),
    ];
    for (filter, expected) in cases {
        let logs = get_logs(&rpc, filter.clone()).await.unwrap();
        assert_eq!(summary(&logs), expected, "{filter}");
    }
}

#[tokio::test]
async fn receipts_by_block_carry_block_wide_log_indices_and_blooms() {
    let c = chain();
    let rpc = rpc(&c, RpcConfig::default());
    let receipts = call(&rpc, "eth_getBlockReceipts", json!(["0x2"]))
        .await
        .unwrap();
    let receipts = receipts.as_array().expect("a list");
    assert_eq!(receipts.len(), 3);
    for (i, receipt) in receipts.iter().enumerate() {
        let one = call(
            &rpc,
            "eth_getTransactionReceipt",
            json!([tx_hash(&c.txs[1 + i])]),
        )
        .await
        .unwrap();
        assert_eq!(
            receipt, &one,
            "receipt {i} is the one eth_getTransactionReceipt gives"
        );
    }
    assert_eq!(receipts[0]["logs"][0]["logIndex"], "0x0");
    assert_eq!(receipts[1]["logs"][0]["logIndex"], "0x1");
    assert_eq!(receipts[2]["status"], "0x0");
    assert_eq!(receipts[2]["logs"], json!([]));
    let receipt_bloom: Bloom = serde_json::from_value(receipts[1]["logsBloom"].clone()).unwrap();
    assert!(receipt_bloom.contains_input(BloomInput::Raw(c.emitter.as_slice())));
    assert!(receipt_bloom.contains_input(BloomInput::Raw(Y.as_slice())));
    assert_eq!(receipts[2]["logsBloom"], json!(Bloom::ZERO));

    // The block's bloom is the union of its receipts'.
    let block = call(&rpc, "eth_getBlockByNumber", json!(["0x2", false]))
        .await
        .unwrap();
    let block_bloom: Bloom = serde_json::from_value(block["logsBloom"].clone()).unwrap();
    let mut union = Bloom::ZERO;
    for receipt in receipts {
        union.accrue_bloom(&serde_json::from_value(receipt["logsBloom"].clone()).unwrap());
    }
    assert_eq!(block_bloom, union);
    assert!(block_bloom.contains_input(BloomInput::Raw(X.as_slice())));
    let empty = call(&rpc, "eth_getBlockByNumber", json!(["0x3", false]))
        .await
        .unwrap();
    assert_eq!(empty["logsBloom"], json!(Bloom::ZERO));

    // By hash and by tag; an unknown block is null.
    let by_hash = call(&rpc, "eth_getBlockReceipts", json!([block["hash"]]))
        .await
        .unwrap();
    assert_eq!(by_hash.as_array().unwrap(), receipts);
    let latest = call(&rpc, "eth_getBlockReceipts", json!(["latest"]))
        .await
        .unwrap();
    assert_eq!(latest[0]["transactionHash"], json!(tx_hash(&c.txs[5])));
    let future = call(&rpc, "eth_getBlockReceipts", json!(["0x63"])).await;
    assert_eq!(future, Ok(Value::Null));
    let unknown = call(&rpc, "eth_getBlockReceipts", json!([B256::repeat_byte(7)])).await;
    assert_eq!(unknown, Ok(Value::Null));
}

/// Asserts `answer` is the error `code` with `message`.
pub fn assert_error(answer: Result<Value, Value>, code: i64, message: &str) {
    let error = answer.expect_err(message);
    assert_eq!(error["code"], code, "{error}");
    assert_eq!(error["message"], message, "{error}");
}

#[tokio::test]
async fn bad_log_queries_get_geths_errors() {
    let c = chain();
    let rpc = rpc(&c, RpcConfig::default());
    let hash = call(&rpc, "eth_getBlockByNumber", json!(["0x2", false]))
        .await
        .unwrap()["hash"]
        .clone();
    let cases = [
        (json!({"fromBlock": "0x3", "toBlock": "0x2"}), -32000, "invalid block range params"),
        (json!({"fromBlock": "0x1", "toBlock": "0x9"}), -32602, "block range extends beyond current head block"),
        (json!({"fromBlock": "0x8", "toBlock": "0x9"}), -32602, "block range extends beyond current head block"),
        (json!({"fromBlock": "0x8", "toBlock": "latest"}), -32602, "invalid block range params"),
        (json!({"fromBlock": "0x1", "blockHash": hash}), -32602, "invalid argument 0: cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other"),
        (json!({"blockHash": B256::repeat_byte(7)}), -32000, "unknown block"),
        (json!({"topics": [null, null, null, null, null]}), -32000, "exceed max topics"),
        (json!({"topics": ["0x1234"]}), -32602, "invalid argument 0: hex has invalid length 2 after decoding; expected 32 for topic"),
        (json!({"topics": [7]}), -32602, "invalid argument 0: invalid topic(s)"),
        (json!({"topics": "0x1234"}), -32602, "invalid argument 0: invalid topic(s)"),
        (json!({"fromBlock": "pending"}), -32000, "pending logs are not supported"),
    ];
    for (filter, code, message) in cases {
        assert_error(get_logs(&rpc, filter).await, code, message);
    }
}

#[tokio::test]
async fn log_queries_are_bounded_in_blocks_results_and_criteria() {
    let c = chain();
    let config = RpcConfig {
        max_log_blocks: 3,
        max_logs: 2,
        max_log_criteria: 2,
        ..RpcConfig::default()
    };
    let rpc = rpc(&c, config);
    assert_error(
        get_logs(&rpc, json!({"fromBlock": "0x0", "toBlock": "0x3"})).await,
        -32000,
        "exceed maximum block range: 3",
    );
    // Three blocks are allowed, and hold two logs.
    let logs = get_logs(&rpc, json!({"fromBlock": "0x0", "toBlock": "0x2"}))
        .await
        .unwrap();
    assert_eq!(summary(&logs), vec![(2, 1), (2, 2)]);
    assert_error(
        get_logs(&rpc, json!({"fromBlock": "0x2", "toBlock": "0x4"})).await,
        -32000,
        "query returned more than 2 results",
    );
    let three = [Address::ZERO, Address::repeat_byte(1), c.emitter];
    assert_error(
        get_logs(&rpc, json!({"address": three})).await,
        -32000,
        "exceed max addresses or topics per search position",
    );
    assert_error(
        get_logs(&rpc, json!({"topics": [[X, Y, NOTE]]})).await,
        -32000,
        "exceed max addresses or topics per search position",
    );
}

#[tokio::test]
async fn by_block_reads_uncles_blob_fee_and_proofs() {
    let c = chain();
    let rpc = rpc(&c, RpcConfig::default());
    let block = call(&rpc, "eth_getBlockByNumber", json!(["0x2", false]))
        .await
        .unwrap();
    let hash = block["hash"].clone();
    let by_number = call(
        &rpc,
        "eth_getTransactionByBlockNumberAndIndex",
        json!(["0x2", "0x1"]),
    )
    .await
    .unwrap();
    assert_eq!(by_number["hash"], json!(tx_hash(&c.txs[2])));
    assert_eq!(by_number["from"], json!(key(2).address));
    assert_eq!(by_number["transactionIndex"], "0x1");
    let by_hash = call(
        &rpc,
        "eth_getTransactionByBlockHashAndIndex",
        json!([hash, "0x1"]),
    )
    .await
    .unwrap();
    assert_eq!(by_hash, by_number);
    let past_end = call(
        &rpc,
        "eth_getTransactionByBlockNumberAndIndex",
        json!(["0x2", "0x3"]),
    )
    .await;
    assert_eq!(past_end, Ok(Value::Null));
    let count = call(&rpc, "eth_getBlockTransactionCountByHash", json!([hash])).await;
    assert_eq!(count, Ok(json!("0x3")));
    let unknown = call(
        &rpc,
        "eth_getBlockTransactionCountByHash",
        json!([B256::ZERO]),
    )
    .await;
    assert_eq!(unknown, Ok(Value::Null));
    assert_eq!(
        call(&rpc, "eth_getUncleCountByBlockNumber", json!(["0x2"])).await,
        Ok(json!("0x0"))
    );
    assert_eq!(
        call(&rpc, "eth_getUncleCountByBlockHash", json!([hash])).await,
        Ok(json!("0x0"))
    );
    assert_eq!(
        call(&rpc, "eth_getUncleCountByBlockNumber", json!(["0x99"])).await,
        Ok(Value::Null)
    );
    assert_eq!(
        call(
            &rpc,
            "eth_getUncleByBlockNumberAndIndex",
            json!(["0x2", "0x0"])
        )
        .await,
        Ok(Value::Null)
    );
    assert_eq!(
        call(
            &rpc,
            "eth_getUncleByBlockHashAndIndex",
            json!([hash, "0x0"])
        )
        .await,
        Ok(Value::Null)
    );
    assert_eq!(
        call(&rpc, "eth_blobBaseFee", json!([])).await,
        Ok(json!("0x1"))
    );
    let proof = call(&rpc, "eth_getProof", json!([c.emitter, [], "latest"])).await;
    let error = proof.expect_err("no proofs");
    assert_eq!(error["code"], -32601);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("eth_getProof is not supported"),
        "{error}"
    );
}

#[tokio::test]
async fn create_access_list_lists_the_slots_a_call_touches() {
    let node = TestNode::new();
    let a = key(1);
    let store = a.address.create(0);
    node.block(&[Tx::deploy(0, store_init()).sign(&a)]);
    let rpc = abcid::rpc::module(node.node.clone(), &closed_port_url(), RpcConfig::default())
        .expect("module");
    let request = json!({"from": a.address, "to": store, "data": word(0x2a)});
    let answer = call(&rpc, "eth_createAccessList", json!([request, "latest"]))
        .await
        .unwrap();
    // The callee is listed for its slot 0 only; the caller is warm anyway.
    assert_eq!(
        answer["accessList"],
        json!([{"address": store, "storageKeys": [B256::ZERO]}])
    );
    assert!(answer.get("error").is_none_or(Value::is_null), "{answer}");
    // The gas is the call's with that list.
    let mut with_list = request.clone();
    with_list["accessList"] = answer["accessList"].clone();
    let estimate = call(&rpc, "eth_estimateGas", json!([with_list]))
        .await
        .unwrap();
    assert_eq!(answer["gasUsed"], estimate);
    let without = call(&rpc, "eth_estimateGas", json!([request]))
        .await
        .unwrap();
    assert_ne!(
        answer["gasUsed"], without,
        "the list changes what the call costs"
    );
}
