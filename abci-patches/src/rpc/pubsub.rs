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

use std::sync::Arc;

use jsonrpsee::core::server::SubscriptionMessage;
use jsonrpsee::core::SubscriptionError;
use jsonrpsee::server::SendTimeoutError;
use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::{PendingSubscriptionSink, RpcModule, SubscriptionSink};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use super::error::{invalid_params, RpcResult, UNSUPPORTED};
use super::{blocks, convert, logs, Web3};
use crate::node::NodeEvent;
use crate::store::BlockRecord;

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
        |p, pending, w, _| async move { subscribe(p, pending, w).await },
    )?;
    Ok(())
}

async fn subscribe(p: Params<'static>, pending: PendingSubscriptionSink, w: Arc<Web3>) -> Closed {
    let topic = match parse(&p, &w) {
        Ok(topic) => topic,
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
                    let logs = logs::block_logs(&w.node, &block).map_err(|e| e.to_string())?;
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
