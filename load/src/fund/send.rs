//! Sending the root's transactions in nonce order and waiting for the chain
//! to include them.

use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, B256, U256};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::refusal::{self, Refusal};
use feth_chain::eth::{EthClient, RpcError};

/// One account's share of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    /// Recipient.
    pub to: Address,
    /// Value in wei.
    pub value: U256,
}

/// One signed transaction of the root: a transfer to `to`, or (with
/// `pays`) one batch through the disperse contract at `to`. Also a token
/// hand-out of the erc20 workload.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Payment {
    /// Recipient, or the disperse contract of a batch.
    pub to: Address,
    /// Value in wei (a batch's: the sum of its shares).
    pub value: U256,
    /// Root nonce.
    pub nonce: u64,
    /// Signed transaction.
    pub raw: Bytes,
    /// Its hash.
    pub hash: B256,
    /// The accounts a batch pays; empty for a plain transfer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pays: Vec<Share>,
}

impl Payment {
    /// How many accounts this transaction pays.
    pub fn accounts(&self) -> usize {
        self.pays.len().max(1)
    }
}

/// A progress bar with rate and ETA, hidden unless `show`.
pub(super) fn bar(show: bool, len: u64, what: &str) -> ProgressBar {
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
                    if matches!(
                        refusal::classify(&message),
                        Refusal::AlreadyKnown | Refusal::NonceTooLow
                    ) =>
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
                    return Err(e).with_context(|| {
                        format!("funding through {} (root nonce {})", p.to, p.nonce)
                    });
                }
            }
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok(())
}

/// Whether an error means "try the same transaction again later" (a full
/// mempool or a rate limit: [`crate::refusal`]).
pub fn is_busy(message: &str) -> bool {
    refusal::classify(message).is_busy()
}

/// Waits until the root's committed nonce passes `nonce`; the bar counts
/// `total` transactions from nonce `first`.
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
                "funding transactions not all committed after {} s (root nonce {latest}, waiting for {}); re-run the same command to finish",
                wait.as_secs(),
                nonce + 1
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
