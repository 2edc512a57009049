//! The body of the transaction fuzz target (`abci-patches/fuzz`, target
//! `check_tx`): any bytes go through every stateless judgement a hostile
//! peer can reach (decoding and the stateless rules, both sender-recovery
//! backends, ProcessProposal's rules, PrepareProposal's gas and byte count,
//! and the nonce and funds rule), which must not panic and must agree with
//! each other. A violated invariant panics, which is what a fuzzer reports.
//!
//! The same body runs in `cargo test` over a fixed-seed stream of random and
//! mutated transactions (see the tests below), so CI exercises it without
//! cargo-fuzz or a nightly toolchain.

use alloy_consensus::Transaction;
use alloy_primitives::{Address, U256};

use crate::error::TxError;
use crate::exec::{check_account, Spend};
use crate::proposal;
use crate::state::AccountRecord;
use crate::tx::{self, Ecrecover, TxRules};

/// The rules of the fuzzed chain: abcid's defaults.
pub const RULES: TxRules = TxRules {
    chain_id: 9000,
    max_tx_bytes: 128 * 1024,
    max_tx_gas: 30_000_000,
    base_fee: 1_000_000_000,
};

/// Judges `raw` every way a transaction is judged; panics when two
/// judgements disagree or a checked quantity is out of range.
pub fn judge(raw: &[u8]) {
    let decoded = tx::decode_checked(raw, &RULES);
    if let Ok(envelope) = &decoded {
        let cost = tx::max_cost(envelope);
        assert!(cost.is_some(), "an admitted cost fits in 256 bits");
        assert!(envelope.gas_limit() <= RULES.max_tx_gas);
        let needed = tx::intrinsic_gas(envelope).max(tx::calldata_floor_gas(envelope));
        assert!(envelope.gas_limit() >= needed);
        assert!(envelope.nonce() < u64::MAX);
    }
    let c = tx::verify(raw, &RULES, Ecrecover::C);
    let rust = tx::verify(raw, &RULES, Ecrecover::PureRust);
    assert_eq!(
        c.as_ref().map(|t| t.sender).map_err(TxError::code),
        rust.as_ref().map(|t| t.sender).map_err(TxError::code),
        "both backends judge alike"
    );
    // ProcessProposal, its sender funded at its nonce: refused exactly when
    // the transaction does not verify; within a block of its own gas.
    let gas = decoded.as_ref().map_or(0, |e| e.gas_limit());
    let funded = |_: &Address| {
        Some(AccountRecord {
            nonce: decoded.as_ref().map_or(0, |e| e.nonce()),
            balance: U256::MAX,
            ..AccountRecord::default()
        })
    };
    let mut ledger = proposal::ProposalLedger::new(RULES.base_fee, funded);
    let verify = |r: &[u8]| tx::verify(r, &RULES, Ecrecover::C);
    let refused = proposal::check_payable(&[raw], verify, &mut ledger, gas);
    assert_eq!(
        refused.is_err(),
        c.is_err(),
        "ProcessProposal follows the rules"
    );
    let mut room = proposal::BlockRoom::new(u64::MAX, gas.saturating_mul(2));
    assert!(room.take(raw.len(), gas) && room.take(raw.len(), gas));
    assert!(gas == 0 || !room.take(0, 1), "the room is used up");
    if let Ok(verified) = c {
        let spend = Spend::from(&verified);
        for balance in [U256::ZERO, spend.max_cost, U256::MAX] {
            let account = AccountRecord {
                nonce: spend.nonce,
                balance,
                ..AccountRecord::default()
            };
            let judged = check_account(&spend, Some(account));
            assert_eq!(judged.is_ok(), balance >= spend.max_cost, "funds rule");
        }
    }
}

#[cfg(test)]
mod tests {
    use alloy_consensus::{SignableTransaction, TxEip1559, TxEip2930, TxEnvelope, TxLegacy};
    use alloy_eips::eip2718::Encodable2718;
    use alloy_primitives::{Address, TxKind, U256};

    use super::*;
    use crate::testkit::{key, sign, signature};

    /// xorshift64*: a fixed-seed stream, the same on every run.
    struct Stream(u64);

    impl Stream {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Valid transactions of each type, some with extreme values, to mutate.
    fn seeds() -> Vec<Vec<u8>> {
        let sk = key(4).0;
        let to = TxKind::Call(Address::repeat_byte(0x11));
        let mut out = Vec::new();
        for value in [U256::from(1), U256::MAX, U256::MAX >> 1] {
            out.push(sign(
                TxEip1559 {
                    chain_id: 9000,
                    gas_limit: 21_000,
                    max_fee_per_gas: 2_000_000_000,
                    to,
                    value,
                    ..Default::default()
                },
                &sk,
            ));
            let legacy = TxLegacy {
                chain_id: Some(9000),
                gas_price: u128::MAX,
                gas_limit: 30_000_000,
                to,
                value,
                ..Default::default()
            };
            let sig = signature(&sk, legacy.signature_hash());
            out.push(TxEnvelope::from(legacy.into_signed(sig)).encoded_2718());
        }
        let access = TxEip2930 {
            chain_id: 9000,
            nonce: u64::MAX,
            gas_price: 1_000_000_000,
            gas_limit: 50_000,
            to,
            input: vec![0, 1, 2].into(),
            ..Default::default()
        };
        let sig = signature(&sk, access.signature_hash());
        out.push(TxEnvelope::from(access.into_signed(sig)).encoded_2718());
        out
    }

    /// `seed` with a few random byte flips, a truncation or an insertion.
    fn mutate(seed: &[u8], s: &mut Stream) -> Vec<u8> {
        let mut raw = seed.to_vec();
        for _ in 0..=s.below(3) {
            match s.below(4) {
                0 if !raw.is_empty() => {
                    let i = s.below(raw.len());
                    raw[i] ^= 1 << s.below(8);
                }
                1 if !raw.is_empty() => {
                    let i = s.below(raw.len());
                    raw[i] = s.next() as u8;
                }
                2 => raw.truncate(s.below(raw.len() + 1)),
                _ => {
                    let i = s.below(raw.len() + 1);
                    raw.insert(i, s.next() as u8);
                }
            }
        }
        raw
    }

    #[test]
    fn the_fuzz_body_holds_over_a_fixed_stream_of_inputs() {
        let seeds = seeds();
        for seed in &seeds {
            judge(seed);
        }
        let mut s = Stream(0x5eed_feed_1234_5678);
        let mut judged_valid = 0;
        for round in 0..3_000 {
            let raw = if round % 4 == 0 {
                let len = s.below(300);
                (0..len).map(|_| s.next() as u8).collect()
            } else {
                mutate(&seeds[s.below(seeds.len())], &mut s)
            };
            judge(&raw);
            judged_valid += usize::from(tx::verify(&raw, &RULES, Ecrecover::C).is_ok());
        }
        // The stream reaches past decoding: some mutants still verify (a
        // flipped bit in `to` or `value`), which recovers another sender.
        assert!(judged_valid > 0);
    }

    #[test]
    fn the_seeds_with_extreme_values_are_refused_with_their_own_codes() {
        let seeds = seeds();
        let code = |raw: &[u8]| {
            tx::decode_checked(raw, &RULES)
                .map(|_| 0)
                .unwrap_or_else(|e| e.code())
        };
        assert_eq!(code(&seeds[0]), 0);
        assert_eq!(code(&seeds[1]), 0, "a u128::MAX gas price × 30 M gas fits");
        assert_eq!(code(&seeds[2]), 21, "value 2^256 − 1 plus a fee");
        assert_eq!(code(&seeds[3]), 21, "the same, legacy");
        assert_eq!(code(&seeds[4]), 0, "value 2^255 − 1 plus a fee fits");
        assert_eq!(code(&seeds[5]), 0, "2^255 − 1 plus u128::MAX × 30 M fits");
        assert_eq!(code(&seeds[6]), 22, "nonce 2^64 − 1");
    }
}
