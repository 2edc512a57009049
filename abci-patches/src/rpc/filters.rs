//! Polled filters, as geth keeps them: `eth_newFilter`, `eth_newBlockFilter`,
//! `eth_newPendingTransactionFilter`, `eth_getFilterChanges`,
//! `eth_getFilterLogs` and `eth_uninstallFilter`.
//!
//! A log or block filter remembers the next height it has not reported and
//! reads the committed blocks from there at each poll (at most
//! [`RpcConfig::max_log_blocks`](super::RpcConfig) blocks and about
//! [`RpcConfig::max_logs`](super::RpcConfig) logs a poll; the rest comes at the
//! next). A pending-transaction filter holds a receiver of the node's event
//! feed: a filter polled so rarely that more than
//! [`EVENT_BUFFER`](crate::node::EVENT_BUFFER) events passed misses the oldest.
//! A filter not polled for [`RpcConfig::filter_timeout`](super::RpcConfig) is
//! uninstalled. At most [`RpcConfig::max_filters`](super::RpcConfig) exist,
//! and one client installs at most
//! [`RpcConfig::max_filters_per_client`](super::RpcConfig): a client is a
//! peer address ([`Client`]), so one that opens a new HTTP connection per
//! request is held like one that keeps its connection.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alloy_eips::BlockNumberOrTag;
use alloy_primitives::{keccak256, B256};
use alloy_rpc_types_eth::{FilterChanges, Log};
use jsonrpsee::RpcModule;
use tokio::sync::broadcast::{error::TryRecvError, Receiver};

use super::error::{internal, server_error, RpcResult};
use super::logs::{self, LogFilter, Span};
use super::peer::Client;
use super::Web3;
use crate::node::NodeEvent;

/// What a filter reports.
enum Kind {
    /// Matching logs of blocks from `next` on.
    Logs { filter: Box<LogFilter>, next: u64 },
    /// Hashes of the blocks from `next` on.
    Blocks { next: u64 },
    /// Hashes of the transactions CheckTx admits.
    PendingTxs(Receiver<NodeEvent>),
}

struct Installed {
    kind: Kind,
    polled: Instant,
    /// The client that installed it.
    owner: Client,
}

/// The installed filters.
pub struct Filters {
    installed: Mutex<HashMap<String, Installed>>,
    timeout: Duration,
    max: usize,
    per_client: usize,
    issued: AtomicU64,
}

/// What a poll of a log filter needs outside the lock.
struct LogPoll {
    filter: LogFilter,
    next: u64,
}

impl Filters {
    /// No filters; idle ones expire after `timeout`, at most `max` exist,
    /// at most `per_client` installed by one client.
    pub fn new(timeout: Duration, max: usize, per_client: usize) -> Self {
        Self {
            installed: Mutex::new(HashMap::new()),
            timeout,
            max,
            per_client,
            issued: AtomicU64::new(0),
        }
    }

    /// The filters still polled, the expired ones dropped.
    fn live(&self) -> RpcResult<MutexGuard<'_, HashMap<String, Installed>>> {
        let mut map = self
            .installed
            .lock()
            .map_err(|_| server_error("filter table poisoned"))?;
        let timeout = self.timeout;
        map.retain(|_, f| f.polled.elapsed() < timeout);
        Ok(map)
    }

    /// Installs a filter of `kind` for the client `owner`; its id is 16
    /// bytes no client can guess.
    fn install(&self, kind: Kind, owner: Client) -> RpcResult<String> {
        let mut map = self.live()?;
        if map.len() >= self.max {
            return Err(server_error(format!(
                "too many filters installed ({}): uninstall some with eth_uninstallFilter",
                self.max
            )));
        }
        if map.values().filter(|f| f.owner == owner).count() >= self.per_client {
            return Err(server_error(format!(
                "too many filters installed by this client ({}): uninstall some with eth_uninstallFilter",
                self.per_client
            )));
        }
        let n = self.issued.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = [
            n.to_be_bytes().as_slice(),
            nanos.to_be_bytes().as_slice(),
            std::process::id().to_be_bytes().as_slice(),
        ]
        .concat();
        let id = canonical(&hex::encode(&keccak256(seed)[..16]));
        map.insert(
            id.clone(),
            Installed {
                kind,
                polled: Instant::now(),
                owner,
            },
        );
        Ok(id)
    }

    fn uninstall(&self, id: &str) -> RpcResult<bool> {
        Ok(self.live()?.remove(&canonical(id)).is_some())
    }
}

/// A filter id as geth writes it (`0x`, hex without leading zeros, as
/// clients that read ids as numbers send them back); any other spelling of
/// the same number names the same filter.
fn canonical(id: &str) -> String {
    let digits = id.strip_prefix("0x").unwrap_or(id).trim_start_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    format!("0x{}", digits.to_ascii_lowercase())
}

/// Registers the filter methods.
pub fn register(m: &mut RpcModule<Web3>) -> anyhow::Result<()> {
    m.register_method("eth_newFilter", |p, w, ext| {
        let filter = logs::parse_filter(p.one()?, w.config.max_log_criteria)?;
        let next = w.node.head().map_err(internal)?.number + 1;
        let kind = Kind::Logs {
            filter: Box::new(filter),
            next,
        };
        w.filters.install(kind, Client::of(ext))
    })?;
    m.register_method("eth_newBlockFilter", |_, w, ext| {
        let next = w.node.head().map_err(internal)?.number + 1;
        w.filters.install(Kind::Blocks { next }, Client::of(ext))
    })?;
    m.register_method("eth_newPendingTransactionFilter", |_, w, ext| {
        w.filters
            .install(Kind::PendingTxs(w.node.events()), Client::of(ext))
    })?;
    m.register_method("eth_uninstallFilter", |p, w, _| {
        let id: String = p.one()?;
        w.filters.uninstall(&id)
    })?;
    m.register_async_method("eth_getFilterChanges", |p, w, _| async move {
        let id: String = p.one()?;
        w.heavy(move |w| changes(w, &id)).await
    })?;
    m.register_async_method("eth_getFilterLogs", |p, w, _| async move {
        let id: String = p.one()?;
        w.heavy(move |w| filter_logs(w, &id)).await
    })?;
    Ok(())
}

fn not_found() -> jsonrpsee::types::ErrorObjectOwned {
    server_error("filter not found")
}

/// `eth_getFilterChanges`: what happened since the last poll.
fn changes(w: &Web3, id: &str) -> RpcResult<FilterChanges> {
    let poll = {
        let mut map = w.filters.live()?;
        let installed = map.get_mut(&canonical(id)).ok_or_else(not_found)?;
        installed.polled = Instant::now();
        match &mut installed.kind {
            Kind::PendingTxs(events) => return Ok(FilterChanges::Hashes(drain(events))),
            Kind::Blocks { next } => {
                let (hashes, after) = block_hashes(w, *next)?;
                *next = after;
                return Ok(FilterChanges::Hashes(hashes));
            }
            Kind::Logs { filter, next } => LogPoll {
                filter: (**filter).clone(),
                next: *next,
            },
        }
    };
    // The log query runs outside the table's lock.
    let (logs, after) = new_logs(w, &poll)?;
    if let Some(Installed {
        kind: Kind::Logs { next, .. },
        ..
    }) = w.filters.live()?.get_mut(&canonical(id))
    {
        *next = (*next).max(after);
    }
    Ok(FilterChanges::Logs(logs))
}

/// The pending transactions the feed announced since the last poll.
fn drain(events: &mut Receiver<NodeEvent>) -> Vec<B256> {
    let mut hashes = Vec::new();
    loop {
        match events.try_recv() {
            Ok(NodeEvent::PendingTx(hash)) => hashes.push(hash),
            Ok(NodeEvent::Block(_)) | Err(TryRecvError::Lagged(_)) => {}
            Err(TryRecvError::Empty | TryRecvError::Closed) => return hashes,
        }
    }
}

/// Hashes of the committed blocks from `next` (at most the configured span),
/// and the height to start from next time.
fn block_hashes(w: &Web3, next: u64) -> RpcResult<(Vec<B256>, u64)> {
    let head = w.node.head().map_err(internal)?.number;
    let last = head.min(next.saturating_add(w.config.max_log_blocks - 1));
    let mut hashes = Vec::new();
    for height in next..=last {
        if let Some(block) = w.node.block(height).map_err(internal)? {
            hashes.push(block.hash);
        }
    }
    Ok((hashes, last.max(next.saturating_sub(1)) + 1))
}

/// The new matching logs of a log filter, within its own range, and the
/// height to start from next time.
fn new_logs(w: &Web3, poll: &LogPoll) -> RpcResult<(Vec<Log>, u64)> {
    let head = w.node.head().map_err(internal)?.number;
    let (lo, hi) = bounds(&poll.filter.filter);
    let from = poll.next.max(lo);
    let to = head
        .min(hi)
        .min(from.saturating_add(w.config.max_log_blocks - 1));
    if from > to {
        return Ok((Vec::new(), poll.next));
    }
    let (logs, last) = logs::collect(w, &poll.filter, Span { from, to }, w.config.max_logs)?;
    Ok((logs, last + 1))
}

/// The numeric bounds of a filter's own range: a tag such as `latest` (or
/// none) leaves that end open.
fn bounds(filter: &alloy_rpc_types_eth::Filter) -> (u64, u64) {
    let number = |tag: Option<&BlockNumberOrTag>, open: u64| match tag {
        Some(BlockNumberOrTag::Number(n)) => *n,
        Some(BlockNumberOrTag::Earliest) => 0,
        _ => open,
    };
    (
        number(filter.block_option.get_from_block(), 0),
        number(filter.block_option.get_to_block(), u64::MAX),
    )
}

/// `eth_getFilterLogs`: every log the filter's criteria match now.
fn filter_logs(w: &Web3, id: &str) -> RpcResult<Vec<Log>> {
    let filter = {
        let mut map = w.filters.live()?;
        let installed = map.get_mut(&canonical(id)).ok_or_else(not_found)?;
        installed.polled = Instant::now();
        match &installed.kind {
            Kind::Logs { filter, .. } => (**filter).clone(),
            _ => return Err(not_found()),
        }
    };
    let span = logs::resolve(w, &filter)?;
    logs::query(w, &filter, span)
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn ids_are_spelt_as_geth_spells_them() {
        assert_eq!(
            canonical("04fea847ccc739311f9f57d8c00960b1"),
            "0x4fea847ccc739311f9f57d8c00960b1"
        );
        assert_eq!(canonical("0x0004FEA8"), "0x4fea8");
        assert_eq!(canonical("0x4fea8"), "0x4fea8");
        assert_eq!(canonical("0x0000"), "0x0");
    }
}
