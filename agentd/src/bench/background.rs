//! A closed-loop load between a benchmark's funded accounts, run in the
//! background of its measurements until told to stop.

use std::path::Path;
use std::time::Duration;

use alloy_primitives::{B256, U256};
use anyhow::{ensure, Context, Result};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::accounts::KeySet;
use crate::devnet::Devnet;
use crate::eth::EthClient;
use crate::load::pick::RateSchedule;
use crate::load::plan::{LoadPlan, Recipients, WorkloadKind};
use crate::load::{self, LoadReport, LoadSettings};

/// Pays `count` senders derived from the seed `seed` repeated 100 ETH
/// each from `net`'s root key, through `client`, their keys kept in
/// `keys_file`: a benchmark's funded accounts.
pub async fn fund_senders(
    net: &Devnet,
    client: &EthClient,
    seed: u8,
    count: usize,
    keys_file: &Path,
) -> Result<KeySet> {
    let root = crate::keys::read_key_file(&net.state.root_key())?;
    let (keys, _) = crate::fund::fund_seeded(
        client,
        &root,
        B256::repeat_byte(seed),
        count,
        U256::from(10u64).pow(U256::from(20u64)),
        keys_file,
    )
    .await
    .context("funding the senders")?;
    Ok(keys)
}

/// A load running in a task of its own.
pub struct BackgroundLoad {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<LoadReport>>,
}

impl BackgroundLoad {
    /// Starts `workload` in a closed loop between `keys` (each pays the
    /// others) on `net`; once stopped it waits up to `wait` for inclusion.
    pub fn start(net: &Devnet, keys: &KeySet, workload: WorkloadKind, wait: Duration) -> Self {
        let load = (RateSchedule::Closed, workload);
        Self::start_at(&net.state.web3_url(), keys, load, wait)
    }

    /// The same on the node whose web3 endpoint is `web3`, closed loop or
    /// at the fixed rate `schedule` says.
    pub fn start_at(
        web3: &str,
        keys: &KeySet,
        (schedule, workload): (RateSchedule, WorkloadKind),
        wait: Duration,
    ) -> Self {
        let mut plan = LoadPlan::transfers(schedule, keys.len());
        plan.writes = workload.into();
        plan.recipients = Recipients::Existing;
        let mut settings = LoadSettings::new(web3, plan);
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
