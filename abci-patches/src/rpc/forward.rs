//! `app-mempool` across nodes: every transaction a client's
//! `eth_sendRawTransaction` admits into this node's pool is forwarded to the
//! pools of its peers (`--pool-peers`, their web3 URLs), so that whichever
//! validator proposes next holds it. CometBFT's mempool is off with the
//! patch, so nothing else shares it.
//!
//! - **Batched**: one task per peer sends what has queued up, up to
//!   [`MAX_BATCH`] transactions in one `abcid_forwardTransactions` call, in
//!   admission order.
//! - **Bounded**: each peer's queue holds [`QUEUE`] transactions; past that,
//!   a transaction is not forwarded to that peer (counted as `overflowed`).
//!   A call waits at most [`TIMEOUT`]; a batch whose call fails is counted
//!   as `failed`. Neither is lost: the transaction stays in this node's
//!   pool, and a peer that fails is tried again after a pause (doubling to
//!   [`MAX_PAUSE`]) with the pool as it then stands, in pool order, as
//!   CometBFT's mempool reactor sends its whole mempool to a peer that
//!   connects. What queued meanwhile is in that pool, so it is skipped.
//! - **Deduplicated**: only a client's submission is forwarded; what a peer
//!   forwards is admitted without being forwarded again (every node names
//!   every other as a peer), and a transaction the pool already holds is
//!   refused as known.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::Bytes;
use serde::Serialize;
use tokio::sync::mpsc;

/// Most transactions one forwarding call carries (and one
/// `abcid_forwardTransactions` call takes).
pub const MAX_BATCH: usize = 256;
/// Most transactions waiting to be forwarded to one peer.
pub const QUEUE: usize = 16_384;
/// How long one forwarding call may take.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// The longest pause before a failing peer is tried again.
pub const MAX_PAUSE: Duration = Duration::from_secs(2);
/// The first pause.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// The method a peer's pool is fed by.
pub const METHOD: &str = "abcid_forwardTransactions";

/// What forwarding has done, over all peers (`txpool_status`'s
/// `forwarded`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ForwardCounts {
    /// Transactions in calls a peer answered.
    pub sent: u64,
    /// Transactions in calls that failed (peer down, refused, too slow).
    pub failed: u64,
    /// Transactions not forwarded because a peer's queue was full.
    pub overflowed: u64,
}

#[derive(Debug, Default)]
struct Counters {
    sent: AtomicU64,
    failed: AtomicU64,
    overflowed: AtomicU64,
}

/// The forwarding of a node's newly pooled transactions to its peers.
#[derive(Debug)]
pub struct Forwarder {
    queues: Vec<mpsc::Sender<Bytes>>,
    counters: Arc<Counters>,
}

impl Forwarder {
    /// Starts one forwarding task per peer web3 URL on the current tokio
    /// runtime; `pool` reads what the node's pool holds, in pool order (for
    /// a peer that failed).
    pub fn spawn(peers: &[String], pool: PoolReader) -> anyhow::Result<Self> {
        for url in peers {
            let scheme = reqwest::Url::parse(url).map(|u| u.scheme().to_string());
            if !matches!(scheme.as_deref(), Ok("http" | "https")) {
                anyhow::bail!(
                    "--pool-peers: {url:?} is not a web3 URL; give each peer as http://HOST:PORT"
                );
            }
        }
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| anyhow::anyhow!("forwarding to --pool-peers needs a tokio runtime"))?;
        let http = reqwest::Client::builder().timeout(TIMEOUT).build()?;
        let counters = Arc::new(Counters::default());
        let queues = peers
            .iter()
            .map(|url| {
                let (queue, rx) = mpsc::channel(QUEUE);
                let peer = Peer {
                    url: url.clone(),
                    http: http.clone(),
                    counters: Arc::clone(&counters),
                    pool: Arc::clone(&pool),
                };
                runtime.spawn(peer.run(rx));
                queue
            })
            .collect();
        Ok(Self { queues, counters })
    }

    /// Queues `raw`, just admitted from a client, for every peer.
    pub fn offer(&self, raw: &Bytes) {
        for queue in &self.queues {
            if queue.try_send(raw.clone()).is_err() {
                self.counters.overflowed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// What it has done so far.
    pub fn counts(&self) -> ForwardCounts {
        ForwardCounts {
            sent: self.counters.sent.load(Ordering::Relaxed),
            failed: self.counters.failed.load(Ordering::Relaxed),
            overflowed: self.counters.overflowed.load(Ordering::Relaxed),
        }
    }
}

/// Reads the transactions the node's pool holds, in pool order.
pub type PoolReader = Arc<dyn Fn() -> Vec<Bytes> + Send + Sync>;

/// One peer's forwarding task.
struct Peer {
    url: String,
    http: reqwest::Client,
    counters: Arc<Counters>,
    pool: PoolReader,
}

impl Peer {
    /// Sends what `rx` queues, batch by batch, until the forwarder is gone;
    /// while the peer fails, the whole pool after each pause instead.
    async fn run(self, mut rx: mpsc::Receiver<Bytes>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        let mut pause: Option<Duration> = None;
        loop {
            let sent = match pause {
                None => {
                    batch.clear();
                    if rx.recv_many(&mut batch, MAX_BATCH).await == 0 {
                        return;
                    }
                    self.send_counted(&batch).await
                }
                Some(wait) => {
                    tokio::time::sleep(wait).await;
                    // All queued meanwhile is in the pool, or included.
                    loop {
                        match rx.try_recv() {
                            Ok(_) => {}
                            Err(mpsc::error::TryRecvError::Empty) => break,
                            Err(mpsc::error::TryRecvError::Disconnected) => return,
                        }
                    }
                    self.send_pool().await
                }
            };
            pause = match (sent, pause) {
                (Ok(()), Some(_)) => {
                    tracing::info!(peer = %self.url, "forwarding to the peer's pool again");
                    None
                }
                (Ok(()), None) => None,
                (Err(e), None) => {
                    tracing::warn!(peer = %self.url, "cannot forward to the peer's pool: {e:#}");
                    Some(FIRST_PAUSE)
                }
                (Err(_), Some(wait)) => Some((wait * 2).min(MAX_PAUSE)),
            };
        }
    }

    /// The pool as it stands, batch by batch, stopping at a failure; an
    /// empty pool, as an empty call (the peer answers or not).
    async fn send_pool(&self) -> anyhow::Result<()> {
        // Off the async workers: the pool's lock is Commit's while it rechecks.
        let read = Arc::clone(&self.pool);
        let pool = tokio::task::spawn_blocking(move || read()).await?;
        if pool.is_empty() {
            return self.send(&[]).await;
        }
        for batch in pool.chunks(MAX_BATCH) {
            self.send_counted(batch).await?;
        }
        Ok(())
    }

    /// [`Self::send`], counted.
    async fn send_counted(&self, batch: &[Bytes]) -> anyhow::Result<()> {
        let sent = self.send(batch).await;
        let counter = match sent {
            Ok(()) => &self.counters.sent,
            Err(_) => &self.counters.failed,
        };
        counter.fetch_add(batch.len() as u64, Ordering::Relaxed);
        sent
    }

    /// One `abcid_forwardTransactions` call carrying `batch`.
    async fn send(&self, batch: &[Bytes]) -> anyhow::Result<()> {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": METHOD, "params": [batch],
        });
        let reply: serde_json::Value = self
            .http
            .post(&self.url)
            .json(&body)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        match reply.get("error") {
            Some(error) => anyhow::bail!("the peer answered {error}"),
            None => Ok(()),
        }
    }
}

/// What a peer's `abcid_forwardTransactions` did with a batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Received {
    /// Admitted into the pool.
    pub admitted: u64,
    /// Already there.
    pub known: u64,
    /// Refused (by CheckTx, or a full pool).
    pub refused: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonrpsee::server::Server;
    use jsonrpsee::RpcModule;
    use std::sync::Mutex;
    use std::time::Instant;

    /// A peer at `addr` that records every batch it is sent.
    async fn recording_peer_at(
        addr: &str,
    ) -> (
        String,
        Arc<Mutex<Vec<Vec<Bytes>>>>,
        jsonrpsee::server::ServerHandle,
    ) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut m = RpcModule::new(Arc::clone(&seen));
        m.register_method(METHOD, |p, seen, _| {
            let batch: Vec<Bytes> = p.one()?;
            seen.lock().unwrap().push(batch);
            Ok::<_, jsonrpsee::types::ErrorObjectOwned>(Received::default())
        })
        .unwrap();
        let server = Server::builder().build(addr).await.unwrap();
        let url = format!("http://{}", server.local_addr().unwrap());
        (url, seen, server.start(m))
    }

    async fn recording_peer() -> (
        String,
        Arc<Mutex<Vec<Vec<Bytes>>>>,
        jsonrpsee::server::ServerHandle,
    ) {
        recording_peer_at("127.0.0.1:0").await
    }

    async fn wait_for(mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn tx(i: u16) -> Bytes {
        Bytes::from(i.to_be_bytes().to_vec())
    }

    /// A pool reader that holds `txs`.
    fn holding(txs: Vec<Bytes>) -> PoolReader {
        Arc::new(move || txs.clone())
    }

    fn empty() -> PoolReader {
        holding(Vec::new())
    }

    fn received(seen: &Mutex<Vec<Vec<Bytes>>>) -> usize {
        seen.lock().unwrap().iter().map(Vec::len).sum()
    }

    #[tokio::test]
    async fn every_peer_gets_every_transaction_in_order_in_bounded_batches() {
        let (a, seen_a, _ha) = recording_peer().await;
        let (b, seen_b, _hb) = recording_peer().await;
        let forwarder = Forwarder::spawn(&[a, b], empty()).unwrap();
        for i in 0..1_000 {
            forwarder.offer(&tx(i));
        }
        let all: Vec<Bytes> = (0..1_000).map(tx).collect();
        for seen in [&seen_a, &seen_b] {
            wait_for(|| received(seen) == 1_000).await;
            let batches = seen.lock().unwrap().clone();
            assert!(batches
                .iter()
                .all(|b| !b.is_empty() && b.len() <= MAX_BATCH));
            assert!(
                batches.len() >= 1_000 / MAX_BATCH,
                "{} batches",
                batches.len()
            );
            assert_eq!(batches.concat(), all);
        }
        wait_for(|| forwarder.counts().sent == 2_000).await;
        assert_eq!(forwarder.counts().failed, 0);
    }

    /// A loopback URL nothing listens on (bound, then closed).
    fn dead_url() -> String {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", socket.local_addr().unwrap())
    }

    #[tokio::test]
    async fn a_dead_peer_is_counted_and_does_not_hold_back_the_others() {
        let (live, seen, _h) = recording_peer().await;
        let forwarder = Forwarder::spawn(&[dead_url(), live], empty()).unwrap();
        for i in 0..300 {
            forwarder.offer(&tx(i));
        }
        wait_for(|| received(&seen) == 300).await;
        wait_for(|| forwarder.counts().failed > 0).await;
        assert_eq!(forwarder.counts().sent, 300);
    }

    #[tokio::test]
    async fn a_peer_back_from_an_outage_is_sent_the_pool_in_order() {
        let dead = dead_url();
        let pool: Vec<Bytes> = (0..600).map(tx).collect();
        let forwarder =
            Forwarder::spawn(std::slice::from_ref(&dead), holding(pool.clone())).unwrap();
        for raw in &pool[..10] {
            forwarder.offer(raw);
        }
        wait_for(|| forwarder.counts().failed >= 10).await;
        // The peer comes up where it was: no new transaction is needed.
        let (_, seen, _h) = recording_peer_at(dead.trim_start_matches("http://")).await;
        wait_for(|| received(&seen) == pool.len()).await;
        assert_eq!(seen.lock().unwrap().concat(), pool);
        assert!(seen.lock().unwrap().iter().all(|b| b.len() <= MAX_BATCH));
    }

    #[tokio::test]
    async fn a_peer_that_never_answers_overflows_its_queue_and_is_counted() {
        // Connections are taken by the backlog; no request is ever answered.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", silent.local_addr().unwrap());
        let forwarder = Forwarder::spawn(&[url], empty()).unwrap();
        let offered = QUEUE + MAX_BATCH + 500;
        for i in 0..offered {
            forwarder.offer(&tx(i as u16));
        }
        let counts = forwarder.counts();
        assert!(counts.overflowed >= 500, "{counts:?}");
        assert!(counts.overflowed as usize <= offered - QUEUE, "{counts:?}");
        assert_eq!(counts.sent, 0);
    }

    #[tokio::test]
    async fn a_peer_that_is_not_a_url_is_refused_by_name() {
        let e = Forwarder::spawn(&["127.0.0.1:8545".to_string()], empty()).unwrap_err();
        assert!(
            e.to_string()
                .contains("\"127.0.0.1:8545\" is not a web3 URL"),
            "{e}"
        );
    }

    #[test]
    fn needs_a_runtime_and_says_so() {
        let e = Forwarder::spawn(&["http://127.0.0.1:1".to_string()], empty()).unwrap_err();
        assert!(e.to_string().contains("--pool-peers"), "{e}");
    }
}
