//! Raw EVM transactions: decoding, sender recovery with libsecp256k1 (the C
//! library or a pure-Rust port, see [`Ecrecover`]), and the stateless checks
//! shared by CheckTx and FinalizeBlock.

use alloy_consensus::{Transaction, TxEnvelope};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use secp256k1::{
    ecdsa::{RecoverableSignature, RecoveryId},
    Message, SECP256K1,
};

use crate::error::TxError;

/// Sender recoveries in this process. A process-wide counter because the
/// recovery ([`recover_sender`]) is a pure function called from every
/// verifier; [`crate::metrics::Metrics`] exports it.
pub static SENDER_RECOVERIES: std::sync::LazyLock<prometheus_client::metrics::counter::Counter> =
    std::sync::LazyLock::new(Default::default);

/// Gas every transaction pays before executing anything.
pub const TX_BASE_GAS: u64 = 21_000;
/// EIP-3860: the largest init code a contract creation may carry (revm
/// refuses larger ones at execution, so CheckTx refuses them first).
pub const MAX_INIT_CODE_SIZE: usize = 2 * 24_576;
/// Extra intrinsic gas of a contract-creation transaction.
pub const TX_CREATE_GAS: u64 = 32_000;
/// EIP-7623 (Prague): floor gas per calldata token.
pub const TX_FLOOR_GAS_PER_TOKEN: u64 = 10;
/// Half the secp256k1 group order: signatures with a larger `s` are malleable
/// and refused (EIP-2).
const SECP256K1_HALF_N: U256 = U256::from_limbs([
    0xdfe9_2f46_681b_20a0,
    0x5d57_6e73_57a4_501d,
    0xffff_ffff_ffff_ffff,
    0x7fff_ffff_ffff_ffff,
]);

/// A decoded transaction whose signature has been checked and whose sender is known.
#[derive(Debug, Clone)]
pub struct VerifiedTx {
    /// The signed envelope as decoded from the wire.
    pub envelope: TxEnvelope,
    /// Keccak-256 of the raw bytes: the Ethereum transaction hash.
    pub hash: B256,
    /// The recovered signer.
    pub sender: Address,
}

impl VerifiedTx {
    /// Upper bound of what the sender must hold: `value + gas_limit × max_fee_per_gas`.
    ///
    /// A verified transaction's cost fits in 256 bits ([`decode_checked`]
    /// refuses the others with [`TxError::CostOverflow`]); should one be built
    /// otherwise, its cost saturates at `2^256 − 1`, which no sender can
    /// spend beside a fee.
    pub fn max_cost(&self) -> U256 {
        max_cost(&self.envelope).unwrap_or(U256::MAX)
    }

    /// The gas price this transaction pays at `base_fee` (EIP-1559 semantics;
    /// legacy and EIP-2930 pay their gas price).
    pub fn effective_gas_price(&self, base_fee: u64) -> u128 {
        self.envelope.effective_gas_price(Some(base_fee))
    }
}

/// Consensus rules that do not depend on account state.
#[derive(Debug, Clone, Copy)]
pub struct TxRules {
    /// EIP-155 chain id every transaction must carry.
    pub chain_id: u64,
    /// Largest accepted raw transaction, in bytes.
    pub max_tx_bytes: usize,
    /// Largest gas limit a single transaction may ask for.
    pub max_tx_gas: u64,
    /// The (constant) base fee per gas, in wei.
    pub base_fee: u64,
}

/// The secp256k1 implementation that recovers senders. Both apply the same
/// rules (EIP-2 low `s`, `r` and `s` in range) and give the same sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecrecover {
    /// Bitcoin Core's C libsecp256k1 through the `secp256k1` crate
    /// (patch `fast-ecrecover`).
    C,
    /// The pure-Rust `libsecp256k1` crate, as the Findora node used. Why one
    /// would: no C toolchain in the build, and it is the usual choice in
    /// Substrate-derived code.
    PureRust,
}

/// `value + gas_limit × max_fee_per_gas`, or `None` when it does not fit in
/// 256 bits (a value near `2^256` plus any fee): the most a transaction can
/// cost its sender.
pub fn max_cost(tx: &TxEnvelope) -> Option<U256> {
    U256::from(tx.gas_limit())
        .checked_mul(U256::from(tx.max_fee_per_gas()))?
        .checked_add(tx.value())
}

/// Decodes `raw`, recovers its sender with `ecrecover` and applies every
/// stateless rule.
pub fn verify(raw: &[u8], rules: &TxRules, ecrecover: Ecrecover) -> Result<VerifiedTx, TxError> {
    let envelope = decode_checked(raw, rules)?;
    let sender = recover_sender(&envelope, ecrecover)?;
    Ok(VerifiedTx {
        envelope,
        hash: keccak256(raw),
        sender,
    })
}

/// Decodes `raw` and applies every stateless rule but the signature's: what
/// [`verify`] does before recovering the sender.
pub fn decode_checked(raw: &[u8], rules: &TxRules) -> Result<TxEnvelope, TxError> {
    if raw.len() > rules.max_tx_bytes {
        return Err(TxError::Oversized {
            size: raw.len(),
            max: rules.max_tx_bytes,
        });
    }
    let mut buf = raw;
    let envelope = TxEnvelope::decode_2718(&mut buf).map_err(|e| TxError::Decode(e.to_string()))?;
    if !buf.is_empty() {
        return Err(TxError::Decode(format!("{} trailing bytes", buf.len())));
    }
    match envelope {
        TxEnvelope::Legacy(_) | TxEnvelope::Eip2930(_) | TxEnvelope::Eip1559(_) => {}
        _ => return Err(TxError::UnsupportedType(envelope.tx_type() as u8)),
    }
    match envelope.chain_id() {
        Some(id) if id == rules.chain_id => {}
        got => {
            return Err(TxError::WrongChainId {
                expected: rules.chain_id,
                got,
            })
        }
    }
    let input_len = envelope.input().len();
    if envelope.kind().is_create() && input_len > MAX_INIT_CODE_SIZE {
        return Err(TxError::InitCodeTooLarge {
            size: input_len,
            max: MAX_INIT_CODE_SIZE,
        });
    }
    if envelope.gas_limit() > rules.max_tx_gas {
        return Err(TxError::GasLimitTooHigh {
            gas: envelope.gas_limit(),
            max: rules.max_tx_gas,
        });
    }
    let needed = intrinsic_gas(&envelope).max(calldata_floor_gas(&envelope));
    if envelope.gas_limit() < needed {
        return Err(TxError::IntrinsicGas {
            gas: envelope.gas_limit(),
            needed,
        });
    }
    if envelope.max_fee_per_gas() < u128::from(rules.base_fee) {
        return Err(TxError::FeeCapTooLow {
            max_fee: envelope.max_fee_per_gas(),
            base_fee: rules.base_fee,
        });
    }
    if let Some(tip) = envelope.max_priority_fee_per_gas() {
        if tip > envelope.max_fee_per_gas() {
            return Err(TxError::TipAboveFeeCap);
        }
    }
    check_arithmetic(&envelope)?;
    Ok(envelope)
}

/// The rules that keep every later sum in range: the cost fits in 256 bits
/// (else `value + gas × fee` would wrap, and a transfer of `2^256 − 1` would
/// pass any balance check), and the nonce can be incremented (EIP-2681).
fn check_arithmetic(tx: &TxEnvelope) -> Result<(), TxError> {
    if max_cost(tx).is_none() {
        return Err(TxError::CostOverflow {
            value: tx.value(),
            gas: tx.gas_limit(),
            max_fee: tx.max_fee_per_gas(),
        });
    }
    if tx.nonce() == u64::MAX {
        return Err(TxError::NonceMax);
    }
    Ok(())
}

/// EIP-7623's calldata floor, enforced by revm under Prague: the gas limit
/// must also cover `21000 + 10 × tokens`. Neither contract creation nor the
/// access list adds to the floor (revm: `GasParams::initial_tx_gas`).
pub fn calldata_floor_gas(tx: &TxEnvelope) -> u64 {
    TX_FLOOR_GAS_PER_TOKEN
        .saturating_mul(calldata_tokens(tx.input()))
        .saturating_add(TX_BASE_GAS)
}

/// Calldata tokens (EIP-7623): one per zero byte, four per non-zero byte.
/// The standard calldata cost is 4 gas per token (4 per zero byte, 16 per
/// non-zero byte).
fn calldata_tokens(input: &[u8]) -> u64 {
    let zeros = input.iter().filter(|b| **b == 0).count() as u64;
    zeros.saturating_add((input.len() as u64 - zeros).saturating_mul(4))
}

/// Intrinsic gas: base cost, calldata bytes, contract creation and access list.
pub fn intrinsic_gas(tx: &TxEnvelope) -> u64 {
    let input: &Bytes = tx.input();
    // Saturating: the sizes are bounded by `max_tx_bytes` long before any
    // sum could wrap, and a saturated figure is refused as too much gas.
    let mut gas = calldata_tokens(input)
        .saturating_mul(4)
        .saturating_add(TX_BASE_GAS);
    if tx.kind().is_create() {
        // EIP-3860: 2 gas per 32-byte word of init code.
        let words = (input.len() as u64).div_ceil(32);
        gas = gas.saturating_add(TX_CREATE_GAS.saturating_add(words.saturating_mul(2)));
    }
    if let Some(list) = tx.access_list() {
        for item in list.iter() {
            let keys = (item.storage_keys.len() as u64).saturating_mul(1_900);
            gas = gas.saturating_add(keys.saturating_add(2_400));
        }
    }
    gas
}

/// Recovers the signer of `tx` with `ecrecover`; refuses high-`s` signatures.
/// Kept a frame of its own: profiles (and agentd's profiler test) name it.
#[inline(never)]
pub fn recover_sender(tx: &TxEnvelope, ecrecover: Ecrecover) -> Result<Address, TxError> {
    let sig = tx.signature();
    if sig.s() > SECP256K1_HALF_N || sig.s().is_zero() || sig.r().is_zero() {
        return Err(TxError::BadSignature);
    }
    let mut compact = [0u8; 64];
    compact[..32].copy_from_slice(&sig.r().to_be_bytes::<32>());
    compact[32..].copy_from_slice(&sig.s().to_be_bytes::<32>());
    let recid = u8::from(sig.v());
    let digest = tx.signature_hash().0;
    SENDER_RECOVERIES.inc();
    let uncompressed = match ecrecover {
        Ecrecover::C => recover_c(&compact, recid, &digest)?,
        Ecrecover::PureRust => recover_pure_rust(&compact, recid, &digest)?,
    };
    Ok(Address::from_slice(&keccak256(&uncompressed[1..])[12..]))
}

/// The uncompressed public key (`04 ‖ x ‖ y`) that signed `digest`, by the C library.
fn recover_c(compact: &[u8; 64], recid: u8, digest: &[u8; 32]) -> Result<[u8; 65], TxError> {
    let recid = RecoveryId::try_from(i32::from(recid)).map_err(|_| TxError::BadSignature)?;
    let rsig =
        RecoverableSignature::from_compact(compact, recid).map_err(|_| TxError::BadSignature)?;
    let key = SECP256K1
        .recover_ecdsa(Message::from_digest(*digest), &rsig)
        .map_err(|_| TxError::BadSignature)?;
    Ok(key.serialize_uncompressed())
}

/// The uncompressed public key (`04 ‖ x ‖ y`) that signed `digest`, in pure Rust.
fn recover_pure_rust(
    compact: &[u8; 64],
    recid: u8,
    digest: &[u8; 32],
) -> Result<[u8; 65], TxError> {
    // `parse_standard` refuses r or s ≥ n, as the C library's `from_compact` does.
    let sig =
        libsecp256k1::Signature::parse_standard(compact).map_err(|_| TxError::BadSignature)?;
    let recid = libsecp256k1::RecoveryId::parse(recid).map_err(|_| TxError::BadSignature)?;
    let key = libsecp256k1::recover(&libsecp256k1::Message::parse(digest), &sig, &recid)
        .map_err(|_| TxError::BadSignature)?;
    Ok(key.serialize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, sign, signature};
    use alloy_consensus::{SignableTransaction, TxEip1559, TxEip2930, TxLegacy};
    use alloy_eips::eip2718::Encodable2718;
    use alloy_primitives::{Signature, TxKind};

    fn rules() -> TxRules {
        TxRules {
            chain_id: 9000,
            max_tx_bytes: 128 * 1024,
            max_tx_gas: 30_000_000,
            base_fee: 1_000_000_000,
        }
    }

    /// The signing key of these tests.
    fn key() -> (secp256k1::SecretKey, Address) {
        testkit::key(7)
    }

    fn eip1559(chain_id: u64) -> TxEip1559 {
        TxEip1559 {
            chain_id,
            nonce: 3,
            gas_limit: 21_000,
            max_fee_per_gas: 2_000_000_000,
            max_priority_fee_per_gas: 1,
            to: TxKind::Call(Address::repeat_byte(0x11)),
            value: U256::from(5),
            ..Default::default()
        }
    }

    const BACKENDS: [Ecrecover; 2] = [Ecrecover::C, Ecrecover::PureRust];

    fn legacy() -> TxLegacy {
        TxLegacy {
            chain_id: Some(9000),
            nonce: 0,
            gas_price: 1_000_000_000,
            gas_limit: 21_000,
            to: TxKind::Call(Address::ZERO),
            value: U256::from(1),
            input: Bytes::new(),
        }
    }

    fn eip2930() -> TxEip2930 {
        TxEip2930 {
            chain_id: 9000,
            nonce: 1,
            gas_price: 1_000_000_000,
            gas_limit: 50_000,
            to: TxKind::Call(Address::repeat_byte(0x22)),
            input: vec![0, 1, 2].into(),
            ..Default::default()
        }
    }

    /// The three accepted types, signed by `sk`, each with its signature
    /// replaced by what `forge` makes of it.
    fn each_type(
        sk: &secp256k1::SecretKey,
        forge: impl Fn(Signature) -> Signature,
    ) -> [Vec<u8>; 3] {
        let l = legacy();
        let sig = forge(signature(sk, l.signature_hash()));
        let legacy = TxEnvelope::from(l.into_signed(sig)).encoded_2718();
        let a = eip2930();
        let sig = forge(signature(sk, a.signature_hash()));
        let access = TxEnvelope::from(a.into_signed(sig)).encoded_2718();
        let d = eip1559(9000);
        let sig = forge(signature(sk, d.signature_hash()));
        let dynamic = TxEnvelope::from(d.into_signed(sig)).encoded_2718();
        [legacy, access, dynamic]
    }

    #[test]
    fn both_backends_recover_the_sender_of_every_type() {
        let (sk, addr) = key();
        for raw in each_type(&sk, |s| s) {
            for backend in BACKENDS {
                let tx = verify(&raw, &rules(), backend).unwrap();
                assert_eq!(tx.sender, addr, "{backend:?}");
                assert_eq!(tx.hash, keccak256(&raw));
            }
        }
    }

    #[test]
    fn both_backends_refuse_high_s_and_out_of_range_signatures() {
        let (sk, _) = key();
        let n = SECP256K1_HALF_N * U256::from(2) + U256::from(1);
        // (r, n - s) with the other parity is the same signature, malleated (EIP-2).
        let high_s = |s: Signature| Signature::new(s.r(), n - s.s(), !s.v());
        let r_overflow = |s: Signature| Signature::new(n + U256::from(1), s.s(), s.v());
        let zero_r = |s: Signature| Signature::new(U256::ZERO, s.s(), s.v());
        for raw in each_type(&sk, high_s)
            .into_iter()
            .chain(each_type(&sk, r_overflow))
            .chain(each_type(&sk, zero_r))
        {
            for backend in BACKENDS {
                assert!(
                    matches!(verify(&raw, &rules(), backend), Err(TxError::BadSignature)),
                    "{backend:?}"
                );
            }
        }
    }

    #[test]
    fn init_code_beyond_eip_3860_is_refused_for_creations_only() {
        let (sk, _) = key();
        let mut create = eip1559(9000);
        create.to = TxKind::Create;
        create.gas_limit = 29_000_000;
        create.input = vec![0x60; MAX_INIT_CODE_SIZE + 1].into();
        assert!(matches!(
            verify(&sign(create.clone(), &sk), &rules(), Ecrecover::C),
            Err(TxError::InitCodeTooLarge { size, max }) if size == MAX_INIT_CODE_SIZE + 1 && max == MAX_INIT_CODE_SIZE
        ));
        create.input = vec![0x60; MAX_INIT_CODE_SIZE].into();
        assert!(verify(&sign(create.clone(), &sk), &rules(), Ecrecover::C).is_ok());
        let mut call = create;
        call.to = TxKind::Call(Address::ZERO);
        call.input = vec![0x60; MAX_INIT_CODE_SIZE + 1].into();
        assert!(verify(&sign(call, &sk), &rules(), Ecrecover::C).is_ok());
    }

    #[test]
    fn rejects_each_stateless_rule() {
        let (sk, _) = key();
        assert!(matches!(
            verify(&sign(eip1559(1), &sk), &rules(), Ecrecover::C),
            Err(TxError::WrongChainId {
                expected: 9000,
                got: Some(1)
            })
        ));
        assert!(matches!(
            verify(&[0xde, 0xad, 0xbe, 0xef], &rules(), Ecrecover::C),
            Err(TxError::Decode(_))
        ));
        let mut low_gas = eip1559(9000);
        low_gas.gas_limit = 20_999;
        assert!(matches!(
            verify(&sign(low_gas, &sk), &rules(), Ecrecover::C),
            Err(TxError::IntrinsicGas { .. })
        ));
        let mut cheap = eip1559(9000);
        cheap.max_fee_per_gas = 10;
        cheap.max_priority_fee_per_gas = 1;
        assert!(matches!(
            verify(&sign(cheap, &sk), &rules(), Ecrecover::C),
            Err(TxError::FeeCapTooLow { .. })
        ));
        let mut big = eip1559(9000);
        big.input = vec![1u8; 200 * 1024].into();
        big.gas_limit = 29_000_000;
        assert!(matches!(
            verify(&sign(big, &sk), &rules(), Ecrecover::C),
            Err(TxError::Oversized { .. })
        ));
    }

    #[test]
    fn gas_limit_between_intrinsic_gas_and_calldata_floor_is_refused() {
        let (sk, _) = key();
        // 1,000 non-zero bytes: 37,000 intrinsic gas, a 61,000 floor.
        let mut tx = eip1559(9000);
        tx.input = vec![0xab; 1_000].into();
        tx.gas_limit = 50_000;
        let envelope = TxEnvelope::decode_2718(&mut sign(tx.clone(), &sk).as_slice()).unwrap();
        assert_eq!(intrinsic_gas(&envelope), 37_000);
        assert_eq!(calldata_floor_gas(&envelope), 61_000);
        assert!(matches!(
            verify(&sign(tx.clone(), &sk), &rules(), Ecrecover::C),
            Err(TxError::IntrinsicGas {
                gas: 50_000,
                needed: 61_000
            })
        ));
        tx.gas_limit = 61_000;
        assert!(verify(&sign(tx, &sk), &rules(), Ecrecover::C).is_ok());
    }

    #[test]
    fn intrinsic_gas_and_floor_match_revm() {
        use alloy_eips::eip2930::{AccessList, AccessListItem};
        let params = revm::context_interface::cfg::GasParams::new_spec(crate::exec::SPEC);
        let (sk, _) = key();
        let item = AccessListItem {
            address: Address::repeat_byte(0x22),
            storage_keys: vec![B256::ZERO, B256::repeat_byte(1)],
        };
        let inputs: [&[u8]; 3] = [&[], &[0, 0, 7, 0, 9], &[0x5a; 300]];
        for input in inputs {
            for to in [TxKind::Create, TxKind::Call(Address::ZERO)] {
                let mut tx = eip1559(9000);
                tx.input = input.to_vec().into();
                tx.to = to;
                tx.access_list = AccessList(vec![item.clone()]);
                let raw = sign(tx, &sk);
                let envelope = TxEnvelope::decode_2718(&mut raw.as_slice()).unwrap();
                let revm = params.initial_tx_gas(input, to.is_create(), 1, 2, 0, None);
                assert_eq!(intrinsic_gas(&envelope), revm.initial_regular_gas());
                assert_eq!(calldata_floor_gas(&envelope), revm.floor_gas());
            }
        }
    }

    #[test]
    fn both_backends_agree_on_a_tampered_signature() {
        let (sk, addr) = key();
        for raw in each_type(&sk, |s| s) {
            let mut raw = raw;
            // Flip a bit of `s` (last bytes of the encoding): either recovery
            // fails or it yields someone else, never the real signer, and both
            // backends say the same.
            let n = raw.len();
            raw[n - 2] ^= 0x01;
            let c = verify(&raw, &rules(), Ecrecover::C).map(|tx| tx.sender);
            let rust = verify(&raw, &rules(), Ecrecover::PureRust).map(|tx| tx.sender);
            assert_eq!(c, rust);
            match c {
                Err(TxError::BadSignature) => {}
                Ok(sender) => assert_ne!(sender, addr),
                Err(other) => panic!("unexpected {other}"),
            }
        }
    }
}
