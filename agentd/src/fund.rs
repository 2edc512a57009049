//! Funding many accounts from a root key: pipelined with local nonces (no
//! receipt wait per transfer), confirmed by reading the chain, and resumable.
//!
//! Resumability: before sending, the exact signed transfers are written to a
//! journal next to the keys file. A re-run first settles that journal (resends
//! the same transfers whose nonce is not used yet and waits for them), then
//! decides who still needs funds from on-chain balances. Every payment has its
//! own root nonce, so nobody can be paid twice.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, B256, U256};
use anyhow::{bail, Context, Result};
use futures::stream::{self, StreamExt};
use indicatif::{ProgressBar, ProgressStyle};
use secp256k1::SecretKey;
use serde::{Deserialize, Serialize};

use crate::accounts::{KeySet, KeySource};
use crate::eth::{EthClient, RpcError};
use crate::sign::{self, Fee, TxRequest};
use crate::{fees, keys};

/// Gas of a plain transfer.
pub const TRANSFER_GAS: u64 = 21_000;

/// One planned payment (also a token hand-out of the erc20 workload).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Payment {
    /// Recipient.
    pub to: Address,
    /// Value in wei.
    pub value: U256,
    /// Root nonce.
    pub nonce: u64,
    /// Signed transaction.
    pub raw: Bytes,
    /// Its hash.
    pub hash: B256,
}

/// The journal of a funding run in progress.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Journal {
    /// The paying account.
    pub root: Address,
    /// The payments, by increasing nonce.
    pub payments: Vec<Payment>,
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
}

/// The outcome of a funding run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FundReport {
    /// Accounts in the keys file.
    pub accounts: usize,
    /// Payments settled from a previous, interrupted run.
    pub resumed: usize,
    /// Accounts that already held enough.
    pub skipped: usize,
    /// Payments sent in this run.
    pub paid: usize,
    /// Total value sent, wei.
    pub value_wei: U256,
    /// Accounts still below the amount after the run.
    pub underfunded: usize,
    /// Seconds taken.
    pub seconds: f64,
}

/// The journal path for a keys file.
pub fn journal_path(keys_file: &Path) -> PathBuf {
    let mut name = keys_file.file_name().unwrap_or_default().to_os_string();
    name.push(".funding.json");
    keys_file.with_file_name(name)
}

fn bar(show: bool, len: u64, what: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} {per_sec} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}

/// Reads `(balance, nonce)` of every address, 64 requests at a time.
pub async fn read_accounts(
    client: &EthClient,
    addresses: &[Address],
    progress: bool,
) -> Result<Vec<(U256, u64)>> {
    let pb = bar(progress, addresses.len() as u64, "reading");
    let results: Vec<Result<(U256, u64), RpcError>> = stream::iter(addresses.iter().copied())
        .map(|a| {
            let pb = &pb;
            async move {
                let balance = client.balance(a).await?;
                let nonce = client.nonce(a, false).await?;
                pb.inc(1);
                Ok((balance, nonce))
            }
        })
        .buffered(64)
        .collect()
        .await;
    pb.finish_and_clear();
    results
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .context("cannot read account balances")
}

/// Sends `payments` in nonce order, resending on a full mempool, until each
/// is accepted (or known). Order matters: nodes such as abcid refuse gaps.
pub(crate) async fn send_in_order(
    client: &EthClient,
    payments: &[Payment],
    progress: bool,
) -> Result<()> {
    let pb = bar(progress, payments.len() as u64, "sending");
    for p in payments {
        let mut backoff = Duration::from_millis(50);
        loop {
            match client.send_raw(&p.raw).await {
                Ok(_) => break,
                Err(RpcError::Rpc { message, .. })
                    if message.contains("already known")
                        || message.starts_with("nonce too low") =>
                {
                    break
                }
                Err(RpcError::Rpc { message, .. }) if is_busy(&message) => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
                Err(RpcError::Transport { timeout: true, .. }) => {}
                Err(e) => {
                    pb.finish_and_clear();
                    return Err(e)
                        .with_context(|| format!("funding {} (root nonce {})", p.to, p.nonce));
                }
            }
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok(())
}

/// Whether an error means "try the same transaction again later".
pub fn is_busy(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("txpool is full")
        || m.contains("mempool is full")
        || m.contains("rate limit")
        || m.contains("too many requests")
}

/// Waits until the root's committed nonce passes `nonce`.
pub(crate) async fn wait_nonce(
    client: &EthClient,
    root: Address,
    nonce: u64,
    wait: Duration,
    progress: bool,
    total: u64,
    first: u64,
) -> Result<()> {
    let pb = bar(progress, total, "confirming");
    let deadline = Instant::now() + wait;
    loop {
        let latest = client.nonce(root, false).await?;
        pb.set_position(latest.saturating_sub(first).min(total));
        if latest > nonce {
            pb.finish_and_clear();
            return Ok(());
        }
        if Instant::now() > deadline {
            pb.finish_and_clear();
            bail!(
                "funding transfers not all committed after {} s (root nonce {latest}, waiting for {}); re-run the same command to finish",
                wait.as_secs(),
                nonce + 1
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Settles a journal left by an interrupted run; returns how many of its
/// payments were resent or confirmed.
async fn settle(client: &EthClient, journal: &Journal, plan: &FundPlan) -> Result<usize> {
    let Some(last) = journal.payments.last() else {
        return Ok(0);
    };
    let latest = client.nonce(journal.root, false).await?;
    let open: Vec<Payment> = journal
        .payments
        .iter()
        .filter(|p| p.nonce >= latest)
        .cloned()
        .collect();
    send_in_order(client, &open, plan.progress).await?;
    let first = journal.payments.first().map_or(0, |p| p.nonce);
    wait_nonce(
        client,
        journal.root,
        last.nonce,
        plan.wait,
        plan.progress,
        journal.payments.len() as u64,
        first,
    )
    .await?;
    Ok(journal.payments.len())
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
        resumed: resume(client, root_address, plan, journal_file).await?,
        ..Default::default()
    };
    let state = read_accounts(client, accounts, plan.progress).await?;
    let targets: Vec<(Address, U256)> = accounts
        .iter()
        .zip(&state)
        .filter(|(_, s)| plan.needs(s))
        .map(|(a, (balance, _))| (*a, plan.amount - (*balance).min(plan.amount)))
        .collect();
    report.skipped = accounts.len() - targets.len();
    if !targets.is_empty() {
        let journal = sign_payments(client, root, &targets).await?;
        write_journal(&journal, journal_file)?;
        pay(client, &journal, plan).await?;
        std::fs::remove_file(journal_file)
            .with_context(|| format!("cannot delete {}", journal_file.display()))?;
        let after = read_accounts(client, accounts, plan.progress).await?;
        report.paid = journal.payments.len();
        report.value_wei = journal.payments.iter().map(|p| p.value).sum();
        report.underfunded = after.iter().filter(|s| plan.needs(s)).count();
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

impl FundPlan {
    /// Whether an account with this (balance, nonce) is to be paid.
    fn needs(&self, (balance, nonce): &(U256, u64)) -> bool {
        if self.redeposit {
            *balance < self.amount
        } else {
            balance.is_zero() && *nonce == 0
        }
    }
}

/// Settles the journal of an interrupted run, if there is one, and deletes
/// it; returns how many of its payments were resent.
async fn resume(
    client: &EthClient,
    root: Address,
    plan: &FundPlan,
    journal_file: &Path,
) -> Result<usize> {
    if !journal_file.exists() {
        return Ok(0);
    }
    let text = std::fs::read_to_string(journal_file)
        .with_context(|| format!("cannot read {}", journal_file.display()))?;
    let journal: Journal = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a funding journal", journal_file.display()))?;
    if journal.root != root {
        bail!(
            "{} was written for root {}, not {root}; use the same root key or delete the journal",
            journal_file.display(),
            journal.root
        );
    }
    let resumed = settle(client, &journal, plan).await?;
    std::fs::remove_file(journal_file)
        .with_context(|| format!("cannot delete {}", journal_file.display()))?;
    Ok(resumed)
}

/// Checks that the root can pay `targets` and signs one transfer each, with
/// consecutive nonces from the root's pending nonce.
async fn sign_payments(
    client: &EthClient,
    root: &SecretKey,
    targets: &[(Address, U256)],
) -> Result<Journal> {
    let root_address = keys::address_of(root);
    let chain_id = client.chain_id().await?;
    let fee = fees::detect(client).await?;
    let fee_each = fees::max_cost(fee, TRANSFER_GAS);
    let value: U256 = targets.iter().map(|(_, v)| *v).sum();
    let needed = value + fee_each * U256::from(targets.len());
    let have = client.balance(root_address).await?;
    if have < needed {
        bail!(
            "the root {root_address} holds {have} wei but funding {} account(s) needs {needed} wei \
             ({value} wei of value + up to {fee_each} wei of fees each); lower --count or --amount, or top up the root",
            targets.len()
        );
    }
    let first = client.nonce(root_address, true).await?;
    let payments = targets
        .iter()
        .zip(first..)
        .map(|((to, value), nonce)| {
            let tx = sign::sign(root, &transfer(chain_id, nonce, *to, *value, fee));
            Payment {
                to: *to,
                value: *value,
                nonce,
                raw: tx.raw,
                hash: tx.hash,
            }
        })
        .collect();
    Ok(Journal {
        root: root_address,
        payments,
    })
}

fn write_journal(journal: &Journal, journal_file: &Path) -> Result<()> {
    let bytes = serde_json::to_vec(journal)?;
    std::fs::write(journal_file, bytes)
        .with_context(|| format!("cannot write {}", journal_file.display()))
}

/// Sends the journal's payments in nonce order and waits until the chain
/// has them all.
async fn pay(client: &EthClient, journal: &Journal, plan: &FundPlan) -> Result<()> {
    let (Some(first), Some(last)) = (journal.payments.first(), journal.payments.last()) else {
        return Ok(());
    };
    send_in_order(client, &journal.payments, plan.progress).await?;
    wait_nonce(
        client,
        journal.root,
        last.nonce,
        plan.wait,
        plan.progress,
        journal.payments.len() as u64,
        first.nonce,
    )
    .await
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
    let plan = FundPlan {
        amount,
        redeposit: false,
        wait: Duration::from_secs(120),
        progress: false,
    };
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
