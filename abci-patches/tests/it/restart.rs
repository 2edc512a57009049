//! Info, InitChain idempotence and crash-safe restarts from the same directory.

use abcid::patches::{Patch, Patches};
use alloy_primitives::{Address, Bytes, U256};

use crate::common::*;

fn blocks() -> [Vec<Bytes>; 3] {
    let (a, b) = (key(1), key(2));
    [
        vec![
            Tx::transfer(0, b.address, 1).sign(&a),
            Tx::deploy(1, store_init()).sign(&a),
        ],
        vec![Tx::call(2, a.address.create(1), word(11)).sign(&a)],
        vec![Tx::transfer(0, a.address, 99).sign(&b)],
    ]
}

#[test]
fn info_before_and_after_init_chain() {
    let node = TestNode::open(tempfile::tempdir().unwrap());
    let info = node.info();
    assert_eq!(info.data, "abcid");
    assert_eq!(info.last_block_height, 0);
    assert!(info.last_block_app_hash.is_empty());

    let state = app_state(&[(key(1).address, U256::from(FUNDED))]);
    let app_hash = node.init_chain(&state);
    assert_eq!(app_hash.len(), 32);
    assert_eq!(node.info().last_block_height, 0);
    assert_eq!(node.balance(key(1).address), U256::from(FUNDED));

    // A crash before block 1: CometBFT runs InitChain again.
    let node = node.reopen();
    assert_eq!(node.info().last_block_height, 0);
    assert_eq!(node.init_chain(&state), app_hash);
    assert_eq!(node.balance(key(1).address), U256::from(FUNDED));
}

#[test]
fn info_after_commit_survives_a_reopen() {
    let [one, two, three] = blocks();
    let node = TestNode::new();
    node.block(&one);
    let response = node.block(&two);
    let info = node.info();
    assert_eq!(info.last_block_height, 2);
    assert_eq!(info.last_block_app_hash, response.app_hash);

    let node = node.reopen();
    let reopened = node.info();
    assert_eq!(reopened.last_block_height, 2);
    assert_eq!(reopened.last_block_app_hash, response.app_hash);
    let a = key(1);
    assert_eq!(node.nonce(a.address), 3);
    assert_eq!(
        node.node
            .storage(&a.address.create(1), &U256::ZERO)
            .unwrap(),
        U256::from(11)
    );

    // The reopened node goes on exactly as one that never stopped.
    let after_reopen = node.block(&three);
    let never_stopped = TestNode::new();
    for txs in [&one, &two] {
        never_stopped.block(txs);
    }
    assert_eq!(after_reopen.app_hash, never_stopped.block(&three).app_hash);
}

#[test]
fn a_block_finalized_but_not_committed_is_lost_and_replayed() {
    let [one, two, _] = blocks();
    let node = TestNode::new();
    node.block(&one);
    let committed = node.info();
    let finalized = node.finalize(2, &two);
    assert_eq!(node.info(), committed, "Info reports only committed blocks");

    // Crash between FinalizeBlock and Commit.
    let node = node.reopen();
    assert_eq!(node.info(), committed);
    assert_eq!(node.nonce(key(1).address), 2);
    let replayed = node.block(&two);
    assert_eq!(replayed, finalized, "the replay gives the same results");
    assert_eq!(node.info().last_block_app_hash, finalized.app_hash);
}

#[test]
fn a_reopen_with_the_other_tx_layout_serves_every_transaction() {
    let [one, two, three] = blocks();
    let alloc: Vec<(Address, U256)> = (1..=3)
        .map(|n| (key(n).address, U256::from(FUNDED)))
        .collect();
    let json = Patches::ALL.without(Patch::RamBlockTxs);
    for (first, then) in [(json, Patches::ALL), (Patches::ALL, json)] {
        let node = TestNode::with_patches(&alloc, first);
        node.block(&one);
        node.block(&two);
        let written: Vec<_> = one
            .iter()
            .chain(&two)
            .map(|raw| node.node.tx(&tx_hash(raw)).unwrap().expect("stored"))
            .collect();
        // A crash between FinalizeBlock and Commit, and a restart with the
        // other layout.
        let finalized = node.finalize(3, &three);
        let node = node.reopen_with(then);
        for (raw, record) in one.iter().chain(&two).zip(&written) {
            let read = node.node.tx(&tx_hash(raw)).unwrap();
            assert_eq!(read.as_ref(), Some(record), "{first} then {then}");
        }
        assert_eq!(node.node.tx(&tx_hash(&three[0])).unwrap(), None);
        let replayed = node.block(&three);
        assert_eq!(replayed, finalized, "{first} then {then}");
        let record = node.node.tx(&tx_hash(&three[0])).unwrap().expect("stored");
        assert_eq!((record.block_number, record.index), (3, 0));
        assert_eq!(record.sender, key(2).address);
    }
}
