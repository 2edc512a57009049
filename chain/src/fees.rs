//! Choosing legacy or EIP-1559 transactions by what the node supports, and
//! their prices: at start ([`detect`]) and over a run, following the base
//! fee block by block ([`FeeFollower`]).

use std::sync::atomic::{AtomicU64, Ordering};

use alloy_primitives::U256;

use crate::eth::{EthClient, RpcError};
use crate::sign::Fee;

/// Picks the fee model: EIP-1559 when the latest block has a base fee
/// (`max_fee = 2 × base_fee + tip`, as wallets do), legacy otherwise
/// (`eth_gasPrice`).
pub async fn detect(client: &EthClient) -> Result<Fee, RpcError> {
    Ok(detect_with_base_fee(client).await?.0)
}

/// [`detect`], and the latest block's base fee (0 on a legacy chain).
pub async fn detect_with_base_fee(client: &EthClient) -> Result<(Fee, u128), RpcError> {
    let block = client.latest_block().await?;
    let base_fee = block
        .base_fee_per_gas
        .map_or(0, |b| b.saturating_to::<u128>());
    let fee = match block.base_fee_per_gas {
        Some(base) => {
            let base: u128 = base.saturating_to();
            let tip = client
                .call::<U256>("eth_maxPriorityFeePerGas", serde_json::json!([]))
                .await
                .map(|t| t.saturating_to::<u128>())
                .unwrap_or(1_000_000_000)
                .max(1);
            Fee::Eip1559 {
                max_fee: base.saturating_mul(2).saturating_add(tip),
                tip,
            }
        }
        None => Fee::Legacy {
            gas_price: client.gas_price().await?,
        },
    };
    Ok((fee, base_fee))
}

/// The most a transaction with `gas_limit` can cost at `fee`.
pub fn max_cost(fee: Fee, gas_limit: u64) -> U256 {
    let per_gas = match fee {
        Fee::Legacy { gas_price } => gas_price,
        Fee::Eip1559 { max_fee, .. } => max_fee,
    };
    U256::from(per_gas) * U256::from(gas_limit)
}

/// How a load prices its transactions over the run (`feth load --max-fee`,
/// `--base-fee-multiplier`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeePolicy {
    /// EIP-1559: max fee = `multiplier` × the latest base fee + tip.
    pub multiplier: f64,
    /// The highest max fee (gas price, legacy) the agent signs, wei; `None`:
    /// no cap.
    pub cap: Option<u128>,
}

impl Default for FeePolicy {
    /// 2 × base fee + tip, as wallets do; no cap.
    fn default() -> Self {
        Self {
            multiplier: 2.0,
            cap: None,
        }
    }
}

/// The fee a load signs with, following the base fee of the latest block
/// read (EIP-1559 chains) under a [`FeePolicy`]; legacy chains keep the gas
/// price read at start. Shared by the signer threads and the block scanner.
#[derive(Debug)]
pub struct FeeFollower {
    policy: FeePolicy,
    start: Fee,
    /// Latest base fee read, wei (saturated to u64: 18 ETH per gas).
    base_fee: AtomicU64,
    /// Base fee changes seen.
    changes: AtomicU64,
}

impl FeeFollower {
    /// A follower starting from `start` (what [`detect`] found) and, for
    /// EIP-1559, the base fee `base_fee`.
    pub fn new(start: Fee, base_fee: u128, policy: FeePolicy) -> Self {
        Self {
            policy,
            start,
            base_fee: AtomicU64::new(u64::try_from(base_fee).unwrap_or(u64::MAX)),
            changes: AtomicU64::new(0),
        }
    }

    /// The policy followed.
    pub fn policy(&self) -> FeePolicy {
        self.policy
    }

    /// The latest base fee read, wei.
    pub fn base_fee(&self) -> u128 {
        u128::from(self.base_fee.load(Ordering::Relaxed))
    }

    /// How often the base fee changed over the run.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }

    /// Takes the base fee of a block just read.
    pub fn observe(&self, base_fee: u128) {
        let base = u64::try_from(base_fee).unwrap_or(u64::MAX);
        if self.base_fee.swap(base, Ordering::Relaxed) != base {
            self.changes.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn capped(&self, fee: u128) -> u128 {
        self.policy.cap.map_or(fee, |cap| fee.min(cap))
    }

    /// The fee to sign a new transaction with now.
    pub fn fee(&self) -> Fee {
        match self.start {
            Fee::Legacy { gas_price } => Fee::Legacy {
                gas_price: self.capped(gas_price),
            },
            Fee::Eip1559 { tip, .. } => {
                let scaled = (self.base_fee() as f64 * self.policy.multiplier.max(0.0)).ceil();
                // f64 → u128 saturates; the base fee is below 2^64.
                let max_fee = self.capped((scaled as u128).saturating_add(tip));
                Fee::Eip1559 {
                    max_fee,
                    tip: tip.min(max_fee),
                }
            }
        }
    }

    /// The fee to re-sign a transaction refused with `old` for a fee below
    /// the node's: the higher of the current [`Self::fee`] and `old` plus
    /// 1/8 (the most an EIP-1559 base fee rises in one block), within the
    /// cap. `None` when the cap allows no more than `old`.
    pub fn bump(&self, old: Fee) -> Option<Fee> {
        let up = |x: u128| x.saturating_add(x / 8).saturating_add(1);
        match (old, self.fee()) {
            (Fee::Eip1559 { max_fee, tip }, Fee::Eip1559 { max_fee: now, .. }) => {
                let next = self.capped(now.max(up(max_fee)));
                (next > max_fee).then_some(Fee::Eip1559 {
                    max_fee: next,
                    tip: tip.min(next),
                })
            }
            (Fee::Legacy { gas_price }, _)
            | (
                Fee::Eip1559 {
                    max_fee: gas_price, ..
                },
                _,
            ) => {
                let next = self.capped(up(gas_price));
                (next > gas_price).then_some(Fee::Legacy { gas_price: next })
            }
        }
    }

    /// The most a transaction with `gas_limit` can cost now (at the cap,
    /// when there is one).
    pub fn max_cost(&self, gas_limit: u64) -> U256 {
        match (self.policy.cap, self.fee()) {
            (Some(cap), Fee::Eip1559 { tip, .. }) => {
                max_cost(Fee::Eip1559 { max_fee: cap, tip }, gas_limit)
            }
            (_, fee) => max_cost(fee, gas_limit),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fee_follows_the_base_fee_within_the_cap() {
        let start = Fee::Eip1559 {
            max_fee: 2_000 + 10,
            tip: 10,
        };
        let f = FeeFollower::new(start, 1_000, FeePolicy::default());
        assert_eq!(f.fee(), start);
        f.observe(1_125);
        assert_eq!(
            f.fee(),
            Fee::Eip1559 {
                max_fee: 2_260,
                tip: 10
            }
        );
        assert_eq!(f.changes(), 1);
        let capped = FeeFollower::new(
            start,
            1_000,
            FeePolicy {
                multiplier: 1.0,
                cap: Some(1_500),
            },
        );
        assert_eq!(
            capped.fee(),
            Fee::Eip1559 {
                max_fee: 1_010,
                tip: 10
            }
        );
        capped.observe(2_000);
        assert_eq!(
            capped.fee(),
            Fee::Eip1559 {
                max_fee: 1_500,
                tip: 10
            }
        );
        // Refused at 1,010: the current fee (the cap) is higher.
        let old = Fee::Eip1559 {
            max_fee: 1_010,
            tip: 10,
        };
        assert_eq!(
            capped.bump(old),
            Some(Fee::Eip1559 {
                max_fee: 1_500,
                tip: 10
            })
        );
        // At the cap already: no higher fee allowed.
        assert_eq!(
            capped.bump(Fee::Eip1559 {
                max_fee: 1_500,
                tip: 10
            }),
            None
        );
        // Without a newer base fee, the bump is +1/8.
        let f = FeeFollower::new(
            start,
            1_000,
            FeePolicy {
                multiplier: 1.0,
                cap: None,
            },
        );
        assert_eq!(
            f.bump(old),
            Some(Fee::Eip1559 {
                max_fee: 1_137,
                tip: 10
            })
        );
        let legacy = FeeFollower::new(Fee::Legacy { gas_price: 80 }, 0, FeePolicy::default());
        assert_eq!(
            legacy.bump(Fee::Legacy { gas_price: 80 }),
            Some(Fee::Legacy { gas_price: 91 })
        );
    }
}
