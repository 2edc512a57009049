//! `feth compare`: is the chain faster after a change, by how much, and is
//! that more than noise?
//!
//! - [`ladder`]: the steps.
//! - [`node`]: the seam between the round loop and a step's node;
//!   [`session`]: feth's devnet or a live node behind it, kept alive
//!   (paused between its windows) across the rounds; [`deploy`]: a live
//!   node redeployed before each of a step's runs, and [`ready`]: waiting
//!   until it is back.
//! - [`run`]: setting each step up once, then short interleaved rounds of
//!   two windows each (saturation, fixed rate), with [`etl`] (a run's logs
//!   through the etl) and [`profile`] (profiled blocks, differential
//!   flamegraphs).
//! - [`report`]: the data model (machine, conditions, steps);
//!   [`conditions`]: what each step's node ran under, read from it;
//!   [`machine`]: whether other processes took the machine meanwhile.
//! - [`step`]: one step's setup, runs and summary.
//! - [`summary`]: per-step levels and paired log-ratios with Holm's verdicts
//!   ([`crate::stats`]).
//! - [`render`]: the report as aligned text tables or GitHub Markdown.
//! - [`gate`](mod@gate): the regression gate's three answers;
//!   [`verdict`]: what it decided, and why.

pub mod conditions;
pub mod deploy;
pub mod etl;
pub mod gate;
pub mod ladder;
pub mod machine;
pub mod node;
pub mod profile;
pub mod ready;
pub mod render;
pub mod report;
pub mod run;
pub mod session;
pub mod step;
pub mod summary;
pub mod verdict;

#[cfg(test)]
pub(crate) mod testing;

pub use gate::{gate, GateConfig};
pub use report::{CompareReport, Environment, Kind, ReferenceRun, Settings};
pub use step::{Metric, StepRun, StepSetup, StepSummary};
pub use summary::summarise;
pub use verdict::{GateVerdict, Pairing};
