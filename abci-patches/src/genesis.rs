//! The application genesis, carried in CometBFT's `genesis.json` as `app_state`.

use std::collections::BTreeMap;

use alloy_primitives::{Address, U256};
use serde::{Deserialize, Serialize};

/// Default EIP-155 chain id of a devnet.
pub const DEFAULT_CHAIN_ID: u64 = 9000;
/// Default (constant) base fee: 1 gwei.
pub const DEFAULT_BASE_FEE: u64 = 1_000_000_000;
/// Default block gas limit: 150 M, a realistic limit for a fast EVM chain
/// (BNB Chain runs about 140 M per 0.75 s block, Base 150 M and more per 2 s).
/// At 21,000 gas it holds 7,142 transfers per block, i.e. 14k transfers/s at
/// 500 ms blocks: above anything a 2-core machine commits, so gas bounds
/// contract-heavy blocks without capping the TPS of transfers. abcid
/// enforces it in PrepareProposal and FinalizeBlock and writes it into
/// CometBFT's `block.max_gas` at InitChain.
pub const DEFAULT_BLOCK_GAS_LIMIT: u64 = 150_000_000;
/// Default per-transaction gas cap.
pub const DEFAULT_MAX_TX_GAS: u64 = 30_000_000;
/// Default largest raw transaction: 128 KiB, as geth's pool.
pub const DEFAULT_MAX_TX_BYTES: usize = 128 * 1024;

/// One genesis account.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct GenesisAccount {
    /// Initial balance in wei.
    pub balance: U256,
}

/// Chain parameters and initial allocation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Genesis {
    /// EIP-155 chain id.
    #[serde(default = "default_chain_id")]
    pub chain_id: u64,
    /// Base fee per gas, in wei: constant, or with a `fee_market` the
    /// genesis block's and the lowest the base fee falls to.
    #[serde(default = "default_base_fee")]
    pub base_fee: u64,
    /// An EIP-1559 base fee that follows the gas used (opt-in; see
    /// [`crate::fee_market`]); absent: the base fee is constant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fee_market: Option<FeeMarket>,
    /// Block gas limit: the gas limits of a proposal's transactions add up to
    /// at most this (PrepareProposal, and CometBFT's `block.max_gas`), and
    /// FinalizeBlock runs a transaction only if its gas limit fits in what the
    /// block's earlier transactions left of it. Reported to the EVM and to
    /// clients.
    #[serde(default = "default_block_gas_limit")]
    pub block_gas_limit: u64,
    /// Largest gas limit one transaction may set.
    #[serde(default = "default_max_tx_gas")]
    pub max_tx_gas: u64,
    /// Largest raw transaction, in bytes.
    #[serde(default = "default_max_tx_bytes")]
    pub max_tx_bytes: usize,
    /// Receives priority fees (the base fee is burnt).
    #[serde(default)]
    pub fee_recipient: Address,
    /// Funded accounts.
    #[serde(default)]
    pub alloc: BTreeMap<Address, GenesisAccount>,
}

fn default_chain_id() -> u64 {
    DEFAULT_CHAIN_ID
}
fn default_base_fee() -> u64 {
    DEFAULT_BASE_FEE
}
fn default_block_gas_limit() -> u64 {
    DEFAULT_BLOCK_GAS_LIMIT
}
fn default_max_tx_gas() -> u64 {
    DEFAULT_MAX_TX_GAS
}
fn default_max_tx_bytes() -> usize {
    DEFAULT_MAX_TX_BYTES
}

impl Genesis {
    /// A genesis with default parameters and the given allocation.
    pub fn new(chain_id: u64, alloc: BTreeMap<Address, GenesisAccount>) -> Self {
        Self {
            chain_id,
            base_fee: DEFAULT_BASE_FEE,
            fee_market: None,
            block_gas_limit: DEFAULT_BLOCK_GAS_LIMIT,
            max_tx_gas: DEFAULT_MAX_TX_GAS,
            max_tx_bytes: DEFAULT_MAX_TX_BYTES,
            fee_recipient: Address::ZERO,
            alloc,
        }
    }

    /// Parses CometBFT's `app_state_bytes`; empty means all defaults.
    pub fn from_app_state(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self::new(DEFAULT_CHAIN_ID, BTreeMap::new()));
        }
        serde_json::from_slice(bytes)
    }
}

/// EIP-1559's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeeMarket {
    /// Gas target = block gas limit / elasticity (EIP-1559: 2).
    #[serde(default = "default_elasticity")]
    pub elasticity: u64,
    /// The base fee changes by at most 1/this per block (EIP-1559: 8).
    #[serde(default = "default_denominator")]
    pub max_change_denominator: u64,
}

fn default_elasticity() -> u64 {
    2
}
fn default_denominator() -> u64 {
    8
}

impl Default for FeeMarket {
    /// EIP-1559's: elasticity 2, at most 1/8 per block.
    fn default() -> Self {
        Self {
            elasticity: default_elasticity(),
            max_change_denominator: default_denominator(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_defaults_and_alloc() {
        let g = Genesis::from_app_state(
            br#"{"chain_id": 42, "alloc": {"0x1111111111111111111111111111111111111111": {"balance": "0x10"}}}"#,
        )
        .unwrap();
        assert_eq!(g.chain_id, 42);
        assert_eq!(g.base_fee, DEFAULT_BASE_FEE);
        assert_eq!(g.alloc.values().next().unwrap().balance, U256::from(16));
        assert!(Genesis::from_app_state(br#"{"chain_idd": 1}"#).is_err());
        assert_eq!(
            Genesis::from_app_state(b"").unwrap().chain_id,
            DEFAULT_CHAIN_ID
        );
    }
}
