//! What a load sends, as a person asks for it ([`LoadPlan`]), and what the
//! engine runs once the chain has decided the rest ([`EngineConfig`]).

use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::{Address, U256};

use super::pick::{Picker, RateSchedule};
use feth_chain::fees::{FeeFollower, FeePolicy};
use feth_chain::sign::Fee;

/// Where transfers go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recipients {
    /// Other accounts of the keys file.
    Existing,
    /// New addresses that never held anything.
    Fresh,
}

/// What one transaction does, with what the chain decided for it (the
/// contract it calls, deployed by the run itself).
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
    /// `store(first, 8)` on FethStore: eight fresh storage slots and an
    /// event.
    Store {
        /// The contract.
        contract: Address,
    },
    /// `swap(…)` on FethSwap: both reserves and two balances read and
    /// written, and an event.
    Swap {
        /// The pool.
        contract: Address,
    },
}

impl Workload {
    /// Its kind.
    pub fn kind(self) -> WorkloadKind {
        match self {
            Self::Transfer => WorkloadKind::Transfer,
            Self::Erc20 { .. } => WorkloadKind::Erc20,
            Self::Store { .. } => WorkloadKind::Store,
            Self::Swap { .. } => WorkloadKind::Swap,
        }
    }
}

/// One kind of write, as asked for.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    /// Value transfers (21,000 gas).
    Transfer,
    /// ERC-20 `transfer(recipient, value)` calls (about 50,000 gas).
    Erc20,
    /// Storage-heavy calls: eight fresh slots each (about 215,000 gas).
    Store,
    /// Swap-like calls: reserves and balances read and written, an event
    /// (about 47,000 gas; a sender's first, 102,000).
    Swap,
}

impl WorkloadKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [WorkloadKind; 4] = [Self::Transfer, Self::Erc20, Self::Store, Self::Swap];

    /// The name used on the command line, in scenario files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Transfer => "transfer",
            Self::Erc20 => "erc20",
            Self::Store => "store",
            Self::Swap => "swap",
        }
    }
}

/// Shares of the writes are within this of summing to 1.
const SHARES_SUM_TOLERANCE: f64 = 1e-6;

/// The writes' mix: each kind's share of the transactions, above 0 and
/// summing to 1, each kind once.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteMix {
    shares: Vec<(WorkloadKind, f64)>,
}

impl From<WorkloadKind> for WriteMix {
    fn from(kind: WorkloadKind) -> Self {
        Self {
            shares: vec![(kind, 1.0)],
        }
    }
}

impl WriteMix {
    /// A mix of these shares; an error names a share that is not above 0,
    /// a kind given twice, or shares that do not sum to 1.
    pub fn new(shares: Vec<(WorkloadKind, f64)>) -> anyhow::Result<Self> {
        use anyhow::bail;
        if shares.is_empty() {
            bail!(
                "the writes' mix names no kind; the kinds are {}",
                kind_names()
            );
        }
        for (i, (kind, share)) in shares.iter().enumerate() {
            if !(share.is_finite() && *share > 0.0 && *share <= 1.0) {
                bail!(
                    "the share of {} is {share}: a share is above 0 and at most 1 (leave a kind out to send none)",
                    kind.name()
                );
            }
            if shares[..i].iter().any(|(k, _)| k == kind) {
                bail!("{} is given twice in the writes' mix", kind.name());
            }
        }
        let sum: f64 = shares.iter().map(|(_, s)| s).sum();
        if (sum - 1.0).abs() > SHARES_SUM_TOLERANCE {
            bail!("the writes' shares sum to {sum}, not 1: give each kind its fraction of the transactions");
        }
        Ok(Self { shares })
    }

    /// The kinds and their shares.
    pub fn shares(&self) -> &[(WorkloadKind, f64)] {
        &self.shares
    }

    /// Whether `kind` is sent at all.
    pub fn contains(&self, kind: WorkloadKind) -> bool {
        self.shares.iter().any(|(k, _)| *k == kind)
    }

    /// The index (in [`Self::shares`]) of the kind a uniform draw `u` in
    /// [0, 1) picks: kind `i` for `u` below the sum of the first `i + 1`
    /// shares.
    pub fn pick(&self, u: f64) -> usize {
        let mut upto = 0.0;
        for (i, (_, share)) in self.shares.iter().enumerate() {
            upto += share;
            if u < upto {
                return i;
            }
        }
        self.shares.len() - 1
    }
}

/// The kinds' names, for errors.
pub fn kind_names() -> String {
    let names: Vec<_> = WorkloadKind::ALL.iter().map(|k| k.name()).collect();
    names.join(", ")
}

/// One kind of write of a run, as the engine sends it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Write {
    /// What the transaction does.
    pub workload: Workload,
    /// Its share of the transactions.
    pub share: f64,
    /// Its gas limit (absent, hence 0, in files of single-kind runs).
    #[serde(default)]
    pub gas_limit: u64,
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
    /// What the transactions do, in which shares.
    pub writes: WriteMix,
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
            writes: WorkloadKind::Transfer.into(),
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
    /// What the transactions do (the plan's mix, deployed), with their
    /// gas limits.
    pub writes: Vec<Write>,
    /// Fee model, as detected at start.
    pub fee: Fee,
    /// The fee new and re-signed transactions take, following the base fee.
    pub fees: Arc<FeeFollower>,
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// Senders refused for insufficient funds wait to be topped up by the
    /// refill task instead of having the transaction rejected.
    pub refill: bool,
}

impl EngineConfig {
    /// The ERC-20 token the run sends, if any.
    pub fn token(&self) -> Option<Address> {
        token_of(&self.writes)
    }

    /// The FethStore its `store` writes call, if any.
    pub fn store(&self) -> Option<Address> {
        self.writes.iter().find_map(|w| match w.workload {
            Workload::Store { contract } => Some(contract),
            _ => None,
        })
    }
}

/// The ERC-20 token of `writes`, if any.
pub fn token_of(writes: &[Write]) -> Option<Address> {
    writes.iter().find_map(|w| match w.workload {
        Workload::Erc20 { token } => Some(token),
        _ => None,
    })
}

/// The writes as a person reads them: `erc20`, or `transfer 60 %, swap 40 %`.
pub fn describe_writes(writes: &[Write]) -> String {
    match writes {
        [one] => one.workload.kind().name().to_string(),
        many => {
            let parts: Vec<_> = many
                .iter()
                .map(|w| format!("{} {:.0} %", w.workload.kind().name(), w.share * 100.0))
                .collect();
            parts.join(", ")
        }
    }
}

/// Reads a run's writes: a list, or (in older files) one workload.
pub fn writes_or_workload<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Write>, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Either {
        Many(Vec<Write>),
        One(Workload),
    }
    Ok(match <Either as serde::Deserialize>::deserialize(d)? {
        Either::Many(writes) => writes,
        Either::One(workload) => vec![Write {
            workload,
            share: 1.0,
            gas_limit: 0,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draw_picks_the_kind_whose_cumulative_share_it_falls_under() {
        use WorkloadKind::*;
        let mix = WriteMix::new(vec![(Transfer, 0.4), (Erc20, 0.2), (Swap, 0.4)]).unwrap();
        let picks: Vec<_> = [0.0, 0.399, 0.4, 0.599, 0.601, 0.999_999]
            .into_iter()
            .map(|u| mix.shares()[mix.pick(u)].0)
            .collect();
        assert_eq!(picks, [Transfer, Transfer, Erc20, Erc20, Swap, Swap]);
        assert!(mix.contains(Swap) && !mix.contains(Store));
        let twice = WriteMix::new(vec![(Swap, 0.5), (Swap, 0.5)]).unwrap_err();
        assert_eq!(twice.to_string(), "swap is given twice in the writes' mix");
    }

    #[test]
    fn a_single_kind_run_s_file_still_reads() {
        let old =
            r#"{"workload":{"erc20":{"token":"0x1111111111111111111111111111111111111111"}}}"#;
        #[derive(serde::Deserialize)]
        struct Config {
            #[serde(alias = "workload", deserialize_with = "writes_or_workload")]
            writes: Vec<Write>,
        }
        let c: Config = serde_json::from_str(old).unwrap();
        let token = Address::repeat_byte(0x11);
        assert_eq!(
            c.writes,
            [Write {
                workload: Workload::Erc20 { token },
                share: 1.0,
                gas_limit: 0
            }]
        );
        assert_eq!(describe_writes(&c.writes), "erc20");
    }
}
