//! What the benches share: numbered keys and EIP-1559 transactions signed
//! by them (libsecp256k1, as `feth`'s signer).

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_primitives::{keccak256, Address, Signature, U256};
use secp256k1::{Message, SecretKey, SECP256K1};

/// Key number `i` (`seed` in every byte but the first eight, which hold
/// `i + 1`) and its address.
pub fn key(seed: u8, i: u64) -> (SecretKey, Address) {
    let mut secret = [seed; 32];
    secret[..8].copy_from_slice(&(i + 1).to_be_bytes());
    let key = SecretKey::from_byte_array(secret).expect("a valid key");
    let public = key.public_key(SECP256K1).serialize_uncompressed();
    (key, Address::from_slice(&keccak256(&public[1..])[12..]))
}

/// `tx` signed by `key`.
pub fn sign(tx: TxEip1559, key: &SecretKey) -> TxEnvelope {
    let (recid, compact) = SECP256K1
        .sign_ecdsa_recoverable(Message::from_digest(tx.signature_hash().0), key)
        .serialize_compact();
    let sig = Signature::new(
        U256::from_be_slice(&compact[..32]),
        U256::from_be_slice(&compact[32..]),
        i32::from(recid) == 1,
    );
    TxEnvelope::from(tx.into_signed(sig))
}
