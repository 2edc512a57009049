//! WebSocket subscriptions, as geth serves them: `eth_subscribe` with
//! `newHeads`, `logs` (address and topic criteria) or
//! `newPendingTransactions` (hashes), and `eth_unsubscribe`.
//!
//! A subscription reads the node's event feed from the moment it is accepted.
//! The node never waits for a subscriber: the feed drops what a reader is too
//! slow to take, a notification its connection has no room for is dropped
//! (counted), and a subscriber that fell more than
//! [`EVENT_BUFFER`](crate::node::EVENT_BUFFER) events behind, or whose
//! connection took no notification for
//! [`RpcConfig::subscriber_timeout`](super::RpcConfig), is closed with an
//! error notification saying so ([`Notifications`] counts all three).
//!
//! A block's notifications are made once for every subscriber
//! ([`BlockNotifications`]): its `newHeads` header and its logs are decoded
//! and encoded by the first subscriber that needs them, off the server's
//! threads, so the cost of a notification does not grow with the number of
//! subscribers; a block whose bloom rules a `logs` filter out is not read for
//! it. Every subscription takes a place, bounded on the node, per client
//! address and per connection ([`super::slots`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use alloy_primitives::B256;
use alloy_rpc_types_eth::Log;
use jsonrpsee::ConnectionId;
use tokio::sync::OnceCell;

use jsonrpsee::core::server::TrySendError;
use jsonrpsee::core::SubscriptionError;
use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::{PendingSubscriptionSink, RpcModule, SubscriptionSink};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use super::error::{invalid_params, server_error, RpcResult, UNSUPPORTED};
use super::peer::Client;
use super::{blocks, convert, logs, Web3};
use crate::metrics::Notifications;
use crate::node::NodeEvent;
use crate::records::BlockRecord;

/// What a subscription delivers.
enum Topic {
    NewHeads,
    Logs(Box<logs::LogFilter>),
    PendingTxs,
}

/// Why a subscription ended early.
type Closed = Result<(), SubscriptionError>;

/// Registers `eth_subscribe` and `eth_unsubscribe`.
pub fn register(m: &mut RpcModule<Web3>) -> anyhow::Result<()> {
    m.register_subscription(
        "eth_subscribe",
        "eth_subscription",
        "eth_unsubscribe",
        |p, pending, w, ext| async move {
            let client = super::peer::Client::of(&ext);
            subscribe(p, pending, w, client, super::peer::connection(&ext)).await
        },
    )?;
    Ok(())
}

async fn subscribe(
    p: Params<'static>,
    pending: PendingSubscriptionSink,
    w: Arc<Web3>,
    client: Client,
    connection: ConnectionId,
) -> Closed {
    let topic = match parse(&p, &w) {
        Ok(topic) => topic,
        Err(e) => {
            pending.reject(e).await;
            return Ok(());
        }
    };
    // Held while the subscription lives: its place.
    let _slot = match w.slots.open(client, connection) {
        Ok(slot) => slot,
        Err(e) => {
            pending.reject(e).await;
            return Ok(());
        }
    };
    // Listening before the answer: nothing after it is missed.
    let mut events = w.node.events();
    let Ok(sink) = pending.accept().await else {
        return Ok(());
    };
    let mut subscriber = Subscriber::new(&w, sink);
    loop {
        let event = tokio::select! {
            () = subscriber.sink.closed() => return Ok(()),
            event = events.recv() => event,
        };
        match event {
            Ok(NodeEvent::Block(block)) => subscriber.block(&topic, &block).await?,
            Ok(NodeEvent::PendingTx(hash)) => {
                if matches!(topic, Topic::PendingTxs) {
                    let json = serde_json::value::to_raw_value(&hash).map_err(|e| e.to_string())?;
                    subscriber.send(json)?;
                }
            }
            Err(RecvError::Lagged(missed)) => {
                w.notifications.counts.closed_slow.inc();
                return Err(format!(
                    "subscriber too slow: {missed} node events missed; subscription closed, subscribe again"
                )
                .into());
            }
            Err(RecvError::Closed) => return Ok(()),
        }
    }
}

/// One subscription's sending side. It never waits for its connection: a
/// notification the connection's buffer has no room for is dropped and
/// counted, and a connection that took none for
/// [`RpcConfig::subscriber_timeout`](super::RpcConfig) has its subscription
/// closed.
struct Subscriber<'a> {
    w: &'a Arc<Web3>,
    sink: SubscriptionSink,
    /// Since when every notification was dropped, and how many.
    refusing: Option<(Instant, u64)>,
}

impl<'a> Subscriber<'a> {
    fn new(w: &'a Arc<Web3>, sink: SubscriptionSink) -> Self {
        Self {
            w,
            sink,
            refusing: None,
        }
    }

    /// The notifications of `block` for `topic`, encoded once for every
    /// subscriber ([`BlockNotifications`]).
    async fn block(&mut self, topic: &Topic, block: &Arc<BlockRecord>) -> Closed {
        let shared = &self.w.notifications;
        match topic {
            Topic::NewHeads => self.send(shared.head(self.w, block).await?),
            Topic::Logs(filter) => {
                if block.logs_bloom.is_some_and(|b| !filter.may_match(&b)) {
                    return Ok(());
                }
                let work = shared.logs(self.w, block).await?;
                for log in work.logs().iter().filter(|l| filter.matches(&l.log.inner)) {
                    self.send(log.json.clone())?;
                }
                Ok(())
            }
            Topic::PendingTxs => Ok(()),
        }
    }

    /// Hands one notification to the connection, or drops it (counted)
    /// when the connection's buffer is full.
    fn send(&mut self, json: Box<RawValue>) -> Closed {
        let counts = &self.w.notifications.counts;
        match self.sink.try_send(json) {
            Ok(()) => {
                counts.sent.inc();
                self.refusing = None;
                Ok(())
            }
            // The connection is gone: the loop sees the sink closed.
            Err(TrySendError::Closed(_)) => Ok(()),
            Err(TrySendError::Full(_)) => {
                counts.dropped.inc();
                let (since, dropped) = self.refusing.get_or_insert_with(|| (Instant::now(), 0));
                *dropped += 1;
                let timeout = self.w.config.subscriber_timeout;
                if since.elapsed() < timeout {
                    return Ok(());
                }
                counts.closed_slow.inc();
                Err(format!(
                    "subscriber too slow: {dropped} notifications dropped over {timeout:?}, its connection taking none; subscription closed, subscribe again"
                )
                .into())
            }
        }
    }
}

/// The subscription's topic and criteria: `["newHeads"]`, `["logs", {…}]`
/// or `["newPendingTransactions"]`.
fn parse(p: &Params<'_>, w: &Web3) -> RpcResult<Topic> {
    let mut seq = p.sequence();
    let name: String = seq.next()?;
    let options: Option<Value> = seq.optional_next()?;
    match name.as_str() {
        "newHeads" => Ok(Topic::NewHeads),
        "logs" => {
            let criteria = options.unwrap_or_else(|| Value::Object(Default::default()));
            let filter = logs::parse_filter(criteria, w.config.max_log_criteria)?;
            Ok(Topic::Logs(Box::new(filter)))
        }
        "newPendingTransactions" => match options {
            None | Some(Value::Bool(false)) | Some(Value::Null) => Ok(Topic::PendingTxs),
            Some(_) => Err(invalid_params(
                "newPendingTransactions delivers transaction hashes only: subscribe without a second parameter",
            )),
        },
        other => Err(ErrorObjectOwned::owned(
            UNSUPPORTED,
            format!("no \"{other}\" subscription in eth namespace"),
            None::<()>,
        )),
    }
}

/// The `newHeads` notification of `block`: its header, as geth sends it.
fn head(w: &Web3, block: &BlockRecord) -> Result<Box<RawValue>, String> {
    let bloom = blocks::logs_bloom(w, block).map_err(|e| e.message().to_string())?;
    let header = convert::block(block, bloom, None).header;
    serde_json::value::to_raw_value(&header).map_err(|e| e.to_string())
}

/// One log of a block and its notification.
struct EncodedLog {
    log: Log,
    json: Box<RawValue>,
}

/// What a block's notifications take to make, made by the first subscriber
/// that needs it and shared with the others: its `newHeads` header and its
/// logs, decoded and encoded.
#[derive(Default)]
struct BlockWork {
    head: OnceCell<Box<RawValue>>,
    logs: OnceCell<Vec<EncodedLog>>,
}

impl BlockWork {
    /// The block's logs, once [`BlockNotifications::logs`] made them.
    fn logs(&self) -> &[EncodedLog] {
        self.logs.get().map_or(&[], Vec::as_slice)
    }
}

/// How many recent blocks' notifications are kept for late subscribers.
const RECENT_BLOCKS: usize = 8;

/// The notifications of the latest blocks, each made once (off the
/// server's threads) whatever the number of subscribers, and the
/// subscriptions' notifications counted.
pub struct BlockNotifications {
    recent: Mutex<VecDeque<(B256, Arc<BlockWork>)>>,
    counts: Notifications,
}

impl BlockNotifications {
    /// Nothing made yet; notifications counted in `counts`.
    pub fn new(counts: Notifications) -> Self {
        Self {
            recent: Mutex::default(),
            counts,
        }
    }

    /// The `newHeads` notification of `block`.
    async fn head(
        &self,
        w: &Arc<Web3>,
        block: &Arc<BlockRecord>,
    ) -> Result<Box<RawValue>, SubscriptionError> {
        let work = self.work(block.hash).map_err(|e| e.to_string())?;
        let head = work
            .head
            .get_or_try_init(|| self.off_thread(w, block, head))
            .await?;
        Ok(head.clone())
    }

    /// The block's work with its logs made.
    async fn logs(
        &self,
        w: &Arc<Web3>,
        block: &Arc<BlockRecord>,
    ) -> Result<Arc<BlockWork>, SubscriptionError> {
        let work = self.work(block.hash).map_err(|e| e.to_string())?;
        work.logs
            .get_or_try_init(|| self.off_thread(w, block, encoded_logs))
            .await?;
        Ok(work)
    }

    /// Runs `make` over `block` on the blocking pool, counted as one
    /// block's notifications encoded.
    async fn off_thread<T: Send + 'static>(
        &self,
        w: &Arc<Web3>,
        block: &Arc<BlockRecord>,
        make: fn(&Web3, &BlockRecord) -> Result<T, String>,
    ) -> Result<T, SubscriptionError> {
        self.counts.blocks_encoded.inc();
        let (w, block) = (w.clone(), block.clone());
        let made = tokio::task::spawn_blocking(move || make(&w, &block))
            .await
            .map_err(|e| e.to_string())?;
        Ok(made?)
    }

    /// The shared work of the block `hash`, created if new (the oldest
    /// dropped past [`RECENT_BLOCKS`]).
    fn work(&self, hash: B256) -> RpcResult<Arc<BlockWork>> {
        let mut recent = self
            .recent
            .lock()
            .map_err(|_| server_error("notification cache poisoned"))?;
        if let Some((_, work)) = recent.iter().find(|(h, _)| *h == hash) {
            return Ok(work.clone());
        }
        let work = Arc::new(BlockWork::default());
        recent.push_back((hash, work.clone()));
        while recent.len() > RECENT_BLOCKS {
            recent.pop_front();
        }
        Ok(work)
    }
}

/// Every log of `block`, decoded and encoded.
fn encoded_logs(w: &Web3, block: &BlockRecord) -> Result<Vec<EncodedLog>, String> {
    let logs = logs::block_logs(&w.node, block).map_err(|e| e.to_string())?;
    logs.into_iter()
        .map(|log| {
            let json = serde_json::value::to_raw_value(&log).map_err(|e| e.to_string())?;
            Ok(EncodedLog { log, json })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;

    use alloy_primitives::{Address, Bytes, TxKind};
    use jsonrpsee::core::server::Subscription;
    use secp256k1::SecretKey;
    use serde_json::json;

    use super::super::RpcConfig;
    use crate::exec::TxOutcome;
    use crate::node::Node;
    use crate::patches::Patches;
    use crate::testkit::{block, funded_node, signed};

    /// Init code of a contract that logs its calldata's first word as its
    /// one topic (`PUSH1 0 CALLDATALOAD PUSH1 0 PUSH1 0 LOG1 STOP`).
    const EMITTER_INIT: &str = "6009600c60003960096000f360003560006000a100";

    /// The block numbers (`field`) of the next `n` notifications of `sub`.
    async fn heights(sub: &mut Subscription, n: usize, field: &str) -> Vec<u64> {
        let mut out = Vec::new();
        for _ in 0..n {
            let next = tokio::time::timeout(Duration::from_secs(30), sub.next::<Value>())
                .await
                .expect("a notification within 30 s")
                .expect("open")
                .expect("JSON")
                .0;
            let number = next[field].as_str().expect("a block number");
            out.push(u64::from_str_radix(&number[2..], 16).expect("hex"));
        }
        out
    }

    /// A node with an emitter contract (block 1), its key, and its web3
    /// methods within `config`.
    fn emitter_node(
        dir: &std::path::Path,
        config: RpcConfig,
    ) -> (Arc<Node>, SecretKey, Address, Arc<Web3>) {
        let (node, k, me) = funded_node(dir, Patches::ALL);
        let node = Arc::new(node);
        let init = Bytes::from(hex::decode(EMITTER_INIT).unwrap());
        let deployed = block(&node, 1, &[signed(&k, 0, TxKind::Create, init)]);
        assert!(
            matches!(deployed[0], TxOutcome::Executed { success: true, .. }),
            "{deployed:?}"
        );
        let web3 = Arc::new(Web3::new(node.clone(), "http://127.0.0.1:9", config, None).unwrap());
        (node, k, me.create(0), web3)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_blocks_notifications_are_made_once_for_every_subscriber_and_logs_not_for_a_bloom_miss(
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (node, k, emitter, web3) = emitter_node(dir.path(), RpcConfig::default());
        let rpc = super::super::methods(web3.clone()).unwrap();
        let (mut logs, mut heads) = (Vec::new(), Vec::new());
        for _ in 0..4 {
            let params = ("logs", json!({"address": emitter}));
            logs.push(
                rpc.subscribe_unbounded("eth_subscribe", params)
                    .await
                    .unwrap(),
            );
            heads.push(
                rpc.subscribe_unbounded("eth_subscribe", ["newHeads"])
                    .await
                    .unwrap(),
            );
        }

        let note = |nonce: u64| signed(&k, nonce, TxKind::Call(emitter), Bytes::from(vec![7; 32]));
        let transfer = signed(&k, 3, TxKind::Call(Address::repeat_byte(9)), Bytes::new());
        // Block 3 has no log at all: its bloom rules the filter out.
        for (height, txs) in [
            (2, vec![note(1), note(2)]),
            (3, vec![transfer]),
            (4, vec![note(4)]),
        ] {
            let outcomes = block(&node, height, &txs);
            assert!(
                outcomes
                    .iter()
                    .all(|o| matches!(o, TxOutcome::Executed { success: true, .. })),
                "{outcomes:?}"
            );
        }
        for sub in &mut logs {
            assert_eq!(heights(sub, 3, "blockNumber").await, [2, 2, 4]);
        }
        for sub in &mut heads {
            assert_eq!(heights(sub, 3, "number").await, [2, 3, 4]);
        }

        // Three headers and two blocks' logs, made once each for the eight
        // subscribers; 24 notifications sent (each counted just after its
        // reader may have it), none dropped.
        let counts = &web3.notifications.counts;
        assert_eq!(counts.blocks_encoded.get(), 5);
        let deadline = Instant::now() + Duration::from_secs(10);
        while counts.sent.get() < 24 {
            assert!(Instant::now() < deadline, "{counts:?}");
            tokio::task::yield_now().await;
        }
        assert_eq!((counts.sent.get(), counts.dropped.get()), (24, 0));
        let hash = |n| node.block(n).unwrap().unwrap().hash;
        // Kept in the order subscribers first asked: a logs subscriber skips
        // block 3 (bloom) and may reach block 4 before any newHeads one
        // reaches block 3, so the order is not the blocks'.
        let mut recent: Vec<B256> = web3
            .notifications
            .recent
            .lock()
            .unwrap()
            .iter()
            .map(|(h, _)| *h)
            .collect();
        let mut made = [hash(2), hash(3), hash(4)];
        recent.sort();
        made.sort();
        assert_eq!(recent, made);
        // Anyone asking later gets that one decoding.
        let block2 = Arc::new(node.block(2).unwrap().unwrap());
        let again = web3.notifications.logs(&web3, &block2).await.unwrap();
        assert_eq!(again.logs().len(), 2);
        assert_eq!(counts.blocks_encoded.get(), 5);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_subscriber_that_reads_nothing_has_its_notifications_dropped_then_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let config = RpcConfig {
            subscriber_timeout: Duration::from_millis(100),
            ..RpcConfig::default()
        };
        let (node, k, _, web3) = emitter_node(dir.path(), config);
        let rpc = super::super::methods(web3.clone()).unwrap();
        // Room for one notification, never read.
        let unread = rpc
            .subscribe("eth_subscribe", ["newHeads"], 1)
            .await
            .unwrap();
        let counts = &web3.notifications.counts;
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut height = 2;
        // Blocks keep coming, and the node never waits for the subscriber:
        // the second notification on is dropped, and once the connection
        // has taken none for 100 ms the subscription is closed.
        while counts.closed_slow.get() == 0 {
            assert!(Instant::now() < deadline, "never closed: {counts:?}");
            let to = TxKind::Call(Address::repeat_byte(9));
            block(&node, height, &[signed(&k, height - 1, to, Bytes::new())]);
            height += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(counts.sent.get(), 1);
        assert!(counts.dropped.get() >= 2, "{counts:?}");
        assert_eq!(counts.closed_slow.get(), 1);
        drop(unread);
    }
}
