//! `nonce-queue`: future nonces admitted within bounds and queued until their
//! predecessors arrive, proposals in nonce order without gaps, ProcessProposal
//! refusing a gap, expiry, replacement by a higher fee, and the same chain as
//! without the patch on everything but a gap.

use std::time::Duration;

use abcid::nonce_queue::QueueConfig;
use abcid::patches::{Patch, Patches};
use alloy_primitives::{keccak256, Address, Bytes, U256};
use tendermint_abci::Application;
use tendermint_proto::v0_38::abci::response_process_proposal::ProposalStatus;
use tendermint_proto::v0_38::abci::{CheckTxType, RequestProcessProposal};

use crate::common::*;

const TO: Address = Address::repeat_byte(0x42);

fn queued_node(config: QueueConfig) -> TestNode {
    queued_node_with(Patches::ALL, config)
}

/// A node running `patches` and `nonce-queue`.
fn queued_node_with(patches: Patches, config: QueueConfig) -> TestNode {
    let alloc: Vec<(Address, U256)> = (1..=3)
        .map(|n| (key(n).address, U256::from(FUNDED)))
        .collect();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let node = TestNode::open_queued(dir, patches.with(Patch::NonceQueue), config);
    node.init_chain(&app_state(&alloc));
    node
}

fn transfer(nonce: u64) -> Bytes {
    Tx::transfer(nonce, TO, 1 + u128::from(nonce)).sign(&key(1))
}

/// A transfer of key 1 at `nonce` paying `tip` gwei (fee cap 10 gwei more).
fn priced(nonce: u64, tip: u128) -> Bytes {
    Tx {
        fee: Fee::Eip1559 {
            max_fee: (10 + tip) * GWEI,
            tip: tip * GWEI,
        },
        ..Tx::transfer(nonce, TO, 1)
    }
    .sign(&key(1))
}

fn process(node: &TestNode, txs: &[Bytes]) -> ProposalStatus {
    let response = node.app.process_proposal(RequestProcessProposal {
        txs: txs.iter().map(|t| t.0.clone()).collect(),
        height: node.next_height() as i64,
        ..Default::default()
    });
    ProposalStatus::try_from(response.status).expect("a known status")
}

fn code(node: &TestNode, raw: &Bytes, kind: CheckTxType) -> (u32, String) {
    let r = node.check(raw, kind);
    (r.code, r.log)
}

#[test]
fn out_of_order_nonces_are_queued_then_proposed_and_executed_in_order() {
    // The tuned node, and the "before" one that executes in CheckTx and
    // rechecks in full.
    for patches in [Patches::ALL, Patches::NONE] {
        queued_in_order(queued_node_with(patches, QueueConfig::default()));
    }
    // Without the patch the gap is refused by CheckTx; a proposal holding
    // one is refused as with it, and PrepareProposal leaves it out.
    let plain = TestNode::new();
    let arrival = [transfer(2), transfer(0), transfer(1)];
    let (refused, log) = code(&plain, &transfer(2), CheckTxType::New);
    assert_eq!(refused, 5, "{log}");
    assert_eq!(process(&plain, &arrival), ProposalStatus::Reject);
    assert_eq!(plain.prepare(&arrival), arrival[1..].to_vec());
    assert_eq!(process(&plain, &arrival[1..]), ProposalStatus::Accept);
}

fn queued_in_order(node: TestNode) {
    let arrival = [transfer(2), transfer(0), transfer(1)];
    for raw in &arrival {
        assert_eq!(code(&node, raw, CheckTxType::New), (0, String::new()));
    }
    // The pending nonce counts all three once the gap closed.
    assert_eq!(
        node.node
            .account(&key(1).address, true)
            .unwrap()
            .unwrap()
            .nonce,
        3
    );
    let proposal = node.prepare(&arrival);
    assert_eq!(proposal, vec![transfer(0), transfer(1), transfer(2)]);
    assert_eq!(process(&node, &proposal), ProposalStatus::Accept);
    assert_eq!(
        process(&node, &arrival),
        ProposalStatus::Reject,
        "2 before 0 is a gap"
    );
    let result = node.block(&proposal);
    assert!(result.tx_results.iter().all(|r| r.code == 0), "{result:?}");
    assert_eq!(node.nonce(key(1).address), 3);
}

#[test]
fn a_gap_that_never_fills_expires_and_the_sender_goes_on() {
    let ttl = Duration::from_millis(200);
    let node = queued_node(QueueConfig {
        ttl,
        ..QueueConfig::default()
    });
    let early = transfer(1);
    // Queued: it claims no gas of the next block, where it cannot be.
    let queued = node.check(&early, CheckTxType::New);
    assert_eq!((queued.code, queued.gas_wanted), (0, 0), "{}", queued.log);
    // Not proposable without nonce 0.
    assert!(node.prepare(std::slice::from_ref(&early)).is_empty());
    assert_eq!(
        process(&node, std::slice::from_ref(&early)),
        ProposalStatus::Reject
    );
    node.block(&[]);
    assert_eq!(
        code(&node, &early, CheckTxType::Recheck).0,
        0,
        "still waiting"
    );
    std::thread::sleep(ttl + Duration::from_millis(50));
    node.block(&[]);
    let (expired, log) = code(&node, &early, CheckTxType::Recheck);
    assert_eq!(expired, 19, "{log}");
    assert!(
        log.starts_with("queued transaction expired: nonce 1 waited 0 s for nonce 0"),
        "{log}"
    );
    // The sender is not stuck: nonce 0, then 1 again, are admitted and committed.
    let next = node.check(&transfer(0), CheckTxType::New);
    assert_eq!((next.code, next.gas_wanted), (0, 21_000), "{}", next.log);
    assert_eq!(code(&node, &early, CheckTxType::New).0, 0);
    let proposal = node.prepare(&[early.clone(), transfer(0)]);
    let result = node.block(&proposal);
    assert_eq!(result.tx_results.len(), 2);
    assert_eq!(node.nonce(key(1).address), 2);
}

#[test]
fn a_queued_transaction_is_replaced_only_by_a_higher_fee() {
    for patches in [Patches::ALL, Patches::NONE] {
        replaced(queued_node_with(patches, QueueConfig::default()));
    }
}

fn replaced(node: TestNode) {
    let old = priced(1, 10);
    assert_eq!(code(&node, &old, CheckTxType::New).0, 0);
    // The same bytes again are no replacement.
    assert_eq!(code(&node, &old, CheckTxType::New).0, 0);
    let small_bump = Tx {
        fee: Fee::Eip1559 {
            max_fee: 21 * GWEI,
            tip: 10 * GWEI + 1,
        },
        ..Tx::transfer(1, TO, 1)
    }
    .sign(&key(1));
    assert_eq!(
        code(&node, &small_bump, CheckTxType::New),
        (17, "replacement transaction underpriced".to_string())
    );
    let new = priced(1, 12);
    assert_eq!(code(&node, &new, CheckTxType::New).0, 0);
    // The proposal takes the replacement behind nonce 0.
    assert_eq!(code(&node, &priced(0, 1), CheckTxType::New).0, 0);
    let mempool = [old.clone(), new.clone(), priced(0, 1)];
    let proposal = node.prepare(&mempool);
    assert_eq!(proposal, vec![priced(0, 1), new.clone()]);
    // Committed without them and rechecked in arrival order (the
    // replacement before its predecessor): the replaced one is refused, the
    // replacement queued again and promoted when nonce 0 is rechecked.
    node.block(&[]);
    assert_eq!(
        code(&node, &old, CheckTxType::Recheck),
        (
            20,
            "replaced by a transaction with a higher fee".to_string()
        )
    );
    assert_eq!(code(&node, &new, CheckTxType::Recheck).0, 0);
    assert_eq!(code(&node, &priced(0, 1), CheckTxType::Recheck).0, 0);
    // The replaced one is remembered as dropped, and why; its replacement is not.
    let dropped = node.node.dropped(&keccak256(&old)).unwrap();
    let dropped = dropped.expect("the replaced one is dropped");
    assert_eq!(dropped.kind, abcid::dropped::DropKind::Replaced);
    assert_eq!(
        dropped.reason,
        "replaced by a transaction with a higher fee"
    );
    assert_eq!(node.node.dropped(&keccak256(&new)).unwrap(), None);
    assert_eq!(node.node.drop_counts().unwrap().replaced, 1);
    assert_eq!(
        node.node
            .account(&key(1).address, true)
            .unwrap()
            .unwrap()
            .nonce,
        2
    );
}

#[test]
fn the_queue_is_bounded_per_sender_and_in_all() {
    let node = queued_node(QueueConfig {
        window: 4,
        max_queued: 3,
        ..QueueConfig::default()
    });
    let (wide, log) = code(&node, &transfer(5), CheckTxType::New);
    assert_eq!(wide, 16, "{log}");
    assert_eq!(
        log,
        "nonce too high: next nonce 0, tx nonce 5; at most 4 nonces ahead are queued"
    );
    for nonce in 2..=4 {
        assert_eq!(code(&node, &transfer(nonce), CheckTxType::New).0, 0);
    }
    let other = Tx::transfer(1, TO, 1).sign(&key(2));
    let (full, log) = code(&node, &other, CheckTxType::New);
    assert_eq!(full, 18, "{log}");
    assert_eq!(
        log,
        "txpool is full: 3 queued transactions already wait for their predecessors"
    );
    // Nonce 0 then 1 promote the three waiting, and free the queue.
    assert_eq!(code(&node, &transfer(0), CheckTxType::New).0, 0);
    assert_eq!(code(&node, &transfer(1), CheckTxType::New).0, 0);
    assert_eq!(
        node.node
            .account(&key(1).address, true)
            .unwrap()
            .unwrap()
            .nonce,
        5
    );
    assert_eq!(code(&node, &other, CheckTxType::New).0, 0);
}
