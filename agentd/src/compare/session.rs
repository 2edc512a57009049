//! A step's node kept alive across the rounds of a comparison: started,
//! funded and warmed once, its knee searched once, then paused (SIGSTOP to
//! its CometBFT and abcid) while other steps are measured and resumed
//! (SIGCONT) for its own windows. A paused node costs the machine nothing,
//! so it cannot disturb the step being measured, and it keeps its warm
//! caches and funded senders. Its chain grows over the rounds: drift that
//! the interleaving spreads over every step alike.

use std::path::Path;
use std::time::Duration;

use alloy_primitives::{B256, U256};
use anyhow::{Context, Result};

use super::conditions::{NodeConditions, CONFIG_KEYS};
use super::ladder::Step;
use super::node::{AfterRun, MeasuredNode, RunRecords};
use super::report::Settings;
use super::{etl, profile};
use crate::accounts::KeySet;
use crate::devnet::Devnet;
use crate::eth::EthClient;
use crate::load::scenario::Scenario;
use crate::progress;
use crate::saturate::{EvmProbe, EvmProbeConfig, Probe, StepMeasure, WindowExtras};

/// Seconds of load under the profiled blocks.
const PROFILE_SECS: f64 = 5.0;

/// A step's devnet with its probe.
pub struct StepNode {
    /// The devnet (stopped when dropped); `None` for a live node.
    pub net: Option<Devnet>,
    /// The load on it.
    pub probe: EvmProbe,
    /// What the node calls itself.
    pub version: String,
    /// The step's CometBFT settings as its `config.toml` holds them
    /// (`KEY=VALUE`); empty for a live node and for a step that sets none.
    pub comet: Vec<String>,
    paused: bool,
}

impl StepNode {
    /// Starts `step`'s devnet in `dir`, funds the senders and connects the
    /// probe (which deploys the scenario's contracts).
    pub async fn start(
        step: &Step,
        settings: &Settings,
        warmup: Duration,
        scenario: Option<Scenario>,
        dir: &Path,
    ) -> Result<Self> {
        let net = Devnet::start_private(dir, |o| {
            o.patches = step.patches.clone();
            if let Some(t) = &settings.timeout_commit {
                o.timeout_commit = t.clone();
            }
            if let Some(gas) = settings.block_gas_limit {
                o.block_gas_limit = gas;
            }
            o.abcid = step.abcid.clone();
            o.set.extend(step.comet.iter().cloned());
        })
        .await
        .context("starting the devnet")?;
        let keys: Vec<&str> = step
            .comet
            .iter()
            .filter_map(|s| s.split('=').next())
            .collect();
        let comet = net.state.cometbft_settings(&keys)?;
        let client = EthClient::new(&net.state.web3_url(), Duration::from_secs(10))?;
        let version: String = client
            .call("web3_clientVersion", serde_json::json!([]))
            .await?;
        let keys = fund(&client, &net, settings.senders, dir).await?;
        let pids = [net.state.abcid_pid, net.state.cometbft_pid];
        let probe = EvmProbe::connect(EvmProbeConfig {
            comet_rpc: Some(net.state.rpc_url()),
            node_pids: pids.into_iter().flatten().collect(),
            warmup,
            scenario,
            ..EvmProbeConfig::new(vec![net.state.web3_url()], keys)
        })
        .await?;
        Ok(Self {
            net: Some(net),
            probe,
            version,
            comet,
            paused: false,
        })
    }

    /// A running node measured as it is (the probe's first endpoint):
    /// never paused.
    pub async fn live(probe: EvmProbeConfig) -> Result<Self> {
        let web3 = probe
            .endpoints
            .first()
            .context("a live node's web3 endpoint")?;
        let client = EthClient::new(web3, Duration::from_secs(10))?;
        let version: String = client
            .call("web3_clientVersion", serde_json::json!([]))
            .await?;
        let probe = EvmProbe::connect(probe).await?;
        Ok(Self {
            net: None,
            probe,
            version,
            comet: Vec::new(),
            paused: false,
        })
    }

    fn signal(&self, sig: libc::c_int) -> Result<()> {
        let Some(net) = &self.net else {
            return Ok(());
        };
        for pid in [net.state.cometbft_pid, net.state.abcid_pid]
            .into_iter()
            .flatten()
        {
            let pid = libc::pid_t::try_from(pid).context("a PID out of range")?;
            // SAFETY: kill(2) with a PID this process started and a valid signal.
            if unsafe { libc::kill(pid, sig) } != 0 {
                let err = std::io::Error::last_os_error();
                anyhow::bail!("cannot signal the node's process {pid}: {err}");
            }
        }
        Ok(())
    }
}

impl Probe for StepNode {
    async fn step(&mut self, rate: f64, seconds: f64) -> Result<StepMeasure> {
        self.probe.step(rate, seconds).await
    }

    fn rpc_retries(&self) -> u64 {
        self.probe.rpc_retries()
    }
}

impl MeasuredNode for StepNode {
    async fn window(&mut self, rate: f64, seconds: f64) -> Result<(StepMeasure, WindowExtras)> {
        self.probe.step_with_extras(rate, seconds).await
    }

    /// Stops the devnet's processes where they are (SIGSTOP); a live node
    /// is left alone.
    fn pause(&mut self) -> Result<()> {
        self.signal(libc::SIGSTOP)?;
        self.paused = true;
        Ok(())
    }

    /// Lets them go on (SIGCONT).
    fn resume(&mut self) -> Result<()> {
        self.signal(libc::SIGCONT)?;
        self.paused = false;
        Ok(())
    }

    fn version(&self) -> &str {
        &self.version
    }

    fn comet(&self) -> &[String] {
        &self.comet
    }

    /// Read from the node; for a devnet, its `config.toml` too.
    async fn conditions(&self) -> NodeConditions {
        let config = match &self.net {
            Some(net) => net.state.cometbft_settings(&CONFIG_KEYS),
            None => Ok(Vec::new()),
        };
        let (config, unread) = match config {
            Ok(c) => (c, None),
            Err(e) => (Vec::new(), Some(format!("config.toml: {e:#}"))),
        };
        let web3 = self.probe.web3_url();
        let mut c = NodeConditions::read(web3, self.probe.comet_rpc(), &config).await;
        c.unread.extend(unread);
        c
    }

    /// A devnet's logs through the etl, and its profiles when asked; a
    /// live node's logs are not feth's to read.
    async fn after_run(&mut self, ctx: AfterRun<'_>) -> Result<RunRecords> {
        let Some(net) = &self.net else {
            return Ok(RunRecords::default());
        };
        let (first, last) = (ctx.window.first_height + 1, ctx.window.last_height);
        let etl = etl::window(&net.state, first, last).await?;
        let records = match ctx.profile_blocks > 0 {
            true => self.profiled(&ctx).await?,
            false => RunRecords::default(),
        };
        Ok(RunRecords {
            etl: Some(etl),
            ..records
        })
    }
}

impl StepNode {
    /// Profiles a few blocks of the step under the overload: abcid's block
    /// profiles (under `<out>/<step>/`), CometBFT's own CPU over the same
    /// load (under `<out>/cometbft/<step>/`) and the whole node's profile
    /// of both (in `<out>/node/<step>/`). What could not be taken is left
    /// out with a warning; the comparison goes on.
    async fn profiled(&mut self, ctx: &AfterRun<'_>) -> Result<RunRecords> {
        let Some(net) = &self.net else {
            return Ok(RunRecords::default());
        };
        let state = net.state.clone();
        let folder = file_name(&ctx.step.name);
        let abcid_dir = ctx.out.join(&folder);
        let comet_dir = ctx.out.join("cometbft").join(&folder);
        let load = self.probe.step(ctx.rate, PROFILE_SECS);
        let abcid = profile::capture(&state, ctx.profile_blocks, &abcid_dir, load);
        let comet = profile::capture_cometbft(&state, &comet_dir);
        let (abcid, comet) = tokio::join!(abcid, comet);
        let warn = |what: &str, why: String| {
            let step = &ctx.step.name;
            progress::println(ctx.bar, format!("warning: step {step}: no {what}: {why}"));
        };
        let abcid = match abcid? {
            profile::Captured::Profiles(dir) => Some(dir),
            profile::Captured::Nothing(why) => {
                warn("flamegraph", why);
                None
            }
        };
        let (cometbft, window) = comet
            .map_err(|e| warn("CometBFT profile", format!("{e:#}")))
            .ok()
            .unzip();
        let node = match (&abcid, window) {
            (Some(abcid), Some(window)) => {
                let title = format!("step {}: the whole node, abcid and CometBFT", ctx.step.name);
                let dir = ctx.out.join("node").join(&folder);
                profile::whole_node(abcid, window, &dir, &title)
                    .map_err(|e| warn("whole-node profile", format!("{e:#}")))
                    .ok()
            }
            _ => None,
        };
        Ok(RunRecords {
            etl: None,
            abcid,
            cometbft,
            node,
        })
    }
}

/// A step name as a file name (`+rwlock` → `plus-rwlock`).
pub fn file_name(step: &str) -> String {
    step.replace('+', "plus-").replace(['/', ' ', '#'], "_")
}

impl Drop for StepNode {
    /// Resumes a paused node so that the devnet's own stop (SIGTERM, then
    /// SIGKILL) finds it running and it exits cleanly.
    fn drop(&mut self) {
        if self.paused {
            let _ = self.signal(libc::SIGCONT);
        }
    }
}

/// The senders, funded from the devnet's root account.
async fn fund(client: &EthClient, net: &Devnet, senders: usize, dir: &Path) -> Result<KeySet> {
    let root = crate::keys::read_key_file(&net.state.root_key())?;
    let (keys, _) = crate::fund::fund_seeded(
        client,
        &root,
        B256::repeat_byte(12),
        senders,
        U256::from(10u64).pow(U256::from(20u64)),
        &dir.join("keys.txt"),
    )
    .await
    .context("funding the senders")?;
    Ok(keys)
}
