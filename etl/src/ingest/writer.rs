//! The writer: observations from the reader threads merged into batches
//! and written to Redis, until the readers are done, shutdown, or an error.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::batch::{flush, Obs, Pending, RpcRequest, Written};
use super::error::IngestError;
use super::reader::Msg;
use super::report::FileReport;
use crate::store::Store;

/// How often `follow` writes what it has.
const FOLLOW_FLUSH: Duration = Duration::from_millis(500);
/// How often the progress bar moves.
const PROGRESS_TICK: Duration = Duration::from_millis(200);

/// The writer's state.
pub(super) struct Writer<'a> {
    store: &'a Store,
    rpc_tx: Option<mpsc::Sender<RpcRequest>>,
    batch_heights: usize,
    follow: bool,
    bar: Option<indicatif::ProgressBar>,
    progress: Arc<AtomicU64>,
    pending: Pending,
    /// What was written.
    pub(super) written: Written,
    /// The reports of the files read to their end.
    pub(super) files: Vec<FileReport>,
}

impl<'a> Writer<'a> {
    /// A writer into `store`, sending written heights to `rpc_tx` and
    /// showing `progress` (bytes read) on `bar`.
    pub(super) fn new(
        store: &'a Store,
        rpc_tx: Option<mpsc::Sender<RpcRequest>>,
        batch_heights: usize,
        follow: bool,
        bar: Option<indicatif::ProgressBar>,
        progress: Arc<AtomicU64>,
    ) -> Self {
        Self {
            store,
            rpc_tx,
            batch_heights: batch_heights.max(1),
            follow,
            bar,
            progress,
            pending: Pending::default(),
            written: Written::default(),
            files: Vec::new(),
        }
    }

    /// Writes what the readers send until they are all done; on `shutdown`
    /// sets `stop` and goes on until they have stopped. Stops at the first
    /// error, leaving what is pending unwritten.
    pub(super) async fn drain(
        &mut self,
        mut rx: mpsc::Receiver<Msg>,
        shutdown: impl Future<Output = ()>,
        stop: &AtomicBool,
    ) -> Result<(), IngestError> {
        tokio::pin!(shutdown);
        let mut shutting_down = false;
        let mut tick = tokio::time::interval(if self.follow {
            FOLLOW_FLUSH
        } else {
            PROGRESS_TICK
        });
        loop {
            let msg = tokio::select! {
                m = rx.recv() => m,
                () = &mut shutdown, if !shutting_down => {
                    shutting_down = true;
                    stop.store(true, Ordering::Relaxed);
                    continue;
                }
                _ = tick.tick() => {
                    self.tick().await?;
                    continue;
                }
            };
            match msg {
                Some(Msg::Obs(v)) => self.add(v).await?,
                Some(Msg::File(r)) => self.files.push(*r),
                Some(Msg::Fatal(e)) => return Err(e),
                None => break,
            }
        }
        self.flush().await
    }

    /// Moves the progress bar; with `follow`, writes what is pending.
    async fn tick(&mut self) -> Result<(), IngestError> {
        if let Some(b) = &self.bar {
            b.set_position(self.progress.load(Ordering::Relaxed));
        }
        if self.follow && self.pending.len() > 0 {
            self.flush().await?;
        }
        Ok(())
    }

    /// Merges observations, writing a batch when it is full.
    async fn add(&mut self, obs: Vec<Obs>) -> Result<(), IngestError> {
        for o in obs {
            self.pending.add(o);
        }
        if self.pending.len() >= self.batch_heights {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), IngestError> {
        flush(
            self.store,
            &mut self.pending,
            &mut self.written,
            self.rpc_tx.as_ref(),
        )
        .await
    }

    /// Clears the progress bar and ends the RPC requests.
    pub(super) fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        self.rpc_tx = None;
    }
}
