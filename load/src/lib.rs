//! feth's load engine and funding: parallel signed transactions against one
//! or more nodes of any Ethereum JSON-RPC chain, with committed TPS read back
//! from the chain, and the senders funded first. Its own crate so that a
//! test of a node (abcid's) links the engine without feth's reports,
//! comparisons and plots; `feth` re-exports it as `feth::load`.
//!
//! - [`fund`]: funding senders from a root key; [`refusal`]: what a node's
//!   refusal of a transaction means; [`units`]: amounts and rates as
//!   written on the command line; [`sync`]: the lock helper.
//! - [`pick`]: sender distribution and rate schedules.
//! - [`engine`]: the sending engine (per-sender ordering, back-off, nonce
//!   recovery, pre-signing, open-loop scheduling); [`ready`]: batch forming;
//!   [`slots`]: how long every request slot was busy; [`node`]: what the
//!   engine needs of a node (a scripted one, `fake`, for its tests).
//! - [`scan`]: reading committed blocks; [`ledger`]: what is in flight;
//!   [`tally`]: the figures, kept as the run goes in memory bounded by what
//!   is in flight (plus one row per second and per block); [`report`]: their
//!   types; [`sidecar`]: the figures streamed to a JSON-lines file;
//!   [`summary`]: the summary printed of a report.
//! - `--shard I/N` (`feth_chain::shard`), one agent's slice of a shared keys
//!   file; [`start_at`]: agents beginning together; [`merge`]: their reports
//!   combined, committed figures read once from the chain.
//!
//! [`run`] runs a load to its end; [`start`] returns it under way
//! ([`Running`]), for a caller that measures while it sends (the
//! saturation search).

pub mod fund;
pub mod refusal;
pub mod sync;
pub mod units;

pub mod contracts;
pub mod deploy;
pub mod engine;
pub mod erc20;
#[cfg(test)]
mod fake;
pub mod hist;
pub mod ledger;
pub mod merge;
pub mod metrics;
pub mod node;
mod outcome;
pub mod pick;
pub mod plan;
pub mod prepare;
pub mod reads;
pub mod ready;
pub mod refill;
pub mod report;
pub mod rows;
pub mod scan;
pub mod scenario;
pub mod sidecar;
pub mod slots;
#[cfg(test)]
mod stand_in;
pub mod start_at;
pub mod summary;
pub mod tally;

pub use self::report::{Environment, LatencyHists, LoadReport, RunConfig, REPORT_VERSION};

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use futures::stream::{self, StreamExt};
use indicatif::{ProgressBar, ProgressStyle};
use tokio::task::JoinHandle;

use self::engine::{Engine, Snapshot};
use self::ledger::Ledger;
use self::metrics::LoadMetrics;
use self::pick::RateSchedule;
use self::plan::{EngineConfig, LoadPlan};
use self::prepare::Prepared;
use self::report::RefillReport;
use self::scan::Scanner;
use self::sidecar::Sidecar;
use self::tally::{Tally, TallyConfig};
use crate::sync::lock;
use feth_chain::accounts::KeySet;
use feth_chain::eth::EthClient;
use feth_chain::fees::FeeFollower;
use feth_chain::shard::{KeyRange, ShardOf};
use feth_chain::sign::Fee;
use feth_devnet::procstat;

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
    /// CometBFT's RPC, for ns header times; when `None` it is asked of the
    /// node (`abcid_cometbftRpc`), and a node that names none leaves web3
    /// timestamps (whole seconds).
    pub comet_rpc: Option<String>,
    /// Blocks per window of the per-window TPS table; `None`: no windows.
    pub window_blocks: Option<u64>,
    /// JSON-lines file the figures are streamed to as the run goes.
    pub series_out: Option<PathBuf>,
    /// Begin sending at this wall-clock time, after preparing (`--start-at`).
    pub start_at: Option<SystemTime>,
    /// The shard of the keys file the keys are (`--shard`), for the report.
    pub shard: Option<ShardOf>,
    /// Top up senders that run low during the run.
    pub refill: Option<refill::RefillConfig>,
    /// Web3 read traffic beside the writes, from the first endpoint.
    pub reads: Option<reads::ReadPlan>,
    /// The contracts of the writes and reads, already deployed (by
    /// [`prepare::prepare`]; runs that share them, such as the steps of a
    /// saturation search); `None`: the run deploys its own.
    pub prepared: Option<Prepared>,
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
            comet_rpc: None,
            window_blocks: None,
            series_out: None,
            start_at: None,
            shard: None,
            refill: None,
            reads: None,
            prepared: None,
        }
    }
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

/// Completes the plan with what the chain decides: the fee model, and the
/// writes, deployed now unless `prepared` already were.
async fn engine_config(
    settings: &LoadSettings,
    client: &EthClient,
    keys: &KeySet,
    chain_id: u64,
) -> Result<(EngineConfig, Prepared)> {
    let plan = settings.plan.clone();
    let (fee, base_fee) = feth_chain::fees::detect_with_base_fee(client).await?;
    let fees = Arc::new(FeeFollower::new(fee, base_fee, plan.fees));
    let fee = fees.fee();
    let prepared = match &settings.prepared {
        Some(p) => {
            let kinds = p.writes.iter().map(|w| w.workload.kind());
            let asked = plan.writes.shares().iter().map(|(k, _)| *k);
            if !kinds.eq(asked) {
                bail!("the contracts prepared for this run are not those of its writes' mix");
            }
            p.clone()
        }
        None => {
            let signer = deploy::Signer {
                keys,
                chain_id,
                fee,
            };
            prepare::prepare(client, &signer, &plan.writes, settings.reads.as_ref()).await?
        }
    };
    let cfg = EngineConfig {
        plan,
        writes: prepared.writes.clone(),
        fee,
        fees,
        chain_id,
        refill: settings.refill.is_some(),
    };
    Ok((cfg, prepared))
}

fn run_config(settings: &LoadSettings, keys: &KeySet, cfg: &EngineConfig) -> RunConfig {
    let plan = &cfg.plan;
    RunConfig {
        endpoints: settings.endpoints.clone(),
        senders: keys.len(),
        max_parallelism: plan.max_parallelism,
        per_sender: plan.per_sender,
        schedule: describe(plan.schedule),
        count: plan.per_account,
        duration_secs: plan.duration.map(|d| d.as_secs_f64()),
        recipients: plan.recipients,
        writes: cfg.writes.clone(),
        fee: match cfg.fee {
            Fee::Legacy { gas_price } => format!("legacy, gas price {gas_price} wei"),
            Fee::Eip1559 { max_fee, tip } => {
                let policy = cfg.fees.policy();
                let cap = policy
                    .cap
                    .map_or_else(|| "no cap".to_string(), |c| format!("cap {c} wei"));
                format!(
                    "eip1559, max fee {} × base fee + tip {tip} wei ({cap}), {max_fee} wei at start",
                    policy.multiplier
                )
            }
        },
        chain_id: cfg.chain_id,
        keys: Some(KeyRange {
            first: keys.offset,
            count: keys.len(),
        }),
        shard: settings.shard,
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
    let scanner = scanner.clone();
    tokio::spawn(async move {
        loop {
            let s = engine.snapshot();
            let height = scanner.next_height().saturating_sub(1);
            pb.set_message(format!(
                "sent {}  accepted {}  rejected {}  in flight {}  backoffs {}  resends {}  fee resends {}  blocks {} (height {height})",
                s.sent, s.accepted, s.rejected, s.in_flight, s.backoffs, s.resends, s.fee_resends, s.blocks_read,
            ));
            pb.tick();
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
}

/// Where the figures go as the run goes.
struct Outputs {
    metrics: Option<Arc<LoadMetrics>>,
    sidecar: Arc<Mutex<Option<Sidecar>>>,
    /// The reads beside the writes, for the per-second rows.
    reads: Option<reads::ReadTap>,
}

impl Outputs {
    /// Settles what can be settled at `now`, samples memory, and hands the
    /// finished rows to the sidecar and the counters to the metrics.
    fn update(&self, engine: &Engine, now: f64) {
        let lines = {
            let ended = self.reads.as_ref().map(|tap| tap.take(engine.started()));
            let mut l = engine.ledger();
            l.tally.reads(ended.as_deref().unwrap_or_default());
            l.expire(now);
            let in_flight = l.in_flight() as u64;
            l.tally.sample(now, in_flight, procstat::rss_bytes());
            l.tally.settle(now);
            if let Some(m) = &self.metrics {
                m.sync(&l.tally, engine.retries());
            }
            l.tally.drain_lines()
        };
        let mut sidecar = lock(&self.sidecar);
        if let Some(file) = sidecar.as_mut() {
            if let Err(e) = file.append(&lines) {
                tracing::warn!("{e:#}; the series file is no longer written");
                *sidecar = None;
            }
        }
    }
}

/// Brings the figures, the sidecar and the metrics up to date twice a second
/// until aborted.
fn spawn_outputs(engine: Arc<Engine>, outputs: Arc<Outputs>) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Some(m) = &outputs.metrics {
                let at = engine.started().elapsed().as_secs_f64();
                m.set_offered(engine.schedule().rate_at(at).unwrap_or(0.0));
            }
            outputs.update(&engine, engine.started().elapsed().as_secs_f64());
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
}

/// Stops the engine on Ctrl-C or when `stop` turns true; a second Ctrl-C
/// cuts the wait for inclusion short (`hurry`).
fn spawn_interrupt(
    engine: Arc<Engine>,
    stop: Option<tokio::sync::watch::Receiver<bool>>,
    hurry: Arc<AtomicBool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let asked = async move {
            match stop {
                Some(mut stop) => drop(stop.wait_for(|s| *s).await),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            signal = tokio::signal::ctrl_c() => if signal.is_err() { return },
            () = asked => {
                engine.stop();
                return;
            }
        }
        engine.stop();
        eprintln!(
            "stopping: waiting for the transactions in flight (Ctrl-C again to stop waiting)"
        );
        if tokio::signal::ctrl_c().await.is_ok() {
            hurry.store(true, Ordering::SeqCst);
        }
    })
}

/// Waits (bounded by `wait`, or until `hurry`) until every accepted
/// transaction is in a block, resending the missing ones every 2 s (a
/// restarted node lost them).
async fn wait_for_inclusion(engine: &Engine, pb: &ProgressBar, wait: Duration, hurry: &AtomicBool) {
    let deadline = Instant::now() + wait;
    let mut next_resend = Instant::now() + Duration::from_secs(2);
    loop {
        let missing = engine.ledger().in_flight();
        if missing == 0 || Instant::now() > deadline || hurry.load(Ordering::SeqCst) {
            return;
        }
        pb.set_message(format!(
            "waiting for {missing} transaction(s) to be included"
        ));
        if Instant::now() >= next_resend {
            engine.resend_missing().await;
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
    sending: JoinHandle<Sent>,
    stop_scan: tokio::sync::watch::Sender<bool>,
    scan_task: JoinHandle<()>,
    ticker: JoinHandle<()>,
    interrupt: JoinHandle<()>,
    outputs: Arc<Outputs>,
    outputs_task: JoinHandle<()>,
    hurry: Arc<AtomicBool>,
    pb: ProgressBar,
    config: RunConfig,
    environment: Environment,
    block_clock: String,
    /// CometBFT's RPC, when known (for its retry count).
    comet: Option<feth_comet::rpc::Rpc>,
    wait: Duration,
    /// The refill task and what stops it.
    refill: Option<(tokio::sync::watch::Sender<bool>, JoinHandle<RefillReport>)>,
    /// The read traffic, while sending.
    reads: Option<reads::ReadTraffic>,
}

/// What the sending task measured.
struct Sent {
    seconds: f64,
    cpu: Duration,
    slots_full: Duration,
}

/// The ledger of a run starting now, after block `height` of the chain.
async fn new_ledger(
    client: &EthClient,
    comet: Option<&feth_comet::rpc::Rpc>,
    height: u64,
    settings: &LoadSettings,
    started_unix: f64,
) -> Result<Ledger> {
    let (timestamp, time_ns) = scan::block_time(client, comet, height).await?;
    let tally = Tally::new(TallyConfig {
        run_start_unix: started_unix,
        schedule: settings.plan.schedule,
        window_blocks: settings.window_blocks,
        start_time: time_ns.map_or(timestamp as f64, |ns| ns as f64 / 1e9),
        start_timestamp: timestamp,
    });
    Ok(Ledger::new(tally, settings.metrics.clone()))
}

/// Starts a load with `keys` as senders and returns once sending has begun.
pub async fn start(settings: LoadSettings, keys: KeySet) -> Result<Running> {
    if keys.is_empty() {
        bail!("the keys file has no accounts; create some with `feth fund`");
    }
    let (clients, chain_id) = connect(&settings.endpoints, settings.timeout).await?;
    let (comet, block_clock) =
        feth_chain::blocks::discover_comet(&clients[0], settings.comet_rpc.as_deref()).await?;
    if let Some(r) = &settings.refill {
        let root = feth_chain::keys::address_of(&r.root);
        if keys.addresses.contains(&root) {
            bail!("the refill root {root} is one of the senders; give --refill-key a key outside the keys file");
        }
    }
    let (cfg, prepared) = engine_config(&settings, &clients[0], &keys, chain_id).await?;
    let nonces = pending_nonces(&clients, &keys, cfg.plan.batch).await?;
    // What the node calls itself, for the report; a node without the method is nameless.
    let node = clients[0]
        .call::<String>("web3_clientVersion", serde_json::json!([]))
        .await
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let config = run_config(&settings, &keys, &cfg);
    if let Some(at) = settings.start_at {
        let pb = progress_bar(settings.progress);
        let ready = format!("nonces of {} sender(s) read", keys.len());
        let waited = start_at::wait(at, &pb, &ready).await;
        pb.finish_and_clear();
        waited?;
    }
    let height = clients[0].block_number().await?;
    let engine_start = Instant::now();
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let environment = environment(started_unix, cpus, node);
    let sidecar = settings
        .series_out
        .as_deref()
        .map(|path| Sidecar::create(path, &config, &environment))
        .transpose()?;
    let ledger = new_ledger(&clients[0], comet.as_ref(), height, &settings, started_unix).await?;
    let ledger = Arc::new(Mutex::new(ledger));
    let scanner = Scanner::new(
        clients[0].clone(),
        comet.clone(),
        height,
        engine_start,
        ledger.clone(),
    )
    .following_fees(cfg.fees.clone());
    let (stop_scan, stop_rx) = tokio::sync::watch::channel(false);
    let scan_task = {
        let s = scanner.clone();
        tokio::spawn(async move { s.run_until(Duration::from_millis(100), stop_rx).await })
    };
    let addresses = settings.refill.is_some().then(|| keys.addresses.clone());
    let refill_client = clients[0].clone();
    let reads = settings
        .reads
        .clone()
        .map(|plan| {
            let targets = reads::ReadTargets {
                senders: keys.addresses.clone(),
                token: cfg.token(),
                digest: prepared.digest,
            };
            reads::start(plan, clients[0].clone(), targets, settings.metrics.clone())
        })
        .transpose()?;
    let engine = Engine::new(cfg, clients, Arc::new(keys), &nonces, engine_start, ledger);
    let refill = match (settings.refill, addresses) {
        (Some(cfg), Some(addresses)) => {
            let refiller =
                refill::Refiller::new(cfg, refill_client, engine.clone(), addresses).await?;
            let (stop, stop_rx) = tokio::sync::watch::channel(false);
            Some((stop, tokio::spawn(refiller.run(stop_rx))))
        }
        _ => None,
    };
    let pb = progress_bar(settings.progress);
    let hurry = Arc::new(AtomicBool::new(false));
    let outputs = Arc::new(Outputs {
        metrics: settings.metrics.clone(),
        sidecar: Arc::new(Mutex::new(sidecar)),
        reads: reads.as_ref().map(reads::ReadTraffic::tap),
    });
    let sending = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let cpu0 = procstat::process_cpu();
            engine.run(cpus.clamp(1, 8)).await;
            Sent {
                seconds: engine.started().elapsed().as_secs_f64(),
                cpu: procstat::process_cpu().saturating_sub(cpu0),
                slots_full: engine.snapshot().slots_full,
            }
        })
    };
    Ok(Running {
        reads,
        ticker: spawn_ticker(engine.clone(), &scanner, pb.clone()),
        interrupt: spawn_interrupt(engine.clone(), settings.stop, hurry.clone()),
        outputs_task: spawn_outputs(engine.clone(), outputs.clone()),
        outputs,
        engine,
        sending,
        stop_scan,
        scan_task,
        hurry,
        pb,
        config,
        environment,
        block_clock,
        comet,
        wait: settings.wait,
        refill,
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
        self.engine.ledger().tally.sending_ended(sent.seconds);
        let reads = match self.reads.take() {
            Some(r) => Some(r.finish().await),
            None => None,
        };
        wait_for_inclusion(&self.engine, &self.pb, self.wait, &self.hurry).await;
        let refilled = match self.refill.take() {
            Some((stop, task)) => {
                let _ = stop.send(true);
                Some(task.await.context("the refill task panicked")?)
            }
            None => None,
        };
        let _ = self.stop_scan.send(true);
        let _ = (&mut self.scan_task).await;
        self.outputs_task.abort();
        self.pb.finish_and_clear();
        let engine = &self.engine;
        let now = engine.started().elapsed().as_secs_f64();
        self.outputs.update(engine, now);
        // Sending is over: the counters are final.
        let live = engine.snapshot();
        let mut ledger = engine.ledger();
        ledger.close();
        let mut report = self.report(&ledger.tally, &sent, &live);
        report.refill = refilled;
        report.reads = reads;
        if let Some(m) = &self.outputs.metrics {
            m.set_offered(0.0);
            m.sync(&ledger.tally, engine.retries());
        }
        let lines = ledger.tally.drain_lines();
        drop(ledger);
        let mut sidecar = lock(&self.outputs.sidecar);
        if let Some(file) = sidecar.as_mut() {
            file.append(&lines)?;
            file.end(&report.totals, &report.chain, report.reads.as_ref())?;
        }
        Ok(report)
    }

    /// The report of a closed tally, with the engine's final counters.
    fn report(&self, tally: &Tally, sent: &Sent, live: &Snapshot) -> LoadReport {
        let open_loop = self.engine.schedule() != RateSchedule::Closed;
        let mut totals = tally.totals.clone();
        totals.fee_resends = live.fee_resends;
        let series = tally.series();
        let closed_loop_backlog =
            (!open_loop).then(|| report::closed_loop_backlog(&series, sent.seconds));
        let schedule_lag_ms = open_loop.then(|| tally.lag_total.latency());
        let agent_limited = report::agent_limited(
            schedule_lag_ms.as_ref(),
            self.engine.max_backlog(),
            self.config.per_sender,
        );
        let sent_by_kind = self
            .config
            .writes
            .iter()
            .zip(self.engine.sent_by_write())
            .map(|(w, n)| (w.workload.kind(), n))
            .collect();
        LoadReport {
            version: REPORT_VERSION,
            sent_by_kind,
            config: self.config.clone(),
            environment: self.environment.clone(),
            send_rate: totals.signed as f64 / sent.seconds.max(1e-9),
            send_seconds: sent.seconds,
            schedule_lag_ms,
            agent_limited,
            closed_loop_backlog: closed_loop_backlog.flatten(),
            rpc_retries: self.engine.rpc_retries()
                + self.comet.as_ref().map_or(0, feth_comet::rpc::Rpc::retries),
            agent_cpu_us_per_tx: sent.cpu.as_secs_f64() * 1e6 / totals.signed.max(1) as f64,
            slots_busy: sent.slots_full.as_secs_f64() / sent.seconds.max(1e-9),
            totals,
            chain: tally.chain(),
            latency_ms: tally.latencies(),
            backoffs: live.backoffs,
            resends: live.resends,
            resyncs: live.resyncs,
            series,
            blocks: tally.block_rows(),
            windows: tally.windows(),
            dropped: tally.dropped(),
            refill: None,
            txs_per_block: tally.txs_per_block(),
            block_clock: self.block_clock.clone(),
            latency_hist: Some(LatencyHists {
                to_block_time: tally.to_block_time.clone(),
                to_observed: tally.to_observed.clone(),
            }),
            accepted: Some(tally.accepted),
            reads: None,
        }
    }
}

impl Drop for Running {
    /// A load dropped unfinished stops sending; its helper tasks end.
    fn drop(&mut self) {
        self.engine.stop();
        self.ticker.abort();
        self.interrupt.abort();
        self.outputs_task.abort();
        self.scan_task.abort();
        if let Some((_, task)) = &self.refill {
            task.abort();
        }
        self.pb.finish_and_clear();
    }
}

/// Runs a load with `keys` as senders, to its end.
pub async fn run(settings: LoadSettings, keys: KeySet) -> Result<LoadReport> {
    start(settings, keys).await?.finish().await
}
