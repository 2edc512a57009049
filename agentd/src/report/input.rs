//! Reading the files a report is made of: `feth load --json` runs, `feth
//! compare --json` ladders, `feth saturate --json` searches and `feth etl
//! stats --json --per-block` figures, with an error naming the file and what
//! is wrong with it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use serde_json::Value;

use crate::compare::report::{CompareReport, SCHEMA};
use crate::load::{LoadReport, REPORT_VERSION};
use crate::saturate::SearchReport;

/// One input file of a report.
#[derive(Debug, Clone)]
pub enum RunFile {
    /// A `feth load --json` run.
    Load {
        /// Where it was read from.
        path: PathBuf,
        /// The run.
        report: Box<LoadReport>,
    },
    /// A `feth compare --json` ladder.
    Compare {
        /// Where it was read from.
        path: PathBuf,
        /// The comparison.
        report: Box<CompareReport>,
    },
    /// A `feth saturate --json` search.
    Saturate {
        /// Where it was read from.
        path: PathBuf,
        /// The search.
        report: Box<SearchReport>,
    },
}

/// One block as `feth etl stats --json --per-block` gives it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EtlBlock {
    /// Height.
    pub height: u64,
    /// Transactions the application accepted, when known.
    pub valid: Option<u64>,
    /// Transactions the application refused, when known.
    pub invalid: Option<u64>,
}

#[derive(Deserialize)]
struct EtlStats {
    per_block: Vec<EtlBlock>,
}

/// Parses `text` as JSON, naming `path` and the kind of damage on failure.
fn json(path: &Path, text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Eof => {
                "is truncated: the JSON ends early (an interrupted run or copy?)"
            }
            _ => "is not JSON",
        };
        anyhow::anyhow!(
            "{} {what} ({e}); give a file written by `feth load --json`, `feth compare --json` or `feth saturate --json`",
            path.display()
        )
    })
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Reads one run or comparison file.
pub fn read(path: &Path) -> Result<RunFile> {
    let value = json(path, &read_text(path)?)?;
    let has = |k: &str| value.get(k).is_some();
    let shape = |e: serde_json::Error, kind: &str| {
        anyhow::anyhow!(
            "{} looks like a {kind} report but does not match this feth's format: {e}",
            path.display()
        )
    };
    if has("steps") && has("runs") {
        let schema = value.get("schema").and_then(Value::as_u64).unwrap_or(0);
        if schema != u64::from(SCHEMA) {
            bail!(
                "{} is a feth compare report of schema {schema}; this feth reads schema {SCHEMA} (rerun `feth compare --json` with this feth)",
                path.display()
            );
        }
        let report = serde_json::from_value(value).map_err(|e| shape(e, "feth compare"))?;
        return Ok(RunFile::Compare {
            path: path.to_path_buf(),
            report: Box::new(report),
        });
    }
    if has("totals") && has("series") {
        let version = value.get("version").map_or(Some(1), Value::as_u64);
        match version {
            Some(v) if (1..=u64::from(REPORT_VERSION)).contains(&v) => {}
            Some(v) if v > u64::from(REPORT_VERSION) => bail!(
                "{} is a feth load report of version {v}, newer than this feth reads (1 to {REPORT_VERSION}): use a newer feth",
                path.display()
            ),
            _ => bail!(
                "{} is a feth load report of an unknown older version ({}); this feth reads versions 1 to {REPORT_VERSION}: rerun `feth load --json`",
                path.display(),
                value.get("version").map_or(String::new(), Value::to_string)
            ),
        }
        let report = serde_json::from_value(value).map_err(|e| shape(e, "feth load"))?;
        return Ok(RunFile::Load {
            path: path.to_path_buf(),
            report: Box::new(report),
        });
    }
    if has("outcome") && has("steps") {
        let report = serde_json::from_value(value).map_err(|e| shape(e, "feth saturate"))?;
        return Ok(RunFile::Saturate {
            path: path.to_path_buf(),
            report: Box::new(report),
        });
    }
    bail!(
        "{} is JSON but neither a `feth load --json`, a `feth compare --json` nor a `feth saturate --json` report (no `totals`/`series`, `runs`/`steps` nor `outcome`/`steps`)",
        path.display()
    )
}

/// Reads the per-block figures of `feth etl stats --json --per-block`.
pub fn read_etl(path: &Path) -> Result<Vec<EtlBlock>> {
    let value = json(path, &read_text(path)?)?;
    let stats: EtlStats = serde_json::from_value(value).with_context(|| {
        format!(
            "{} is not `feth etl stats --json --per-block` output (it needs `per_block`)",
            path.display()
        )
    })?;
    Ok(stats.per_block)
}
