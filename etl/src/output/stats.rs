//! Rendering of a [`StatsReport`]: a summary, histogram and window table,
//! one CSV table, or JSON.

use std::fmt::Write as _;

use super::table::{csv, f3, opt, table, time};
use super::{CsvTable, OutputError};
use crate::stats::StatsReport;

/// The report as pretty JSON, with the block-time sources spelled out and
/// the per-block figures only when asked for.
pub(super) fn json_text(r: &StatsReport, per_block: bool) -> Result<String, OutputError> {
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
    let mut out = serde_json::to_string_pretty(&v)?;
    out.push('\n');
    Ok(out)
}

/// One of the tables as CSV.
pub(super) fn csv_text(r: &StatsReport, csv_table: CsvTable) -> String {
    match csv_table {
        CsvTable::Blocks => blocks_csv(r),
        CsvTable::Windows => windows_csv(r),
        CsvTable::Histogram => histogram_csv(r),
        CsvTable::Summary => summary_csv(r),
    }
}

/// `height,txs,valid_txs,block_time,tps` (the original feth's).
fn blocks_csv(r: &StatsReport) -> String {
    let mut out = String::from("height,txs,valid_txs,block_time,tps\n");
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
    out
}

fn windows_csv(r: &StatsReport) -> String {
    let mut out =
        String::from("from,to,blocks,txs,start_utc,end_utc,interval_s,tps,cumulative_tps\n");
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
    out
}

fn histogram_csv(r: &StatsReport) -> String {
    let mut out = String::from("txs_from,txs_to,blocks\n");
    for b in &r.histogram {
        let _ = writeln!(out, "{},{},{}", b.lo, b.hi, b.blocks);
    }
    out
}

fn summary_csv(r: &StatsReport) -> String {
    let mut out = String::from("metric,value\n");
    for (k, v) in summary(r) {
        let _ = writeln!(out, "{},{}", csv(k), csv(&v));
    }
    out
}

/// A headline, then the summary, histogram and window tables.
pub(super) fn table_text(r: &StatsReport) -> String {
    let mut out = String::new();
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
    out.push_str(&histogram_table(r));
    let _ = writeln!(out, "\nper window of {} blocks", r.window);
    out.push_str(&windows_table(r));
    out
}

/// Buckets with a bar of up to 40 `#` scaled to the fullest.
fn histogram_table(r: &StatsReport) -> String {
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
    table(&["txs", "blocks", ""], &rows)
}

fn windows_table(r: &StatsReport) -> String {
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
    table(
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
    )
}

/// The summary as (metric, value) rows.
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
