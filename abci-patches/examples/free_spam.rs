//! The free-spam attack, measured: an account holding 0.01 ether
//! sends a transfer of `2^256 − 1` wei, whose cost `value + gas × fee`
//! wraps in 256-bit arithmetic, and sends the same bytes again before every
//! block. Each block goes through abcid's own ABCI calls in process (CheckTx
//! of what clients send, PrepareProposal of what CheckTx admitted,
//! ProcessProposal, FinalizeBlock, Commit), beside one honest transfer per
//! block. Printed per patch set: in how many blocks the attacker's
//! transaction sat, the share of the blocks' bytes it took, and what it
//! paid.
//!
//! `cargo run -p abcid --example free_spam [BLOCKS]` (default 5 blocks).

use std::sync::Arc;

use abcid::app::AbciApp;
use abcid::node::Node;
use abcid::patches::Patches;
use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{keccak256, Address, Signature, TxKind, U256};
use secp256k1::{Message, SecretKey, SECP256K1};
use tendermint_abci::Application;
use tendermint_proto::google::protobuf::Timestamp;
use tendermint_proto::v0_38::abci::response_process_proposal::ProposalStatus;
use tendermint_proto::v0_38::abci::{
    CheckTxType, RequestCheckTx, RequestFinalizeBlock, RequestInitChain, RequestPrepareProposal,
    RequestProcessProposal,
};

const GWEI: u128 = 1_000_000_000;
/// The attacker's balance: 0.01 ether.
const POOR: u128 = 10_000_000_000_000_000;

fn key(n: u8) -> (SecretKey, Address) {
    let secret = SecretKey::from_byte_array([n; 32]).expect("a valid key");
    let public = secret.public_key(SECP256K1).serialize_uncompressed();
    (secret, Address::from_slice(&keccak256(&public[1..])[12..]))
}

fn transfer(secret: &SecretKey, nonce: u64, value: U256) -> Vec<u8> {
    let tx = TxEip1559 {
        chain_id: 9000,
        nonce,
        gas_limit: 21_000,
        max_fee_per_gas: 3 * GWEI,
        max_priority_fee_per_gas: GWEI,
        to: TxKind::Call(Address::repeat_byte(0x42)),
        value,
        ..Default::default()
    };
    let (recid, compact) = SECP256K1
        .sign_ecdsa_recoverable(Message::from_digest(tx.signature_hash().0), secret)
        .serialize_compact();
    let sig = Signature::new(
        U256::from_be_slice(&compact[..32]),
        U256::from_be_slice(&compact[32..]),
        i32::from(recid) == 1,
    );
    TxEnvelope::from(tx.into_signed(sig)).encoded_2718()
}

/// What the attack got under one patch set.
struct Outcome {
    blocks_with_spam: usize,
    spam_bytes: usize,
    block_bytes: usize,
    paid: U256,
}

fn run(patches: Patches, blocks: u64) -> anyhow::Result<Outcome> {
    let dir = tempfile::tempdir()?;
    let node = Arc::new(Node::open(dir.path(), patches)?);
    let app = AbciApp::new(node.clone(), None);
    let (attacker, attacker_addr) = key(6);
    let (honest, honest_addr) = key(1);
    let app_state = serde_json::json!({
        "chain_id": 9000,
        "alloc": {
            attacker_addr.to_string(): {"balance": format!("{POOR:#x}")},
            honest_addr.to_string(): {"balance": format!("{:#x}", 1000 * POOR)},
        },
    });
    app.init_chain(RequestInitChain {
        chain_id: "free-spam".into(),
        app_state_bytes: app_state.to_string().into_bytes().into(),
        initial_height: 1,
        ..Default::default()
    });
    let spam = transfer(&attacker, 0, U256::MAX);
    let mut outcome = Outcome {
        blocks_with_spam: 0,
        spam_bytes: 0,
        block_bytes: 0,
        paid: U256::ZERO,
    };
    for height in 1..=blocks {
        let sent = [spam.clone(), transfer(&honest, height - 1, U256::from(1))];
        let admitted: Vec<_> = sent
            .iter()
            .filter(|raw| {
                let r = app.check_tx(RequestCheckTx {
                    tx: raw.to_vec().into(),
                    r#type: CheckTxType::New as i32,
                });
                r.code == 0
            })
            .map(|raw| raw.to_vec().into())
            .collect();
        let proposal = app
            .prepare_proposal(RequestPrepareProposal {
                txs: admitted,
                max_tx_bytes: 1 << 20,
                height: height as i64,
                ..Default::default()
            })
            .txs;
        let verdict = app.process_proposal(RequestProcessProposal {
            txs: proposal.clone(),
            height: height as i64,
            ..Default::default()
        });
        anyhow::ensure!(
            verdict.status == ProposalStatus::Accept as i32,
            "block {height}: abcid refused its own proposal"
        );
        app.finalize_block(RequestFinalizeBlock {
            txs: proposal.clone(),
            hash: keccak256(height.to_be_bytes()).to_vec().into(),
            height: height as i64,
            time: Some(Timestamp {
                seconds: 1_800_000_000 + height as i64,
                nanos: 0,
            }),
            ..Default::default()
        });
        app.commit();
        let bytes: usize = proposal.iter().map(|t| t.len()).sum();
        outcome.block_bytes += bytes;
        if proposal.iter().any(|t| t.as_ref() == spam.as_slice()) {
            outcome.blocks_with_spam += 1;
            outcome.spam_bytes += spam.len();
        }
    }
    let left = node
        .account(&attacker_addr, false)?
        .map_or(U256::ZERO, |a| a.balance);
    outcome.paid = U256::from(POOR).saturating_sub(left);
    Ok(outcome)
}

fn main() -> anyhow::Result<()> {
    let blocks: u64 = match std::env::args().nth(1) {
        Some(n) => n
            .parse()
            .map_err(|e| anyhow::anyhow!("BLOCKS must be a number of blocks: {e}"))?,
        None => 5,
    };
    println!(
        "patches  blocks holding the spam  spam share of block bytes  paid by the attacker (wei)"
    );
    for patches in [Patches::NONE, Patches::ALL] {
        let o = run(patches, blocks)?;
        let share = 100.0 * o.spam_bytes as f64 / o.block_bytes.max(1) as f64;
        println!(
            "{:<8} {:>2} of {:<20} {:>5.1} %                    {}",
            patches.to_string(),
            o.blocks_with_spam,
            blocks,
            share,
            o.paid
        );
    }
    Ok(())
}
