//! Signing and block helpers for the unit tests.

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{keccak256, Address, Bytes, TxKind};
use secp256k1::SecretKey;

use crate::exec::{BlockInput, TxOutcome};
use crate::node::Node;

/// Test key number `n` and its address.
pub fn key(n: u8) -> (SecretKey, Address) {
    let secret = SecretKey::from_byte_array([n; 32]).expect("a valid test key");
    (secret, feth_chain::keys::address_of(&secret))
}

/// The recoverable signature of `hash` by `key` (feth's signer).
pub use feth_chain::sign::sign_hash as signature;

/// The EIP-2718 bytes of `tx` signed by `key`.
pub fn sign(tx: TxEip1559, key: &SecretKey) -> Vec<u8> {
    let sig = signature(key, tx.signature_hash());
    TxEnvelope::from(tx.into_signed(sig)).encoded_2718()
}

/// A node in `dir` running `patches`, its chain 9000 initialised with key
/// 5 (returned with its address) holding 2^80 - 1 wei.
pub fn funded_node(
    dir: &std::path::Path,
    patches: crate::patches::Patches,
) -> (Node, SecretKey, Address) {
    let (key, me) = key(5);
    let node = Node::open(dir, patches).expect("the node opens");
    let app_state =
        format!(r#"{{"chain_id":9000,"alloc":{{"{me}":{{"balance":"0xffffffffffffffffffff"}}}}}}"#);
    node.enter()
        .expect("enter")
        .init_chain(app_state.as_bytes(), 1, 0)
        .expect("InitChain");
    (node, key, me)
}

/// A transaction of chain 9000 (1 M gas, 2 gwei) signed by `key`.
pub fn signed(key: &SecretKey, nonce: u64, to: TxKind, input: Bytes) -> Bytes {
    let tx = TxEip1559 {
        chain_id: 9000,
        nonce,
        gas_limit: 1_000_000,
        max_fee_per_gas: 2_000_000_000,
        max_priority_fee_per_gas: 0,
        to,
        input,
        ..Default::default()
    };
    sign(tx, key).into()
}

/// Finalizes and commits block `height` of `txs` on `node`.
pub fn block(node: &Node, height: u64, txs: &[Bytes]) -> Vec<TxOutcome> {
    let input = BlockInput {
        height,
        hash: keccak256(height.to_be_bytes()),
        time_secs: 1_800_000_000 + height,
        time_nanos: 0,
        txs,
    };
    let (outcomes, _) = node
        .enter()
        .expect("enter")
        .finalize_block(&input)
        .expect("FinalizeBlock");
    node.enter().expect("enter").commit().expect("Commit");
    outcomes
}
