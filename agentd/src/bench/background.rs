//! A closed-loop load between a benchmark's funded accounts, run in the
//! background of its measurements until told to stop.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::accounts::KeySet;
use crate::devnet::Devnet;
use crate::load::pick::RateSchedule;
use crate::load::plan::{LoadPlan, Recipients, WorkloadKind};
use crate::load::{self, LoadReport, LoadSettings};

/// A load running in a task of its own.
pub struct BackgroundLoad {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<LoadReport>>,
}

impl BackgroundLoad {
    /// Starts `workload` in a closed loop between `keys` (each pays the
    /// others) on `net`; once stopped it waits up to `wait` for inclusion.
    pub fn start(net: &Devnet, keys: &KeySet, workload: WorkloadKind, wait: Duration) -> Self {
        let mut plan = LoadPlan::transfers(RateSchedule::Closed, keys.len());
        plan.writes = workload.into();
        plan.recipients = Recipients::Existing;
        let mut settings = LoadSettings::new(&net.state.web3_url(), plan);
        settings.wait = wait;
        let (stop, asked) = watch::channel(false);
        settings.stop = Some(asked);
        let task = tokio::spawn(load::run(settings, keys.clone()));
        Self { stop, task }
    }

    /// Whether the load ended on its own (it failed).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Stops sending and returns the report once what is in flight is
    /// included; an error when nothing was.
    pub async fn finish(self) -> Result<LoadReport> {
        let _ = self.stop.send(true);
        let report = self.task.await.context("the load task panicked")??;
        ensure!(report.totals.included > 0, "the load included nothing");
        Ok(report)
    }
}
