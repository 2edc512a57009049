//! Reading what the chain committed: every block from the run's start, with
//! its transaction hashes and timestamp.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alloy_primitives::B256;

use crate::eth::{EthClient, RpcError};

/// A committed block.
#[derive(Debug, Clone)]
pub struct ScannedBlock {
    /// Height.
    pub number: u64,
    /// Header time, seconds since the epoch.
    pub timestamp: u64,
    /// Number of transactions.
    pub txs: usize,
    /// When the scanner first read it, seconds since the run began.
    pub seen: f64,
}

/// Blocks seen so far and where each transaction landed.
#[derive(Debug, Default)]
pub struct ScanState {
    /// Blocks in height order.
    pub blocks: Vec<ScannedBlock>,
    /// Transaction hash → index into `blocks`.
    pub included: HashMap<B256, usize>,
    /// Next height to read.
    pub next: u64,
}

/// Polls the chain and records new blocks into a shared [`ScanState`].
#[derive(Debug, Clone)]
pub struct Scanner {
    client: Arc<EthClient>,
    start: Instant,
    /// What has been read.
    pub state: Arc<Mutex<ScanState>>,
}

impl Scanner {
    /// A scanner that starts after `height`; `start` is the run's start.
    pub fn new(client: Arc<EthClient>, height: u64, start: Instant) -> Self {
        let state = ScanState {
            next: height + 1,
            ..Default::default()
        };
        Self {
            client,
            start,
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// The block before the run (for the time window's start).
    pub async fn block_time(&self, height: u64) -> Result<u64, RpcError> {
        Ok(self
            .client
            .block(height)
            .await?
            .map_or(0, |b| b.timestamp.to::<u64>()))
    }

    /// Reads every block up to the latest.
    pub async fn poll(&self) -> Result<(), RpcError> {
        let latest = self.client.block_number().await?;
        let mut next = self.state.lock().unwrap_or_else(|e| e.into_inner()).next;
        while next <= latest {
            let Some(block) = self.client.block(next).await? else {
                break;
            };
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let index = st.blocks.len();
            for hash in &block.transactions {
                st.included.insert(*hash, index);
            }
            st.blocks.push(ScannedBlock {
                number: next,
                timestamp: block.timestamp.to(),
                txs: block.transactions.len(),
                seen: self.start.elapsed().as_secs_f64(),
            });
            next += 1;
            st.next = next;
        }
        Ok(())
    }

    /// Polls every `period` until `stop` resolves.
    pub async fn run_until(&self, period: Duration, stop: tokio::sync::watch::Receiver<bool>) {
        let mut stop = stop;
        loop {
            // A transient RPC failure (node restarting) is retried next period.
            let _ = self.poll().await;
            tokio::select! {
                _ = tokio::time::sleep(period) => {}
                _ = stop.changed() => {
                    let _ = self.poll().await;
                    return;
                }
            }
        }
    }
}
