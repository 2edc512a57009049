//! Rendering of ingest summaries and stats as tables, CSV or JSON.

use std::fmt::Write as _;

use crate::ingest::IngestReport;
use crate::stats::StatsReport;
use crate::time::format_utc;

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Human-readable tables.
    #[default]
    Table,
    /// CSV (for stats: the chosen [`CsvTable`]).
    Csv,
    /// One JSON document.
    Json,
}

/// Which stats table [`Format::Csv`] prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CsvTable {
    /// One row per block: `height,txs,valid_txs,block_time,tps` (the original feth's).
    #[default]
    Blocks,
    /// One row per window.
    Windows,
    /// The txs-per-block histogram.
    Histogram,
    /// The summary as `metric,value` rows.
    Summary,
}

/// Rendering failures (JSON serialisation only).
#[derive(Debug, thiserror::Error)]
#[error("cannot render output as JSON: {0}")]
pub struct OutputError(#[from] serde_json::Error);

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

fn f3(v: Option<f64>) -> String {
    v.map_or_else(String::new, |v| format!("{v:.3}"))
}

fn time(ns: Option<i64>) -> String {
    ns.map_or_else(String::new, format_utc)
}

/// Quotes a CSV field when needed.
fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Left-aligned columns separated by two spaces.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let s: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", s.join("  ").trim_end());
    };
    line(header.to_vec(), &mut out);
    for r in rows {
        line(r.iter().map(String::as_str).collect(), &mut out);
    }
    out
}

/// Renders an ingest summary.
pub fn ingest(r: &IngestReport, format: Format) -> Result<String, OutputError> {
    let mut out = String::new();
    match format {
        Format::Json => {
            out = serde_json::to_string_pretty(r)?;
            out.push('\n');
        }
        Format::Csv => {
            out.push_str("file,node,software,compression,lines,events,other,blank,malformed,foreign,first_height,last_height\n");
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
        }
        Format::Table => {
            let lines: u64 = r.files.iter().map(|f| f.lines).sum();
            let _ = writeln!(
                out,
                "ingested chain {} (chain id from {}) into {} — run {}, {lines} lines in {:.2} s ({:.0} lines/s)",
                r.chain_id, r.chain_id_from, r.redis, r.run_id, r.elapsed_s, r.lines_per_s
            );
            let _ = writeln!(out, "plain-log timestamps read in zone {}\n", r.log_tz);
            let rows: Vec<Vec<String>> = r
                .files
                .iter()
                .map(|f| {
                    let formats: Vec<&str> = f.detected.formats.keys().copied().collect();
                    vec![
                        f.path.display().to_string(),
                        if f.prefixed_nodes.is_empty() {
                            f.node.clone()
                        } else {
                            f.prefixed_nodes
                                .iter()
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(",")
                        },
                        format!("{} ({})", f.detected.software, f.detected.how),
                        format!(
                            "{}{}",
                            formats.join("+"),
                            if f.compression == crate::source::Compression::Gzip {
                                ", gzip"
                            } else {
                                ""
                            }
                        ),
                        f.lines.to_string(),
                        f.events.to_string(),
                        f.malformed.to_string(),
                        f.foreign.to_string(),
                        f.heights
                            .map_or_else(String::new, |(a, b)| format!("{a}–{b}")),
                    ]
                })
                .collect();
            out.push_str(&table(
                &[
                    "log",
                    "node",
                    "software",
                    "format",
                    "lines",
                    "events",
                    "malformed",
                    "foreign",
                    "heights",
                ],
                &rows,
            ));
            for f in &r.files {
                for (what, bad) in [
                    ("malformed", &f.first_malformed),
                    ("foreign", &f.first_foreign),
                ] {
                    if let Some(b) = bad {
                        let _ = writeln!(
                            out,
                            "  {}: first {what} line {} ({}): {}",
                            f.path.display(),
                            b.line,
                            b.reason,
                            b.text
                        );
                    }
                }
                if f.end.unterminated {
                    let _ = writeln!(
                        out,
                        "  {}: last line has no newline (cut short) and was skipped",
                        f.path.display()
                    );
                }
                if let Some(e) = &f.end.gzip_error {
                    let _ = writeln!(
                        out,
                        "  {}: gzip stream cut short or corrupt ({e}); the lines before were read",
                        f.path.display()
                    );
                }
                if let Some(fo) = &f.follow {
                    let _ = writeln!(
                        out,
                        "  {}: followed through {} rotation(s), {} truncation(s)",
                        f.path.display(),
                        fo.rotations,
                        fo.truncations
                    );
                }
            }
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
                let _ = writeln!(
                    out,
                    "rpc {}: {} header times, {} valid/invalid counts, {} heights unanswered{}",
                    rpc.url,
                    rpc.headers,
                    rpc.results,
                    rpc.missing,
                    rpc.first_missing
                        .as_ref()
                        .map_or_else(String::new, |(h, why)| format!(" (first: {h}: {why})"))
                );
            }
        }
    }
    Ok(out)
}

/// Renders stats.
pub fn stats(
    r: &StatsReport,
    format: Format,
    csv_table: CsvTable,
    per_block: bool,
) -> Result<String, OutputError> {
    let mut out = String::new();
    match format {
        Format::Json => {
            let mut v = serde_json::to_value(r)?;
            if let Some(o) = v.as_object_mut() {
                if !per_block {
                    o.remove("per_block");
                }
                o.insert(
                    "block_time_sources".into(),
                    serde_json::Value::String(r.time_sources.describe()),
                );
            }
            out = serde_json::to_string_pretty(&v)?;
            out.push('\n');
        }
        Format::Csv => match csv_table {
            CsvTable::Blocks => {
                out.push_str("height,txs,valid_txs,block_time,tps\n");
                for b in &r.per_block {
                    let _ = writeln!(
                        out,
                        "{},{},{},{},{}",
                        b.height,
                        opt(b.txs),
                        opt(b.valid),
                        f3(b.block_time_s),
                        f3(b.tps())
                    );
                }
            }
            CsvTable::Windows => {
                out.push_str(
                    "from,to,blocks,txs,start_utc,end_utc,interval_s,tps,cumulative_tps\n",
                );
                for w in &r.windows {
                    let _ = writeln!(
                        out,
                        "{},{},{},{},{},{},{:.3},{},{}",
                        w.from,
                        w.to,
                        w.blocks,
                        w.txs,
                        time(w.start_ns),
                        time(w.end_ns),
                        w.interval_s,
                        f3(w.tps),
                        f3(w.cumulative_tps)
                    );
                }
            }
            CsvTable::Histogram => {
                out.push_str("txs_from,txs_to,blocks\n");
                for b in &r.histogram {
                    let _ = writeln!(out, "{},{},{}", b.lo, b.hi, b.blocks);
                }
            }
            CsvTable::Summary => {
                out.push_str("metric,value\n");
                for (k, v) in summary(r) {
                    let _ = writeln!(out, "{},{}", csv(k), csv(&v));
                }
            }
        },
        Format::Table => {
            let _ = writeln!(
                out,
                "chain {}: heights {}–{} ({} blocks, {} missing)",
                r.chain_id, r.from, r.to, r.blocks, r.missing_heights
            );
            let _ = writeln!(out, "block times: {}\n", r.time_sources.describe());
            let rows: Vec<Vec<String>> = summary(r)
                .into_iter()
                .map(|(k, v)| vec![k.to_string(), v])
                .collect();
            out.push_str(&table(&["metric", "value"], &rows));
            out.push_str("\ntxs per block\n");
            let most = r
                .histogram
                .iter()
                .map(|b| b.blocks)
                .max()
                .unwrap_or(0)
                .max(1);
            let rows: Vec<Vec<String>> = r
                .histogram
                .iter()
                .map(|b| {
                    let label = if b.lo == b.hi {
                        b.lo.to_string()
                    } else {
                        format!("{}–{}", b.lo, b.hi)
                    };
                    let bar_len = usize::try_from(b.blocks * 40 / most).unwrap_or(40);
                    vec![label, b.blocks.to_string(), "#".repeat(bar_len)]
                })
                .collect();
            out.push_str(&table(&["txs", "blocks", ""], &rows));
            let _ = writeln!(out, "\nper window of {} blocks", r.window);
            let rows: Vec<Vec<String>> = r
                .windows
                .iter()
                .map(|w| {
                    vec![
                        format!("{}–{}", w.from, w.to),
                        w.txs.to_string(),
                        time(w.start_ns),
                        time(w.end_ns),
                        format!("{:.3}", w.interval_s),
                        f3(w.tps),
                        f3(w.cumulative_tps),
                    ]
                })
                .collect();
            out.push_str(&table(
                &[
                    "heights",
                    "txs",
                    "time start (UTC)",
                    "time end (UTC)",
                    "interval s",
                    "tps",
                    "cumulative tps",
                ],
                &rows,
            ));
        }
    }
    Ok(out)
}

fn summary(r: &StatsReport) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("blocks", r.blocks.to_string()),
        ("transactions", r.txs.to_string()),
        ("valid", r.valid.to_string()),
        ("invalid", r.invalid.to_string()),
        (
            "blocks without valid/invalid split",
            r.results_unknown_blocks.to_string(),
        ),
        ("blocks without tx count", r.txs_unknown_blocks.to_string()),
        ("empty blocks", r.empty_blocks.to_string()),
        ("tps", f3(r.tps)),
        ("seconds with block times", format!("{:.3}", r.seconds)),
    ];
    if let Some(d) = &r.block_time {
        v.extend([
            ("block time p50 s", format!("{:.3}", d.p50)),
            ("block time p95 s", format!("{:.3}", d.p95)),
            ("block time max s", format!("{:.3}", d.max)),
            ("block time mean s", format!("{:.3}", d.mean)),
            ("block times measured", d.count.to_string()),
        ]);
    }
    v
}

#[cfg(test)]
mod tests;
