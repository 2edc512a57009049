//! What the proposal rules cost per transaction, on a block of 5,000
//! transfers (500 senders, 10 nonces each) every one of which CheckTx saw:
//!
//! - ProcessProposal's check ([`Consensus::check_payable`]: verification
//!   through the sender cache, the fee, nonce and funds ledger, the gas sum),
//!   as a validator that is not the proposer runs it;
//! - the same with the sender cache off (`all,-sender-cache`): every
//!   signature recovered, as for transactions a validator never saw;
//! - PrepareProposal's steps over the candidates (verify once, order by tip,
//!   the payable prefix that fits), as the proposer runs them;
//!
//! measured in interleaved A-B-C-C-B-A rounds, then FinalizeBlock and Commit
//! of that block once, for scale. Prints nanoseconds per transaction (the
//! median of the rounds and their range); asserts only that the honest block
//! passes and is proposed whole.
//!
//! Run: `cargo bench -p abcid --bench proposal`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use abcid::app::AbciApp;
use abcid::node::{Node, NodeConfig};
use abcid::patches::{Patch, Patches};
use abcid::proposal::BlockRoom;
use alloy_consensus::TxEip1559;
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, TxKind, U256};
use prost::bytes::Bytes;
use secp256k1::SecretKey;
use tendermint_abci::Application;
use tendermint_proto::google::protobuf::Timestamp;
use tendermint_proto::v0_38::abci::{
    CheckTxType, RequestCheckTx, RequestFinalizeBlock, RequestInitChain,
};

mod common;

const SENDERS: usize = 500;
const NONCES: u64 = 10;
const CHAIN_ID: u64 = 9000;
const BLOCK_GAS: u64 = 150_000_000;
/// A-B-C-C-B-A rounds.
const ROUNDS: usize = 6;

/// One signed transfer per (sender, nonce), senders interleaved as a
/// mempool holds them, and the senders' addresses.
fn transfers() -> (Vec<Bytes>, Vec<Address>) {
    let (keys, addresses): (Vec<SecretKey>, Vec<Address>) =
        (0..SENDERS as u64).map(|i| common::key(0x22, i)).unzip();
    let txs = (0..NONCES)
        .flat_map(|nonce| keys.iter().map(move |k| transfer(k, nonce)))
        .collect();
    (txs, addresses)
}

/// A transfer by `key` at `nonce`, encoded.
fn transfer(key: &SecretKey, nonce: u64) -> Bytes {
    let tx = TxEip1559 {
        chain_id: CHAIN_ID,
        nonce,
        gas_limit: 21_000,
        max_fee_per_gas: 3_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
        to: TxKind::Call(Address::repeat_byte(0x42)),
        value: U256::from(1),
        ..Default::default()
    };
    common::sign(tx, key).encoded_2718().into()
}

/// A node running `patches` after InitChain, every sender funded, and
/// CheckTx of every one of `txs`.
fn node(
    dir: &tempfile::TempDir,
    patches: Patches,
    txs: &[Bytes],
    senders: &[Address],
) -> (Arc<Node>, AbciApp) {
    let node =
        Arc::new(Node::open_with(dir.path(), NodeConfig::new(patches)).expect("the node opens"));
    let app = AbciApp::new(node.clone(), None);
    let alloc: serde_json::Map<String, serde_json::Value> = senders
        .iter()
        .map(|a| {
            (
                a.to_string(),
                serde_json::json!({ "balance": "0xd3c21bcecceda1000000" }),
            )
        })
        .collect();
    let state = serde_json::json!({
        "chain_id": CHAIN_ID,
        "fee_recipient": Address::repeat_byte(0xfe).to_string(),
        "block_gas_limit": BLOCK_GAS,
        "alloc": alloc,
    });
    app.init_chain(RequestInitChain {
        time: Some(Timestamp {
            seconds: 1_800_000_000,
            nanos: 0,
        }),
        chain_id: "feth-bench".to_string(),
        app_state_bytes: state.to_string().into_bytes().into(),
        initial_height: 1,
        ..Default::default()
    });
    for tx in txs {
        let answer = app.check_tx(RequestCheckTx {
            tx: tx.clone(),
            r#type: CheckTxType::New as i32,
        });
        assert_eq!(
            answer.code, 0,
            "CheckTx admits the transfer: {}",
            answer.log
        );
    }
    (node, app)
}

/// ProcessProposal's check of `txs`, which must pass.
fn process(node: &Node, txs: &[Bytes]) -> Duration {
    let started = Instant::now();
    let verdict = node.enter().expect("entered").check_payable(black_box(txs));
    let took = started.elapsed();
    assert_eq!(
        verdict.expect("readable"),
        Ok(()),
        "the honest block passes"
    );
    took
}

/// PrepareProposal's steps over `txs`, which must all be proposed.
fn prepare(node: &Node, txs: &[Bytes]) -> Duration {
    let offered = txs.to_vec();
    let started = Instant::now();
    let entered = node.enter().expect("entered");
    let candidates = entered.candidates(offered).expect("readable");
    let ordered = entered.ordered_by_tip(candidates).expect("readable");
    let room = BlockRoom::new(u64::MAX, BLOCK_GAS);
    let proposed = entered.payable_prefix(ordered, room).expect("readable");
    let took = started.elapsed();
    assert_eq!(proposed.len(), txs.len(), "the whole block is proposed");
    took
}

/// The median and the range of `times`, per transaction, in nanoseconds.
fn per_tx(times: &mut [Duration], txs: usize) -> String {
    times.sort();
    let ns = |d: Duration| d.as_nanos() as f64 / txs as f64;
    let (low, mid, high) = (
        ns(times[0]),
        ns(times[times.len() / 2]),
        ns(times[times.len() - 1]),
    );
    format!("{mid:>8.0} ns/tx (rounds {low:.0}–{high:.0})")
}

fn main() {
    let (txs, senders) = transfers();
    let dirs = [
        tempfile::tempdir().expect("a dir"),
        tempfile::tempdir().expect("a dir"),
    ];
    let (cached, app) = node(&dirs[0], Patches::ALL, &txs, &senders);
    let uncached_patches = Patches::ALL.without(Patch::SenderCache);
    let (uncached, _) = node(&dirs[1], uncached_patches, &txs, &senders);
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        a.push(process(&cached, &txs));
        b.push(process(&uncached, &txs));
        c.push(prepare(&cached, &txs));
        c.push(prepare(&cached, &txs));
        b.push(process(&uncached, &txs));
        a.push(process(&cached, &txs));
    }
    let started = Instant::now();
    let answer = app.finalize_block(RequestFinalizeBlock {
        txs: txs.clone(),
        height: 1,
        hash: vec![1u8; 32].into(),
        time: Some(Timestamp {
            seconds: 1_800_000_001,
            nanos: 0,
        }),
        ..Default::default()
    });
    app.commit();
    let executed = started.elapsed();
    assert!(
        answer.tx_results.iter().all(|r| r.code == 0),
        "every transfer executes"
    );
    let n = txs.len();
    println!("{n} transfers from {SENDERS} senders, CheckTx'd; {ROUNDS} A-B-C-C-B-A rounds");
    println!(
        "ProcessProposal check, sender cache (all):    {}",
        per_tx(&mut a, n)
    );
    println!(
        "ProcessProposal check, every sender recovered: {}",
        per_tx(&mut b, n)
    );
    println!(
        "PrepareProposal's steps (all):                {}",
        per_tx(&mut c, n)
    );
    let mut once = [executed];
    println!(
        "FinalizeBlock + Commit of the block, once:    {}",
        per_tx(&mut once, n)
    );
}
