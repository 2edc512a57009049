//! The engine's state machine against a scripted node ([`FakeNode`]), on
//! tokio's paused clock: back-offs are read in virtual time. Runs use no
//! signer threads (`run(0)`: the workers sign inline), so every step runs
//! on the test's runtime and the clock only moves when all of it waits.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256};

use super::*;
use crate::fake::{Answer, FakeNode};
use crate::plan::LoadPlan;
use crate::tally::{Tally, TallyConfig};
use feth_chain::accounts::{KeySet, KeySource};
use feth_chain::fees::{FeeFollower, FeePolicy};

/// An engine sending `per_account` transfers from each of
/// `nonces.len()` accounts (starting at those nonces) with `per_sender`
/// in flight per sender, one transaction per request, through `node`.
fn engine(
    node: &Arc<FakeNode>,
    nonces: &[u64],
    per_account: u64,
    per_sender: usize,
) -> (Arc<Engine<FakeNode>>, Vec<Address>) {
    let mut keys = KeySet::new(KeySource::Seed(B256::repeat_byte(7)));
    keys.extend_to(nonces.len());
    let addresses = keys.addresses.clone();
    let mut plan = LoadPlan::transfers(RateSchedule::Closed, nonces.len());
    plan.per_account = Some(per_account);
    plan.per_sender = per_sender;
    plan.per_request = 1;
    plan.max_parallelism = 8;
    plan.batch = 4;
    let fee = Fee::Eip1559 {
        max_fee: 2_000_000_000,
        tip: 1_000_000,
    };
    let cfg = EngineConfig {
        plan,
        writes: vec![Write {
            workload: Workload::Transfer,
            share: 1.0,
            gas_limit: 21_000,
        }],
        fee,
        fees: Arc::new(FeeFollower::new(fee, 1_000_000_000, FeePolicy::default())),
        chain_id: 9000,
        refill: false,
    };
    let tally = Tally::new(TallyConfig {
        run_start_unix: 0.0,
        schedule: RateSchedule::Closed,
        window_blocks: None,
        start_time: 0.0,
        start_timestamp: 0,
    });
    let ledger = Arc::new(Mutex::new(Ledger::new(tally, None)));
    let clients = vec![node.clone()];
    let engine = Engine::new(cfg, clients, Arc::new(keys), nonces, Instant::now(), ledger);
    (engine, addresses)
}

/// Runs `engine` to its end, failing the test if it does not end.
async fn run(engine: &Arc<Engine<FakeNode>>) {
    tokio::time::timeout(Duration::from_secs(600), engine.run(0))
        .await
        .expect("the run ends");
}

#[tokio::test(start_paused = true)]
async fn a_gap_is_healed_by_resending_the_senders_own_lost_transactions() {
    let node = Arc::new(FakeNode::new());
    let (engine, from) = engine(&node, &[5], 3, 1);
    node.hold(from[0], 5);
    // The node restarts before it reads nonce 7: 5 and 6 are lost.
    node.script(from[0], 7, [Answer::Restart { held: 5 }]);
    run(&engine).await;
    assert_eq!(node.nonces_from(from[0]), [5, 6, 7, 5, 6, 7]);
    assert_eq!(node.held(from[0]), 8);
    let s = engine.snapshot();
    assert_eq!((s.accepted, s.rejected, s.resends), (3, 0, 2));
}

#[tokio::test(start_paused = true)]
async fn a_gap_not_of_the_senders_making_resynchronises_to_the_nodes_nonce() {
    let node = Arc::new(FakeNode::new());
    // The engine believes the account is at nonce 2; the node holds 0.
    let (engine, from) = engine(&node, &[2], 2, 1);
    run(&engine).await;
    // Nonce 2 is refused (no transaction of ours below it to resend); the
    // refused transaction is replaced, and both go from the node's nonce.
    assert_eq!(node.nonces_from(from[0]), [2, 0, 1]);
    assert_eq!(node.held(from[0]), 2);
    let s = engine.snapshot();
    assert_eq!((s.accepted, s.rejected, s.resyncs), (2, 1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_low_nonce_resynchronises_to_the_nodes_nonce() {
    let node = Arc::new(FakeNode::new());
    let (engine, from) = engine(&node, &[3], 2, 1);
    node.hold(from[0], 5);
    run(&engine).await;
    // Not 4: the node's nonce is taken over, not the refused one's next.
    assert_eq!(node.nonces_from(from[0]), [3, 5]);
    assert_eq!(node.held(from[0]), 6);
    let s = engine.snapshot();
    assert_eq!((s.accepted, s.rejected, s.resyncs), (1, 1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_refusal_for_good_leaves_its_nonce_to_the_next_transaction() {
    let node = Arc::new(FakeNode::new());
    let (engine, from) = engine(&node, &[0], 2, 1);
    let refusal = "exceeds block gas limit: gas 40000000, limit 30000000";
    node.script(from[0], 0, [Answer::refuse(refusal)]);
    run(&engine).await;
    let got = node.received();
    assert_eq!(node.nonces_from(from[0]), [0, 0]);
    assert_ne!(
        got[0].hash, got[1].hash,
        "another transaction takes the nonce"
    );
    let s = engine.snapshot();
    assert_eq!((s.accepted, s.rejected, s.backoffs), (1, 1, 0));
}

#[tokio::test(start_paused = true)]
async fn a_fee_refusal_resigns_the_same_nonce_with_a_higher_fee() {
    let node = Arc::new(FakeNode::new());
    let (engine, from) = engine(&node, &[0], 1, 1);
    let refusal = "max fee per gas less than block base fee: maxFeePerGas: 1, baseFee: 1000000000";
    node.script(from[0], 0, [Answer::refuse(refusal)]);
    run(&engine).await;
    let got = node.received();
    assert_eq!(node.nonces_from(from[0]), [0, 0]);
    assert_ne!(got[0].hash, got[1].hash, "signed again");
    let s = engine.snapshot();
    assert_eq!((s.accepted, s.rejected, s.fee_resends), (1, 0, 1));
}

#[tokio::test(start_paused = true)]
async fn back_offs_are_honoured_and_double() {
    let node = Arc::new(FakeNode::new());
    let (engine, from) = engine(&node, &[0], 1, 1);
    let full = Answer::refuse("txpool is full");
    node.script(from[0], 0, [full.clone(), full, Answer::Unreachable]);
    run(&engine).await;
    let got = node.received();
    assert_eq!(node.nonces_from(from[0]), [0, 0, 0, 0]);
    assert!(got.iter().all(|r| r.hash == got[0].hash), "the same bytes");
    let gaps: Vec<Duration> = got.windows(2).map(|w| w[1].at - w[0].at).collect();
    // Busy twice (20 ms, then 40 ms), then out of reach: the timeout's
    // floor (100 ms) is above the doubled busy back-off.
    let floors = [
        BUSY_BACKOFF.floor,
        BUSY_BACKOFF.floor * 2,
        TIMEOUT_BACKOFF.floor,
    ];
    for (gap, floor) in gaps.iter().zip(floors) {
        assert!(*gap >= floor, "{gaps:?}");
        assert!(*gap < floor * 2, "{gaps:?}");
    }
    let s = engine.snapshot();
    assert_eq!((s.accepted, s.backoffs, s.resends), (1, 2, 1));
}

#[tokio::test(start_paused = true)]
async fn at_most_k_transactions_of_a_sender_are_in_flight() {
    // The node takes 10 ms per request and queues nonces that arrive
    // ahead of their predecessors (parallel requests reorder).
    let node = Arc::new(
        FakeNode::new()
            .queueing()
            .with_latency(Duration::from_millis(10)),
    );
    let (engine, from) = engine(&node, &[0, 0], 12, 3);
    run(&engine).await;
    for a in &from {
        assert_eq!(node.most_in_flight(*a), 3, "{a}");
        assert_eq!(node.held(*a), 12, "{a}");
    }
    let s = engine.snapshot();
    assert_eq!((s.accepted, s.rejected), (24, 0));
}
