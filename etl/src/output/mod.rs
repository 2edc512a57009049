//! Rendering of ingest summaries and stats as tables, CSV or JSON.

mod ingest;
mod stats;
mod table;

use crate::ingest::IngestReport;
use crate::stats::StatsReport;

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

/// Renders an ingest summary.
pub fn ingest(r: &IngestReport, format: Format) -> Result<String, OutputError> {
    match format {
        Format::Json => {
            let mut out = serde_json::to_string_pretty(r)?;
            out.push('\n');
            Ok(out)
        }
        Format::Csv => ingest::csv_text(r),
        Format::Table => Ok(ingest::table_text(r)),
    }
}

/// Renders stats.
pub fn stats(
    r: &StatsReport,
    format: Format,
    csv_table: CsvTable,
    per_block: bool,
) -> Result<String, OutputError> {
    match format {
        Format::Json => stats::json_text(r, per_block),
        Format::Csv => Ok(stats::csv_text(r, csv_table)),
        Format::Table => Ok(stats::table_text(r)),
    }
}

#[cfg(test)]
mod tests;
