//! After reading: the run's record in Redis, each node's metadata, and the
//! report.

use std::path::PathBuf;

use super::batch::Written;
use super::error::IngestError;
use super::report::{FileReport, IngestReport, RpcSummary};
use crate::store::Store;
use feth_comet::time::Clock;

/// Milliseconds since the Unix epoch (0 if the clock is before it).
fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A run's record in Redis (`feth:C:run:ID`).
pub(super) struct RunRecord<'a> {
    store: &'a Store,
    /// Run id.
    pub(super) id: String,
    started_ms: i64,
}

impl<'a> RunRecord<'a> {
    /// Records a run reading `paths` as running.
    pub(super) async fn start(store: &'a Store, paths: &[PathBuf]) -> Result<Self, IngestError> {
        let started_ms = unix_ms();
        let record = Self {
            store,
            id: format!("{started_ms}-{}", std::process::id()),
            started_ms,
        };
        let files_json = serde_json::to_string(paths).unwrap_or_default();
        record
            .write(&[
                ("status", "running".into()),
                ("started_ms", started_ms.to_string()),
                ("files", files_json),
            ])
            .await?;
        Ok(record)
    }

    async fn write(&self, fields: &[(&str, String)]) -> Result<(), IngestError> {
        Ok(self
            .store
            .write_run(&self.id, self.started_ms, fields)
            .await?)
    }

    /// Records the run as failed with `e` (best effort: `e` is what counts).
    pub(super) async fn failed(&self, e: &IngestError) {
        let _ = self
            .write(&[("status", "failed".into()), ("error", e.to_string())])
            .await;
    }

    /// Records the run as done, with its report.
    pub(super) async fn finished(
        &self,
        report: &IngestReport,
        rpc_failed: bool,
    ) -> Result<(), IngestError> {
        let status = if rpc_failed { "rpc-failed" } else { "complete" };
        let report_json = serde_json::to_string(report).unwrap_or_default();
        self.write(&[
            ("status", status.into()),
            ("finished_ms", unix_ms().to_string()),
            ("report", report_json),
        ])
        .await
    }
}

/// Writes each written node's log metadata: software, format and the zone
/// its plain timestamps were read in.
pub(super) async fn write_node_meta(
    store: &Store,
    files: &[FileReport],
    written: &Written,
    clock: &Clock,
) -> Result<(), IngestError> {
    for f in files {
        let fmt = f.detected.main_format().unwrap_or("unknown");
        let tz = if fmt == "plain" {
            clock.zone_name().to_string()
        } else if f.undated > 0 {
            "none (the stamps have no date)".to_string()
        } else {
            "UTC (stamps carry their zone)".to_string()
        };
        let meta = [
            ("log_tz", tz),
            ("version", f.detected.software.clone()),
            ("format", fmt.to_string()),
            ("updated_ms", unix_ms().to_string()),
        ];
        for node in std::iter::once(&f.node).chain(&f.prefixed_nodes) {
            if written.nodes.contains(node) {
                store.write_node_meta(node, &meta).await?;
            }
        }
    }
    Ok(())
}

/// Which block times `stats` will use for the written heights; `undated`:
/// event lines whose clock has no date.
fn block_time_source(
    written: &Written,
    rpc: Option<&RpcSummary>,
    clock: &Clock,
    undated: u64,
) -> String {
    let with_rpc = rpc.map_or(0, |r| r.headers);
    if with_rpc > 0 {
        format!("header times from the node's RPC (/blockchain) for {with_rpc} heights")
    } else if !written.with_abcid_time.is_empty() {
        format!(
            "header times from abcid's block lines for {} heights",
            written.with_abcid_time.len()
        )
    } else if !written.with_commit.is_empty() {
        format!(
            "commit log times (`finalizing commit of block`), plain-log zone {}",
            clock.zone_name()
        )
    } else if undated > 0 {
        "none: the log's clock has no date (Cosmos SDK console stamps such as `4:53AM`) and \
         no day is guessed; give --comet-rpc for the node's header times"
            .to_string()
    } else {
        "none: no commit lines, abcid lines or RPC".to_string()
    }
}

/// What a finished run reports.
pub(super) struct Finished<'a> {
    pub(super) run_id: &'a str,
    pub(super) chain: String,
    pub(super) chain_id_from: &'static str,
    pub(super) redis_url: &'a str,
    pub(super) clock: &'a Clock,
    pub(super) files: Vec<FileReport>,
    pub(super) written: Written,
    pub(super) rpc: Option<RpcSummary>,
    pub(super) elapsed_s: f64,
}

impl Finished<'_> {
    /// The report.
    pub(super) fn report(self) -> IngestReport {
        let lines: u64 = self.files.iter().map(|f| f.lines).sum();
        let undated: u64 = self.files.iter().map(|f| f.undated).sum();
        let w = self.written;
        IngestReport {
            run_id: self.run_id.to_string(),
            chain_id: self.chain,
            chain_id_from: self.chain_id_from,
            redis: crate::store::redact(self.redis_url),
            log_tz: self.clock.zone_name().to_string(),
            heights_written: w.heights.len(),
            heights: w.heights.bounds(),
            heights_with_commit_time: w.with_commit.len(),
            heights_with_abcid_time: w.with_abcid_time.len(),
            block_time_source: block_time_source(&w, self.rpc.as_ref(), self.clock, undated),
            nodes: w.nodes,
            files: self.files,
            rpc: self.rpc,
            elapsed_s: self.elapsed_s,
            #[allow(clippy::cast_precision_loss)]
            lines_per_s: if self.elapsed_s > 0.0 {
                lines as f64 / self.elapsed_s
            } else {
                0.0
            },
            batches: w.batches,
        }
    }
}
