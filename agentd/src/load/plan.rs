//! What a load sends, as a person asks for it ([`LoadPlan`]), and what the
//! engine runs once the chain has decided the rest ([`EngineConfig`]).

use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::{Address, U256};

use super::pick::{Picker, RateSchedule};
use crate::fees::{FeeFollower, FeePolicy};
use crate::sign::Fee;

/// Where transfers go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recipients {
    /// Other accounts of the keys file.
    Existing,
    /// New addresses that never held anything.
    Fresh,
}

/// What each transaction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// A plain value transfer.
    Transfer,
    /// `transfer(recipient, value)` on an ERC-20 token (the plan's value in
    /// token units).
    Erc20 {
        /// The token.
        token: Address,
    },
}

/// What each transaction does, as asked for (the token of an ERC-20 load is
/// deployed by the run itself, see [`Workload`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadKind {
    /// Value transfers.
    Transfer,
    /// ERC-20 `transfer(recipient, value)` calls.
    Erc20,
}

/// Default concurrent requests.
pub const DEFAULT_MAX_PARALLELISM: usize = 64;
/// Default transactions per JSON-RPC batch (CometBFT's RPC refuses batches
/// over 10 by default).
pub const DEFAULT_BATCH: usize = 10;
/// Most transactions in flight per sender (`--per-sender`): nodes queue a
/// bounded window of future nonces (geth's `--txpool.accountqueue`, 64 by
/// default; abcid's `nonce-queue`, 64), and a sender's in-flight
/// transactions travel in one batch request.
pub const MAX_PER_SENDER: usize = 1024;

/// What to send, as a person asks for it: complete without the node.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPlan {
    /// Send rate over time.
    pub schedule: RateSchedule,
    /// Transactions per account (closed loop), or a cap in open loop.
    pub per_account: Option<u64>,
    /// How long to send.
    pub duration: Option<Duration>,
    /// Concurrent requests.
    pub max_parallelism: usize,
    /// Senders per JSON-RPC batch request.
    pub batch: usize,
    /// Transactions in flight per sender (1: one at a time, for nodes that
    /// refuse nonce gaps).
    pub per_sender: usize,
    /// Consecutive nonces of one sender per request, in order (up to
    /// `per_sender`): 1 spreads a sender's transactions over parallel
    /// requests, `per_sender` keeps them in one ordered request at a time.
    pub per_request: usize,
    /// Who sends.
    pub picker: Picker,
    /// Who receives.
    pub recipients: Recipients,
    /// What each transaction does.
    pub workload: WorkloadKind,
    /// Value per transfer: wei, or token units for ERC-20 transfers.
    pub value: U256,
    /// How fees follow the base fee, and their cap.
    pub fees: FeePolicy,
}

impl LoadPlan {
    /// Value transfers of 1 wei to fresh addresses from `senders` uniformly
    /// chosen accounts, 64 requests in flight, batches of 10, one
    /// transaction in flight per sender.
    pub fn transfers(schedule: RateSchedule, senders: usize) -> Self {
        Self {
            schedule,
            per_account: None,
            duration: None,
            max_parallelism: DEFAULT_MAX_PARALLELISM,
            batch: DEFAULT_BATCH,
            per_sender: 1,
            per_request: 1,
            picker: Picker::new(super::pick::AccountDist::Uniform, senders),
            recipients: Recipients::Fresh,
            fees: FeePolicy::default(),
            workload: WorkloadKind::Transfer,
            value: U256::from(1u64),
        }
    }
}

/// What the engine runs: the plan, and what the chain decided (chain id,
/// fee model, the deployed token).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The plan.
    pub plan: LoadPlan,
    /// What each transaction does.
    pub workload: Workload,
    /// Gas limit per transaction.
    pub gas_limit: u64,
    /// Fee model, as detected at start.
    pub fee: Fee,
    /// The fee new and re-signed transactions take, following the base fee.
    pub fees: Arc<FeeFollower>,
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// Senders refused for insufficient funds wait to be topped up (see
    /// [`super::refill`]) instead of having the transaction rejected.
    pub refill: bool,
}
