//! [`EvmProbe`]: saturation steps against any web3 node, through `feth
//! load`'s engine.
//!
//! A step is one open-loop load run at the step's rate: value transfers
//! between the senders (the state keeps its size). After the warm-up, the
//! window opens at the first block observed and closes at the first block
//! observed `seconds` later; sending stops there, so the committed rate
//! comes from the window's blocks only, never from the drain that follows.
//! Sent transactions, schedule lag, the agent's CPU, busy request slots and
//! back-offs are taken over the same stretch of wall time (the lag of the
//! transactions sent in it: those still queued when sending stops are
//! dropped unsent, and a shortfall shows in the sent rate).
//!
//! - Clock: CometBFT header times (ns) when its RPC is known, given or named
//!   by the node (abcid answers `abcid_cometbftRpc`); otherwise web3 block
//!   timestamps (whole seconds). A node that names none is no error.
//! - Mempool: the larger of CometBFT's `/num_unconfirmed_txs` and the node's
//!   web3 `txpool_status` (pending + queued), of those that answer; unknown
//!   (`None`, printed `?`) when neither does. CometBFT's `/status` does not
//!   name its mempool type: with `flood` the transactions wait in CometBFT
//!   and its count is right; with `mempool.type = "app"` (Cosmos EVM and
//!   other app-side mempools) CometBFT says 0 while the application's
//!   txpool holds them. The larger count is right in both.
//! - RPC reads are retried over transient transport errors (a reset
//!   connection, refused, a timeout; see [`feth_comet::retry`]) and counted
//!   ([`Probe::rpc_retries`]): one reset does not end a search.
//! - Valid/invalid: CometBFT's `/block_results`; over web3 every transaction
//!   of a block counts as valid and invalid is unknown.
//! - Between steps: up to `drain` for every accepted transaction to be in a
//!   block, then up to `drain` for the mempool to empty.

use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::U64;
use anyhow::{ensure, Context, Result};
use feth_comet::rpc::Rpc;
use serde::Deserialize;
use serde_json::json;

use super::probe::{Clock, MachineShare, Probe, StepMeasure, WindowExtras};
use crate::accounts::KeySet;
use crate::blocks::{self, BlockWindow};
use crate::eth::EthClient;
use crate::load::deploy::Signer;
use crate::load::engine::Engine;
use crate::load::hist::LogHist;
use crate::load::pick::RateSchedule;
use crate::load::plan::{LoadPlan, Recipients, DEFAULT_BATCH, DEFAULT_MAX_PARALLELISM};
use crate::load::prepare::{self, Prepared};
use crate::load::report::quantile;
use crate::load::scenario::Scenario;
use crate::load::{self, LoadSettings};
use crate::procstat;

/// How often the mempool is polled while draining.
const DRAIN_POLL: Duration = Duration::from_millis(100);

/// How an [`EvmProbe`] loads the chain.
#[derive(Debug, Clone)]
pub struct EvmProbeConfig {
    /// web3 endpoints; senders are spread across them, blocks are read from the first.
    pub endpoints: Vec<String>,
    /// The senders, all of them funded (one transaction in flight each).
    pub keys: KeySet,
    /// Load before each step's window.
    pub warmup: Duration,
    /// CometBFT's RPC; when `None` it is asked of the node (`abcid_cometbftRpc`).
    pub comet_rpc: Option<String>,
    /// PIDs of the node's processes, for its CPU per committed transaction.
    pub node_pids: Vec<u32>,
    /// Requests in flight at most.
    pub max_parallelism: usize,
    /// Transactions (of different senders) per JSON-RPC batch request.
    pub batch: usize,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Longest wait after a step for inclusion, and again for an empty mempool.
    pub drain: Duration,
    /// The traffic of each step (its writes, reads and senders); `None`:
    /// value transfers between the senders, no reads. Its contracts are
    /// deployed once, when the probe connects.
    pub scenario: Option<Scenario>,
}

impl EvmProbeConfig {
    /// `keys` loading `endpoints`: 3 s warm-up, CometBFT's RPC asked of the
    /// node, no node PIDs, `feth load`'s default parallelism and batch, 10 s
    /// requests, 60 s drain.
    pub fn new(endpoints: Vec<String>, keys: KeySet) -> Self {
        Self {
            endpoints,
            keys,
            warmup: Duration::from_secs(3),
            comet_rpc: None,
            node_pids: Vec::new(),
            max_parallelism: DEFAULT_MAX_PARALLELISM,
            batch: DEFAULT_BATCH,
            timeout: Duration::from_secs(10),
            drain: Duration::from_secs(60),
            scenario: None,
        }
    }
}

/// A probe of any web3 node (see the module docs).
pub struct EvmProbe {
    cfg: EvmProbeConfig,
    client: Arc<EthClient>,
    comet: Option<Rpc>,
    txpool: bool,
    clock_source: String,
    /// Retries of the load runs of the steps so far.
    load_retries: u64,
    /// The scenario's contracts, deployed once for every step.
    prepared: Option<Prepared>,
}

#[derive(Deserialize)]
struct TxpoolStatus {
    pending: U64,
    queued: U64,
}

/// The engine's counters, the agent's and the node's CPU and the mempool at
/// one block boundary.
struct Mark {
    at: Instant,
    height: u64,
    sent: u64,
    backoffs: u64,
    slots_full: Duration,
    cpu: Duration,
    node_cpu: Option<Duration>,
    /// The whole machine's CPU (`None` where `/proc/stat` cannot be read).
    machine: Option<procstat::MachineCpu>,
    mempool: Option<u64>,
    /// Schedule lag (total, the agent's own) of every first submission so far.
    lag: (LogHist, LogHist),
    /// Latency to commit of every inclusion so far.
    latency: LogHist,
}

impl EvmProbe {
    /// Connects to the first endpoint and settles the clock and the mempool
    /// source (see the module docs). A `comet_rpc` given that does not answer
    /// is an error; one the node names that does not answer is not.
    pub async fn connect(cfg: EvmProbeConfig) -> Result<Self> {
        ensure!(
            !cfg.keys.is_empty(),
            "the probe needs at least one funded sender"
        );
        let url = cfg
            .endpoints
            .first()
            .context("give at least one web3 endpoint (--network)")?;
        let client = Arc::new(EthClient::new(url, cfg.timeout)?);
        client
            .block_number()
            .await
            .with_context(|| format!("cannot reach the web3 node at {url}"))?;
        let (comet, clock_source) =
            crate::blocks::discover_comet(&client, cfg.comet_rpc.as_deref()).await?;
        let txpool = txpool_count(&client).await.is_some();
        let prepared = match &cfg.scenario {
            Some(s) => Some(prepare_on(&client, &cfg.keys, s).await?),
            None => None,
        };
        Ok(Self {
            prepared,
            cfg,
            client,
            comet,
            txpool,
            clock_source,
            load_retries: 0,
        })
    }

    /// The clock committed rates are computed with.
    pub fn clock(&self) -> Clock {
        match self.comet {
            Some(_) => Clock::CometbftHeaders,
            None => Clock::Web3Timestamps,
        }
    }

    /// Which clock, read where, and how that was decided.
    pub fn clock_source(&self) -> &str {
        &self.clock_source
    }

    /// The web3 endpoint blocks are read from (the first).
    pub fn web3_url(&self) -> &str {
        self.cfg.endpoints.first().map_or("", String::as_str)
    }

    /// The node's processes from now on (a redeployed node runs new ones).
    pub fn set_node_pids(&mut self, pids: Vec<u32>) {
        self.cfg.node_pids = pids;
    }

    /// The CometBFT RPC in use, if any.
    pub fn comet_rpc(&self) -> Option<&str> {
        self.comet.as_ref().map(Rpc::url)
    }

    async fn height(&self) -> Result<u64> {
        Ok(match &self.comet {
            Some(rpc) => rpc.status().await?.latest_height,
            None => self.client.block_number().await?,
        })
    }

    /// Transactions waiting in the node's mempool (see the module docs);
    /// `None` when nothing says.
    async fn mempool(&self) -> Option<u64> {
        mempool_count(&self.client, self.comet.as_ref(), self.txpool).await
    }

    async fn window(&self, first: u64, last: u64) -> Result<BlockWindow> {
        match &self.comet {
            Some(rpc) => blocks::comet_window(rpc, first, last, true).await,
            None => blocks::web3_window(&self.client, first, last).await,
        }
    }

    fn node_cpu(&self) -> Result<Option<Duration>> {
        if self.cfg.node_pids.is_empty() {
            return Ok(None);
        }
        let mut total = Duration::ZERO;
        for &pid in &self.cfg.node_pids {
            total += procstat::pid_cpu(pid)
                .with_context(|| format!("node process {pid} (is it still running?)"))?;
        }
        Ok(Some(total))
    }

    /// Waits for the next block, then reads everything a window boundary needs.
    async fn mark(&self, engine: &Engine) -> Result<Mark> {
        let height = blocks::wait_above(self.height().await?, || self.height()).await?;
        let s = engine.snapshot();
        let mark = Mark {
            at: Instant::now(),
            height,
            sent: s.sent,
            backoffs: s.backoffs,
            slots_full: s.slots_full,
            cpu: procstat::process_cpu(),
            node_cpu: self.node_cpu()?,
            machine: procstat::machine_cpu().ok(),
            mempool: None,
            lag: (s.lag_total, s.lag_own),
            latency: s.to_block_time,
        };
        Ok(Mark {
            mempool: self.mempool().await,
            ..mark
        })
    }

    /// The window of a load under way: opened after the warm-up, closed
    /// `seconds` later, each at a block boundary.
    async fn window_marks(&self, engine: &Engine, seconds: f64) -> Result<(Mark, Mark)> {
        tokio::time::sleep_until((engine.started() + self.cfg.warmup).into()).await;
        let open = self.mark(engine).await?;
        tokio::time::sleep_until((open.at + Duration::from_secs_f64(seconds)).into()).await;
        let close = self.mark(engine).await?;
        Ok((open, close))
    }

    fn settings(&self, rate: f64) -> LoadSettings {
        let senders = self.cfg.keys.len();
        let mut plan = LoadPlan::transfers(RateSchedule::Fixed(rate), senders);
        plan.recipients = Recipients::Existing;
        plan.max_parallelism = self.cfg.max_parallelism.max(1);
        plan.batch = self.cfg.batch.max(1);
        if let Some(scenario) = &self.cfg.scenario {
            plan = scenario.apply(plan, senders);
        }
        LoadSettings {
            endpoints: self.cfg.endpoints.clone(),
            timeout: self.cfg.timeout,
            plan,
            wait: self.cfg.drain,
            progress: false,
            stop: None,
            metrics: None,
            comet_rpc: self.comet_rpc().map(str::to_string),
            window_blocks: None,
            series_out: None,
            start_at: None,
            shard: None,
            refill: None,
            reads: self.cfg.scenario.as_ref().and_then(|s| s.reads.clone()),
            prepared: self.prepared.clone(),
        }
    }

    /// Waits (bounded) until the node's mempool is empty, when it says.
    async fn drain(&self) {
        let deadline = Instant::now() + self.cfg.drain;
        while Instant::now() < deadline {
            match self.mempool().await {
                Some(n) if n > 0 => tokio::time::sleep(DRAIN_POLL).await,
                _ => return,
            }
        }
    }

    /// One step, with the figures a comparison also reads: latency to
    /// commit of the window's inclusions and the gas its blocks used per
    /// second.
    pub async fn step_with_extras(
        &mut self,
        rate: f64,
        seconds: f64,
    ) -> Result<(StepMeasure, WindowExtras)> {
        self.run_step(rate, seconds).await
    }

    /// One step; the gas of its blocks is read after the window closes (one
    /// web3 call a block).
    async fn run_step(&mut self, rate: f64, seconds: f64) -> Result<(StepMeasure, WindowExtras)> {
        let backlog = self.mempool().await;
        // A cancelled step drops the load, which stops it.
        let running = load::start(self.settings(rate), self.cfg.keys.clone()).await?;
        let engine = running.engine().clone();
        let marks = self.window_marks(&engine, seconds).await;
        engine.stop();
        let report = running.finish().await?;
        self.load_retries += report.rpc_retries;
        let (open, close) = marks?;
        ensure!(
            report.totals.included > 0,
            "nothing was included at {rate:.0} tx/s; the node refused: {:?}",
            report.totals.rejected_by_reason
        );
        let blocks = self.window(open.height, close.height).await?;
        let gas = self.gas_used(open.height, close.height).await;
        self.drain().await;
        let latency = close.latency.since(&open.latency);
        let extras = WindowExtras {
            latency_p50_ms: (latency.count() > 0).then(|| latency.quantile(0.50)),
            latency_p99_ms: (latency.count() > 0).then(|| latency.quantile(0.99)),
            gas_per_sec: gas.map(|g| g as f64 / blocks.seconds()),
        };
        let measure = StepMeasure {
            reads: report.reads,
            backlog,
            ..self.measure(rate, &open, &close, &blocks, extras.gas_per_sec)
        };
        Ok((measure, extras))
    }

    /// Gas used by blocks `first + 1 ..= last`, from web3; `None` when a
    /// block cannot be read.
    async fn gas_used(&self, first: u64, last: u64) -> Option<u64> {
        let blocks = blocks::web3_blocks(&self.client, first + 1..=last)
            .await
            .ok()?;
        blocks
            .iter()
            .try_fold(0u64, |total, b| total.checked_add(b.gas_used.to::<u64>()))
    }

    fn measure(
        &self,
        rate: f64,
        open: &Mark,
        close: &Mark,
        blocks: &BlockWindow,
        gas_per_sec: Option<f64>,
    ) -> StepMeasure {
        let wall = close.at.duration_since(open.at).as_secs_f64().max(1e-9);
        let sent = close.sent.saturating_sub(open.sent);
        // First submissions between the two marks.
        let lag_total = close.lag.0.since(&open.lag.0);
        let lag_own = close.lag.1.since(&open.lag.1);
        let valid = blocks.valid.unwrap_or(blocks.txs);
        let mut intervals = blocks.intervals_ms();
        intervals.sort_by(f64::total_cmp);
        let per = |d: Duration, n: u64| d.as_secs_f64() * 1e6 / n.max(1) as f64;
        StepMeasure {
            offered_tps: rate,
            sent_tps: sent as f64 / wall,
            committed_tps: valid as f64 / blocks.seconds(),
            clock: self.clock(),
            first_height: open.height,
            last_height: close.height,
            block_time_p50_ms: quantile(&intervals, 0.50),
            block_time_p95_ms: quantile(&intervals, 0.95),
            mempool_start: open.mempool,
            mempool_end: close.mempool,
            schedule_lag_p50_ms: lag_total.quantile(0.50),
            schedule_lag_p99_ms: lag_total.quantile(0.99),
            agent_lag_p99_ms: lag_own.quantile(0.99),
            agent_cpu_us_per_tx: per(close.cpu.saturating_sub(open.cpu), sent),
            slots_busy: close
                .slots_full
                .saturating_sub(open.slots_full)
                .as_secs_f64()
                / wall,
            backoffs: close.backoffs.saturating_sub(open.backoffs),
            node_cpu_us_per_tx: open
                .node_cpu
                .zip(close.node_cpu)
                .map(|(a, b)| per(b.saturating_sub(a), valid)),
            valid,
            invalid: blocks.invalid,
            gas_per_sec,
            reads: None,
            machine: machine_share(open, close, wall),
            backlog: None,
        }
    }
}

/// What the rest of the machine took between two marks `wall` seconds
/// apart: its busy time less the node's and the agent's, over all its cores.
fn machine_share(open: &Mark, close: &Mark, wall: f64) -> Option<MachineShare> {
    let machine = (open.machine?, close.machine?);
    let ours = open
        .node_cpu
        .zip(close.node_cpu)
        .map(|(n0, n1)| n1.saturating_sub(n0) + close.cpu.saturating_sub(open.cpu));
    Some(MachineShare::between(machine, ours, wall))
}

impl Probe for EvmProbe {
    async fn step(&mut self, rate: f64, seconds: f64) -> Result<StepMeasure> {
        Ok(self.run_step(rate, seconds).await?.0)
    }

    fn rpc_retries(&self) -> u64 {
        self.client.retries() + self.comet.as_ref().map_or(0, Rpc::retries) + self.load_retries
    }
}

/// Deploys what `scenario` calls, from the first of `keys`.
async fn prepare_on(client: &EthClient, keys: &KeySet, scenario: &Scenario) -> Result<Prepared> {
    let chain_id = client.chain_id().await?;
    let fee = crate::fees::detect(client).await?;
    let signer = Signer {
        keys,
        chain_id,
        fee,
    };
    prepare::prepare(client, &signer, &scenario.writes, scenario.reads.as_ref())
        .await
        .with_context(|| format!("deploying the contracts of the scenario {}", scenario.name))
}

/// The larger of two figures, of those known (two mempool counts, two
/// windows' shares of the machine).
/// Transactions waiting in a node's mempool: the larger of CometBFT's count
/// (when its RPC is known) and web3's `txpool_status` (when `txpool`, the
/// node answers it); `None` when neither says (see the module docs).
pub(crate) async fn mempool_count(
    client: &EthClient,
    comet: Option<&Rpc>,
    txpool: bool,
) -> Option<u64> {
    let comet = match comet {
        Some(rpc) => rpc.mempool().await.ok().map(|m| m.txs),
        None => None,
    };
    let txpool = match txpool {
        true => txpool_count(client).await,
        false => None,
    };
    larger_count(comet, txpool)
}

/// `txpool_status`'s pending + queued; `None` when the node does not answer it.
pub(crate) async fn txpool_count(client: &EthClient) -> Option<u64> {
    client
        .call::<TxpoolStatus>("txpool_status", json!([]))
        .await
        .ok()
        .map(|s| s.pending.to::<u64>().saturating_add(s.queued.to::<u64>()))
}

pub(crate) fn larger_count<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b > a { b } else { a }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::larger_count;

    #[test]
    fn an_app_side_mempool_is_read_from_the_txpool_and_nothing_known_is_unknown() {
        // mempool.type = "app": CometBFT says 0, the application's txpool knows.
        assert_eq!(larger_count(Some(0), Some(1_245)), Some(1_245));
        // flood: CometBFT holds them.
        assert_eq!(larger_count(Some(300), Some(0)), Some(300));
        assert_eq!(larger_count(None, Some(7)), Some(7));
        assert_eq!(larger_count(Some(7), None), Some(7));
        assert_eq!(larger_count::<u64>(None, None), None);
    }
}
