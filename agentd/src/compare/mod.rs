//! `feth compare`: is the chain faster after a change, by how much, and is
//! that more than noise?
//!
//! - [`ladder`]: the steps and the interleaved order of their runs.
//! - [`run`]: running them (fresh devnets, knee, measurement), with [`etl`]
//!   (a run's logs through the etl) and [`profile`] (profiled blocks,
//!   differential flamegraphs).
//! - [`report`]: the data model (machine, conditions, runs, per-step summaries).
//! - [`summary`]: per-step statistics over the repeats, ratios paired by round.
//! - [`render`]: the report as an aligned text table or GitHub Markdown.
//! - [`gate`](mod@gate): the regression gate between a baseline and a candidate report;
//!   [`verdict`]: what it decided, and why.

pub mod etl;
pub mod gate;
pub mod ladder;
pub mod profile;
pub mod render;
pub mod report;
pub mod run;
pub mod summary;
pub mod verdict;

#[cfg(test)]
mod testing;

pub use gate::{gate, GateConfig};
pub use report::{
    Change, CompareReport, Environment, Kind, ReferenceRun, Settings, StepRun, StepSummary,
};
pub use summary::summarise;
pub use verdict::{GateVerdict, Outcome};
