//! WebSocket subscriptions, as geth serves them: `eth_subscribe` with
//! `newHeads`, `logs` (address and topic criteria) or
//! `newPendingTransactions` (hashes), and `eth_unsubscribe`.
//!
//! A subscription reads the node's event feed from the moment it is accepted.
//! The node never waits for a subscriber: the feed drops what a reader is too
//! slow to take, and a subscriber that fell more than
//! [`EVENT_BUFFER`](crate::node::EVENT_BUFFER) events behind, or whose
//! connection would not take a notification within
//! [`RpcConfig::subscriber_timeout`](super::RpcConfig), is closed with an
//! error notification saying so.
//!
//! `logs` subscriptions share the work of a block: a block whose bloom rules
//! a subscriber's filter out is not read for it, and the logs of a block are
//! decoded once, off the server's threads, for every subscriber that needs
//! them ([`LogSubscriptions`]). Every subscription takes a place, bounded on
//! the node, per client address and per connection ([`super::slots`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use alloy_primitives::B256;
use alloy_rpc_types_eth::Log;
use jsonrpsee::ConnectionId;
use tokio::sync::OnceCell;

use jsonrpsee::core::server::SubscriptionMessage;
use jsonrpsee::core::SubscriptionError;
use jsonrpsee::server::SendTimeoutError;
use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::{PendingSubscriptionSink, RpcModule, SubscriptionSink};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use super::error::{invalid_params, server_error, RpcResult, UNSUPPORTED};
use super::peer::Client;
use super::{blocks, convert, logs, Web3};
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
    loop {
        let event = tokio::select! {
            () = sink.closed() => return Ok(()),
            event = events.recv() => event,
        };
        match event {
            Ok(NodeEvent::Block(block)) => match &topic {
                Topic::NewHeads => notify(&w, &sink, &head(&w, &block)?).await?,
                Topic::Logs(filter) => {
                    if block.logs_bloom.is_some_and(|b| !filter.may_match(&b)) {
                        continue;
                    }
                    let logs = w.subscriptions.block_logs(&w, &block).await?;
                    for log in logs.iter().filter(|log| filter.matches(&log.inner)) {
                        notify(&w, &sink, log).await?;
                    }
                }
                Topic::PendingTxs => {}
            },
            Ok(NodeEvent::PendingTx(hash)) => {
                if matches!(topic, Topic::PendingTxs) {
                    notify(&w, &sink, &hash).await?;
                }
            }
            Err(RecvError::Lagged(missed)) => {
                return Err(format!(
                    "subscriber too slow: {missed} node events missed; subscription closed, subscribe again"
                )
                .into())
            }
            Err(RecvError::Closed) => return Ok(()),
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
fn head(w: &Web3, block: &BlockRecord) -> Result<alloy_rpc_types_eth::Header, SubscriptionError> {
    let bloom = blocks::logs_bloom(w, block).map_err(|e| e.message().to_string())?;
    Ok(convert::block(block, bloom, None).header)
}

/// Sends one notification, closing the subscription when the connection
/// does not take it in time.
async fn notify(w: &Web3, sink: &SubscriptionSink, value: &impl Serialize) -> Closed {
    let json = serde_json::value::to_raw_value(value).map_err(|e| e.to_string())?;
    match sink
        .send_timeout(SubscriptionMessage::from(json), w.config.subscriber_timeout)
        .await
    {
        Ok(()) | Err(SendTimeoutError::Closed(_)) => Ok(()),
        Err(SendTimeoutError::Timeout(_)) => Err(format!(
            "subscriber too slow: a notification waited {:?}; subscription closed, subscribe again",
            w.config.subscriber_timeout
        )
        .into()),
    }
}

/// One block's logs, decoded by the first subscriber that needs them.
type SharedLogs = Arc<OnceCell<Arc<Vec<Log>>>>;

/// How many recent blocks' decoded logs are kept for late subscribers.
const DECODED_BLOCKS: usize = 8;

/// The logs of the latest blocks, decoded once for every `logs`
/// subscription.
#[derive(Default)]
pub struct LogSubscriptions {
    decoded: Mutex<VecDeque<(B256, SharedLogs)>>,
}

impl LogSubscriptions {
    /// Every log of `block`, decoded by the first subscriber that asks and
    /// shared with the others.
    async fn block_logs(
        &self,
        w: &Arc<Web3>,
        block: &Arc<BlockRecord>,
    ) -> Result<Arc<Vec<Log>>, SubscriptionError> {
        let cell = self.cell(block.hash).map_err(|e| e.to_string())?;
        let logs = cell
            .get_or_try_init(|| async {
                let (w, block) = (w.clone(), block.clone());
                tokio::task::spawn_blocking(move || logs::block_logs(&w.node, &block))
                    .await
                    .map_err(|e| e.to_string())?
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .await?;
        Ok(logs.clone())
    }

    /// The shared cell of the block `hash`, created if new (the oldest
    /// dropped past [`DECODED_BLOCKS`]).
    fn cell(&self, hash: B256) -> RpcResult<SharedLogs> {
        let mut decoded = self
            .decoded
            .lock()
            .map_err(|_| server_error("log cache poisoned"))?;
        if let Some((_, cell)) = decoded.iter().find(|(h, _)| *h == hash) {
            return Ok(cell.clone());
        }
        let cell = Arc::new(OnceCell::new());
        decoded.push_back((hash, cell.clone()));
        while decoded.len() > DECODED_BLOCKS {
            decoded.pop_front();
        }
        Ok(cell)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;

    use alloy_primitives::{Address, Bytes, TxKind};
    use jsonrpsee::core::server::Subscription;
    use serde_json::json;

    use crate::patches::Patches;
    use crate::testkit::{block, funded_node, signed};

    /// Init code of a contract that logs its calldata's first word as its
    /// one topic (`PUSH1 0 CALLDATALOAD PUSH1 0 PUSH1 0 LOG1 STOP`).
    const EMITTER_INIT: &str = "6009600c60003960096000f360003560006000a100";

    /// The block numbers of the next `n` notifications of `sub`.
    async fn heights(sub: &mut Subscription, n: usize) -> Vec<u64> {
        let mut out = Vec::new();
        for _ in 0..n {
            let next = tokio::time::timeout(Duration::from_secs(30), sub.next::<Value>())
                .await
                .expect("a notification within 30 s")
                .expect("open")
                .expect("JSON")
                .0;
            let number = next["blockNumber"].as_str().expect("a block number");
            out.push(u64::from_str_radix(&number[2..], 16).expect("hex"));
        }
        out
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_blocks_logs_are_decoded_once_for_every_subscriber_and_not_at_all_for_a_bloom_miss() {
        let dir = tempfile::tempdir().unwrap();
        let (node, k, me) = funded_node(dir.path(), Patches::ALL);
        let node = Arc::new(node);
        let init = Bytes::from(hex::decode(EMITTER_INIT).unwrap());
        let deployed = block(&node, 1, &[signed(&k, 0, TxKind::Create, init)]);
        assert!(
            matches!(
                deployed[0],
                crate::exec::TxOutcome::Executed { success: true, .. }
            ),
            "{deployed:?}"
        );
        let emitter = me.create(0);
        let web3 = Arc::new(
            Web3::new(node.clone(), "http://127.0.0.1:9", Default::default(), None).unwrap(),
        );
        let rpc = super::super::methods(web3.clone()).unwrap();
        let mut subs = Vec::new();
        for _ in 0..4 {
            let params = ("logs", json!({"address": emitter}));
            subs.push(
                rpc.subscribe_unbounded("eth_subscribe", params)
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
                    .all(|o| matches!(o, crate::exec::TxOutcome::Executed { success: true, .. })),
                "{outcomes:?}"
            );
        }
        for sub in &mut subs {
            assert_eq!(heights(sub, 3).await, [2, 2, 4]);
        }

        let decoded: Vec<(B256, SharedLogs)> = web3
            .subscriptions
            .decoded
            .lock()
            .unwrap()
            .iter()
            .cloned()
            .collect();
        let hash = |n| node.block(n).unwrap().unwrap().hash;
        assert_eq!(
            decoded.iter().map(|(h, _)| *h).collect::<Vec<_>>(),
            [hash(2), hash(4)],
            "one decoded entry per block with logs, none for block 3"
        );
        // Every subscriber (and anyone asking later) gets that one decoding.
        let block2 = Arc::new(node.block(2).unwrap().unwrap());
        let again = web3.subscriptions.block_logs(&web3, &block2).await.unwrap();
        let first = decoded[0].1.get().expect("decoded");
        assert!(Arc::ptr_eq(first, &again));
        assert_eq!(again.len(), 2);
    }
}
