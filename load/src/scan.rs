//! Reading what the chain committed: every block from the run's start, in
//! height order, handed to the [`Ledger`] with which of ours reverted.
//!
//! - Header times: CometBFT's (ns) when its RPC is known, else the web3
//!   timestamp (whole seconds).
//! - Receipt status, only for blocks holding ours: `eth_getBlockReceipts`
//!   (one call per block); a node without it gets one
//!   `eth_getTransactionReceipt` per transaction of ours, so the load works
//!   against any standard JSON-RPC node.
//! - The base fee of every block read goes to the load's [`FeeFollower`],
//!   so new transactions are signed with a fee that follows it.
//! - Blocks are read in passes of up to [`PASS`]: bodies and receipts
//!   [`BLOCKS_IN_FLIGHT`] at a time, header times in one CometBFT call, so
//!   a reader far from the node (or short of CPU) keeps up with the chain.
//! - A node that does not answer (restarting) is asked again, with a
//!   back-off up to 5 s; nothing is skipped.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alloy_primitives::{B256, U64};
use feth_comet::rpc::Rpc;
use futures::future::OptionFuture;
use futures::stream::{self, StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::json;

use super::ledger::Ledger;
use super::tally::BlockFacts;
use crate::sync::lock;
use feth_chain::eth::{BlockSummary, EthClient, RpcError, BLOCKS_IN_FLIGHT};
use feth_chain::fees::FeeFollower;

/// Blocks read in one pass (see the module docs).
const PASS: u64 = 20;

/// What the scanner knows of the node's `eth_getBlockReceipts`.
const UNKNOWN: u8 = 0;
const HAS: u8 = 1;
const LACKS: u8 = 2;

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

/// Header times of blocks `heights`, ns since the epoch, from CometBFT's
/// RPC (one `/blockchain` call per 20 heights); empty without it.
async fn comet_times(comet: Option<&Rpc>, heights: &[u64]) -> BTreeMap<u64, i64> {
    let Some(Ok((facts, _))) = OptionFuture::from(comet.map(|c| c.fetch(heights, &[]))).await
    else {
        return BTreeMap::new();
    };
    facts
        .into_iter()
        .filter_map(|(h, f)| Some((h, f.time_ns?)))
        .collect()
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
    let ns = comet_times(comet, &[height]).await.get(&height).copied();
    Ok((web3, ns))
}

/// Polls the chain and hands every new block to the ledger.
#[derive(Clone)]
pub struct Scanner {
    client: Arc<EthClient>,
    comet: Option<Rpc>,
    start: Instant,
    ledger: Arc<Mutex<Ledger>>,
    next: Arc<AtomicU64>,
    /// Whether the node has `eth_getBlockReceipts`: [`UNKNOWN`], [`HAS`] or
    /// [`LACKS`].
    block_receipts: Arc<AtomicU8>,
    fees: Option<Arc<FeeFollower>>,
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
            block_receipts: Arc::new(AtomicU8::new(UNKNOWN)),
            fees: None,
        }
    }

    /// This scanner, handing the base fee of every block it reads to `fees`.
    pub fn following_fees(mut self, fees: Arc<FeeFollower>) -> Self {
        self.fees = Some(fees);
        self
    }

    /// The next height to read.
    pub fn next_height(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }

    /// Which of `hashes` (ours, in block `number`) reverted, read from their
    /// receipts; nothing is read when there are none.
    async fn reverted(&self, number: u64, hashes: Vec<B256>) -> Result<HashSet<B256>, RpcError> {
        if hashes.is_empty() {
            return Ok(HashSet::new());
        }
        if self.block_receipts.load(Ordering::Relaxed) != LACKS {
            let got = self
                .client
                .call::<Option<Vec<Receipt>>>("eth_getBlockReceipts", json!([U64::from(number)]))
                .await;
            match got {
                Ok(receipts) => {
                    self.block_receipts.store(HAS, Ordering::Relaxed);
                    return Ok(receipts
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|r| r.reverted())
                        .map(|r| r.hash)
                        .collect());
                }
                Err(e) if unsupported(&e) => self.block_receipts.store(LACKS, Ordering::Relaxed),
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

    /// The hashes of `block` that are ours.
    fn ours(&self, block: &BlockSummary) -> Vec<B256> {
        let ledger = lock(&self.ledger);
        block
            .transactions
            .iter()
            .filter(|h| ledger.holds(h))
            .copied()
            .collect()
    }

    /// Which of ours reverted, for each `(block, ours)`: [`BLOCKS_IN_FLIGHT`]
    /// blocks at a time, but one at a time until the node has shown whether
    /// it has `eth_getBlockReceipts`, so a node without it is asked once.
    async fn reverted_in(
        &self,
        ours: Vec<(u64, Vec<B256>)>,
    ) -> Result<Vec<HashSet<B256>>, RpcError> {
        let mut ours = ours.into_iter();
        let mut reverted = Vec::with_capacity(ours.len());
        while self.block_receipts.load(Ordering::Relaxed) == UNKNOWN {
            let Some((h, o)) = ours.next() else { break };
            reverted.push(self.reverted(h, o).await?);
        }
        let rest: Vec<HashSet<B256>> = stream::iter(ours)
            .map(|(h, o)| self.reverted(h, o))
            .buffered(BLOCKS_IN_FLIGHT)
            .try_collect()
            .await?;
        reverted.extend(rest);
        Ok(reverted)
    }

    /// Hands block `number` to the ledger.
    fn absorb(
        &self,
        number: u64,
        block: &BlockSummary,
        time_ns: Option<i64>,
        reverted: &HashSet<B256>,
    ) {
        if let (Some(fees), Some(base)) = (&self.fees, block.base_fee_per_gas) {
            fees.observe(base.saturating_to());
        }
        let facts = BlockFacts {
            number,
            timestamp: block.timestamp.to(),
            time_ns,
            txs: block.transactions.len() as u64,
            gas_used: block.gas_used.saturating_to(),
            seen: self.start.elapsed().as_secs_f64(),
        };
        let mut ledger = lock(&self.ledger);
        ledger.block(
            &facts,
            &block.transactions,
            |h| reverted.contains(h),
            facts.seen,
        );
    }

    /// Reads blocks `first ..= last` (see [`PASS`]) into the ledger, in
    /// order, up to the first the node does not have yet; returns the next
    /// height to read.
    async fn pass(&self, first: u64, last: u64) -> Result<u64, RpcError> {
        let blocks: Vec<BlockSummary> = self
            .client
            .blocks(first..=last)
            .await?
            .into_iter()
            .map_while(|b| b)
            .collect();
        let heights: Vec<u64> = (first..).take(blocks.len()).collect();
        let times = comet_times(self.comet.as_ref(), &heights).await;
        let ours = heights
            .iter()
            .zip(&blocks)
            .map(|(&h, b)| (h, self.ours(b)))
            .collect();
        let reverted = self.reverted_in(ours).await?;
        for ((&h, block), reverted) in heights.iter().zip(&blocks).zip(&reverted) {
            self.absorb(h, block, times.get(&h).copied(), reverted);
            self.next.store(h + 1, Ordering::Relaxed);
        }
        Ok(first + heights.len() as u64)
    }

    /// Reads every block up to the latest.
    pub async fn poll(&self) -> Result<(), RpcError> {
        self.poll_until(None).await
    }

    /// Reads every block up to the latest, [`PASS`] blocks at a time,
    /// starting no pass after `deadline`.
    async fn poll_until(&self, deadline: Option<Instant>) -> Result<(), RpcError> {
        let latest = self.client.block_number().await?;
        let mut next = self.next_height();
        while next <= latest && deadline.is_none_or(|d| Instant::now() < d) {
            let read = self.pass(next, latest.min(next + PASS - 1)).await?;
            if read == next {
                break;
            }
            next = read;
        }
        Ok(())
    }

    /// Polls every `period` until `stop` resolves, then until the block
    /// after our last one is read (its header time is their commit time),
    /// for at most [`MAX_BACKOFF`].
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
                _ = stop.changed() => return self.last_polls(period).await,
            }
        }
    }

    /// The polls after the run: once, and again while some of ours wait
    /// for a commit time, for at most [`MAX_BACKOFF`].
    async fn last_polls(&self, period: Duration) {
        let deadline = Instant::now() + MAX_BACKOFF;
        loop {
            let _ = self.poll_until(Some(deadline)).await;
            if !self.awaits_commit_time() || Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(period).await;
        }
    }

    fn awaits_commit_time(&self) -> bool {
        let ledger = lock(&self.ledger);
        ledger.tally.awaits_commit_time()
    }
}

#[cfg(test)]
mod tests {
    //! The scanner against a stand-in node (one module's unit tests): the
    //! receipt fallback (a node without `eth_getBlockReceipts` is asked for
    //! each of ours by `eth_getTransactionReceipt`, and the method is not
    //! asked for again), and blocks read several at a time.

    use std::sync::atomic::AtomicUsize;

    use alloy_primitives::Bytes;
    use serde_json::Value;

    use super::*;
    use crate::ledger::{Live, Submission, TxStatus};
    use crate::pick::RateSchedule;
    use crate::tally::{Tally, TallyConfig};

    /// A stand-in node of `height` blocks that answers after `delay`.
    #[derive(Default)]
    struct Node {
        height: u64,
        delay: Duration,
        block_receipts_asked: AtomicUsize,
        in_flight: AtomicUsize,
        most_in_flight: AtomicUsize,
    }

    /// Blocks 1 and 2 hold `h(1), h(2)` and `h(3)`, `h(2)` reverted; the
    /// blocks above are empty.
    fn answer(call: &Value, node: &Node) -> Value {
        let h = |i: u8| B256::repeat_byte(i);
        let result = match call["method"].as_str().unwrap_or_default() {
            "eth_blockNumber" => json!(U64::from(node.height)),
            "eth_getBlockByNumber" => {
                let txs = match call["params"][0].as_str() {
                    Some("0x1") => vec![h(1), h(2)],
                    Some("0x2") => vec![h(3)],
                    _ => vec![],
                };
                json!({"number": call["params"][0], "timestamp": "0x10", "transactions": txs, "gasUsed": "0x0"})
            }
            "eth_getBlockReceipts" => {
                node.block_receipts_asked.fetch_add(1, Ordering::SeqCst);
                let error = json!({"code": -32601, "message": "the method eth_getBlockReceipts does not exist/is not available"});
                return json!({"jsonrpc": "2.0", "id": call["id"], "error": error});
            }
            "eth_getTransactionReceipt" => {
                let hash: B256 = serde_json::from_value(call["params"][0].clone()).unwrap();
                let status = if hash == h(2) { "0x0" } else { "0x1" };
                json!({"transactionHash": hash, "status": status, "blockNumber": "0x1", "gasUsed": "0x5208"})
            }
            other => panic!("unexpected call {other}"),
        };
        json!({"jsonrpc": "2.0", "id": call["id"], "result": result})
    }

    /// The answer to one request, after the node's delay, counted in flight.
    async fn reply(request: Value, node: &Node) -> String {
        let now = node.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        node.most_in_flight.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(node.delay).await;
        node.in_flight.fetch_sub(1, Ordering::SeqCst);
        match request {
            Value::Array(calls) => Value::Array(calls.iter().map(|c| answer(c, node)).collect()),
            call => answer(&call, node),
        }
        .to_string()
    }

    /// The stand-in node on a loopback port.
    async fn stand_in(node: Arc<Node>) -> String {
        crate::stand_in::serve(move |request| {
            let node = node.clone();
            async move { reply(request, &node).await }
        })
        .await
    }

    fn submit(ledger: &mut Ledger, i: u8) {
        ledger.register(Submission {
            hash: B256::repeat_byte(i),
            live: Live {
                account: 0,
                nonce: u64::from(i),
                raw: Bytes::from(vec![i]),
                intended: 0.0,
                status: TxStatus::Accepted,
            },
            at: 0.0,
            lag: None,
        });
    }

    fn ledger_of(ours: u8) -> Arc<Mutex<Ledger>> {
        let mut ledger = Ledger::new(
            Tally::new(TallyConfig {
                run_start_unix: 0.0,
                schedule: RateSchedule::Closed,
                window_blocks: None,
                start_time: 0.0,
                start_timestamp: 0,
            }),
            None,
        );
        for i in 1..=ours {
            submit(&mut ledger, i);
        }
        Arc::new(Mutex::new(ledger))
    }

    async fn scanner_of(node: Node, ours: u8) -> (Scanner, Arc<Node>, Arc<Mutex<Ledger>>) {
        let node = Arc::new(node);
        let url = stand_in(node.clone()).await;
        let client = Arc::new(EthClient::new(&url, Duration::from_secs(5)).unwrap());
        let ledger = ledger_of(ours);
        let scanner = Scanner::new(client, None, 0, Instant::now(), ledger.clone());
        (scanner, node, ledger)
    }

    #[tokio::test]
    async fn a_node_without_block_receipts_is_asked_per_transaction() {
        let node = Node {
            height: 2,
            ..Node::default()
        };
        let (scanner, node, ledger) = scanner_of(node, 3).await;
        scanner.poll().await.unwrap();
        assert_eq!(scanner.next_height(), 3);
        let l = ledger.lock().unwrap();
        let t = &l.tally.totals;
        assert_eq!((t.included, t.reverted), (3, 1), "{t:?}");
        // Asked once, for block 1; block 2 went straight to receipts.
        assert_eq!(node.block_receipts_asked.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn blocks_are_read_several_at_a_time_and_handed_on_in_order() {
        // 45 blocks from a node 20 ms away: one at a time is 45 round trips.
        let node = Node {
            height: 45,
            delay: Duration::from_millis(20),
            ..Node::default()
        };
        let (scanner, node, ledger) = scanner_of(node, 3).await;
        scanner.poll().await.unwrap();
        assert_eq!(scanner.next_height(), 46);
        let most = node.most_in_flight.load(Ordering::SeqCst);
        assert!((2..=BLOCKS_IN_FLIGHT).contains(&most), "{most} in flight");
        let l = ledger.lock().unwrap();
        let t = &l.tally.totals;
        assert_eq!((t.included, t.reverted), (3, 1), "{t:?}");
    }
}
