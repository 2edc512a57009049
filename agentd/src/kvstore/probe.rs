//! [`KvProbe`]: one saturation step against a kvstore node of its own —
//! warm-up, a measured window at a fixed open-loop rate, then drain.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use feth_comet::rpc::Rpc;

use super::load::{self, OpenLoop, SendConfig, SendMark, SendWindow};
use super::node::{KvNode, KvNodeConfig};
use super::window::{block_window, BlockWindow};
use super::wire::MAX_BATCH;
use crate::procstat;
use crate::saturate::{Clock, MachineShare, Probe, StepMeasure};

/// Default requests in flight.
pub const DEFAULT_SLOTS: usize = 64;
/// Default warm-up before each step's window.
pub const DEFAULT_WARMUP: Duration = Duration::from_secs(3);
/// Default longest wait for the mempool to empty after a step.
pub const DEFAULT_DRAIN_WAIT: Duration = Duration::from_secs(60);
/// Default time before a request is given up.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// `/block_results` requests in flight after a step.
const RESULTS_IN_FLIGHT: usize = 4;
/// Longest wait past the window for a block, when the window held none.
const BLOCK_WAIT: Duration = Duration::from_secs(60);

/// The kvstore reference: its node and how steps are run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvReferenceConfig {
    /// The node (folder, consensus, mempool and RPC settings).
    pub node: KvNodeConfig,
    /// Requests in flight at most.
    pub slots: usize,
    /// Sending before each window opens.
    pub warmup: Duration,
    /// Longest wait for the mempool to empty after each step.
    pub drain_wait: Duration,
    /// Time before a request is given up (its transactions count as refused).
    pub request_timeout: Duration,
}

impl KvReferenceConfig {
    /// A node in `dir` with the abcid devnet's settings, and the defaults above.
    pub fn new(dir: &Path) -> Self {
        Self {
            node: KvNodeConfig::new(dir),
            slots: DEFAULT_SLOTS,
            warmup: DEFAULT_WARMUP,
            drain_wait: DEFAULT_DRAIN_WAIT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

/// The node a kvstore probe loads: its RPC, its processes (whose CPU is
/// the node's), its log; and the node itself when the probe started it.
pub struct KvTarget {
    /// CometBFT's RPC URL.
    pub rpc_url: String,
    /// The node's processes.
    pub pids: Vec<u32>,
    /// The node's log, named in errors.
    pub log: PathBuf,
    own: Option<KvNode>,
}

impl KvTarget {
    /// A node someone else runs (a recipe devnet of the kvstore app).
    pub fn running(rpc_url: String, pids: Vec<u32>, log: PathBuf) -> Self {
        Self {
            rpc_url,
            pids,
            log,
            own: None,
        }
    }

    fn own(node: KvNode) -> Self {
        Self {
            rpc_url: node.rpc_url(),
            pids: vec![node.pid()],
            log: node.log().to_path_buf(),
            own: Some(node),
        }
    }
}

/// CometBFT's own kvstore application under open-loop load: the consensus
/// engine's ceiling on this machine. Owns its node, or loads a running one.
pub struct KvProbe {
    node: KvTarget,
    rpc: Rpc,
    http: reqwest::Client,
    cfg: KvReferenceConfig,
    runs: u64,
    last_sends: Option<SendWindow>,
}

/// Counters at one edge of the window.
struct Mark {
    at: Instant,
    machine: Option<procstat::MachineCpu>,
    height: u64,
    mempool: u64,
    agent_cpu: Duration,
    node_cpu: Duration,
    sends: SendMark,
}

impl KvProbe {
    /// Starts the node and waits for its first blocks.
    pub async fn start(cfg: KvReferenceConfig) -> Result<Self> {
        let node = KvNode::start(cfg.node.clone()).await?;
        Self::connect(KvTarget::own(node), cfg)
    }

    /// Loads `node` as `cfg` says (its `node` settings unused).
    pub fn connect(node: KvTarget, cfg: KvReferenceConfig) -> Result<Self> {
        // One height per `/block_results` request, several at once: the
        // node encodes each large block's results in a goroutine of its own.
        let rpc = Rpc::new(&node.rpc_url, 1, RESULTS_IN_FLIGHT)?;
        let http = load::client(cfg.slots, cfg.request_timeout)?;
        Ok(Self {
            node,
            rpc,
            http,
            cfg,
            runs: 0,
            last_sends: None,
        })
    }

    /// The node's CometBFT RPC URL.
    pub fn rpc_url(&self) -> &str {
        &self.node.rpc_url
    }

    /// The node it started, if it started one.
    pub fn own_node(&self) -> Option<&KvNode> {
        self.node.own.as_ref()
    }

    /// What the sender did in the last step's window: sent, accepted, and
    /// refused by reason.
    pub fn last_sends(&self) -> Option<&SendWindow> {
        self.last_sends.as_ref()
    }

    async fn mark(&self, load: &OpenLoop) -> Result<Mark> {
        let sends = load.mark();
        let agent_cpu = procstat::process_cpu();
        let mut node_cpu = Duration::ZERO;
        for pid in &self.node.pids {
            node_cpu += procstat::pid_cpu(*pid)?;
        }
        let machine = procstat::machine_cpu().ok();
        let at = Instant::now();
        let height = self.rpc.status().await?.latest_height;
        let mempool = self.rpc.mempool().await?.txs;
        Ok(Mark {
            at,
            machine,
            height,
            mempool,
            agent_cpu,
            node_cpu,
            sends,
        })
    }

    /// Waits (bounded) until a block past `height` is committed.
    async fn wait_for_block_after(&self, height: u64) -> Result<()> {
        let deadline = Instant::now() + BLOCK_WAIT;
        while self.rpc.status().await?.latest_height <= height {
            if Instant::now() > deadline {
                bail!(
                    "the kvstore node committed no block in the window nor {} s after it; see {}",
                    BLOCK_WAIT.as_secs(),
                    self.node.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// The window's blocks, from the node's RPC.
    async fn blocks(&self, first: u64, last: u64) -> Result<BlockWindow> {
        let heights: Vec<u64> = (first..=last).collect();
        let (facts, missing) = self.rpc.fetch(&heights, &heights[1..]).await?;
        if let Some((h, why)) = missing.first() {
            bail!("the kvstore node cannot tell block {h} of the window: {why}");
        }
        block_window(&facts, first, last)
    }

    /// Warm-up, then the window: its edges and what the sender did in it.
    async fn window(&self, load: &OpenLoop, seconds: f64) -> Result<(Mark, Mark, SendWindow)> {
        tokio::time::sleep(self.cfg.warmup).await;
        let from = self.mark(load).await?;
        tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
        self.wait_for_block_after(from.height).await?;
        let to = self.mark(load).await?;
        let sends = load.window(&from.sends, &to.sends);
        Ok((from, to, sends))
    }

    /// The step's figures, from the mempool's `backlog` before the load,
    /// the window's edges and its blocks (read once
    /// the sender has stopped: large blocks' results cost a loaded node
    /// seconds).
    async fn measure(
        &self,
        rate: f64,
        backlog: Option<u64>,
        from: &Mark,
        to: &Mark,
        sends: &SendWindow,
    ) -> Result<StepMeasure> {
        let blocks = self.blocks(from.height, to.height).await?;
        let us = |cpu: Duration, n: u64| cpu.as_secs_f64() * 1e6 / n as f64;
        Ok(StepMeasure {
            offered_tps: rate,
            sent_tps: sends.sent as f64 / sends.seconds,
            committed_tps: blocks.committed_tps,
            clock: Clock::CometbftHeaders,
            first_height: from.height,
            last_height: to.height,
            block_time_p50_ms: blocks.block_time_p50_ms,
            block_time_p95_ms: blocks.block_time_p95_ms,
            mempool_start: Some(from.mempool),
            mempool_end: Some(to.mempool),
            schedule_lag_p50_ms: sends.lag_p50_ms,
            schedule_lag_p99_ms: sends.lag_p99_ms,
            // No sender here waits for an answer before its next send: the
            // whole lag is the agent's.
            agent_lag_p99_ms: sends.lag_p99_ms,
            agent_cpu_us_per_tx: us(
                to.agent_cpu.saturating_sub(from.agent_cpu),
                sends.sent.max(1),
            ),
            slots_busy: sends.slots_busy,
            // The node turned these away (its mempool full); the kvstore
            // sender does not retry them.
            backoffs: sends.rejected.values().sum(),
            node_cpu_us_per_tx: (blocks.txs > 0)
                .then(|| us(to.node_cpu.saturating_sub(from.node_cpu), blocks.txs)),
            valid: blocks.valid,
            invalid: Some(blocks.invalid),
            gas_per_sec: None,
            reads: None,
            machine: from.machine.zip(to.machine).map(|machine| {
                let ours = to.node_cpu.saturating_sub(from.node_cpu)
                    + to.agent_cpu.saturating_sub(from.agent_cpu);
                let wall = to.at.duration_since(from.at).as_secs_f64();
                MachineShare::between(machine, Some(ours), wall)
            }),
            backlog,
        })
    }

    /// Waits (bounded by `drain_wait`) until the mempool is empty.
    async fn drain(&self) {
        let deadline = Instant::now() + self.cfg.drain_wait;
        loop {
            match self.rpc.mempool().await {
                Ok(m) if m.txs == 0 => return,
                Ok(m) if Instant::now() > deadline => {
                    tracing::warn!(
                        "kvstore mempool still holds {} txs after the drain wait",
                        m.txs
                    );
                    return;
                }
                Err(e) if Instant::now() > deadline => {
                    tracing::warn!("kvstore mempool unknown after the drain wait: {e}");
                    return;
                }
                _ => {}
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Probe for KvProbe {
    /// Sends `k<step>-<seq>=v` transactions at `rate` for the warm-up and
    /// `seconds` more (longer if the window held no block yet), then stops
    /// sending and drains. Committed TPS by CometBFT header times; the node's
    /// CPU is the whole CometBFT process (consensus, kvstore, RPC); the
    /// agent's CPU is this whole process; an agent CPU per transaction counts
    /// at least one transaction.
    async fn step(&mut self, rate: f64, seconds: f64) -> Result<StepMeasure> {
        if !(seconds.is_finite() && seconds > 0.0) {
            bail!("step of {seconds} s: expected a positive number of seconds");
        }
        self.runs += 1;
        let backlog = self.rpc.mempool().await.ok().map(|m| m.txs);
        let load = OpenLoop::start(
            self.http.clone(),
            SendConfig {
                url: self.node.rpc_url.clone(),
                rate,
                slots: self.cfg.slots,
                batch: MAX_BATCH,
                run: self.runs,
            },
        )?;
        let window = self.window(&load, seconds).await;
        let stopped = load.stop().await;
        let measured = match window {
            Ok((from, to, sends)) => self
                .measure(rate, backlog, &from, &to, &sends)
                .await
                .map(|m| (m, sends)),
            Err(e) => Err(e),
        };
        self.drain().await;
        let (measure, sends) = measured.with_context(|| {
            format!(
                "kvstore step at {rate} tx/s (node log: {})",
                self.node.log.display()
            )
        })?;
        stopped?;
        self.last_sends = Some(sends);
        Ok(measure)
    }
}
