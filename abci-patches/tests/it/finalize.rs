//! FinalizeBlock's rejection paths, per-transaction results and the app hash.

use abcid::patches::{Patch, Patches};
use alloy_primitives::{Address, Bytes, B256, U256};
use tendermint_abci::Application;
use tendermint_proto::v0_38::abci::{
    response_process_proposal::ProposalStatus, ExecTxResult, RequestPrepareProposal,
    RequestProcessProposal,
};

use crate::common::*;

/// Asserts `result` is a rejection with `code` whose log starts with `log`,
/// reported under the transaction's hash.
fn assert_rejected(result: &ExecTxResult, code: u32, log: &str, raw: &Bytes) {
    assert_eq!(result.code, code, "{}", result.log);
    assert!(result.log.starts_with(log), "{}", result.log);
    assert_eq!(result.codespace, "abcid");
    assert_eq!(result.gas_used, 0);
    assert_eq!(attribute(result, "hash"), Some(tx_hash(raw).to_string()));
    assert_eq!(attribute(result, "status"), None);
}

/// The accounts the tests look at, as a comparable snapshot.
fn snapshot(node: &TestNode, addresses: &[Address]) -> Vec<(U256, u64)> {
    addresses
        .iter()
        .map(|a| (node.balance(*a), node.nonce(*a)))
        .collect()
}

#[test]
fn same_nonce_twice_in_one_block_second_is_nonce_too_low() {
    let (a, b, c) = (key(1), key(2), key(3));
    let first = Tx::transfer(0, b.address, 100).sign(&a);
    let second = Tx::transfer(0, c.address, 200).sign(&a);
    let node = TestNode::new();
    let response = node.block(&[first.clone(), second.clone()]);

    assert_eq!(response.tx_results.len(), 2, "one result per transaction");
    assert_eq!(response.tx_results[0].code, 0);
    assert_rejected(
        &response.tx_results[1],
        4,
        "nonce too low: next nonce 1, tx nonce 0",
        &second,
    );
    assert_eq!(node.balance(c.address), U256::from(FUNDED), "untouched");
    let head = node.node.head().unwrap();
    assert_eq!(head.tx_hashes, vec![tx_hash(&first)]);
    assert_eq!(head.invalid_txs, 1);
    assert!(node.node.tx(&tx_hash(&second)).unwrap().is_none());

    // The state is exactly that of the first transaction alone.
    let alone = TestNode::new();
    alone.block(&[first]);
    let everyone = [a.address, b.address, c.address, fee_recipient()];
    assert_eq!(snapshot(&node, &everyone), snapshot(&alone, &everyone));
    // The results are part of the app hash.
    assert_ne!(response.app_hash, alone.info().last_block_app_hash);
}

#[test]
fn transaction_that_can_no_longer_pay_is_insufficient_funds() {
    let (poor, b) = (key(9), key(2));
    let first = Tx::transfer(0, b.address, 1_000);
    // Exactly what the first transaction may cost: it spends everything.
    let alloc = [(poor.address, first.max_cost()), (b.address, U256::ZERO)];
    let node = TestNode::with_alloc(&alloc);
    let second = Tx::transfer(1, b.address, 1).sign(&poor);
    let response = node.block(&[first.sign(&poor), second.clone()]);

    assert_eq!(
        response.tx_results[0].code, 0,
        "{}",
        response.tx_results[0].log
    );
    let cost = U256::from(TRANSFER_GAS) * U256::from(3 * GWEI) + U256::from(1);
    assert_rejected(
        &response.tx_results[1],
        6,
        &format!(
            "insufficient funds for gas * price + value: balance {}, tx cost {cost}",
            // max_fee 3 gwei reserved, 2 gwei charged: 1 gwei per gas remains.
            U256::from(TRANSFER_GAS) * U256::from(GWEI)
        ),
        &second,
    );
    assert_eq!(node.nonce(poor.address), 1);
    assert_eq!(
        node.balance(poor.address),
        U256::from(TRANSFER_GAS) * U256::from(GWEI)
    );
    assert_eq!(node.balance(b.address), U256::from(1_000));
    assert!(node.node.tx(&tx_hash(&second)).unwrap().is_none());
}

#[test]
fn undecodable_and_wrong_chain_transactions_are_rejected_the_rest_executes() {
    let (a, b) = (key(1), key(2));
    let garbage = Bytes::from_static(&[0x02, 0xde, 0xad, 0xbe, 0xef]);
    let mut other_chain = Tx::transfer(0, b.address, 5);
    other_chain.chain_id = 1;
    let other_chain = other_chain.sign(&a);
    let valid = Tx::transfer(0, b.address, 7).sign(&a);
    let node = TestNode::new();
    let response = node.block(&[garbage.clone(), other_chain.clone(), valid.clone()]);

    let results = &response.tx_results;
    assert_eq!(results.len(), 3);
    assert_rejected(&results[0], 1, "invalid transaction encoding: ", &garbage);
    assert_rejected(
        &results[1],
        2,
        "invalid chain id: have 1, want 9000",
        &other_chain,
    );
    assert_eq!(results[2].code, 0, "{}", results[2].log);
    assert_eq!(node.balance(b.address), U256::from(FUNDED + 7));
    assert_eq!(node.nonce(a.address), 1);
    let head = node.node.head().unwrap();
    assert_eq!(head.tx_hashes, vec![tx_hash(&valid)]);
    assert_eq!(head.invalid_txs, 2);
}

#[test]
fn app_hash_is_deterministic_and_depends_on_the_block() {
    let (a, b) = (key(1), key(2));
    let block1 = [
        Tx::transfer(0, b.address, 1).sign(&a),
        Tx::deploy(1, store_init()).sign(&a),
    ];
    let block2 = [Tx::call(2, a.address.create(1), word(3)).sign(&a)];
    let block2_other = [Tx::call(2, a.address.create(1), word(4)).sign(&a)];

    let run = |second: &[Bytes]| -> Vec<B256> {
        let node = TestNode::new();
        let mut hashes = vec![node.node.head().unwrap().app_hash];
        for txs in [&block1[..], second] {
            let response = node.block(txs);
            assert!(response.tx_results.iter().all(|r| r.code == 0));
            let info = node.info();
            assert_eq!(info.last_block_app_hash, response.app_hash);
            hashes.push(B256::from_slice(&response.app_hash));
        }
        hashes
    };
    let one = run(&block2);
    let two = run(&block2);
    let other = run(&block2_other);
    assert_eq!(one, two, "same blocks, same app hashes");
    assert_eq!(one[..2], other[..2], "same genesis and block 1");
    assert_ne!(one[2], other[2], "a different block 2");
    assert_ne!(one[1], one[2]);
}

#[test]
fn proposals_keep_the_mempool_order_without_what_would_be_refused() {
    let node = TestNode::new();
    let (a, b) = (key(1), key(2));
    let txs = [
        Tx::transfer(0, b.address, 1).sign(&a),
        Bytes::from_static(b"not a transaction"),
        Tx::transfer(0, b.address, 2).sign(&a),
    ];
    let wire: Vec<_> = txs.iter().map(|t| t.0.clone()).collect();
    let prepared = node.app.prepare_proposal(RequestPrepareProposal {
        max_tx_bytes: 1 << 20,
        txs: wire.clone(),
        height: 1,
        ..Default::default()
    });
    // The second transfer repeats the first's nonce: left out too.
    assert_eq!(prepared.txs, vec![wire[0].clone()]);
    // A proposal holding undecodable bytes is refused, and so is one with a
    // transaction that fails against the state; FinalizeBlock, handed them
    // anyway, gives each its own non-zero code.
    let process = |txs: Vec<_>| {
        node.app
            .process_proposal(RequestProcessProposal {
                txs,
                height: 1,
                ..Default::default()
            })
            .status
    };
    assert_eq!(process(wire.clone()), ProposalStatus::Reject as i32);
    let stale = vec![wire[0].clone(), wire[2].clone()];
    assert_eq!(process(stale), ProposalStatus::Reject as i32);
    assert_eq!(process(prepared.txs), ProposalStatus::Accept as i32);
    let codes: Vec<u32> = node
        .finalize(1, &txs)
        .tx_results
        .iter()
        .map(|r| r.code)
        .collect();
    assert_eq!(codes, vec![0, 1, 4]);
}

/// `optimistic-execution`: FinalizeBlock takes the result of the speculation
/// on its own proposal and drops one on another proposal of the height (the
/// round changed), and either way computes what a node without the patch
/// computes.
#[test]
fn optimistic_execution_uses_its_proposal_and_drops_another() {
    let (a, b) = (key(1), key(2));
    let decided = [
        Tx::transfer(0, b.address, 1).sign(&a),
        Tx::deploy(1, store_init()).sign(&a),
    ];
    let other_round = [Tx::transfer(0, b.address, 7).sign(&a)];
    let next = [Tx::call(2, a.address.create(1), word(3)).sign(&a)];
    let other_next = [Tx::transfer(2, b.address, 7).sign(&a)];
    let run = |patches: Patches| {
        let node = TestNode::with_patches(&funded_keys(), patches);
        let height = node.next_height();
        // Round 0's proposal, then round 1's, which is decided.
        assert!(node.process(height, B256::repeat_byte(0xee), &other_round));
        assert!(node.process(height, block_hash(height), &decided));
        let first = node.finalize(height, &decided);
        node.app.commit();
        // A proposal dropped before FinalizeBlock of another: nothing runs
        // twice and nothing leaks.
        let height = node.next_height();
        assert!(node.process(height, B256::repeat_byte(0xef), &other_next));
        let second = node.finalize(height, &next);
        node.app.commit();
        let results = |r: &tendermint_proto::v0_38::abci::ResponseFinalizeBlock| {
            (r.app_hash.clone(), format!("{:?}", r.tx_results))
        };
        let counted = node.node.speculations();
        let speculations = (counted.used.get(), counted.dropped.get());
        (results(&first), results(&second), speculations)
    };
    let (first, second, speculations) = run(Patches::ALL);
    let without = run(Patches::ALL.without(Patch::OptimisticExecution));
    assert_eq!((first, second), (without.0, without.1));
    // Round 0's speculation was replaced, round 1's used, the last dropped.
    assert_eq!(speculations, (1, 1));
    assert_eq!(without.2, (0, 0));
}
