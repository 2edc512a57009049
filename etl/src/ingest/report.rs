//! What an ingest run reports: per file, RPC enrichment, and the whole run.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::detect::Detected;
use crate::source::{Compression, FollowEnd, ReadEnd};
use feth_comet::rpc::RpcError;

/// A sample of a line that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BadLine {
    /// 1-based line number.
    pub line: u64,
    /// Why.
    pub reason: String,
    /// The line's start.
    pub text: String,
}

/// What one log file held.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// Node name for lines without a prefix.
    pub node: String,
    /// Node names from line prefixes.
    pub prefixed_nodes: BTreeSet<String>,
    /// Plain or gzip.
    pub compression: Compression,
    /// Software and format.
    pub detected: Detected,
    /// Lines read.
    pub lines: u64,
    /// Lines with a block/node event.
    pub events: u64,
    /// Event lines whose clock has no date (Cosmos SDK console `4:53AM`):
    /// they give no commit time, and no day is guessed.
    #[serde(skip_serializing_if = "is_zero")]
    pub undated: u64,
    /// Well-formed lines of no interest.
    pub other: u64,
    /// Empty lines.
    pub blank: u64,
    /// Lines that look like node log lines but cannot be read.
    pub malformed: u64,
    /// Lines in no known format.
    pub foreign: u64,
    /// First malformed line.
    pub first_malformed: Option<BadLine>,
    /// First foreign line.
    pub first_foreign: Option<BadLine>,
    /// Lowest and highest height seen.
    pub heights: Option<(u64, u64)>,
    /// How reading ended (cut last line, cut gzip stream).
    pub end: ReadEnd,
    /// With `--follow`: rotations and truncations seen.
    pub follow: Option<FollowEnd>,
}

/// Whether a count is 0 (left out of the JSON, as before it existed).
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// RPC enrichment figures.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RpcSummary {
    /// Node URL.
    pub url: String,
    /// Heights given a header time.
    pub headers: u64,
    /// Heights given valid/invalid counts.
    pub results: u64,
    /// Heights the node could not answer for.
    pub missing: u64,
    /// The first of those, with the node's reason.
    pub first_missing: Option<(u64, String)>,
    /// Requests sent again after a transient transport error (connection
    /// reset or refused, timeout); each request is tried a bounded number of
    /// times ([`feth_comet::retry`]).
    pub retries: u64,
}

/// What an ingest run did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IngestReport {
    /// Run id (also in Redis under `feth:C:run:ID`).
    pub run_id: String,
    /// Chain id written.
    pub chain_id: String,
    /// Where the chain id came from.
    pub chain_id_from: &'static str,
    /// Redis (password hidden).
    pub redis: String,
    /// Zone applied to plain timestamps.
    pub log_tz: String,
    /// Per file.
    pub files: Vec<FileReport>,
    /// Distinct heights written.
    pub heights_written: u64,
    /// Lowest and highest height written.
    pub heights: Option<(u64, u64)>,
    /// Heights that have a consensus commit time from the logs.
    pub heights_with_commit_time: u64,
    /// Heights given a header time by abcid lines.
    pub heights_with_abcid_time: u64,
    /// Nodes written.
    pub nodes: BTreeSet<String>,
    /// RPC enrichment, with `--comet-rpc`.
    pub rpc: Option<RpcSummary>,
    /// Which block times `stats` will use for these heights.
    pub block_time_source: String,
    /// Wall time.
    pub elapsed_s: f64,
    /// Lines per second over the run.
    pub lines_per_s: f64,
    /// Redis transactions written.
    pub batches: u64,
}

/// An ingest's report and an RPC failure that happened after the logs were
/// written (the logs' data stands; the error is still an error).
#[derive(Debug)]
pub struct Outcome {
    /// What was done.
    pub report: IngestReport,
    /// Set when RPC enrichment failed part-way.
    pub rpc_error: Option<RpcError>,
}
