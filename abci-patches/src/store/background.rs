//! `async-commit`: Commit hands its block to a writer thread and returns once
//! the block is in memory; the writer persists the blocks in height order,
//! each in one durable redb write transaction, as the synchronous Commit
//! does. Until a block is written, every read of the [`Store`](super::Store)
//! finds it here, so a web3 client sees no difference.
//!
//! Crash safety comes from CometBFT: after a crash the store's head is the
//! last block written, abcid's `Info` reports it, and CometBFT's handshake
//! replays the blocks after it from its own block store (its replay runs
//! FinalizeBlock and Commit for each, as Sei's asynchronous storage relies
//! on). At most [`MAX_UNPERSISTED`] blocks are ahead of the disk: Commit waits
//! for room beyond that, so a slow disk slows the chain instead of filling
//! the memory. A write that fails stops the writer; the next Commit returns
//! the error, and what is on disk stays as it was.

use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use alloy_primitives::{Bloom, B256};
use redb::Database;

use super::{BlockBatch, StoreError};
use crate::records::{BlockRecord, TxRecord};

/// Most committed blocks not yet on disk; Commit waits beyond this.
pub const MAX_UNPERSISTED: usize = 4;

/// Tests: a point of the writer's work on one block where it stops and
/// waits to be killed (`abcid --test-persist-pause POINT@HEIGHT`), so a
/// test can SIGKILL abcid exactly there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PersistPause {
    /// Where in the block's write.
    pub point: PausePoint,
    /// The block's height.
    pub height: u64,
}

/// The points of one block's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PausePoint {
    /// Committed in memory, nothing written yet.
    Queued,
    /// Every table written in the open write transaction, not committed.
    Written,
    /// The write transaction committed (durable), the block still in memory.
    Committed,
}

impl FromStr for PersistPause {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let usage =
            || format!("{s:?}: expected POINT@HEIGHT, POINT one of queued, written, committed");
        let (point, height) = s.split_once('@').ok_or_else(usage)?;
        let point = match point {
            "queued" => PausePoint::Queued,
            "written" => PausePoint::Written,
            "committed" => PausePoint::Committed,
            _ => return Err(usage()),
        };
        let height = height.parse().map_err(|_| usage())?;
        Ok(Self { point, height })
    }
}

/// The blocks committed in memory and not yet on disk, with their indexes.
#[derive(Default)]
struct Queue {
    blocks: BTreeMap<u64, Arc<BlockBatch>>,
    block_heights: HashMap<B256, u64>,
    /// Transaction hash → (height, position in the batch).
    txs: HashMap<B256, (u64, usize)>,
    failed: Option<String>,
    stopping: bool,
}

impl Queue {
    fn insert(&mut self, batch: Arc<BlockBatch>) {
        let height = batch.block.number;
        self.block_heights.insert(batch.block.hash, height);
        for (i, (hash, _)) in batch.txs.iter().enumerate() {
            self.txs.insert(*hash, (height, i));
        }
        self.blocks.insert(height, batch);
    }

    fn remove(&mut self, height: u64) {
        if let Some(batch) = self.blocks.remove(&height) {
            self.block_heights.remove(&batch.block.hash);
            for (hash, _) in &batch.txs {
                self.txs.remove(hash);
            }
        }
    }

    fn check(&self) -> Result<(), StoreError> {
        match &self.failed {
            Some(e) => Err(StoreError::new(
                "persist in the background",
                format!("an earlier block could not be written ({e}); abcid must be restarted, and CometBFT replays the blocks not on disk"),
            )),
            None => Ok(()),
        }
    }
}

struct Shared {
    queue: Mutex<Queue>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // The writer never panics while holding the lock; a poisoned queue is
        // still consistent (every change is one insert or one remove).
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, Queue>) -> MutexGuard<'a, Queue> {
        self.changed.wait(guard).unwrap_or_else(|p| p.into_inner())
    }
}

/// The writer thread and the blocks it has still to write.
pub(super) struct Background {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Background {
    /// Starts the writer over `db`.
    pub(super) fn start(
        db: Arc<Database>,
        pause: Option<PersistPause>,
    ) -> Result<Self, StoreError> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
        });
        let writer = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("persist".into())
            .spawn(move || write_loop(&db, &writer, pause))
            .map_err(|e| StoreError::new("start the background writer", e.to_string()))?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// Queues `batch` for writing, once fewer than [`MAX_UNPERSISTED`]
    /// blocks wait; fails if an earlier write failed.
    pub(super) fn push(&self, batch: Arc<BlockBatch>) -> Result<(), StoreError> {
        let mut queue = self.shared.lock();
        while queue.blocks.len() >= MAX_UNPERSISTED && queue.failed.is_none() {
            queue = self.shared.wait(queue);
        }
        queue.check()?;
        queue.insert(batch);
        self.shared.changed.notify_all();
        Ok(())
    }

    /// Waits until every queued block is written; returns how many were
    /// waiting.
    pub(super) fn flush(&self) -> Result<usize, StoreError> {
        let mut queue = self.shared.lock();
        let waiting = queue.blocks.len();
        while !queue.blocks.is_empty() && queue.failed.is_none() {
            queue = self.shared.wait(queue);
        }
        queue.check().map(|()| waiting)
    }

    /// How many blocks are committed in memory and not yet on disk.
    pub(super) fn unpersisted(&self) -> usize {
        self.shared.lock().blocks.len()
    }

    pub(super) fn block(&self, number: u64) -> Option<BlockRecord> {
        let queue = self.shared.lock();
        queue.blocks.get(&number).map(|b| b.block.clone())
    }

    pub(super) fn block_number(&self, hash: &B256) -> Option<u64> {
        self.shared.lock().block_heights.get(hash).copied()
    }

    pub(super) fn app_hash_at(&self, height: u64) -> Option<B256> {
        let queue = self.shared.lock();
        queue.blocks.get(&height).map(|b| b.block.app_hash)
    }

    /// The blooms of the queued blocks in `from..=to` (none when `from` is
    /// past `to`).
    pub(super) fn log_blooms(&self, from: u64, to: u64) -> Vec<(u64, Bloom)> {
        if from > to {
            return Vec::new();
        }
        let queue = self.shared.lock();
        queue
            .blocks
            .range(from..=to)
            .filter_map(|(h, b)| b.block.logs_bloom.map(|bloom| (*h, bloom)))
            .collect()
    }

    /// The first `end` transactions of queued block `number`.
    pub(super) fn block_txs(&self, number: u64, end: usize) -> Option<Vec<TxRecord>> {
        let queue = self.shared.lock();
        let batch = queue.blocks.get(&number)?;
        Some(batch.txs.iter().take(end).map(|(_, r)| r.clone()).collect())
    }

    pub(super) fn tx(&self, hash: &B256) -> Option<TxRecord> {
        let queue = self.shared.lock();
        let (height, i) = queue.txs.get(hash)?;
        let batch = queue.blocks.get(height)?;
        batch.txs.get(*i).map(|(_, r)| r.clone())
    }
}

impl Drop for Background {
    /// Writes what is queued, then stops the writer.
    fn drop(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Marks the writer failed if its thread unwinds, so that Commit reports it
/// instead of waiting for room forever.
struct FailOnPanic<'a>(&'a Shared);

impl Drop for FailOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0
                .lock()
                .failed
                .get_or_insert_with(|| "the writer thread panicked".into());
            self.0.changed.notify_all();
        }
    }
}

/// The writer: each queued block in height order, until stopped with an
/// empty queue or a write fails.
fn write_loop(db: &Database, shared: &Shared, pause: Option<PersistPause>) {
    let _guard = FailOnPanic(shared);
    loop {
        let batch = {
            let mut queue = shared.lock();
            loop {
                if let Some((_, first)) = queue.blocks.first_key_value() {
                    break Arc::clone(first);
                }
                if queue.stopping {
                    return;
                }
                queue = shared.wait(queue);
            }
        };
        let height = batch.block.number;
        let pause_at = |point| {
            if pause == Some(PersistPause { point, height }) {
                park_until_killed(point, height);
            }
        };
        pause_at(PausePoint::Queued);
        let written = super::prepare(db, &batch, super::BlockTxs::Memory(&batch.txs), None)
            .and_then(|tx| {
                pause_at(PausePoint::Written);
                tx.commit().map_err(super::ctx("commit block"))
            });
        match written {
            Ok(()) => {
                pause_at(PausePoint::Committed);
                shared.lock().remove(height);
                shared.changed.notify_all();
            }
            Err(e) => {
                tracing::error!(height, error = %e, "cannot persist a committed block");
                shared.lock().failed = Some(e.to_string());
                shared.changed.notify_all();
                return;
            }
        }
    }
}

/// Tests: announces the pause and never returns; the test SIGKILLs abcid.
fn park_until_killed(point: PausePoint, height: u64) {
    tracing::warn!(
        height,
        ?point,
        "persistence paused (--test-persist-pause); waiting to be killed"
    );
    loop {
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pause_points_parse_and_bad_ones_are_named() {
        assert_eq!(
            "written@7".parse::<PersistPause>().unwrap(),
            PersistPause {
                point: PausePoint::Written,
                height: 7
            }
        );
        let e = "flushed@7".parse::<PersistPause>().unwrap_err();
        assert!(e.contains("queued, written, committed"), "{e}");
        assert!("queued@x".parse::<PersistPause>().is_err());
        assert!("queued".parse::<PersistPause>().is_err());
    }
}
