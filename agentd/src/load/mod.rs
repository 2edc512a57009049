//! `feth load`: parallel signed transfers against one or more nodes, with
//! committed TPS read back from the chain.
//!
//! - [`pick`]: sender distribution and rate schedules.
//! - [`engine`]: the sending engine (per-sender ordering, back-off, nonce
//!   recovery, pre-signing, open-loop scheduling); [`ready`]: batch forming;
//!   [`slots`]: how long every request slot was busy.
//! - [`scan`]: reading committed blocks; [`report`]: the accounting.
//!
//! [`run`] runs a load to its end; [`start`] returns it under way
//! ([`Running`]), for a caller that measures while it sends (the
//! saturation search).

pub mod engine;
pub mod erc20;
pub mod ledger;
pub mod metrics;
pub mod pick;
pub mod ready;
pub mod report;
pub mod scan;
pub mod slots;

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alloy_primitives::{B256, U256};
use anyhow::{bail, Context, Result};
use futures::stream::{self, StreamExt};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;

use self::engine::{Engine, EngineConfig, LoadPlan, Recipients, Workload, WorkloadKind};
use self::ledger::TxStatus;
use self::metrics::LoadMetrics;
use self::pick::RateSchedule;
use self::report::{BlockRow, ChainFigures, Latencies, Latency, Second, Totals};
use self::scan::Scanner;
use crate::accounts::KeySet;
use crate::eth::EthClient;
use crate::procstat;
use crate::sign::Fee;

/// Everything a load run needs besides the keys.
#[derive(Debug, Clone)]
pub struct LoadSettings {
    /// Endpoints; senders are spread across them.
    pub endpoints: Vec<String>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// What to send.
    pub plan: LoadPlan,
    /// Longest wait for inclusion after sending stops.
    pub wait: Duration,
    /// Show a live progress line.
    pub progress: bool,
    /// Stop sending once this turns true (or its sender is dropped), as Ctrl-C does;
    /// a closed loop without `--count` or `--duration` runs until then.
    pub stop: Option<tokio::sync::watch::Receiver<bool>>,
    /// Live Prometheus metrics to keep up to date (`feth load --metrics`).
    pub metrics: Option<Arc<LoadMetrics>>,
}

impl LoadSettings {
    /// One endpoint, 10 s request timeout, 60 s inclusion wait, no progress line.
    pub fn new(endpoint: &str, plan: LoadPlan) -> Self {
        Self {
            endpoints: vec![endpoint.to_string()],
            timeout: Duration::from_secs(10),
            plan,
            wait: Duration::from_secs(60),
            progress: false,
            stop: None,
            metrics: None,
        }
    }
}

/// How the run was configured, for the JSON report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunConfig {
    /// Endpoints.
    pub endpoints: Vec<String>,
    /// Senders.
    pub senders: usize,
    /// Concurrent requests.
    pub max_parallelism: usize,
    /// Rate schedule, as given.
    pub schedule: String,
    /// Transactions per account, if bounded.
    pub count: Option<u64>,
    /// Sending time, if bounded.
    pub duration_secs: Option<f64>,
    /// Recipients.
    pub recipients: Recipients,
    /// Workload.
    pub workload: Workload,
    /// Fee model used.
    pub fee: String,
    /// Chain id.
    pub chain_id: u64,
}

/// Where the run happened.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Environment {
    /// feth version.
    pub feth_version: String,
    /// Host name.
    pub host: String,
    /// Logical CPUs of the agent's machine.
    pub cpus: usize,
    /// Unix time the run began.
    pub started_unix: f64,
    /// What the first node calls itself (`web3_clientVersion`: abcid names
    /// its version and the patches in force); empty in version 1 files.
    #[serde(default)]
    pub node: String,
    /// The agent machine's kernel release; empty in version 1 files.
    #[serde(default)]
    pub kernel: String,
}

/// The format version of the JSON `feth load --json` writes. Version 1
/// (files without a `version` field) had no block rows, offered rate or
/// per-second latency.
pub const REPORT_VERSION: u32 = 2;

fn version_one() -> u32 {
    1
}

/// The result of `feth load`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadReport {
    /// Format version ([`REPORT_VERSION`]; 1 when absent).
    #[serde(default = "version_one")]
    pub version: u32,
    /// Configuration.
    pub config: RunConfig,
    /// Environment.
    pub environment: Environment,
    /// Totals that add up.
    pub totals: Totals,
    /// Committed figures read from blocks.
    pub chain: ChainFigures,
    /// Submissions per second while sending (not a TPS figure).
    pub send_rate: f64,
    /// Seconds spent sending.
    pub send_seconds: f64,
    /// Inclusion latency, ms.
    pub latency_ms: Latencies,
    /// Schedule lag, ms: first submission − intended send time. Open loop
    /// only: a closed loop has no schedule (`None`).
    pub schedule_lag_ms: Option<Latency>,
    /// The agent's CPU (user + system, whole process) while sending, per
    /// signed transaction, µs.
    pub agent_cpu_us_per_tx: f64,
    /// Share of the sending time (0–1) during which every request slot was
    /// in flight: the node, not the agent, set the pace then.
    pub slots_busy: f64,
    /// Back-offs on a full mempool or rate limit.
    pub backoffs: u64,
    /// Resubmissions of the same signed bytes.
    pub resends: u64,
    /// Nonce resynchronisations.
    pub resyncs: u64,
    /// Per-second series.
    pub series: Vec<Second>,
    /// Every block of the window, in height order (empty in version 1 files).
    #[serde(default)]
    pub blocks: Vec<BlockRow>,
}

/// Reads the pending nonce of every sender from the endpoint that will
/// serve it, `batch` senders per JSON-RPC batch request and 64 requests at
/// a time.
async fn pending_nonces(
    clients: &[Arc<EthClient>],
    keys: &KeySet,
    batch: usize,
) -> Result<Vec<u64>> {
    let (endpoints, batch) = (clients.len(), batch.max(1));
    // Sender `i` is served by endpoint `i % endpoints`: read it there.
    // Chunks are made as they are requested (a million senders stay cheap).
    let chunks = (0..endpoints).flat_map(|ep| {
        let count = keys.len().saturating_sub(ep).div_ceil(endpoints);
        (0..count.div_ceil(batch)).map(move |k| {
            let senders: Vec<usize> = (k * batch..((k + 1) * batch).min(count))
                .map(|j| ep + j * endpoints)
                .collect();
            (ep, senders)
        })
    });
    let mut answers = stream::iter(chunks)
        .map(|(ep, senders)| {
            let client = clients[ep].clone();
            let addresses: Vec<_> = senders.iter().map(|&i| keys.addresses[i]).collect();
            async move { (senders, client.nonces(&addresses, true).await) }
        })
        .buffer_unordered(64);
    let mut nonces = vec![0u64; keys.len()];
    while let Some((senders, results)) = answers.next().await {
        for (i, result) in senders.into_iter().zip(results) {
            nonces[i] = result.with_context(|| {
                format!("cannot read the nonce of sender {}", keys.addresses[i])
            })?;
        }
    }
    Ok(nonces)
}

fn describe(schedule: RateSchedule) -> String {
    match schedule {
        RateSchedule::Closed => "closed loop".to_string(),
        RateSchedule::Fixed(r) => format!("{r} tx/s"),
        RateSchedule::Ramp {
            start,
            step,
            interval,
        } => format!("ramp {start} +{step} every {interval} s"),
    }
}

/// Connects to every endpoint and checks they serve one chain; returns the
/// clients and the chain id.
async fn connect(endpoints: &[String], timeout: Duration) -> Result<(Vec<Arc<EthClient>>, u64)> {
    let clients = endpoints
        .iter()
        .map(|u| EthClient::new(u, timeout).map(Arc::new))
        .collect::<Result<Vec<_>>>()?;
    let first = clients
        .first()
        .context("give at least one endpoint (--network)")?;
    let chain_id = first
        .chain_id()
        .await
        .with_context(|| format!("cannot reach {}", first.url()))?;
    for c in &clients[1..] {
        let other = c
            .chain_id()
            .await
            .with_context(|| format!("cannot reach {}", c.url()))?;
        if other != chain_id {
            bail!(
                "{} is on chain {other}, {} on chain {chain_id}",
                c.url(),
                first.url()
            );
        }
    }
    Ok((clients, chain_id))
}

/// Completes the plan with what the chain decides: fee model, and for an
/// ERC-20 load the token, deployed and handed out now.
async fn engine_config(
    plan: LoadPlan,
    client: &EthClient,
    keys: &KeySet,
    chain_id: u64,
) -> Result<EngineConfig> {
    let fee = crate::fees::detect(client).await?;
    let (workload, gas_limit) = match plan.workload {
        WorkloadKind::Transfer => (Workload::Transfer, crate::fund::TRANSFER_GAS),
        WorkloadKind::Erc20 => {
            if keys.len() < 2 {
                bail!("the erc20 workload needs at least 2 accounts (the first deploys the token)");
            }
            let per_holder = U256::from(1_000_000_000u64);
            let token = erc20::prepare(client, keys, chain_id, fee, per_holder).await?;
            (Workload::Erc20 { token }, erc20::TRANSFER_GAS)
        }
    };
    Ok(EngineConfig {
        plan,
        workload,
        gas_limit,
        fee,
        chain_id,
    })
}

fn run_config(endpoints: &[String], senders: usize, cfg: &EngineConfig) -> RunConfig {
    let plan = &cfg.plan;
    RunConfig {
        endpoints: endpoints.to_vec(),
        senders,
        max_parallelism: plan.max_parallelism,
        schedule: describe(plan.schedule),
        count: plan.per_account,
        duration_secs: plan.duration.map(|d| d.as_secs_f64()),
        recipients: plan.recipients,
        workload: cfg.workload,
        fee: match cfg.fee {
            Fee::Legacy { gas_price } => format!("legacy, gas price {gas_price} wei"),
            Fee::Eip1559 { max_fee, tip } => {
                format!("eip1559, max fee {max_fee} wei, tip {tip} wei")
            }
        },
        chain_id: cfg.chain_id,
    }
}

fn progress_bar(visible: bool) -> ProgressBar {
    if !visible {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner();
    pb.set_style(
        ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    pb
}

/// Updates the progress line four times a second until aborted.
fn spawn_ticker(engine: Arc<Engine>, scanner: &Scanner, pb: ProgressBar) -> JoinHandle<()> {
    let scan = scanner.state.clone();
    tokio::spawn(async move {
        loop {
            let c = &engine.counters;
            let (blocks, height) = {
                let s = scan.lock().unwrap_or_else(|e| e.into_inner());
                (s.blocks.len(), s.next.saturating_sub(1))
            };
            pb.set_message(format!(
                "sent {}  accepted {}  rejected {}  backoffs {}  resends {}  blocks {blocks} (height {height})",
                c.sent.load(Ordering::Relaxed),
                c.accepted.load(Ordering::Relaxed),
                c.rejected.load(Ordering::Relaxed),
                c.backoffs.load(Ordering::Relaxed),
                c.resends.load(Ordering::Relaxed),
            ));
            pb.tick();
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
}

/// Brings `metrics` up to date every second until aborted.
fn spawn_metrics(
    engine: Arc<Engine>,
    scanner: &Scanner,
    live: Arc<LoadMetrics>,
    started_unix: f64,
) -> JoinHandle<()> {
    let scan = scanner.state.clone();
    tokio::spawn(async move {
        loop {
            let schedule = engine.schedule();
            live.set_offered(
                schedule
                    .rate_at(engine.start.elapsed().as_secs_f64())
                    .unwrap_or(0.0),
            );
            {
                let ledger = engine.ledger.lock().unwrap_or_else(|e| e.into_inner());
                let scan = scan.lock().unwrap_or_else(|e| e.into_inner());
                live.sync(
                    &ledger,
                    &scan,
                    started_unix,
                    metrics::retries(&engine.counters),
                );
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
}

/// Stops the engine on Ctrl-C or when `stop` turns true.
fn spawn_interrupt(
    engine: Arc<Engine>,
    stop: Option<tokio::sync::watch::Receiver<bool>>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let asked = async move {
            match stop {
                Some(mut stop) => drop(stop.wait_for(|s| *s).await),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            signal = tokio::signal::ctrl_c() => if signal.is_ok() { engine.stop() },
            () = asked => engine.stop(),
        }
    })
}

/// Waits (bounded by `wait`) until every accepted transaction is in a block,
/// resending the missing ones every 2 s (a restarted node lost them).
async fn wait_for_inclusion(engine: &Engine, scanner: &Scanner, pb: &ProgressBar, wait: Duration) {
    let deadline = Instant::now() + wait;
    let mut next_resend = Instant::now() + Duration::from_secs(2);
    loop {
        let missing: HashSet<B256> = {
            let ledger = engine.ledger.lock().unwrap_or_else(|e| e.into_inner());
            let scan = scanner.state.lock().unwrap_or_else(|e| e.into_inner());
            ledger
                .iter()
                .filter(|e| e.status == TxStatus::Accepted && !scan.included.contains_key(&e.hash))
                .map(|e| e.hash)
                .collect()
        };
        if missing.is_empty() || Instant::now() > deadline {
            return;
        }
        pb.set_message(format!(
            "waiting for {} transaction(s) to be included",
            missing.len()
        ));
        if Instant::now() >= next_resend {
            engine.resend_missing(&missing).await;
            next_resend = Instant::now() + Duration::from_secs(2);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn environment(started_unix: f64, cpus: usize, node: String) -> Environment {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    Environment {
        feth_version: env!("CARGO_PKG_VERSION").to_string(),
        host: read("/etc/hostname"),
        cpus,
        started_unix,
        node,
        kernel: read("/proc/sys/kernel/osrelease"),
    }
}

/// A load under way (see [`start`]); dropping it stops sending.
pub struct Running {
    engine: Arc<Engine>,
    scanner: Scanner,
    sending: JoinHandle<Sent>,
    stop_scan: tokio::sync::watch::Sender<bool>,
    scan_task: JoinHandle<()>,
    ticker: JoinHandle<()>,
    interrupt: JoinHandle<()>,
    metrics: Option<(Arc<LoadMetrics>, JoinHandle<()>)>,
    pb: ProgressBar,
    config: RunConfig,
    node: String,
    started_unix: f64,
    cpus: usize,
    window_start: u64,
    wait: Duration,
}

/// What the sending task measured.
struct Sent {
    seconds: f64,
    cpu: Duration,
    slots_full: Duration,
}

/// Starts a load with `keys` as senders and returns once sending has begun.
pub async fn start(settings: LoadSettings, keys: KeySet) -> Result<Running> {
    if keys.is_empty() {
        bail!("the keys file has no accounts; create some with `feth fund`");
    }
    let (clients, chain_id) = connect(&settings.endpoints, settings.timeout).await?;
    let cfg = engine_config(settings.plan, &clients[0], &keys, chain_id).await?;
    let nonces = pending_nonces(&clients, &keys, cfg.plan.batch).await?;
    let height = clients[0].block_number().await?;
    let engine_start = Instant::now();
    let scanner = Scanner::new(clients[0].clone(), height, engine_start);
    let window_start = scanner.block_time(height).await?;
    let (stop_scan, stop_rx) = tokio::sync::watch::channel(false);
    let scan_task = {
        let s = scanner.clone();
        tokio::spawn(async move { s.run_until(Duration::from_millis(100), stop_rx).await })
    };
    let config = run_config(&settings.endpoints, keys.len(), &cfg);
    // What the node calls itself, for the report; a node without the method is nameless.
    let node = clients[0]
        .call::<String>("web3_clientVersion", serde_json::json!([]))
        .await
        .unwrap_or_default();
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let engine = Engine::new(cfg, clients.clone(), Arc::new(keys), &nonces, engine_start);
    let pb = progress_bar(settings.progress);
    let ticker = spawn_ticker(engine.clone(), &scanner, pb.clone());
    let interrupt = spawn_interrupt(engine.clone(), settings.stop);
    let metrics = settings.metrics.map(|m| {
        let task = spawn_metrics(engine.clone(), &scanner, m.clone(), started_unix);
        (m, task)
    });
    let sending = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let cpu0 = procstat::process_cpu();
            engine.run(cpus.clamp(1, 8)).await;
            Sent {
                seconds: engine.start.elapsed().as_secs_f64(),
                cpu: procstat::process_cpu().saturating_sub(cpu0),
                slots_full: engine.slots.full_time(),
            }
        })
    };
    Ok(Running {
        engine,
        scanner,
        sending,
        stop_scan,
        scan_task,
        ticker,
        interrupt,
        metrics,
        pb,
        config,
        node,
        started_unix,
        cpus,
        window_start,
        wait: settings.wait,
    })
}

impl Running {
    /// The engine: its live counters, slot clock and ledger; `stop()` ends
    /// sending early.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Waits until sending ends (plan over, or stopped) and every accepted
    /// transaction is in a block (bounded by the settings' `wait`), then
    /// accounts for the run.
    pub async fn finish(mut self) -> Result<LoadReport> {
        let sent = (&mut self.sending)
            .await
            .context("the sending task panicked")?;
        wait_for_inclusion(&self.engine, &self.scanner, &self.pb, self.wait).await;
        let _ = self.stop_scan.send(true);
        let _ = (&mut self.scan_task).await;
        self.pb.finish_and_clear();

        let engine = &self.engine;
        let ledger = engine.ledger.lock().unwrap_or_else(|e| e.into_inner());
        let scan = self.scanner.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((m, task)) = &self.metrics {
            task.abort();
            m.set_offered(0.0);
            m.sync(
                &ledger,
                &scan,
                self.started_unix,
                metrics::retries(&engine.counters),
            );
        }
        let report::Accounts {
            totals,
            latency,
            chain,
            mut series,
            blocks,
        } = report::account(&ledger, &scan, self.started_unix, self.window_start);
        let schedule = engine.schedule();
        // Offered in the whole seconds sending lasted; later ones only saw inclusions.
        let whole = sent.seconds.floor();
        for s in series.iter_mut().filter(|s| (s.second as f64) < whole) {
            s.offered = schedule.rate_at(s.second as f64);
        }
        let open_loop = schedule != RateSchedule::Closed;
        let c = &engine.counters;
        Ok(LoadReport {
            version: REPORT_VERSION,
            config: self.config.clone(),
            environment: environment(self.started_unix, self.cpus, self.node.clone()),
            send_rate: totals.signed as f64 / sent.seconds.max(1e-9),
            send_seconds: sent.seconds,
            schedule_lag_ms: open_loop
                .then(|| report::schedule_lag(&ledger, 0.0, f64::INFINITY).total),
            agent_cpu_us_per_tx: sent.cpu.as_secs_f64() * 1e6 / totals.signed.max(1) as f64,
            slots_busy: sent.slots_full.as_secs_f64() / sent.seconds.max(1e-9),
            totals,
            chain,
            latency_ms: latency,
            backoffs: c.backoffs.load(Ordering::Relaxed),
            resends: c.resends.load(Ordering::Relaxed),
            resyncs: c.resyncs.load(Ordering::Relaxed),
            series,
            blocks,
        })
    }
}

impl Drop for Running {
    /// A load dropped unfinished stops sending; its helper tasks end.
    fn drop(&mut self) {
        self.engine.stop();
        self.ticker.abort();
        self.interrupt.abort();
        if let Some((_, task)) = &self.metrics {
            task.abort();
        }
        self.scan_task.abort();
        self.pb.finish_and_clear();
    }
}

/// Runs a load with `keys` as senders, to its end.
pub async fn run(settings: LoadSettings, keys: KeySet) -> Result<LoadReport> {
    start(settings, keys).await?.finish().await
}
