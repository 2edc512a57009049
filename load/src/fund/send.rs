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

/// Sends `payments` in nonce order, each until it is accepted (or known).
/// Order matters: nodes such as abcid refuse gaps. A refusal that means
/// "later" (a full mempool, a rate limit, an unreachable consensus node) or
/// a send that times out is tried again after a back-off, for at most
/// `patience` per transaction: then the sending stops with an error naming
/// the transaction and the refusal. What was sent stays sent; a re-run goes
/// on from there.
pub(crate) async fn send_in_order(
    client: &EthClient,
    payments: &[Payment],
    patience: Duration,
    progress: bool,
) -> Result<()> {
    let pb = bar(progress, payments.len() as u64, "sending");
    for p in payments {
        if let Err(e) = send_one(client, p, patience).await {
            pb.finish_and_clear();
            return Err(e);
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok(())
}

/// Sends one payment until it is taken, for at most `patience`.
async fn send_one(client: &EthClient, p: &Payment, patience: Duration) -> Result<()> {
    let started = Instant::now();
    let mut backoff = Duration::from_millis(50);
    loop {
        let e = match client.send_raw(&p.raw).await {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let later = match &e {
            RpcError::Rpc { message, .. } => match refusal::classify(message) {
                Refusal::AlreadyKnown | Refusal::NonceTooLow => return Ok(()),
                kind if kind.is_busy() => Some(format!("{}: {message}", kind.name())),
                _ => None,
            },
            RpcError::Transport { timeout: true, .. } => Some("no answer in time".to_string()),
            _ => None,
        };
        let Some(later) = later else {
            return Err(e).with_context(|| format!("sending nonce {} to {}", p.nonce, p.to));
        };
        let waited = started.elapsed();
        if waited >= patience {
            bail!(
                "the node still refused the transaction of nonce {} to {} after {} s of retries (last: {later}); it was not taken and nothing after it was sent. Re-run the same command once the node takes transactions again: it goes on from there",
                p.nonce,
                p.to,
                waited.as_secs()
            );
        }
        tokio::time::sleep(backoff.min(patience - waited)).await;
        backoff = (backoff * 2).min(Duration::from_secs(2));
    }
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use serde_json::{json, Value};

    use super::*;

    fn payment(nonce: u64) -> Payment {
        Payment {
            to: Address::repeat_byte(9),
            value: U256::from(1),
            nonce,
            raw: Bytes::from(vec![0x02, nonce as u8]),
            hash: B256::repeat_byte(nonce as u8),
            pays: Vec::new(),
        }
    }

    /// A node that refuses the first `refusals` sends as unavailable (as
    /// abcid does with its CometBFT down: -32002), then takes every one.
    async fn node(refusals: usize) -> (EthClient, Arc<AtomicUsize>) {
        let sends = Arc::new(AtomicUsize::new(0));
        let seen = sends.clone();
        let url = crate::stand_in::serve(move |request: Value| {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let id = request["id"].clone();
            async move {
                let answer = if n < refusals {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32002, "message": "consensus node unavailable: connection refused"}})
                } else {
                    json!({"jsonrpc": "2.0", "id": id, "result": B256::repeat_byte(1)})
                };
                answer.to_string()
            }
        })
        .await;
        let client = EthClient::new(&url, Duration::from_secs(5)).unwrap();
        (client, sends)
    }

    #[tokio::test]
    async fn a_node_that_keeps_refusing_as_unavailable_ends_the_sending_naming_why() {
        let (client, sends) = node(usize::MAX).await;
        let patience = Duration::from_secs(1);
        let started = Instant::now();
        let payments = [payment(7), payment(8)];
        let sending = send_in_order(&client, &payments, patience, false);
        let err = tokio::time::timeout(patience * 10, sending)
            .await
            .expect("the sending is bounded in time")
            .expect_err("a node that never takes it must end the sending");
        let took = started.elapsed();
        let text = format!("{err:#}");
        assert!(text.contains("nonce 7"), "{text}");
        assert!(text.contains("node unavailable"), "{text}");
        assert!(text.contains("Re-run"), "{text}");
        assert!(took >= patience && took < patience * 4, "took {took:?}");
        // Backed off, not hammered: 50 ms doubling reaches 1 s in a few tries.
        let tries = sends.load(Ordering::SeqCst);
        assert!((3..=8).contains(&tries), "{tries} sends");
    }

    #[tokio::test]
    async fn a_refusal_that_clears_within_the_patience_is_sent_through() {
        let (client, sends) = node(3).await;
        send_in_order(
            &client,
            &[payment(1), payment(2)],
            Duration::from_secs(10),
            false,
        )
        .await
        .expect("taken once the node is back");
        assert_eq!(
            sends.load(Ordering::SeqCst),
            5,
            "three refusals, then one send each"
        );
    }
}
