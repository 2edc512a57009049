//! RPC enrichment of written heights: header times and tx results from the
//! node, written to Redis in their own task.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use tokio::sync::mpsc;

use super::batch::RpcRequest;
use super::report::RpcSummary;
use crate::store::{Store, WriteBatch};
use feth_comet::rpc::{Rpc, RpcError};

/// RPC enrichment of written heights, in its own task; the figures include
/// the requests retried.
async fn enrich(
    rpc: Rpc,
    store: Store,
    rx: mpsc::Receiver<RpcRequest>,
    only: Option<RangeInclusive<u64>>,
) -> (RpcSummary, Option<RpcError>) {
    let mut sum = RpcSummary {
        url: rpc.url().to_string(),
        ..RpcSummary::default()
    };
    let error = enrich_into(&mut sum, &rpc, &store, rx, only).await;
    sum.retries = rpc.retries();
    (sum, error)
}

/// Fetches and writes every request's heights (those in `only`, when
/// given) until the channel closes; the first failure ends it.
async fn enrich_into(
    sum: &mut RpcSummary,
    rpc: &Rpc,
    store: &Store,
    mut rx: mpsc::Receiver<RpcRequest>,
    only: Option<RangeInclusive<u64>>,
) -> Option<RpcError> {
    let asked = |h: &u64| only.as_ref().is_none_or(|r| r.contains(h));
    while let Some((mut heights, mut need_results)) = rx.recv().await {
        heights.retain(asked);
        need_results.retain(asked);
        if heights.is_empty() {
            continue;
        }
        let (facts, missing) = match rpc.fetch(&heights, &need_results).await {
            Ok(r) => r,
            Err(e) => return Some(e),
        };
        sum.headers += facts.values().filter(|f| f.time_ns.is_some()).count() as u64;
        sum.results += facts.values().filter(|f| f.valid.is_some()).count() as u64;
        sum.missing += missing.len() as u64;
        if sum.first_missing.is_none() {
            sum.first_missing = missing.into_iter().next();
        }
        let batch = WriteBatch {
            blocks: facts,
            node_heights: BTreeMap::new(),
        };
        if let Err(e) = store.write(&batch).await {
            // A Redis failure here is reported like an RPC one: the logs' data stands.
            return Some(RpcError::Answer {
                url: rpc.url().to_string(),
                what: "writing RPC data".into(),
                detail: e.to_string(),
            });
        }
    }
    None
}

/// The enrichment task, when there is an RPC.
pub(super) struct Enrichment {
    url: String,
    task: tokio::task::JoinHandle<(RpcSummary, Option<RpcError>)>,
}

impl Enrichment {
    /// Starts the task, asking about the heights in `only` (all when
    /// `None`); written heights go to the returned sender.
    pub(super) fn start(
        rpc: Rpc,
        store: Store,
        only: Option<RangeInclusive<u64>>,
    ) -> (Self, mpsc::Sender<RpcRequest>) {
        let (tx, rx) = mpsc::channel(4);
        let url = rpc.url().to_string();
        let task = tokio::spawn(enrich(rpc, store, rx, only));
        (Self { url, task }, tx)
    }

    /// Waits for the task (its sender must be dropped) and returns its
    /// figures and error.
    pub(super) async fn finish(self) -> (Option<RpcSummary>, Option<RpcError>) {
        match self.task.await {
            Ok((s, e)) => (Some(s), e),
            Err(e) => (
                None,
                Some(RpcError::Answer {
                    url: self.url,
                    what: "enrichment".into(),
                    detail: e.to_string(),
                }),
            ),
        }
    }
}
