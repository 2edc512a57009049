//! Building and signing EVM transactions with libsecp256k1 (about 2.5× faster
//! than alloy's default k256 signer).

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope, TxLegacy};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{keccak256, Address, Bytes, Signature, TxKind, B256, U256};
use secp256k1::{Message, SecretKey, SECP256K1};

/// How a transaction pays for gas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fee {
    /// Pre-London: one gas price (EIP-155 replay protection).
    Legacy {
        /// Price per gas in wei.
        gas_price: u128,
    },
    /// EIP-1559: fee cap and priority fee.
    Eip1559 {
        /// Fee cap per gas in wei.
        max_fee: u128,
        /// Priority fee per gas in wei.
        tip: u128,
    },
}

/// What to sign.
#[derive(Debug, Clone)]
pub struct TxRequest {
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// Sender nonce.
    pub nonce: u64,
    /// Recipient; `None` deploys `input` as a contract.
    pub to: Option<Address>,
    /// Value in wei.
    pub value: U256,
    /// Gas limit.
    pub gas_limit: u64,
    /// Fee model.
    pub fee: Fee,
    /// Calldata or init code.
    pub input: Bytes,
}

/// A signed transaction ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedTx {
    /// EIP-2718 encoding, what `eth_sendRawTransaction` takes.
    pub raw: Bytes,
    /// Transaction hash.
    pub hash: B256,
    /// The fee it was signed with.
    pub fee: Fee,
}

/// The recoverable ECDSA signature of `hash` by `key` (libsecp256k1, RFC 6979
/// nonces), as a transaction's signature: what [`sign`] and abcid's tests sign with.
pub fn sign_hash(key: &SecretKey, hash: B256) -> Signature {
    let (recid, compact) = SECP256K1
        .sign_ecdsa_recoverable(Message::from_digest(hash.0), key)
        .serialize_compact();
    Signature::new(
        U256::from_be_slice(&compact[..32]),
        U256::from_be_slice(&compact[32..]),
        i32::from(recid) == 1,
    )
}

/// Signs `request` with `key`.
pub fn sign(key: &SecretKey, request: &TxRequest) -> SignedTx {
    let kind = request.to.map_or(TxKind::Create, TxKind::Call);
    let envelope: TxEnvelope = match request.fee {
        Fee::Legacy { gas_price } => {
            let tx = TxLegacy {
                chain_id: Some(request.chain_id),
                nonce: request.nonce,
                gas_price,
                gas_limit: request.gas_limit,
                to: kind,
                value: request.value,
                input: request.input.clone(),
            };
            let sig = sign_hash(key, tx.signature_hash());
            tx.into_signed(sig).into()
        }
        Fee::Eip1559 { max_fee, tip } => {
            let tx = TxEip1559 {
                chain_id: request.chain_id,
                nonce: request.nonce,
                gas_limit: request.gas_limit,
                max_fee_per_gas: max_fee,
                max_priority_fee_per_gas: tip,
                to: kind,
                value: request.value,
                access_list: Default::default(),
                input: request.input.clone(),
            };
            let sig = sign_hash(key, tx.signature_hash());
            tx.into_signed(sig).into()
        }
    };
    let raw = Bytes::from(envelope.encoded_2718());
    SignedTx {
        hash: keccak256(&raw),
        raw,
        fee: request.fee,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_consensus::transaction::SignerRecoverable;
    use alloy_eips::eip2718::Decodable2718;

    #[test]
    fn signatures_recover_to_the_signer() {
        let key = SecretKey::from_byte_array([3u8; 32]).unwrap();
        let me = crate::keys::address_of(&key);
        for fee in [
            Fee::Legacy { gas_price: 7 },
            Fee::Eip1559 { max_fee: 9, tip: 1 },
        ] {
            let tx = sign(
                &key,
                &TxRequest {
                    chain_id: 9000,
                    nonce: 5,
                    to: Some(Address::repeat_byte(2)),
                    value: U256::from(11),
                    gas_limit: 21_000,
                    fee,
                    input: Bytes::new(),
                },
            );
            let decoded = TxEnvelope::decode_2718(&mut tx.raw.as_ref()).unwrap();
            assert_eq!(decoded.recover_signer().unwrap(), me);
            assert_eq!(*decoded.tx_hash(), tx.hash);
        }
    }
}
