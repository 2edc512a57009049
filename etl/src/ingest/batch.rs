//! Observations merged into Redis batches, written, and counted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tokio::sync::mpsc;

use super::error::IngestError;
use crate::store::{Store, WriteBatch};
use feth_comet::facts::{BlockFacts, TimeSource};

/// One thing a log line says, ready to merge into a batch.
#[derive(Debug, Clone)]
pub(super) struct Obs {
    pub(super) height: u64,
    /// The node that applied the block (not for abcid lines or replays).
    pub(super) node: Option<Arc<str>>,
    /// The node's consensus commit time (Unix ns).
    pub(super) commit_ns: Option<i64>,
    pub(super) facts: BlockFacts,
}

/// Heights written, and those still lacking valid/invalid counts: what the
/// RPC enrichment task is asked for.
pub(super) type RpcRequest = (Vec<u64>, Vec<u64>);

/// Merges observations into the next Redis batch.
#[derive(Default)]
pub(super) struct Pending {
    batch: WriteBatch,
}

impl Pending {
    pub(super) fn add(&mut self, o: Obs) {
        if let Some(node) = o.node {
            let e = self
                .batch
                .node_heights
                .entry((node, o.height))
                .or_insert(None);
            if let Some(t) = o.commit_ns {
                *e = Some(e.map_or(t, |c| c.min(t)));
            }
        }
        self.batch
            .blocks
            .entry(o.height)
            .or_default()
            .merge(&o.facts);
    }

    pub(super) fn len(&self) -> usize {
        self.batch.blocks.len()
    }
}

/// A set of heights kept as disjoint ranges (heights come mostly in order).
#[derive(Default)]
pub(super) struct Ranges {
    /// start → end (inclusive).
    r: BTreeMap<u64, u64>,
}

impl Ranges {
    pub(super) fn insert(&mut self, h: u64) {
        let before = self.r.range(..=h).next_back().map(|(s, e)| (*s, *e));
        if let Some((_, e)) = before {
            if h <= e {
                return;
            }
        }
        let start = match before {
            Some((s, e)) if e + 1 == h => s,
            _ => h,
        };
        let end = h
            .checked_add(1)
            .and_then(|n| self.r.remove(&n))
            .unwrap_or(h);
        self.r.insert(start, end);
    }

    pub(super) fn len(&self) -> u64 {
        self.r.iter().map(|(s, e)| e - s + 1).sum()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.r.is_empty()
    }

    pub(super) fn bounds(&self) -> Option<(u64, u64)> {
        Some((*self.r.keys().next()?, *self.r.values().next_back()?))
    }
}

/// Running totals of what was written.
#[derive(Default)]
pub(super) struct Written {
    /// Heights written.
    pub(super) heights: Ranges,
    /// Heights with a consensus commit time.
    pub(super) with_commit: Ranges,
    /// Heights with a header time from abcid.
    pub(super) with_abcid_time: Ranges,
    /// Nodes written.
    pub(super) nodes: BTreeSet<String>,
    /// Redis transactions written.
    pub(super) batches: u64,
}

/// Writes the pending batch (one transaction), counts it, and asks the RPC
/// enrichment for its heights.
pub(super) async fn flush(
    store: &Store,
    pending: &mut Pending,
    written: &mut Written,
    rpc_tx: Option<&mpsc::Sender<RpcRequest>>,
) -> Result<(), IngestError> {
    if pending.batch.is_empty() {
        return Ok(());
    }
    let batch = std::mem::take(&mut pending.batch);
    store.write(&batch).await?;
    written.batches += 1;
    for (h, f) in &batch.blocks {
        written.heights.insert(*h);
        if f.time_src == Some(TimeSource::Abcid) {
            written.with_abcid_time.insert(*h);
        }
    }
    for ((node, h), commit) in &batch.node_heights {
        if !written.nodes.contains(&**node) {
            written.nodes.insert(node.to_string());
        }
        if commit.is_some() {
            written.with_commit.insert(*h);
        }
    }
    if let Some(tx) = rpc_tx {
        let heights: Vec<u64> = batch.blocks.keys().copied().collect();
        let need: Vec<u64> = batch
            .blocks
            .iter()
            .filter(|(_, f)| f.valid.is_none())
            .map(|(h, _)| *h)
            .collect();
        // If the enrichment task has stopped (RPC error), it reports that itself.
        let _ = tx.send((heights, need)).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_count_distinct_heights() {
        let mut r = Ranges::default();
        for h in [5, 3, 4, 4, 10, 6, 1, 9, 2, 8, 7, 7] {
            r.insert(h);
        }
        assert_eq!((r.len(), r.bounds(), r.r.len()), (10, Some((1, 10)), 1));
        let mut r = Ranges::default();
        for h in [1, 3, 5, 3] {
            r.insert(h);
        }
        assert_eq!((r.len(), r.bounds(), r.r.len()), (3, Some((1, 5)), 3));
    }
}
