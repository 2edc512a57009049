//! `feth load --series-out FILE`: the run's figures as JSON lines, written as
//! the run goes (each line flushed), so a run killed at hour 20 still leaves
//! its figures. Lines, each an object with a `kind`:
//! - `start`: format version, configuration and environment;
//! - `second`: one finished second (the fields of the report's `series`);
//! - `window`: one finished window of `--window-blocks` blocks;
//! - `end`: the totals and committed figures, and each read method's
//!   figures when the run read, once the run is over.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::json;

use super::report::ReadsReport;
use super::report::{ChainFigures, Totals};
use super::tally::Line;
use super::{Environment, RunConfig, REPORT_VERSION};

/// An open sidecar file.
#[derive(Debug)]
pub struct Sidecar {
    path: PathBuf,
    out: BufWriter<File>,
}

impl Sidecar {
    /// Creates (or truncates) `path` and writes the `start` line.
    pub fn create(path: &Path, config: &RunConfig, environment: &Environment) -> Result<Self> {
        let file = File::create(path)
            .with_context(|| format!("cannot create the series file {}", path.display()))?;
        let mut me = Self {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
        };
        me.write(&json!({
            "kind": "start",
            "version": REPORT_VERSION,
            "config": config,
            "environment": environment,
        }))?;
        Ok(me)
    }

    fn write<T: Serialize>(&mut self, line: &T) -> Result<()> {
        serde_json::to_writer(&mut self.out, line)?;
        self.out.write_all(b"\n")?;
        Ok(())
    }

    /// Appends `lines` and flushes them to the file.
    pub fn append(&mut self, lines: &[Line]) -> Result<()> {
        for line in lines {
            self.write(line)?;
        }
        self.out
            .flush()
            .with_context(|| format!("cannot write to {}", self.path.display()))
    }

    /// Writes the `end` line (with each read method's figures when the run
    /// read).
    pub fn end(
        &mut self,
        totals: &Totals,
        chain: &ChainFigures,
        reads: Option<&ReadsReport>,
    ) -> Result<()> {
        let mut line = json!({"kind": "end", "totals": totals, "chain": chain});
        if let Some(reads) = reads {
            line["reads"] = serde_json::to_value(reads)?;
        }
        self.write(&line)?;
        self.append(&[])
    }
}
