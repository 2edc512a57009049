//! Rendering of an [`IngestReport`]: a table per file with notes on
//! trouble, or a CSV row per file.

use std::fmt::Write as _;

use super::table::{csv, opt, table};
use super::OutputError;
use crate::ingest::{FileReport, IngestReport, RpcSummary};
use crate::source::Compression;

/// Columns of the CSV (one row per file).
const CSV_HEADER: &str = "file,node,software,compression,lines,events,other,blank,malformed,foreign,first_height,last_height\n";

/// Columns of the per-file table.
const TABLE_HEADER: [&str; 9] = [
    "log",
    "node",
    "software",
    "format",
    "lines",
    "events",
    "malformed",
    "foreign",
    "heights",
];

/// One CSV row per file.
pub(super) fn csv_text(r: &IngestReport) -> Result<String, OutputError> {
    let mut out = String::from(CSV_HEADER);
    for f in &r.files {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            csv(&f.path.display().to_string()),
            csv(&f.node),
            csv(&f.detected.software),
            serde_json::to_value(f.compression)?
                .as_str()
                .unwrap_or_default(),
            f.lines,
            f.events,
            f.other,
            f.blank,
            f.malformed,
            f.foreign,
            opt(f.heights.map(|h| h.0)),
            opt(f.heights.map(|h| h.1)),
        );
    }
    Ok(out)
}

/// A headline, the per-file table, notes on each file's trouble and what
/// was written.
pub(super) fn table_text(r: &IngestReport) -> String {
    let mut out = String::new();
    let lines: u64 = r.files.iter().map(|f| f.lines).sum();
    let _ = writeln!(
        out,
        "ingested chain {} (chain id from {}) into {} — run {}, {lines} lines in {:.2} s ({:.0} lines/s)",
        r.chain_id, r.chain_id_from, r.redis, r.run_id, r.elapsed_s, r.lines_per_s
    );
    let _ = writeln!(out, "plain-log timestamps read in zone {}\n", r.log_tz);
    let rows: Vec<Vec<String>> = r.files.iter().map(file_row).collect();
    out.push_str(&table(&TABLE_HEADER, &rows));
    for f in &r.files {
        file_notes(&mut out, f);
    }
    written(&mut out, r);
    out
}

/// A file's row of the table.
fn file_row(f: &FileReport) -> Vec<String> {
    let formats: Vec<&str> = f.detected.formats.keys().copied().collect();
    let nodes = if f.prefixed_nodes.is_empty() {
        f.node.clone()
    } else {
        f.prefixed_nodes
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(",")
    };
    let gzip = if f.compression == Compression::Gzip {
        ", gzip"
    } else {
        ""
    };
    vec![
        f.path.display().to_string(),
        nodes,
        format!("{} ({})", f.detected.software, f.detected.how),
        format!("{}{gzip}", formats.join("+")),
        f.lines.to_string(),
        f.events.to_string(),
        f.malformed.to_string(),
        f.foreign.to_string(),
        f.heights
            .map_or_else(String::new, |(a, b)| format!("{a}–{b}")),
    ]
}

/// Indented lines on a file's first bad lines, cut end and rotations.
fn file_notes(out: &mut String, f: &FileReport) {
    let path = f.path.display();
    for (what, bad) in [
        ("malformed", &f.first_malformed),
        ("foreign", &f.first_foreign),
    ] {
        if let Some(b) = bad {
            let _ = writeln!(
                out,
                "  {path}: first {what} line {} ({}): {}",
                b.line, b.reason, b.text
            );
        }
    }
    if f.undated > 0 {
        let _ = writeln!(
            out,
            "  {path}: {} event lines have a clock without a date (Cosmos SDK console); \
             their times are not used and no day is guessed",
            f.undated
        );
    }
    if f.end.unterminated {
        let _ = writeln!(
            out,
            "  {path}: last line has no newline (cut short) and was skipped"
        );
    }
    if let Some(e) = &f.end.gzip_error {
        let _ = writeln!(
            out,
            "  {path}: gzip stream cut short or corrupt ({e}); the lines before were read"
        );
    }
    if let Some(fo) = &f.follow {
        let _ = writeln!(
            out,
            "  {path}: followed through {} rotation(s), {} truncation(s)",
            fo.rotations, fo.truncations
        );
    }
}

/// Heights and nodes written, the block-time source and RPC enrichment.
fn written(out: &mut String, r: &IngestReport) {
    let _ = writeln!(
        out,
        "\nheights written: {}{}; nodes: {}",
        r.heights_written,
        r.heights
            .map_or_else(String::new, |(a, b)| format!(" ({a}–{b})")),
        r.nodes.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    let _ = writeln!(out, "block times: {}", r.block_time_source);
    if let Some(rpc) = &r.rpc {
        rpc_line(out, rpc);
    }
}

/// What the node's RPC answered.
fn rpc_line(out: &mut String, rpc: &RpcSummary) {
    let _ = writeln!(
        out,
        "rpc {}: {} header times, {} valid/invalid counts, {} heights unanswered{}, {} requests retried",
        rpc.url,
        rpc.headers,
        rpc.results,
        rpc.missing,
        rpc.first_missing
            .as_ref()
            .map_or_else(String::new, |(h, why)| format!(" (first: {h}: {why})")),
        rpc.retries
    );
}
