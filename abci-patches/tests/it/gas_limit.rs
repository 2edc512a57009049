//! The block gas limit, as a real EVM chain enforces it: written into
//! CometBFT's `block.max_gas` at InitChain, respected by PrepareProposal,
//! and enforced by FinalizeBlock against a proposer that ignores it; and
//! CheckTx and execution agreeing on EIP-7623's calldata floor.

use abcid::genesis::DEFAULT_BLOCK_GAS_LIMIT;
use abcid::patches::Patches;
use alloy_primitives::{Address, Bytes, U256};
use tendermint_abci::Application;
use tendermint_proto::v0_38::abci::{CheckTxType, RequestInitChain, RequestPrepareProposal};
use tendermint_proto::v0_38::types::{BlockParams, ConsensusParams};

use crate::common::*;

/// CometBFT's default `block.max_bytes`.
const COMETBFT_MAX_BYTES: i64 = 22_020_096;

/// The `app_state` of the test chain (keys 1 to 3 funded) with `limit`.
fn app_state_with_limit(limit: u64) -> String {
    let alloc: Vec<(Address, U256)> = (1..=3)
        .map(|n| (key(n).address, U256::from(FUNDED)))
        .collect();
    let mut genesis: serde_json::Value =
        serde_json::from_str(&app_state(&alloc)).expect("valid app state");
    genesis["block_gas_limit"] = limit.into();
    genesis.to_string()
}

/// A node after InitChain whose block gas limit is `limit`.
fn node_with_limit(limit: u64) -> TestNode {
    let node = TestNode::open(tempfile::tempdir().expect("a temporary directory"));
    node.init_chain(&app_state_with_limit(limit));
    node
}

/// InitChain as CometBFT sends it, with `max_gas` in the block parameters.
fn init_request(app_state: &str, max_gas: i64) -> RequestInitChain {
    RequestInitChain {
        chain_id: "feth-test".to_string(),
        app_state_bytes: app_state.as_bytes().to_vec().into(),
        initial_height: 1,
        consensus_params: Some(ConsensusParams {
            block: Some(BlockParams {
                max_bytes: COMETBFT_MAX_BYTES,
                max_gas,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn prepare(node: &TestNode, txs: &[Bytes], max_tx_bytes: i64) -> Vec<Bytes> {
    let response = node.app.prepare_proposal(RequestPrepareProposal {
        max_tx_bytes,
        txs: txs.iter().map(|t| t.0.clone()).collect(),
        height: node.next_height() as i64,
        ..Default::default()
    });
    response.txs.into_iter().map(Bytes).collect()
}

#[test]
fn init_chain_sets_cometbft_max_gas_to_the_block_gas_limit() {
    let fresh = || TestNode::open(tempfile::tempdir().expect("a temporary directory"));
    let node = fresh();
    let response = node.app.init_chain(init_request(&app_state(&[]), -1));
    let expected = ConsensusParams {
        block: Some(BlockParams {
            max_bytes: COMETBFT_MAX_BYTES,
            max_gas: DEFAULT_BLOCK_GAS_LIMIT as i64,
        }),
        ..Default::default()
    };
    assert_eq!(response.consensus_params, Some(expected));
    assert_eq!(DEFAULT_BLOCK_GAS_LIMIT, 150_000_000);

    let node = fresh();
    let response = node
        .app
        .init_chain(init_request(&app_state_with_limit(500_000), 30_000_000));
    let block = response.consensus_params.and_then(|p| p.block);
    assert_eq!(
        block.map(|b| (b.max_bytes, b.max_gas)),
        Some((COMETBFT_MAX_BYTES, 500_000))
    );

    // Already equal: nothing to change.
    let node = fresh();
    let response = node
        .app
        .init_chain(init_request(&app_state_with_limit(500_000), 500_000));
    assert_eq!(response.consensus_params, None);
    assert!(!response.app_hash.is_empty());
}

#[test]
fn proposals_stop_before_the_block_gas_limit_in_mempool_order() {
    let node = node_with_limit(100_000);
    let (a, b, c) = (key(1), key(2), key(3));
    let txs: Vec<Bytes> = vec![
        Tx::transfer(0, c.address, 1).sign(&a),
        Tx::call(0, c.address, Bytes::new()).sign(&b),
        Tx::transfer(1, c.address, 1).sign(&a),
        Tx::transfer(2, c.address, 1).sign(&a),
    ];
    // 21,000 + 100,000 > 100,000: only the first one.
    assert_eq!(prepare(&node, &txs, 1 << 20), txs[..1]);
    // Without the call: 3 × 21,000 fit, in order.
    let transfers = [txs[0].clone(), txs[2].clone(), txs[3].clone()];
    assert_eq!(prepare(&node, &transfers, 1 << 20), transfers);
    // Many transfers: the prefix of 4 (84,000 gas), never more.
    let many: Vec<Bytes> = (0..10)
        .map(|n| Tx::transfer(n, c.address, 1).sign(&a))
        .collect();
    let prepared = prepare(&node, &many, 1 << 20);
    assert_eq!(prepared, many[..4]);
    let response = node.block(&prepared);
    assert!(response.tx_results.iter().all(|r| r.code == 0));
    let block = node.node.head().expect("a head");
    assert_eq!(block.gas_used, 4 * TRANSFER_GAS);
    assert_eq!(block.gas_limit, 100_000);
}

#[test]
fn proposals_still_fit_max_tx_bytes() {
    let node = node_with_limit(DEFAULT_BLOCK_GAS_LIMIT);
    let (a, b) = (key(1), key(2));
    let txs: Vec<Bytes> = (0..5)
        .map(|n| Tx::transfer(n, b.address, 1).sign(&a))
        .collect();
    let three: usize = txs[..3].iter().map(|t| t.len()).sum();
    assert_eq!(prepare(&node, &txs, three as i64), txs[..3]);
    assert_eq!(prepare(&node, &txs, three as i64 - 1), txs[..2]);
}

#[test]
fn a_block_beyond_the_gas_limit_executes_what_fits_and_refuses_the_rest() {
    let node = node_with_limit(100_000);
    let (a, b, c) = (key(1), key(2), key(3));
    let stranger = Address::repeat_byte(0x77);
    // A proposer that ignores the limit: FinalizeBlock directly.
    let txs = vec![
        Tx::transfer(0, stranger, 1).sign(&a),
        Tx::transfer(1, stranger, 1).sign(&a),
        Tx::transfer(2, stranger, 1).sign(&a),
        // 37,000 left: this call asks for 100,000.
        Tx::call(0, stranger, Bytes::new()).sign(&b),
        // A transfer still fits in 37,000: Ethereum's rule is gas left.
        Tx::transfer(0, stranger, 1).sign(&c),
        // 16,000 left.
        Tx::transfer(3, stranger, 1).sign(&a),
        Tx::transfer(4, stranger, 1).sign(&a),
    ];
    let before_b = node.account(b.address);
    let response = node.block(&txs);
    let codes: Vec<u32> = response.tx_results.iter().map(|r| r.code).collect();
    assert_eq!(codes, vec![0, 0, 0, 14, 0, 14, 14]);
    let exhausted = [
        (3, 100_000, 37_000),
        (5, 21_000, 16_000),
        (6, 21_000, 16_000),
    ];
    for (i, gas, left) in exhausted {
        let r = &response.tx_results[i];
        assert_eq!(
            r.log,
            format!("gas limit reached: gas {gas}, block gas left {left}")
        );
        assert_eq!((r.codespace.as_str(), r.gas_used), ("abcid", 0));
        assert!(node.node.tx(&tx_hash(&txs[i])).unwrap().is_none());
    }
    // Not executed: no state change, no gas.
    assert_eq!(node.account(b.address), before_b);
    assert_eq!(node.nonce(a.address), 3);
    assert_eq!(node.nonce(c.address), 1);
    assert_eq!(node.balance(stranger), U256::from(4));
    let block = node.node.head().expect("a head");
    assert_eq!(block.gas_used, 4 * TRANSFER_GAS);
    assert!(block.gas_used <= block.gas_limit);
    assert_eq!(block.invalid_txs, 3);
    // The cut transactions execute in the next block.
    let response = node.block(&[txs[3].clone(), txs[5].clone(), txs[6].clone()]);
    assert!(response.tx_results.iter().all(|r| r.code == 0));
}

#[test]
fn checktx_refuses_a_transaction_larger_than_a_block() {
    let node = node_with_limit(100_000);
    let mut tx = Tx::call(0, key(2).address, Bytes::new());
    tx.gas_limit = 100_001;
    let r = node.check(&tx.sign(&key(1)), CheckTxType::New);
    assert_eq!(r.code, 9, "{}", r.log);
    assert_eq!(r.log, "exceeds block gas limit: gas 100001, limit 100000");
    tx.gas_limit = 100_000;
    assert_eq!(node.check(&tx.sign(&key(1)), CheckTxType::New).code, 0);
}

#[test]
fn calldata_floor_is_refused_alike_by_checktx_and_finalize_block() {
    // 1,000 non-zero bytes: intrinsic gas 37,000, EIP-7623 floor 61,000.
    let data = Bytes::from(vec![0xab; 1_000]);
    let mut tx = Tx::call(0, Address::repeat_byte(0x77), data);
    tx.gas_limit = 50_000;
    let raw = tx.sign(&key(1));
    let message = "intrinsic gas too low: gas 50000, minimum needed 61000";
    for patches in [Patches::ALL, Patches::NONE] {
        let alloc = [(key(1).address, U256::from(FUNDED))];
        let node = TestNode::with_patches(&alloc, patches);
        let checked = node.check(&raw, CheckTxType::New);
        assert_eq!((checked.code, checked.log.as_str()), (8, message));
        let response = node.block(std::slice::from_ref(&raw));
        let result = &response.tx_results[0];
        assert_eq!((result.code, result.log.as_str()), (8, message));
        assert_eq!(node.nonce(key(1).address), 0);
    }
    // At the floor it executes and pays exactly the floor.
    tx.gas_limit = 61_000;
    let node = TestNode::new();
    let raw = tx.sign(&key(1));
    assert_eq!(node.check(&raw, CheckTxType::New).code, 0);
    let response = node.block(std::slice::from_ref(&raw));
    assert_eq!(
        response.tx_results[0].code, 0,
        "{}",
        response.tx_results[0].log
    );
    assert_eq!(response.tx_results[0].gas_used, 61_000);
}
