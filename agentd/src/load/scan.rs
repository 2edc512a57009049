//! Reading what the chain committed: every block from the run's start, in
//! height order, handed to the [`Ledger`] with which of ours reverted.
//!
//! - Header times: CometBFT's (ns) when its RPC is known, else the web3
//!   timestamp (whole seconds).
//! - Receipt status, only for blocks holding ours: `eth_getBlockReceipts`
//!   (one call per block); a node without it gets one
//!   `eth_getTransactionReceipt` per transaction of ours, so the load works
//!   against any standard JSON-RPC node.
//! - A node that does not answer (restarting) is asked again, with a
//!   back-off up to 5 s; nothing is skipped.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alloy_primitives::{B256, U64};
use feth_etl::rpc::Rpc;
use futures::stream::{self, StreamExt};
use serde::Deserialize;
use serde_json::json;

use super::ledger::Ledger;
use super::tally::BlockFacts;
use crate::eth::{EthClient, RpcError};

/// Longest pause between polls of a node that does not answer.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The part of a receipt the scanner reads.
#[derive(Debug, Deserialize)]
struct Receipt {
    #[serde(rename = "transactionHash")]
    hash: B256,
    status: Option<U64>,
}

impl Receipt {
    /// Status 0; a receipt without status (before Byzantium) did not revert.
    fn reverted(&self) -> bool {
        self.status.is_some_and(|s| s.is_zero())
    }
}

/// Whether an error says the node does not have the method.
fn unsupported(e: &RpcError) -> bool {
    match e {
        RpcError::Rpc { code, message } => {
            let m = message.to_ascii_lowercase();
            *code == -32601
                || m.contains("does not exist")
                || m.contains("not found")
                || m.contains("not available")
                || m.contains("not supported")
        }
        _ => false,
    }
}

/// Header time of block `height`, ns since the epoch, from CometBFT's RPC.
async fn comet_time(comet: Option<&Rpc>, height: u64) -> Option<i64> {
    let (facts, _) = comet?.fetch(&[height], &[]).await.ok()?;
    facts.get(&height).and_then(|f| f.time_ns)
}

/// The web3 timestamp and (when `comet` is known) the ns header time of
/// block `height`.
pub async fn block_time(
    client: &EthClient,
    comet: Option<&Rpc>,
    height: u64,
) -> Result<(u64, Option<i64>), RpcError> {
    let web3 = client
        .block(height)
        .await?
        .map_or(0, |b| b.timestamp.to::<u64>());
    Ok((web3, comet_time(comet, height).await))
}

/// Polls the chain and hands every new block to the ledger.
#[derive(Clone)]
pub struct Scanner {
    client: Arc<EthClient>,
    comet: Option<Rpc>,
    start: Instant,
    ledger: Arc<Mutex<Ledger>>,
    next: Arc<AtomicU64>,
    block_receipts: Arc<AtomicBool>,
}

impl Scanner {
    /// A scanner that starts after `height`; `start` is the run's start;
    /// `comet`, when known, gives ns header times.
    pub fn new(
        client: Arc<EthClient>,
        comet: Option<Rpc>,
        height: u64,
        start: Instant,
        ledger: Arc<Mutex<Ledger>>,
    ) -> Self {
        Self {
            client,
            comet,
            start,
            ledger,
            next: Arc::new(AtomicU64::new(height + 1)),
            block_receipts: Arc::new(AtomicBool::new(true)),
        }
    }

    /// The next height to read.
    pub fn next_height(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }

    /// Which of `hashes` reverted, read from their receipts.
    async fn reverted(&self, number: u64, hashes: Vec<B256>) -> Result<HashSet<B256>, RpcError> {
        if self.block_receipts.load(Ordering::Relaxed) {
            let got = self
                .client
                .call::<Option<Vec<Receipt>>>("eth_getBlockReceipts", json!([U64::from(number)]))
                .await;
            match got {
                Ok(receipts) => {
                    return Ok(receipts
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|r| r.reverted())
                        .map(|r| r.hash)
                        .collect())
                }
                Err(e) if unsupported(&e) => self.block_receipts.store(false, Ordering::Relaxed),
                Err(e) => return Err(e),
            }
        }
        let answers: Vec<_> = stream::iter(hashes)
            .map(|h| async move { (h, self.client.receipt(h).await) })
            .buffer_unordered(16)
            .collect()
            .await;
        let mut reverted = HashSet::new();
        for (h, answer) in answers {
            if answer?.is_some_and(|r| r.status.is_some_and(|s| s.is_zero())) {
                reverted.insert(h);
            }
        }
        Ok(reverted)
    }

    /// Reads block `number` into the ledger; `false` when the node does not
    /// have it yet.
    async fn read(&self, number: u64) -> Result<bool, RpcError> {
        let Some(block) = self.client.block(number).await? else {
            return Ok(false);
        };
        let ours: Vec<B256> = {
            let ledger = self.ledger.lock().unwrap_or_else(|e| e.into_inner());
            block
                .transactions
                .iter()
                .filter(|h| ledger.holds(h))
                .copied()
                .collect()
        };
        let reverted = if ours.is_empty() {
            HashSet::new()
        } else {
            self.reverted(number, ours).await?
        };
        let facts = BlockFacts {
            number,
            timestamp: block.timestamp.to(),
            time_ns: comet_time(self.comet.as_ref(), number).await,
            txs: block.transactions.len() as u64,
            seen: self.start.elapsed().as_secs_f64(),
        };
        let mut ledger = self.ledger.lock().unwrap_or_else(|e| e.into_inner());
        ledger.block(
            &facts,
            &block.transactions,
            |h| reverted.contains(h),
            facts.seen,
        );
        Ok(true)
    }

    /// Reads every block up to the latest.
    pub async fn poll(&self) -> Result<(), RpcError> {
        let latest = self.client.block_number().await?;
        let mut next = self.next_height();
        while next <= latest {
            if !self.read(next).await? {
                break;
            }
            next += 1;
            self.next.store(next, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Polls every `period` until `stop` resolves, then once more.
    pub async fn run_until(&self, period: Duration, stop: tokio::sync::watch::Receiver<bool>) {
        let mut stop = stop;
        let mut pause = period;
        loop {
            // A node that does not answer (restarting) is asked again later.
            pause = match self.poll().await {
                Ok(()) => period,
                Err(e) => {
                    tracing::debug!("block scan: {e}");
                    (pause * 2).min(MAX_BACKOFF)
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.changed() => {
                    let _ = self.poll().await;
                    return;
                }
            }
        }
    }
}
