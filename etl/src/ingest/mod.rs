//! Ingest: log files → parser thread(s) → batches of observations → Redis,
//! with optional RPC enrichment of each written batch.
//!
//! Parsing runs on plain threads (one for all files, or one per file when
//! following) and hands batches to the async writer over a bounded
//! channel, so parsing and Redis round trips overlap.
//!
//! * [`config`]: what to read and how; [`setup`]: inputs checked, chain id
//!   found; [`reader`]: the parser threads; [`writer`] and [`batch`]: the
//!   Redis batches; [`enrich`]: RPC enrichment; [`summary`]: the run record
//!   and the report ([`report`]).

mod batch;
pub mod config;
mod enrich;
mod error;
mod reader;
pub mod report;
mod setup;
mod summary;
mod writer;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

pub use config::{
    IngestConfig, DEFAULT_BATCH_HEIGHTS, DEFAULT_REDIS_RETRY, DEFAULT_RPC_BATCH,
    DEFAULT_RPC_CONCURRENCY,
};
pub use error::IngestError;
pub use report::{BadLine, FileReport, IngestReport, Outcome, RpcSummary};
pub use setup::node_name_from_path;

use crate::store::Store;
use enrich::Enrichment;
use feth_comet::time::Clock;
use reader::{Job, ReaderCtx};
use summary::{Finished, RunRecord};
use writer::Writer;

/// Runs an ingest until the logs end (or, with `follow`, until `shutdown`
/// completes). Returns what was done.
pub async fn run(
    cfg: &IngestConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<Outcome, IngestError> {
    let started = Instant::now();
    let clock = Clock::new(cfg.log_tz.as_deref())?;
    let setup = setup::prepare(cfg).await?;
    let store = Store::connect(&setup.redis_url, &setup.chain, cfg.redis_retry).await?;
    let record = RunRecord::start(&store, &setup.paths).await?;
    let jobs = setup.jobs(cfg.node.as_deref());
    let bar = progress_bar(cfg, &jobs);

    let (tx, rx) = mpsc::channel(16);
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicU64::new(0));
    let ctx = ReaderCtx {
        clock: clock.clone(),
        chain: setup.chain.clone(),
        tx,
        stop: stop.clone(),
        progress: progress.clone(),
        follow: cfg.follow,
    };
    let threads = reader::spawn(jobs, &ctx);
    drop(ctx);

    let (enrichment, rpc_tx) = match setup.rpc.clone() {
        Some(r) => {
            let (e, tx) = Enrichment::start(r, store.clone(), cfg.rpc_heights.clone());
            (Some(e), Some(tx))
        }
        None => (None, None),
    };
    let mut writer = Writer::new(&store, rpc_tx, cfg.batch_heights, cfg.follow, bar, progress);
    let drained = writer.drain(rx, shutdown, &stop).await;
    stop.store(true, Ordering::Relaxed);
    writer.finish();
    for t in threads {
        // Reader threads never panic; a join error would only repeat one.
        let _ = tokio::task::spawn_blocking(move || t.join()).await;
    }
    let (rpc_summary, rpc_error) = match enrichment {
        Some(e) => e.finish().await,
        None => (None, None),
    };
    if let Err(e) = drained {
        record.failed(&e).await;
        return Err(e);
    }

    summary::write_node_meta(&store, &writer.files, &writer.written, &clock).await?;
    let report = Finished {
        run_id: &record.id,
        chain: setup.chain,
        chain_id_from: setup.chain_id_from,
        redis_url: &setup.redis_url,
        clock: &clock,
        files: std::mem::take(&mut writer.files),
        written: std::mem::take(&mut writer.written),
        rpc: rpc_summary,
        elapsed_s: started.elapsed().as_secs_f64(),
    }
    .report();
    record.finished(&report, rpc_error.is_some()).await?;
    Ok(Outcome { report, rpc_error })
}

/// A progress bar on stderr over the logs' total size (not when following,
/// nor when turned off).
fn progress_bar(cfg: &IngestConfig, jobs: &[Job]) -> Option<indicatif::ProgressBar> {
    if cfg.follow || !cfg.progress {
        return None;
    }
    let total_bytes: u64 = jobs
        .iter()
        .filter_map(|j| std::fs::metadata(&j.path).ok())
        .map(|m| m.len())
        .sum();
    let bar = indicatif::ProgressBar::new(total_bytes);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} ingest {bytes}/{total_bytes} {bar:30} {bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(bar)
}
