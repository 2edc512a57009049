//! The seam between the comparison's round loop and a step's node: the loop
//! ([`super::run`]) searches, pilots, measures and pauses through
//! [`MeasuredNode`] alone, so its rules (the pilot's doubling, the rounds'
//! re-runs, the stop rules, one node running at a time) are unit-tested on
//! a model node, while feth's devnets and a live node ([`super::session`])
//! implement it for real. Starting a node is the caller's (a constructor);
//! stopping it is its `Drop`.

use std::future::Future;
use std::path::{Path, PathBuf};

use anyhow::Result;
use indicatif::ProgressBar;

use super::conditions::NodeConditions;
use super::deploy::Phase;
use super::etl::EtlFigures;
use super::ladder::Step;
use crate::saturate::{Probe, StepMeasure, WindowExtras};

/// A step's node, kept alive across the rounds: measured while resumed,
/// paused while the others are. [`Probe::step`] is one unmeasured window
/// (the knee search, the pilot).
pub trait MeasuredNode: Probe + Send {
    /// One measured window at `rate` tx/s for `seconds`, with the figures a
    /// comparison reads besides the [`StepMeasure`].
    fn window(
        &mut self,
        rate: f64,
        seconds: f64,
    ) -> impl Future<Output = Result<(StepMeasure, WindowExtras)>> + Send;

    /// Readies the node for its next window before `phase`: a live node
    /// with a deploy command is redeployed and waited for; others do
    /// nothing.
    fn before(&mut self, _phase: Phase) -> impl Future<Output = Result<()>> + Send {
        async { Ok(()) }
    }

    /// Stops the node where it is, so that it costs the machine nothing
    /// (a node feth does not own is left running).
    fn pause(&mut self) -> Result<()>;

    /// Lets it go on.
    fn resume(&mut self) -> Result<()>;

    /// What the node calls itself (`web3_clientVersion`).
    fn version(&self) -> &str;

    /// The step's own CometBFT settings as its node runs with them
    /// (`KEY=VALUE`); empty where there are none or they cannot be read.
    fn comet(&self) -> &[String];

    /// What the node runs under, read from it.
    fn conditions(&self) -> impl Future<Output = NodeConditions> + Send;

    /// What a run records after its windows, while the node is still
    /// resumed: the etl's figures over the saturation window and, when
    /// asked, profiles. A node with neither logs nor a profiler records
    /// nothing.
    fn after_run(&mut self, _ctx: AfterRun<'_>) -> impl Future<Output = Result<RunRecords>> + Send {
        async { Ok(RunRecords::default()) }
    }
}

/// What [`MeasuredNode::after_run`] is told of the run.
pub struct AfterRun<'a> {
    /// The step.
    pub step: &'a Step,
    /// The saturation window just measured.
    pub window: &'a StepMeasure,
    /// Blocks to profile under `rate` (0: none).
    pub profile_blocks: u32,
    /// The overload, for the profiled load.
    pub rate: f64,
    /// Where profiles go.
    pub out: &'a Path,
    /// Where warnings are printed.
    pub bar: &'a ProgressBar,
}

/// What a run recorded besides its windows; each is `None` when not taken.
#[derive(Debug, Default)]
pub struct RunRecords {
    /// The etl's figures over the saturation window.
    pub etl: Option<EtlFigures>,
    /// The app's block profiles, from its embedded profiler (abcid's, or a
    /// recipe app's).
    pub app: Option<PathBuf>,
    /// CometBFT's capture.
    pub cometbft: Option<PathBuf>,
    /// The whole node's profile, of both.
    pub node: Option<PathBuf>,
    /// A Go node's per-block profile.
    pub go: Option<crate::go_profile::StepGoProfile>,
}
