//! An opt-in EIP-1559 base fee (genesis `app_state.fee_market`): each block's
//! base fee follows its parent's gas used against a target of the gas limit
//! / `elasticity`, changing by at most 1/`max_change_denominator` per block,
//! never below the genesis `base_fee` (a devnet left idle returns to it).
//! Without a fee market the base fee is the genesis `base_fee`, constant.

use alloy_consensus::Transaction;

use crate::error::TxError;
use crate::genesis::{FeeMarket, Genesis};
use crate::records::BlockRecord;
use crate::tx::VerifiedTx;

/// The base fee of the block after `parent` on the chain `genesis` describes.
pub fn next_base_fee(genesis: &Genesis, parent: &BlockRecord) -> u64 {
    match genesis.fee_market {
        None => genesis.base_fee,
        Some(market) => after(
            market,
            parent.base_fee.max(genesis.base_fee),
            parent.gas_used,
            parent.gas_limit,
        )
        .max(genesis.base_fee),
    }
}

/// Whether `tx`'s fee cap covers `base_fee` (geth's refusal otherwise).
pub fn covers(tx: &VerifiedTx, base_fee: u64) -> Result<(), TxError> {
    let max_fee = tx.envelope.max_fee_per_gas();
    if max_fee < u128::from(base_fee) {
        return Err(TxError::FeeCapTooLow { max_fee, base_fee });
    }
    Ok(())
}

/// EIP-1559's rule: `base` moved by `base × (used − target) / target /
/// denominator` (at least 1 up when above the target), in checked 128-bit
/// arithmetic, saturated to u64.
fn after(market: FeeMarket, base: u64, used: u64, limit: u64) -> u64 {
    let target = u128::from(limit / market.elasticity.max(1));
    let denominator = u128::from(market.max_change_denominator.max(1));
    let (base128, used) = (u128::from(base), u128::from(used));
    if target == 0 || used == target {
        return base;
    }
    let delta = |gap: u128| {
        base128
            .checked_mul(gap)
            .map_or(u128::MAX, |x| x / target / denominator)
    };
    if used > target {
        let up = delta(used - target).max(1);
        u64::try_from(base128.saturating_add(up)).unwrap_or(u64::MAX)
    } else {
        let down = delta(target - used);
        u64::try_from(base128.saturating_sub(down)).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent(base_fee: u64, gas_used: u64, gas_limit: u64) -> BlockRecord {
        BlockRecord {
            number: 1,
            hash: Default::default(),
            parent_hash: Default::default(),
            timestamp: 0,
            timestamp_nanos: 0,
            gas_used,
            gas_limit,
            base_fee,
            miner: Default::default(),
            app_hash: Default::default(),
            tx_hashes: Vec::new(),
            invalid_txs: 0,
            size: 0,
            logs_bloom: None,
        }
    }

    #[test]
    fn the_base_fee_follows_the_gas_used_by_eip_1559() {
        let mut g = Genesis::new(9000, Default::default());
        g.base_fee = 1_000;
        // No fee market: constant.
        assert_eq!(
            next_base_fee(&g, &parent(1_000, 1_000_000, 1_000_000)),
            1_000
        );
        g.fee_market = Some(FeeMarket::default());
        // Full block: +1/8; at the target: same; empty: −1/8, not below genesis.
        assert_eq!(
            next_base_fee(&g, &parent(8_000, 1_000_000, 1_000_000)),
            9_000
        );
        assert_eq!(next_base_fee(&g, &parent(8_000, 500_000, 1_000_000)), 8_000);
        assert_eq!(next_base_fee(&g, &parent(8_000, 0, 1_000_000)), 7_000);
        assert_eq!(next_base_fee(&g, &parent(1_000, 0, 1_000_000)), 1_000);
        // Just above the target moves it by at least 1 wei.
        assert_eq!(next_base_fee(&g, &parent(1_000, 500_001, 1_000_000)), 1_001);
        // Huge values saturate instead of overflowing.
        assert_eq!(next_base_fee(&g, &parent(u64::MAX, u64::MAX, 2)), u64::MAX);
        let odd = Genesis::from_app_state(
            br#"{"fee_market": {"elasticity": 0, "max_change_denominator": 0}}"#,
        )
        .unwrap();
        assert_eq!(
            next_base_fee(&odd, &parent(2_000_000_000, 20, 10)),
            4_000_000_000
        );
    }
}
