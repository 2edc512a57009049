//! CheckTx: admission against the pending (check) state, and recheck after a
//! committed block.

use abcid::node::NodeConfig;
use abcid::patches::{Patch, Patches};
use alloy_primitives::{Address, Bytes, U256};
use tendermint_proto::v0_38::abci::{CheckTxType, ResponseCheckTx};

use crate::common::*;

fn assert_refused(response: &ResponseCheckTx, code: u32, log: &str) {
    assert_eq!(response.code, code, "{}", response.log);
    assert!(response.log.starts_with(log), "{}", response.log);
    assert_eq!(response.codespace, "abcid");
}

#[test]
fn admits_the_next_nonce_and_refuses_with_documented_codes() {
    let node = TestNode::new();
    let (a, b, unfunded) = (key(1), key(2), key(9));
    let first = Tx::transfer(0, b.address, 1);
    let response = node.check(&first.sign(&a), CheckTxType::New);
    assert_eq!(response.code, 0, "{}", response.log);
    assert_eq!(response.gas_wanted, TRANSFER_GAS as i64);

    // The pending nonce is now 1; the committed state is untouched. The
    // same nonce at the same price replaces nothing.
    assert_refused(
        &node.check(&Tx::transfer(0, b.address, 2).sign(&a), CheckTxType::New),
        17,
        "replacement transaction underpriced",
    );
    assert_refused(
        &node.check(&Tx::transfer(5, b.address, 2).sign(&a), CheckTxType::New),
        5,
        "nonce too high: next nonce 1, tx nonce 5",
    );
    let poor = Tx::transfer(0, b.address, 2);
    assert_refused(
        &node.check(&poor.sign(&unfunded), CheckTxType::New),
        6,
        &format!(
            "insufficient funds for gas * price + value: balance 0, tx cost {}",
            poor.max_cost()
        ),
    );
    let mut other_chain = Tx::transfer(1, b.address, 2);
    other_chain.chain_id = 1;
    assert_refused(
        &node.check(&other_chain.sign(&a), CheckTxType::New),
        2,
        "invalid chain id: have 1, want 9000",
    );
    assert_refused(
        &node.check(&Bytes::from_static(b"\x02junk"), CheckTxType::New),
        1,
        "invalid transaction encoding: ",
    );

    assert_eq!(node.nonce(a.address), 0);
    assert_eq!(node.balance(a.address), U256::from(FUNDED));
    let pending = node.node.account(&a.address, true).unwrap().unwrap();
    assert_eq!(pending.nonce, 1);
    assert_eq!(pending.balance, U256::from(FUNDED) - first.max_cost());
}

#[test]
fn the_gas_a_transaction_claims_is_capped_for_cometbfts_reap() {
    let claiming = |nonce| Tx {
        gas_limit: 30_000_000,
        ..Tx::transfer(nonce, key(2).address, 1)
    };
    // By default CheckTx says no transaction wants more than a transfer's
    // 21,000: CometBFT's reap by gas wanted is not filled by claims.
    let node = TestNode::new();
    let response = node.check(&claiming(0).sign(&key(1)), CheckTxType::New);
    assert_eq!(
        (response.code, response.gas_wanted),
        (0, 21_000),
        "{}",
        response.log
    );
    // Uncapped (0), the gas limit is said.
    let config = NodeConfig {
        max_tx_gas_wanted: 0,
        ..NodeConfig::new(Patches::ALL)
    };
    let node = TestNode::with_config(&funded_keys(), config);
    let response = node.check(&claiming(0).sign(&key(1)), CheckTxType::New);
    assert_eq!(response.gas_wanted, 30_000_000, "{}", response.log);
}

#[test]
fn pending_transactions_of_one_sender_are_admitted_in_order_only() {
    let node = TestNode::new();
    let (a, b) = (key(1), key(2));
    let txs: Vec<Bytes> = (0..3)
        .map(|n| Tx::transfer(n, b.address, 1).sign(&a))
        .collect();
    assert_eq!(node.check(&txs[1], CheckTxType::New).code, 5, "a gap");
    for raw in &txs {
        let response = node.check(raw, CheckTxType::New);
        assert_eq!(response.code, 0, "{}", response.log);
    }
    assert_eq!(
        node.node.account(&a.address, true).unwrap().unwrap().nonce,
        3
    );
}

#[test]
fn recheck_after_commit_drops_what_the_block_invalidated_and_keeps_the_rest() {
    let (a, b, c, d) = (key(1), key(2), key(3), key(4));
    let small = |from: &Key, nonce| Tx::transfer(nonce, b.address, 0).sign(from);
    // d holds enough for two small transfers, or one large.
    let small_cost = Tx::transfer(0, b.address, 0).max_cost();
    let node = TestNode::with_alloc(&[
        (a.address, U256::from(FUNDED)),
        (c.address, U256::from(FUNDED)),
        (d.address, small_cost * U256::from(2)),
    ]);
    let large = Tx::transfer(0, b.address, small_cost.to()).sign(&d);

    // This node's mempool: a0 a1, c0, d0 d1.
    let mempool = [
        small(&a, 0),
        small(&a, 1),
        small(&c, 0),
        small(&d, 0),
        small(&d, 1),
    ];
    for raw in &mempool {
        assert_eq!(node.check(raw, CheckTxType::New).code, 0);
    }
    // The block (proposed elsewhere) holds a0, and d's other nonce-0
    // transaction that spends nearly all of d's balance.
    let response = node.block(&[mempool[0].clone(), large]);
    assert!(response.tx_results.iter().all(|r| r.code == 0));
    assert_eq!(
        node.balance(d.address),
        U256::from(TRANSFER_GAS) * U256::from(GWEI)
    );

    // CometBFT rechecks what is left, in order.
    let codes: Vec<u32> = mempool
        .iter()
        .map(|raw| node.check(raw, CheckTxType::Recheck).code)
        .collect();
    assert_eq!(
        codes,
        vec![4, 0, 0, 4, 6],
        "a0 and d0 were used, d1 can no longer pay, a1 and c0 stay"
    );
    // What CometBFT lets go of after its recheck is remembered with why.
    let dropped = |raw: &Bytes| node.node.dropped(&tx_hash(raw)).unwrap();
    let d1 = dropped(&mempool[4]).expect("d1 dropped");
    assert_eq!(d1.kind, abcid::dropped::DropKind::Invalid);
    assert!(d1.reason.contains("insufficient funds"), "{d1:?}");
    assert_eq!(dropped(&mempool[1]), None);
    assert_eq!(node.node.drop_counts().unwrap().invalid, 3);
    assert_eq!(
        node.node.account(&a.address, true).unwrap().unwrap().nonce,
        2
    );
    assert_eq!(
        node.node.account(&c.address, true).unwrap().unwrap().nonce,
        1
    );
    assert_eq!(
        node.node.account(&d.address, true).unwrap().unwrap().nonce,
        1
    );
}

fn pending_nonce(node: &TestNode, address: Address) -> u64 {
    let pending = node.node.account(&address, true).unwrap();
    pending.unwrap_or_default().nonce
}

#[test]
fn lite_recheck_readmits_untouched_senders_and_revalidates_touched_ones() {
    let (a, b, d) = (key(1), key(2), key(4));
    let small = |from: &Key, nonce| Tx::transfer(nonce, b.address, 0).sign(from);
    let small_cost = Tx::transfer(0, b.address, 0).max_cost();
    let alloc = [
        (a.address, U256::from(FUNDED)),
        (d.address, small_cost * U256::from(2)),
    ];
    let large = Tx::transfer(0, b.address, small_cost.to()).sign(&d);
    let (a0, a1, a2, d0, d1) = (
        small(&a, 0),
        small(&a, 1),
        small(&a, 2),
        small(&d, 0),
        small(&d, 1),
    );
    for patches in [Patches::ALL, Patches::ALL.without(Patch::LiteRecheck)] {
        let node = TestNode::with_patches(&alloc, patches);
        for raw in [&a0, &a1, &a2, &d0, &d1] {
            assert_eq!(node.check(raw, CheckTxType::New).code, 0, "{patches}");
        }
        // The block, proposed elsewhere, spends nearly all of d's funds with
        // another nonce 0 and leaves a untouched.
        node.block(std::slice::from_ref(&large));
        // CometBFT dropped a2 when it was admitted (its mempool was full): it
        // rechecks the others.
        let codes: Vec<u32> = [&a0, &a1, &d0, &d1]
            .map(|raw| node.check(raw, CheckTxType::Recheck).code)
            .to_vec();
        assert_eq!(codes, vec![0, 0, 4, 6], "{patches}: d0 used, d1 unpaid");
        assert_eq!(pending_nonce(&node, a.address), 2, "{patches}: a2 is gone");
        assert_eq!(pending_nonce(&node, d.address), 1, "{patches}");
        assert_eq!(node.check(&a2, CheckTxType::New).code, 0, "{patches}");
        assert_eq!(pending_nonce(&node, a.address), 3, "{patches}");

        // An empty block: every sender untouched, all readmitted again.
        node.block(&[]);
        for raw in [&a0, &a1, &a2] {
            assert_eq!(node.check(raw, CheckTxType::Recheck).code, 0, "{patches}");
        }
        let pending = node.node.account(&a.address, true).unwrap().unwrap();
        assert_eq!(pending.nonce, 3, "{patches}");
        assert_eq!(
            pending.balance,
            U256::from(FUNDED) - small_cost * U256::from(3),
            "{patches}"
        );
    }
}

#[test]
fn a_recheck_the_node_knows_nothing_of_is_a_full_check() {
    let (a, b) = (key(1), key(2));
    let txs: Vec<Bytes> = (0..3)
        .map(|n| Tx::transfer(n, b.address, 1).sign(&a))
        .collect();
    let node = TestNode::new();
    for raw in &txs[..2] {
        assert_eq!(node.check(raw, CheckTxType::New).code, 0);
    }
    node.block(&[]);
    // abcid restarted: what CheckTx recorded is gone, CometBFT's mempool is not.
    let node = node.reopen();
    for raw in &txs[..2] {
        assert_eq!(node.check(raw, CheckTxType::Recheck).code, 0);
    }
    assert_eq!(pending_nonce(&node, a.address), 2);
    assert_refused(
        &node.check(&txs[0], CheckTxType::Recheck),
        4,
        "nonce too low: next nonce 2, tx nonce 0",
    );
    assert_refused(
        &node.check(&Bytes::from_static(b"\x02junk"), CheckTxType::Recheck),
        1,
        "invalid transaction encoding: ",
    );
}

#[test]
fn with_the_sender_cache_check_recheck_and_finalize_block_agree_on_the_sender() {
    let (a, b) = (key(1), key(2));
    let node = TestNode::with_patches(
        &[(a.address, U256::from(FUNDED))],
        Patches::only(Patch::SenderCache),
    );
    let txs: Vec<Bytes> = (0..2)
        .map(|n| Tx::transfer(n, b.address, 1).sign(&a))
        .collect();
    for raw in &txs {
        assert_eq!(node.check(raw, CheckTxType::New).code, 0);
        // Recovered by CheckTx, then served by the cache: the same sender.
        for _ in 0..2 {
            let verified = node.node.verify(raw).unwrap().unwrap();
            assert_eq!(verified.sender, a.address);
        }
    }
    let response = node.block(&txs[..1]);
    assert_eq!(response.tx_results[0].code, 0);
    assert_eq!(
        attribute(&response.tx_results[0], "from"),
        Some(a.address.to_string())
    );
    assert_eq!(node.check(&txs[1], CheckTxType::Recheck).code, 0);
    // FinalizeBlock took the first one's sender out: a replay is recovered
    // again, and refused for its nonce, not its signature.
    let response = node.block(&txs);
    assert_eq!(
        response.tx_results[0].code, 4,
        "{}",
        response.tx_results[0].log
    );
    assert_eq!(response.tx_results[1].code, 0);
    assert_eq!(
        attribute(&response.tx_results[1], "from"),
        Some(a.address.to_string())
    );
    assert_eq!(node.nonce(a.address), 2);
}

#[test]
fn without_check_tx_lite_check_tx_executes_and_still_admits_a_revert() {
    let a = key(1);
    let alloc = [(a.address, U256::from(FUNDED))];
    let executing = TestNode::with_patches(&alloc, Patches::ALL.without(Patch::CheckTxLite));
    let lite = TestNode::with_patches(&alloc, Patches::ALL);
    let contract = a.address.create(0);
    let deploy = Tx::deploy(0, store_init()).sign(&a);
    // No calldata: the contract reverts.
    let revert = Tx::call(1, contract, Bytes::new()).sign(&a);
    for node in [&executing, &lite] {
        node.block(std::slice::from_ref(&deploy));
        let response = node.check(&revert, CheckTxType::New);
        assert_eq!(response.code, 0, "{}", response.log);
    }
    let committed = executing.account(a.address);
    let overlay = executing
        .node
        .check_overlay_account(&a.address)
        .unwrap()
        .unwrap();
    assert_eq!(overlay.nonce, 2, "executed in the check state");
    assert_eq!(
        lite.node.check_overlay_account(&a.address).unwrap(),
        Some(lite.account(a.address)),
        "the lite check executes nothing"
    );

    // The block executes it as CheckTx did: same gas, same balance.
    let response = executing.block(std::slice::from_ref(&revert));
    let result = &response.tx_results[0];
    assert_eq!(attribute(result, "status").as_deref(), Some("0"));
    let gas = result.gas_used as u64;
    assert!(gas > TRANSFER_GAS && gas < 100_000, "actual gas {gas}");
    let charged = U256::from(gas) * U256::from(2 * GWEI);
    assert_eq!(overlay.balance, committed.balance - charged);
    assert_eq!(executing.balance(a.address), overlay.balance);
    assert_eq!(
        executing.node.check_overlay_account(&a.address).unwrap(),
        Some(executing.account(a.address)),
        "Commit clears the check state"
    );
}

/// CometBFT's mempool path (`all,-app-mempool`, and without
/// `check-tx-lite`, where CheckTx executes): a pending transaction is
/// replaced by one of its sender and nonce paying 10 % more (geth's bump):
/// CheckTx admits it, PrepareProposal keeps it and leaves the old one out
/// even when the mempool holds it after the sender's next nonce, and the old
/// one's recheck refuses it (code 20), so CometBFT's mempool lets it go.
#[test]
fn a_pending_transaction_is_replaced_by_fee_and_the_old_one_left_out() {
    let patches = Patches::ALL.without(Patch::AppMempool);
    for patches in [patches, patches.without(Patch::CheckTxLite)] {
        replaced_by_fee(TestNode::with_patches(&funded_keys(), patches));
    }
}

fn replaced_by_fee(node: TestNode) {
    // Key 1 pays key 2 `value` at `nonce`, tipping `tip`.
    let pay = |nonce, value, tip| Tx::tipping(nonce, key(2).address, value, tip).sign(&key(1));
    let (old, next) = (pay(0, 1, GWEI), pay(1, 1, GWEI));
    for raw in [&old, &next] {
        assert_eq!(node.check(raw, CheckTxType::New).code, 0);
    }
    let short = pay(0, 1, GWEI * 11 / 10 - 1);
    let refused = node.check(&short, CheckTxType::New);
    assert_refused(&refused, 17, "replacement transaction underpriced");
    let overdraft = node.check(&pay(0, FUNDED, 2 * GWEI), CheckTxType::New);
    assert_refused(&overdraft, 6, "insufficient funds");
    let new = pay(0, 5, 2 * GWEI);
    let admitted = node.check(&new, CheckTxType::New);
    assert_eq!(admitted.code, 0, "{}", admitted.log);
    // The sender's next nonce is 2 still, and its balance covers it.
    assert_eq!(node.check(&pay(2, 1, GWEI), CheckTxType::New).code, 0);
    // CometBFT's mempool holds them in arrival order.
    let proposal = node.prepare(&[old.clone(), next.clone(), new.clone()]);
    assert_eq!(proposal, vec![new.clone(), next.clone()]);
    let before = node.balance(key(2).address);
    let results = node.block(&proposal);
    assert!(
        results.tx_results.iter().all(|r| r.code == 0),
        "{results:?}"
    );
    assert_eq!(node.balance(key(2).address) - before, U256::from(6));
    assert_refused(
        &node.check(&old, CheckTxType::Recheck),
        20,
        "replaced by a transaction with a higher fee",
    );
    let dropped = node.node.dropped(&tx_hash(&old)).unwrap().expect("dropped");
    assert_eq!(dropped.kind, abcid::dropped::DropKind::Replaced);
}
