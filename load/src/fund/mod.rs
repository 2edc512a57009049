//! Funding many accounts from a root key, at the speed of the chain:
//! confirmed by reading the chain, resumable, and never paying anyone twice.
//!
//! Two paths, chosen by [`FundVia`]:
//! - **batch** (the default on nodes that run contracts): the root deploys
//!   `FethDisperse` ([`disperse`]) and pays hundreds of accounts per
//!   transaction, all or none;
//! - **transfers**: one plain transfer per account, for nodes without
//!   contracts (or by choice).
//!
//! Either way the root's transactions are sent in nonce order without a
//! receipt wait per transaction ([`send`]). Resumability: before sending,
//! the exact signed transactions are written to a [`journal`] next to the
//! keys file. A re-run first settles that journal (resends the same bytes
//! whose nonce is not used yet and waits for them), then decides who still
//! needs funds from on-chain balances. Every transaction has its own root
//! nonce and a batch pays all its accounts or none, so nobody can be paid
//! twice. The cost (value and the most the fees can be) is checked first.

pub mod disperse;
pub mod journal;
pub mod send;

use std::path::Path;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, B256, U256};
use anyhow::{bail, Context, Result};
use secp256k1::SecretKey;
use serde::Serialize;

use feth_chain::accounts::{KeySet, KeySource};
use feth_chain::eth::EthClient;
use feth_chain::sign::{self, Fee, TxRequest};
use feth_chain::{fees, keys};
pub use journal::{journal_path, Journal};
pub(crate) use send::{send_in_order, wait_nonce};
pub use send::{Payment, Share};

/// Gas of a plain transfer.
pub const TRANSFER_GAS: u64 = 21_000;
/// Recipients per batch unless told otherwise (within the gas caps of
/// [`disperse::BatchGas::size`]).
pub const DEFAULT_BATCH_SIZE: usize = 400;
/// Addresses per JSON-RPC batch when reading balances and nonces (geth
/// accepts batches of up to 1,000 calls).
const READ_BATCH: usize = 500;

/// How the root pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FundVia {
    /// Batches when the node deploys the disperse contract, else transfers.
    #[default]
    Auto,
    /// Batches through the disperse contract, or fail.
    Batch,
    /// One transfer per account.
    Transfers,
}

/// What to fund.
#[derive(Debug, Clone)]
pub struct FundPlan {
    /// Amount each account should hold.
    pub amount: U256,
    /// Top up every account below `amount` (else: only never-funded ones).
    pub redeposit: bool,
    /// How long to wait for the chain to include everything.
    pub wait: Duration,
    /// Show progress bars.
    pub progress: bool,
    /// Batches or transfers.
    pub via: FundVia,
    /// Most accounts per batch.
    pub batch_size: usize,
}

impl FundPlan {
    /// A plan paying `amount` to never-funded accounts, the way chosen for
    /// the node, without progress bars.
    pub fn new(amount: U256) -> Self {
        Self {
            amount,
            redeposit: false,
            wait: Duration::from_secs(120),
            progress: false,
            via: FundVia::Auto,
            batch_size: DEFAULT_BATCH_SIZE,
        }
    }

    /// Whether an account with this (balance, nonce) is to be paid.
    fn needs(&self, (balance, nonce): &(U256, u64)) -> bool {
        if self.redeposit {
            *balance < self.amount
        } else {
            balance.is_zero() && *nonce == 0
        }
    }
}

/// The outcome of a funding run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FundReport {
    /// Accounts in the keys file.
    pub accounts: usize,
    /// Accounts paid by settling a previous, interrupted run.
    pub resumed: usize,
    /// Accounts that already held enough.
    pub skipped: usize,
    /// Accounts paid in this run.
    pub paid: usize,
    /// The path taken: `batch` or `transfers` (empty when nothing was paid).
    pub via: String,
    /// The root's transactions of this run (a deployment included).
    pub root_txs: usize,
    /// The disperse contract the batches went through.
    pub contract: Option<Address>,
    /// Total value sent, wei.
    pub value_wei: U256,
    /// Accounts still below the amount after the run.
    pub underfunded: usize,
    /// Seconds taken.
    pub seconds: f64,
    /// Accounts paid per second of the run.
    pub accounts_per_second: f64,
}

/// Reads `(balance, nonce)` of every address, in JSON-RPC batches.
pub async fn read_accounts(
    client: &EthClient,
    addresses: &[Address],
    progress: bool,
) -> Result<Vec<(U256, u64)>> {
    let pb = send::bar(progress, addresses.len() as u64, "reading");
    let mut out = Vec::with_capacity(addresses.len());
    // Four batches at a time, each a named future collected before it is
    // awaited (no stream holding a closure), so that the read stays `Send`
    // whatever the caller's lifetimes (it runs in a spawned task mid-load).
    for group in addresses.chunks(READ_BATCH * 4) {
        let reads: Vec<_> = group
            .chunks(READ_BATCH)
            .map(|chunk| read_chunk(client, chunk, &pb))
            .collect();
        for chunk in futures::future::join_all(reads).await {
            out.extend(chunk.context("cannot read account balances and nonces")?);
        }
    }
    pb.finish_and_clear();
    Ok(out)
}

/// Reads `(balance, nonce)` of `chunk` in two batch requests.
async fn read_chunk(
    client: &EthClient,
    chunk: &[Address],
    pb: &indicatif::ProgressBar,
) -> Result<Vec<(U256, u64)>> {
    let (balances, nonces) = futures::join!(client.balances(chunk), client.nonces(chunk, false));
    pb.inc(chunk.len() as u64);
    balances
        .into_iter()
        .zip(nonces)
        .map(|(b, n)| Ok((b?, n?)))
        .collect()
}

/// Funds `accounts` from `root` as `plan` says; `journal_file` makes it resumable.
pub async fn fund(
    client: &EthClient,
    root: &SecretKey,
    accounts: &[Address],
    plan: &FundPlan,
    journal_file: &Path,
) -> Result<FundReport> {
    let started = Instant::now();
    let root_address = keys::address_of(root);
    let mut report = FundReport {
        accounts: accounts.len(),
        resumed: journal::resume(client, root_address, plan, journal_file).await?,
        ..Default::default()
    };
    let state = read_accounts(client, accounts, plan.progress).await?;
    let targets: Vec<Share> = accounts
        .iter()
        .zip(&state)
        .filter(|(_, s)| plan.needs(s))
        .map(|(a, (balance, _))| Share {
            to: *a,
            value: plan.amount - (*balance).min(plan.amount),
        })
        .collect();
    report.skipped = accounts.len() - targets.len();
    if !targets.is_empty() {
        let signed = sign_all(client, root, &targets, plan).await?;
        journal::write(&signed.journal, journal_file)?;
        journal::settle(client, &signed.journal, plan).await?;
        journal::remove(journal_file)?;
        let after = read_accounts(client, accounts, plan.progress).await?;
        report.paid = targets.len();
        report.via = signed.via.to_string();
        report.root_txs = signed.journal.payments.len() + usize::from(signed.contract.is_some());
        report.contract = signed.contract;
        report.value_wei = signed.journal.payments.iter().map(|p| p.value).sum();
        report.underfunded = after.iter().filter(|s| plan.needs(s)).count();
    }
    report.seconds = started.elapsed().as_secs_f64();
    report.accounts_per_second = (report.paid + report.resumed) as f64 / report.seconds.max(1e-9);
    Ok(report)
}

/// The signed transactions of a run and how they pay.
struct Signed {
    journal: Journal,
    via: &'static str,
    /// The disperse contract deployed for them.
    contract: Option<Address>,
}

/// Who signs, for which chain, at which fee.
struct Signer<'a> {
    root: &'a SecretKey,
    address: Address,
    chain_id: u64,
    fee: Fee,
}

/// Checks the cost and signs the run's transactions, as batches when the
/// plan allows and the node runs the disperse contract.
async fn sign_all(
    client: &EthClient,
    root: &SecretKey,
    targets: &[Share],
    plan: &FundPlan,
) -> Result<Signed> {
    let signer = Signer {
        root,
        address: keys::address_of(root),
        chain_id: client.chain_id().await?,
        fee: fees::detect(client).await?,
    };
    if plan.via != FundVia::Transfers {
        if let Some(signed) = sign_batches(client, &signer, targets, plan).await? {
            return Ok(signed);
        }
    }
    sign_transfers(client, &signer, targets).await
}

/// Deploys the disperse contract and signs the batches; `None` when the
/// node would not run the contract and the plan lets transfers do instead.
async fn sign_batches(
    client: &EthClient,
    signer: &Signer<'_>,
    targets: &[Share],
    plan: &FundPlan,
) -> Result<Option<Signed>> {
    let block = client.latest_block().await?;
    let gas_limit = block.gas_limit.map_or(30_000_000, |g| g.to::<u64>());
    let fee = signer.fee;
    let cost = |gas: disperse::BatchGas| {
        let size = gas.size(plan.batch_size, gas_limit);
        let batches = U256::from(targets.len().div_ceil(size));
        fees::max_cost(fee, gas.gas(size)) * batches
    };
    let mut gas = disperse::BatchGas::DEFAULT;
    let deploy_fee = fees::max_cost(fee, disperse::DEPLOY_GAS);
    check_cost(client, signer.address, targets, deploy_fee + cost(gas)).await?;
    let contract =
        match disperse::deploy(client, signer.root, signer.chain_id, fee, plan.wait).await {
            Ok(contract) => contract,
            Err(e) if plan.via == FundVia::Auto => {
                tracing::warn!("paying one transfer per account: {e:#}");
                return Ok(None);
            }
            Err(e) => return Err(e.context("--via batch needs a node that runs contracts")),
        };
    // The node's own gas schedule may price new accounts higher.
    match disperse::estimate(client, signer.address, contract).await {
        Ok((one, two)) => gas = gas.covering(one, two),
        Err(e) => tracing::warn!("batches sized by feth's own gas bounds: {e:#}"),
    }
    if gas != disperse::BatchGas::DEFAULT {
        check_cost(client, signer.address, targets, cost(gas)).await?;
    }
    let first = client.nonce(signer.address, true).await?;
    let batches = disperse::BatchPlan {
        contract,
        size: gas.size(plan.batch_size, gas_limit),
        gas,
    };
    let payments =
        disperse::sign_batches(signer.root, signer.chain_id, fee, first, &batches, targets);
    let journal = Journal {
        root: signer.address,
        payments,
    };
    Ok(Some(Signed {
        journal,
        via: "batch",
        contract: Some(contract),
    }))
}

/// One signed transfer per target, with consecutive root nonces.
async fn sign_transfers(
    client: &EthClient,
    signer: &Signer<'_>,
    targets: &[Share],
) -> Result<Signed> {
    let fees_max = fees::max_cost(signer.fee, TRANSFER_GAS) * U256::from(targets.len());
    check_cost(client, signer.address, targets, fees_max).await?;
    let first = client.nonce(signer.address, true).await?;
    let payments = targets
        .iter()
        .zip(first..)
        .map(|(share, nonce)| {
            let request = transfer(signer.chain_id, nonce, share.to, share.value, signer.fee);
            let tx = sign::sign(signer.root, &request);
            Payment {
                to: share.to,
                value: share.value,
                nonce,
                raw: tx.raw,
                hash: tx.hash,
                pays: Vec::new(),
            }
        })
        .collect();
    let journal = Journal {
        root: signer.address,
        payments,
    };
    Ok(Signed {
        journal,
        via: "transfers",
        contract: None,
    })
}

/// Fails unless the root holds `value` plus the most the fees can be.
async fn check_cost(
    client: &EthClient,
    root: Address,
    targets: &[Share],
    fees_max: U256,
) -> Result<()> {
    let accounts = targets.len();
    let value: U256 = targets.iter().map(|s| s.value).sum();
    let needed = value + fees_max;
    let have = client.balance(root).await?;
    if have < needed {
        bail!(
            "the root {root} holds {have} wei but funding {accounts} account(s) needs {needed} wei \
             ({value} wei of value + up to {fees_max} wei of fees); lower --count or --amount, or top up the root"
        );
    }
    Ok(())
}

fn transfer(chain_id: u64, nonce: u64, to: Address, value: U256, fee: Fee) -> TxRequest {
    TxRequest {
        chain_id,
        nonce,
        to: Some(to),
        value,
        gas_limit: TRANSFER_GAS,
        fee,
        input: Bytes::new(),
    }
}

/// Derives `count` keys from `seed`, saves them to `keys_file` (mode 0600)
/// and funds each with `amount` from `root`: the reproducible senders of
/// tests and benchmarks. Fails unless every account ends up funded.
pub async fn fund_seeded(
    client: &EthClient,
    root: &SecretKey,
    seed: B256,
    count: usize,
    amount: U256,
    keys_file: &Path,
) -> Result<(KeySet, FundReport)> {
    let mut keys = KeySet::new(KeySource::Seed(seed));
    keys.extend_to(count);
    keys.save(keys_file)?;
    let plan = FundPlan::new(amount);
    let report = fund(
        client,
        root,
        &keys.addresses,
        &plan,
        &journal_path(keys_file),
    )
    .await?;
    if report.underfunded > 0 {
        bail!("{} accounts are still unfunded", report.underfunded);
    }
    Ok((keys, report))
}
