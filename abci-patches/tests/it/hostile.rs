//! Transactions and proposals an attacker sends: a cost that overflows 256
//! bits (a transfer of `2^256 − 1`, once free block space), proposals that
//! break the stateless rules or the block gas limit, FinalizeBlock asked for
//! the wrong height, a stray Commit, and unfunded keys filling the nonce
//! queue. Each under `none`, `all` and each patch alone where patches could
//! matter.

use abcid::node::NodeError;
use abcid::nonce_queue::QueueConfig;
use abcid::patches::{Patch, Patches};
use alloy_consensus::{SignableTransaction, TxEip7702, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, Bytes, B256, U256};
use tendermint_abci::Application;
use tendermint_proto::v0_38::abci::response_process_proposal::ProposalStatus;
use tendermint_proto::v0_38::abci::{CheckTxType, RequestProcessProposal};

use crate::common::*;

const TO: Address = Address::repeat_byte(0x42);
/// 0.01 ether: the attacker's whole balance.
const POOR: u128 = 10_000_000_000_000_000;
/// The block gas limit of these tests' chain.
const BLOCK_GAS: u64 = 1_000_000;

/// The attacker: key 6, holding [`POOR`].
fn attacker() -> Key {
    key(6)
}

/// A node running `patches` (and `queue` for `nonce-queue`): keys 1 to 3
/// funded, the attacker poor, a [`BLOCK_GAS`] block gas limit.
fn node(patches: Patches, queue: QueueConfig) -> TestNode {
    let alloc: Vec<(Address, U256)> = (1..=3)
        .map(|n| (key(n).address, U256::from(FUNDED)))
        .chain([(attacker().address, U256::from(POOR))])
        .collect();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let node = TestNode::open_queued(dir, patches, queue);
    let mut genesis: serde_json::Value =
        serde_json::from_str(&app_state(&alloc)).expect("valid app state");
    genesis["block_gas_limit"] = BLOCK_GAS.into();
    node.init_chain(&genesis.to_string());
    node
}

/// The patch sets every test here runs under: none, all, each alone.
fn patch_sets() -> Vec<Patches> {
    [Patches::NONE, Patches::ALL.with(Patch::NonceQueue)]
        .into_iter()
        .chain(Patch::every().map(Patches::only))
        .collect()
}

/// A transfer of `2^256 − 1` wei at `nonce`: `value + gas × fee` wraps.
fn overflowing(nonce: u64) -> Bytes {
    Tx {
        value: U256::MAX,
        ..Tx::transfer(nonce, TO, 0)
    }
    .sign(&attacker())
}

fn process(node: &TestNode, txs: &[Bytes]) -> ProposalStatus {
    let response = node.app.process_proposal(RequestProcessProposal {
        txs: txs.iter().map(|t| t.0.clone()).collect(),
        height: node.next_height() as i64,
        ..Default::default()
    });
    ProposalStatus::try_from(response.status).expect("a known status")
}

#[test]
fn an_overflowing_cost_is_refused_everywhere_under_every_patch_set() {
    for patches in patch_sets() {
        let node = node(patches, QueueConfig::default());
        let raw = overflowing(0);
        let ahead = overflowing(3);
        for (tx, kind) in [
            (&raw, CheckTxType::New),
            (&raw, CheckTxType::Recheck),
            (&ahead, CheckTxType::New),
        ] {
            let r = node.check(tx, kind);
            assert_eq!(r.code, 21, "{patches} {kind:?}: {}", r.log);
            assert!(
                r.log.starts_with(
                    "insufficient funds for gas * price + value: tx cost overflows 256 bits"
                ),
                "{patches}: {}",
                r.log
            );
        }
        let honest = Tx::transfer(0, TO, 1).sign(&key(1));
        let honest_hash = tx_hash(&honest);
        assert_eq!(node.check(&honest, CheckTxType::New).code, 0, "{patches}");
        assert_eq!(
            node.prepare(&[raw.clone(), honest.clone()]),
            vec![honest.clone()],
            "{patches}: PrepareProposal leaves it out"
        );
        assert_eq!(
            process(&node, std::slice::from_ref(&honest)),
            ProposalStatus::Accept
        );
        assert_eq!(
            process(&node, &[honest.clone(), raw.clone()]),
            ProposalStatus::Reject,
            "{patches}"
        );
        // Decided anyway (by others' votes): refused, no fee, nonce kept.
        let response = node.block(&[raw.clone(), honest]);
        let codes: Vec<u32> = response.tx_results.iter().map(|r| r.code).collect();
        assert_eq!(codes, vec![21, 0], "{patches}");
        assert_eq!(node.nonce(attacker().address), 0, "{patches}");
        assert_eq!(node.balance(attacker().address), U256::from(POOR));
        let head = node.node.head().expect("a head");
        assert_eq!(head.tx_hashes, vec![honest_hash], "{patches}");
    }
}

/// An EIP-1559 transfer asking for `gas` whose signature has `s = 0`: it
/// decodes, and no sender can be recovered from it.
fn unsigned(gas: u64) -> Bytes {
    let tx = alloy_consensus::TxEip1559 {
        chain_id: CHAIN_ID,
        gas_limit: gas,
        max_fee_per_gas: 3 * GWEI,
        to: alloy_primitives::TxKind::Call(TO),
        ..Default::default()
    };
    let sig = alloy_primitives::Signature::new(U256::from(1), U256::ZERO, false);
    TxEnvelope::from(tx.into_signed(sig)).encoded_2718().into()
}

#[test]
fn the_largest_cost_that_fits_is_judged_by_the_balance() {
    let node = node(Patches::ALL, QueueConfig::default());
    let fee = U256::from(TRANSFER_GAS) * U256::from(3 * GWEI);
    let fits = Tx {
        value: U256::MAX - fee,
        ..Tx::transfer(0, TO, 0)
    };
    let r = node.check(&fits.sign(&attacker()), CheckTxType::New);
    assert_eq!(r.code, 6, "{}", r.log);
    assert!(
        r.log.ends_with(&format!("tx cost {}", U256::MAX)),
        "{}",
        r.log
    );
    let over = Tx {
        value: U256::MAX - fee + U256::from(1),
        ..fits
    };
    assert_eq!(
        node.check(&over.sign(&attacker()), CheckTxType::New).code,
        21
    );
}

#[test]
fn process_proposal_refuses_what_no_honest_proposer_includes() {
    let node = node(Patches::ALL, QueueConfig::default());
    let good = |nonce: u64, gas: u64| {
        Tx {
            gas_limit: gas,
            ..Tx::transfer(nonce, TO, 1)
        }
        .sign(&key(1))
    };
    let mut wrong_chain = Tx::transfer(0, TO, 1);
    wrong_chain.chain_id = 1;
    let oversized = Tx {
        input: vec![1u8; 129 * 1024].into(),
        gas_limit: BLOCK_GAS,
        ..Tx::transfer(0, TO, 1)
    };
    let set_code = {
        let tx = TxEip7702 {
            chain_id: CHAIN_ID,
            gas_limit: 50_000,
            max_fee_per_gas: 3 * GWEI,
            to: TO,
            ..Default::default()
        };
        let sig = alloy_primitives::Signature::new(U256::from(1), U256::from(1), false);
        Bytes::from(TxEnvelope::from(tx.into_signed(sig)).encoded_2718())
    };
    let bad: [(&str, Bytes); 5] = [
        ("undecodable", Bytes::from_static(b"not a transaction")),
        ("wrong chain", wrong_chain.sign(&key(2))),
        ("oversized", oversized.sign(&key(2))),
        ("set-code type", set_code),
        ("overflowing cost", overflowing(0)),
    ];
    for (what, raw) in &bad {
        assert_eq!(
            process(&node, &[good(0, TRANSFER_GAS), raw.clone()]),
            ProposalStatus::Reject,
            "{what}"
        );
        assert!(node.prepare(std::slice::from_ref(raw)).is_empty(), "{what}");
    }
    // Gas limits adding up to the block gas limit, and one gas beyond it.
    let half = BLOCK_GAS / 2;
    let full = [good(0, half), good(1, half)];
    assert_eq!(process(&node, &full), ProposalStatus::Accept);
    let over = [good(0, half), good(1, half + 1)];
    assert_eq!(process(&node, &over), ProposalStatus::Reject);
    // Against the committed state: each of these after an honest transfer
    // refuses the proposal (every validator would recover and refuse it at
    // FinalizeBlock, paid by no one), and PrepareProposal leaves it out.
    let underpriced = Tx {
        fee: Fee::Eip1559 { max_fee: 0, tip: 0 },
        ..Tx::transfer(1, TO, 1)
    };
    let stateful: [(&str, Bytes); 5] = [
        ("bad signature", unsigned(TRANSFER_GAS)),
        ("unfunded sender", Tx::transfer(0, TO, 1).sign(&key(9))),
        ("used nonce", good(0, TRANSFER_GAS)),
        ("nonce gap", good(2, TRANSFER_GAS)),
        ("fee cap under the base fee", underpriced.sign(&key(1))),
    ];
    let honest = good(0, TRANSFER_GAS);
    for (what, raw) in &stateful {
        let proposal = [honest.clone(), raw.clone()];
        assert_eq!(process(&node, &proposal), ProposalStatus::Reject, "{what}");
        assert_eq!(node.prepare(&proposal), vec![honest.clone()], "{what}");
    }
    let next = good(1, TRANSFER_GAS);
    assert_eq!(process(&node, &[honest, next]), ProposalStatus::Accept);
}

#[test]
fn finalize_block_checks_the_gas_left_before_the_signature() {
    for patches in [Patches::NONE, Patches::ALL] {
        let node = node(patches, QueueConfig::default());
        let fill = Tx {
            gas_limit: BLOCK_GAS,
            ..Tx::transfer(0, TO, 1)
        }
        .sign(&key(1));
        // Beyond the gas left (the block limit less the 21,000 used) and
        // badly signed: refused for the gas, with no recovery spent on it;
        // alone in a block, refused for the signature.
        let forged = unsigned(BLOCK_GAS);
        let codes = |r: tendermint_proto::v0_38::abci::ResponseFinalizeBlock| -> Vec<u32> {
            r.tx_results.iter().map(|r| r.code).collect()
        };
        assert_eq!(codes(node.block(&[fill, forged.clone()])), vec![0, 14]);
        assert_eq!(codes(node.block(&[forged])), vec![3], "{patches}");
    }
}

#[test]
fn finalize_block_refuses_a_replayed_or_skipped_height() {
    let node = node(Patches::ALL, QueueConfig::default());
    node.block(&[Tx::transfer(0, TO, 1).sign(&key(1))]);
    let input = |height: u64, txs: &'static [Bytes]| abcid::exec::BlockInput {
        height,
        hash: block_hash(height),
        time_secs: 1_800_000_000 + height,
        time_nanos: 0,
        txs,
    };
    for height in [0, 1, 3] {
        let refused = node
            .node
            .enter()
            .unwrap()
            .finalize_block(&input(height, &[]));
        match refused {
            Err(e @ NodeError::UnexpectedHeight { .. }) => {
                let text = e.to_string();
                assert!(
                    text.contains(&format!("height {height} refused"))
                        && text.contains("only height 2 may follow"),
                    "{text}"
                );
            }
            other => panic!("height {height}: {other:?}"),
        }
    }
    assert_eq!(node.next_height(), 2, "nothing was executed");
    assert!(node
        .node
        .enter()
        .unwrap()
        .finalize_block(&input(2, &[]))
        .is_ok());
}

#[test]
fn a_stray_commit_is_refused_and_the_node_keeps_serving() {
    let node = node(Patches::ALL, QueueConfig::default());
    let before = node.info();
    let refused = node.app.try_commit().expect_err("nothing to commit");
    assert!(
        refused.contains("commit without a finalized block"),
        "{refused}"
    );
    // The trait's Commit answers too, without exiting.
    node.app.commit();
    assert_eq!(node.info(), before);
    let raw = Tx::transfer(0, TO, 1).sign(&key(1));
    assert_eq!(node.check(&raw, CheckTxType::New).code, 0);
    let response = node.block(&[raw]);
    assert_eq!(response.tx_results[0].code, 0);
    assert_eq!(node.info().last_block_height, before.last_block_height + 1);
}

#[test]
fn an_unfunded_key_queues_nothing_and_a_sender_queues_a_bounded_number() {
    let queue = QueueConfig {
        max_per_sender: 3,
        ..QueueConfig::default()
    };
    for patches in [Patches::NONE, Patches::ALL] {
        let node = node(patches.with(Patch::NonceQueue), queue);
        // The attacker's 0.01 ether pays 158 transfers' maximal cost (63 µETH
        // each) in all: queued ones reserve theirs.
        let unfunded = Tx::transfer(1, TO, 1).sign(&key(9));
        let r = node.check(&unfunded, CheckTxType::New);
        assert_eq!(r.code, 6, "{patches}: {}", r.log);
        let big = |nonce: u64| Tx::transfer(nonce, TO, POOR / 3).sign(&attacker());
        assert_eq!(node.check(&big(1), CheckTxType::New).code, 0);
        assert_eq!(node.check(&big(2), CheckTxType::New).code, 0);
        let r = node.check(&big(3), CheckTxType::New);
        assert_eq!(
            r.code, 6,
            "{patches}: the third exceeds what is left: {}",
            r.log
        );
        // Per sender: three at most, then code 23.
        for nonce in 1..=3 {
            let r = node.check(&Tx::transfer(nonce, TO, 1).sign(&key(2)), CheckTxType::New);
            assert_eq!(r.code, 0, "{patches}: {}", r.log);
        }
        let r = node.check(&Tx::transfer(4, TO, 1).sign(&key(2)), CheckTxType::New);
        assert_eq!(r.code, 23, "{patches}: {}", r.log);
        assert_eq!(
            r.log,
            "txpool is full: sender has 3 queued transactions already"
        );
        // Its predecessor arrives: the three are promoted and the sender may
        // queue again.
        let first = Tx::transfer(0, TO, 1).sign(&key(2));
        assert_eq!(node.check(&first, CheckTxType::New).code, 0);
        let r = node.check(&Tx::transfer(5, TO, 1).sign(&key(2)), CheckTxType::New);
        assert_eq!(r.code, 0, "{patches}: {}", r.log);
    }
}

#[test]
fn a_zero_value_transfer_to_a_fresh_address_creates_no_account() {
    for patches in [Patches::NONE, Patches::ALL] {
        let node = node(patches, QueueConfig::default());
        let (fresh, paid) = (Address::repeat_byte(0x51), Address::repeat_byte(0x52));
        let txs = [
            Tx::transfer(0, fresh, 0).sign(&key(1)),
            Tx::transfer(1, paid, 1).sign(&key(1)),
        ];
        let codes: Vec<u32> = node.block(&txs).tx_results.iter().map(|r| r.code).collect();
        assert_eq!(codes, vec![0, 0]);
        let stored = |a: &Address| node.node.account(a, false).expect("readable");
        assert_eq!(stored(&fresh), None, "{patches}: EIP-161");
        assert_eq!(stored(&paid).map(|a| a.balance), Some(U256::from(1)));
    }
}

#[test]
fn the_nodes_own_proposal_is_accepted_unchecked_and_every_verdict_is_counted() {
    let node = node(Patches::ALL, QueueConfig::default());
    let height = node.next_height();
    let transfer = |nonce: u64| Tx::transfer(nonce, TO, 1).sign(&key(1));
    let unfunded = Tx::transfer(0, TO, 1).sign(&key(9));
    let offered = [transfer(0), transfer(1), unfunded];
    let proposed = node.prepare(&offered);
    assert_eq!(proposed, offered[..2].to_vec());
    // Its own proposal (CometBFT asks the proposer too), another honest one
    // of the same height, and a hostile one.
    assert!(node.process(height, B256::repeat_byte(1), &proposed));
    assert!(node.process(height, B256::repeat_byte(2), &proposed[..1]));
    assert!(!node.process(height, B256::repeat_byte(3), &offered));
    let scrape = node.app.metrics().encode();
    for verdict in ["own", "accepted", "rejected"] {
        let line = format!("abcid_proposals_total{{verdict=\"{verdict}\"}} 1");
        assert!(scrape.contains(&line), "{line} in:\n{scrape}");
    }
}
