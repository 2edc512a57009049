//! Every patch computes the same chain: one scenario of blocks (invalid
//! transactions, an overflowing cost, reverts, contract calls, a block
//! beyond the gas limit) with
//! CheckTx and CometBFT's rechecks between them (of senders the blocks touch
//! and do not touch, and after CometBFT dropped an admitted transaction),
//! run on the node without patches and on the node with one patch (and with
//! all of them), must give the same transcript: CheckTx verdicts,
//! FinalizeBlock results, app hashes, stored blocks and receipts, and what
//! web3 reads (balances, storage, a call) see after each block.

use abcid::node::{CallLimits, CallRequest};
use abcid::patches::{Patch, Patches};
use alloy_primitives::{Address, Bytes, U256};
use tendermint_proto::v0_38::abci::CheckTxType;

use crate::common::*;

/// The scenario's block gas limit: 23 transfers fit, the third block holds 30.
const BLOCK_GAS_LIMIT: u64 = 500_000;

/// A node running `patches` over the scenario's genesis.
fn scenario_node(patches: Patches) -> TestNode {
    let alloc: Vec<(Address, U256)> = (1..=4)
        .map(|n| (key(n).address, U256::from(FUNDED)))
        .chain([(key(5).address, U256::from(30_000 * 3 * GWEI))])
        .collect();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let node = TestNode::open_with(dir, patches);
    let mut genesis: serde_json::Value =
        serde_json::from_str(&app_state(&alloc)).expect("valid app state");
    genesis["block_gas_limit"] = BLOCK_GAS_LIMIT.into();
    node.init_chain(&genesis.to_string());
    node
}

/// The transactions of the scenario.
struct Scenario {
    /// The blocks, each a list of transactions proposed in it. Transactions
    /// that are not in any block stay in the simulated mempool and are
    /// rechecked after every block.
    blocks: Vec<Vec<Bytes>>,
    /// Checked first and in no block; the last block holds another
    /// transaction of their sender with the first one's nonce.
    waiting: Vec<Bytes>,
    /// The next of `waiting`: admitted by CheckTx, then dropped by CometBFT
    /// (its mempool filled up before the answer came back, which CometBFT
    /// 0.38 handles by not adding the transaction); sent again after block 1.
    dropped: Bytes,
}

fn scenario() -> Scenario {
    let (k1, k2, k3, k4, k5) = (key(1), key(2), key(3), key(4), key(5));
    let contract = k1.address.create(0);
    let stranger = Address::repeat_byte(0x77);
    let mut wrong_chain = Tx::transfer(0, stranger, 1);
    wrong_chain.chain_id = 1;
    let block1 = vec![
        Tx::deploy(0, store_init()).sign(&k1),
        Tx::call(1, contract, word(7)).sign(&k1),
        // No calldata: the contract reverts (executed, status 0).
        Tx::call(2, contract, Bytes::new()).sign(&k1),
        Tx::transfer(0, stranger, 5).sign(&k2),
        Tx::transfer(1, k3.address, 6).sign(&k2),
        Bytes::from_static(&[0xde, 0xad, 0xbe, 0xef]),
        wrong_chain.sign(&k3),
        // A gap: nonce 5 while the account expects 0.
        Tx::transfer(5, stranger, 1).sign(&k3),
    ];
    let block2 = vec![
        Tx::call(0, contract, word(9)).sign(&k3),
        Tx::call(2, contract, word(11)).sign(&k2),
        Tx::transfer(0, stranger, 1).sign(&k5),
        // key 5 cannot pay for a second one.
        Tx::transfer(1, stranger, 1).sign(&k5),
        // A replay of block 1's first call: nonce too low.
        Tx::call(1, contract, word(7)).sign(&k1),
        // value = 2^256 − 1: `value + gas × fee` overflows (code 21).
        Tx {
            value: U256::MAX,
            ..Tx::transfer(2, stranger, 0)
        }
        .sign(&k5),
        // Init code one byte over EIP-3860's limit.
        Tx {
            gas_limit: 400_000,
            ..Tx::deploy(1, vec![0x60; 49_153].into())
        }
        .sign(&k3),
    ];
    // 30 transfers of 21,000 gas: more than BLOCK_GAS_LIMIT allows.
    let block3 = (0..30)
        .map(|n| Tx::transfer(3 + n, stranger, 1).sign(&k1))
        .collect();
    let waiting = (0..3)
        .map(|n| Tx::transfer(n, k2.address, 3).sign(&k4))
        .collect();
    // Proposed by another validator: key 4's nonce 0 spent otherwise.
    let block4 = vec![Tx::transfer(0, stranger, 2).sign(&k4)];
    Scenario {
        blocks: vec![block1, block2, block3, block4],
        waiting,
        dropped: Tx::transfer(3, k2.address, 3).sign(&k4),
    }
}

/// CheckTx of `raw`, written down as `what`; whether it was admitted.
fn check(node: &TestNode, raw: &Bytes, what: &str, lines: &mut Vec<String>) -> bool {
    let r = node.check(raw, CheckTxType::New);
    lines.push(format!(
        "{what} {} {} {} {}",
        tx_hash(raw),
        r.code,
        r.gas_wanted,
        r.log
    ));
    r.code == 0
}

/// Runs the scenario through ABCI and writes down everything observable.
fn transcript(patches: Patches) -> Vec<String> {
    let node = scenario_node(patches);
    let Scenario {
        blocks,
        waiting,
        dropped,
    } = scenario();
    let mut lines = Vec::new();
    let mut mempool: Vec<Bytes> = Vec::new();
    for raw in waiting
        .iter()
        .chain([&dropped])
        .chain(blocks.iter().flatten())
    {
        if check(&node, raw, "check", &mut lines) && raw != &dropped {
            mempool.push(raw.clone());
        }
    }
    for txs in &blocks {
        let height = node.next_height();
        let response = node.block(txs);
        for (raw, result) in txs.iter().zip(&response.tx_results) {
            lines.push(format!("result {height} {} {result:?}", tx_hash(raw)));
            let record = node.node.tx(&tx_hash(raw)).expect("store readable");
            lines.push(format!("receipt {} {record:?}", tx_hash(raw)));
        }
        let block = node.node.block(height).expect("store readable");
        lines.push(format!("block {height} {block:?}"));
        mempool.retain(|raw| !txs.contains(raw));
        let mut kept = Vec::new();
        for raw in mempool.drain(..) {
            let r = node.check(&raw, CheckTxType::Recheck);
            lines.push(format!(
                "recheck {height} {} {} {}",
                tx_hash(&raw),
                r.code,
                r.log
            ));
            if r.code == 0 {
                kept.push(raw);
            }
        }
        mempool = kept;
        if height == 1 && check(&node, &dropped, "resend", &mut lines) {
            mempool.push(dropped.clone());
        }
        let pending = node.node.account(&key(4).address, true).expect("readable");
        lines.push(format!("pending key4 {pending:?}"));
        lines.extend(web3_reads(&node, height));
    }
    lines.push(format!("info {:?}", node.info()));
    lines
}

/// What web3 reads see after block `height` (from a snapshot with
/// `snapshot-reads`, under the state lock without): balances, the
/// contract's slot and a call of it.
fn web3_reads(node: &TestNode, height: u64) -> Vec<String> {
    let contract = key(1).address.create(0);
    let mut lines: Vec<String> = (1..=5)
        .map(|n| {
            let account = node.node.account(&key(n).address, false);
            format!("account {height} key{n} {account:?}")
        })
        .collect();
    let slot = node.node.storage(&contract, &U256::ZERO);
    lines.push(format!("storage {height} {slot:?}"));
    let request = CallRequest {
        from: Some(key(2).address),
        to: Some(contract),
        input: word(3),
        ..Default::default()
    };
    let outcome = node
        .node
        .call(&request, CallLimits::default())
        .expect("callable");
    let outcome = outcome.map(|o| (o.gas_used, format!("{:?}", o.output)));
    lines.push(format!("call {height} {outcome:?}"));
    lines
}

fn assert_same(patches: Patches) {
    let before = transcript(Patches::NONE);
    let after = transcript(patches);
    assert_eq!(before.len(), after.len(), "{patches}: transcript lengths");
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(b, a, "{patches} differs from none");
    }
}

#[test]
fn the_scenario_exercises_what_it_claims() {
    let lines = transcript(Patches::ALL);
    let has = |needle: &str| lines.iter().any(|l| l.contains(needle));
    assert!(has("revert") || lines.iter().any(|l| l.contains("status: false")));
    assert!(has("nonce too high") && has("nonce too low"), "{lines:#?}");
    assert!(has("insufficient funds") && has("invalid chain id"));
    assert!(has("invalid transaction encoding"));
    // Refused at CheckTx and in the block, under every patch set (the
    // transcripts are compared line by line).
    let overflow: Vec<_> = lines
        .iter()
        .filter(|l| l.contains("tx cost overflows 256 bits"))
        .collect();
    assert!(
        overflow
            .iter()
            .any(|l| l.starts_with("check ") && l.contains(" 21 0 "))
            && overflow
                .iter()
                .any(|l| l.starts_with("result 2 ") && l.contains("code: 21,")),
        "{overflow:#?}"
    );
    assert!(
        has("max initcode size exceeded"),
        "EIP-3860 is in the scenario"
    );
    assert!(lines.iter().any(|l| l.starts_with("recheck")));
    // Block 3: 23 transfers fit in BLOCK_GAS_LIMIT, the 7 beyond it are
    // refused with the exhausted code and execute nothing.
    let block3 = |code: &str| {
        lines
            .iter()
            .filter(|l| l.starts_with("result 3 ") && l.contains(code))
            .count()
    };
    assert_eq!(block3("code: 0,"), 23, "{lines:#?}");
    assert_eq!(block3("code: 14,"), 7, "{lines:#?}");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("result 3 ") && l.contains("gas limit reached"))
            .count(),
        7
    );
    assert!(lines
        .iter()
        .any(|l| l.starts_with("block 3 ") && l.contains("gas_used: 483000,")));
    // "recheck HEIGHT HASH CODE LOG…"
    let rechecks = |height: u64| {
        let prefix = format!("recheck {height} ");
        lines
            .iter()
            .filter(move |l| l.starts_with(&prefix))
            .map(|l| (l.split(' ').nth(3).unwrap_or_default(), l))
    };
    assert!(rechecks(1).count() > 30, "{lines:#?}");
    let resend = lines.iter().find(|l| l.starts_with("resend")).unwrap();
    assert!(resend.contains(" 0 21000 "), "admitted again: {resend}");
    // After block 4, key 4's first waiting transaction is used up.
    let refused: Vec<_> = rechecks(4).filter(|(code, _)| *code != "0").collect();
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert_eq!(refused[0].0, "4", "{refused:#?}");
    assert!(refused[0]
        .1
        .ends_with("nonce too low: next nonce 1, tx nonce 0"));
    let last_pending = lines.iter().rfind(|l| l.starts_with("pending key4"));
    assert!(
        last_pending.unwrap().contains("nonce: 4,"),
        "{last_pending:?}"
    );
}

#[test]
fn none_and_all_compute_the_same_chain() {
    assert_same(Patches::ALL);
}

#[test]
fn each_patch_alone_computes_the_same_chain() {
    for patch in Patch::ALL.into_iter().chain(Patch::OPT_IN) {
        assert_same(Patches::only(patch));
    }
}

#[test]
fn all_with_each_opt_in_tuning_computes_the_same_chain() {
    for patch in Patch::OPT_IN {
        assert_same(Patches::ALL.with(patch));
    }
}

#[test]
fn all_but_each_patch_computes_the_same_chain() {
    for patch in Patch::ALL {
        assert_same(Patches::ALL.without(patch));
    }
}

/// `nonce-queue` is a mempool policy, not a tuning: it changes what CheckTx
/// tells the scenario's one gapped transaction (queued, not refused) and
/// nothing else: every other verdict, result, receipt, block and app hash is
/// the same.
#[test]
fn nonce_queue_changes_only_what_the_gap_is_told() {
    let gap = tx_hash(&Tx::transfer(5, Address::repeat_byte(0x77), 1).sign(&key(3)));
    let gap = gap.to_string();
    let without_gap = |patches: Patches| -> Vec<String> {
        transcript(patches)
            .into_iter()
            .filter(|line| !line.contains(&gap))
            .collect()
    };
    let plain = transcript(Patches::ALL);
    let queued = transcript(Patches::ALL.with(Patch::NonceQueue));
    assert!(plain
        .iter()
        .any(|l| l.contains(&gap) && l.contains("nonce too high")));
    assert!(queued
        .iter()
        .any(|l| l.starts_with("check") && l.contains(&format!("{gap} 0 "))));
    assert_eq!(
        without_gap(Patches::ALL),
        without_gap(Patches::ALL.with(Patch::NonceQueue))
    );
    assert_eq!(
        without_gap(Patches::NONE),
        without_gap(Patches::NONE.with(Patch::NonceQueue))
    );
}

/// A patch set abcid cannot run is refused on its command line, naming the
/// problem, before any state is opened (the set's own rules are
/// feth-patches' unit tests).
#[test]
fn an_unknown_or_unmet_patch_is_refused_before_any_state_is_opened() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("never-created");
    let run = |set: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_abcid"))
            .args(["--patches", set, "--home"])
            .arg(&missing)
            .output()
            .unwrap()
    };
    for (set, said) in [
        ("none,fast-ecrecovr", "unknown patch `fast-ecrecovr`"),
        ("none,optimistic-execution", "needs `parallel-abci`"),
        ("none,rwlock,rwlock", "`rwlock` is written twice"),
    ] {
        let out = run(set);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{set}: {stderr}");
        assert!(stderr.contains(said), "{set}: {stderr}");
    }
    assert!(!missing.exists(), "no state may be created");
}
