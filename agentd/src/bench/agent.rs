//! `feth bench agent`: how fast the agent prepares and submits signed
//! transfers, against the raw libsecp256k1 signing rate measured in the same
//! run, both per CPU-second; and what its memory grows by per transaction in
//! flight (peak RSS of a run whose transactions all stay in flight) and per
//! completed transaction (RSS growth between two late windows of a run at a
//! fixed rate, long after the hashes kept for [`RECENT`] seconds after
//! inclusion reached their steady number). Each run is in a fresh process,
//! so that one run's freed memory does not hide the other's.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, U256};
use anyhow::{Context, Result};
use serde::Serialize;

use crate::accounts::{KeySet, KeySource};
use crate::load::ledger::RECENT;
use crate::load::pick::RateSchedule;
use crate::load::plan::LoadPlan;
use crate::load::{self, LoadSettings};
use crate::procstat::{process_cpu, rss_bytes, thread_cpu};
use crate::sign::{self, Fee, TxRequest};

/// Figures of `feth bench agent`: the CPU figures are those of the run
/// against a sink that includes every transaction (the agent reads blocks
/// and receipts as against a node); the memory per transaction in flight is
/// from a second run, in a fresh process, against a sink that includes none.
#[derive(Debug, Clone, Serialize)]
pub struct AgentBench {
    /// Raw signatures per CPU-second (one thread, libsecp256k1).
    pub raw_signs_per_cpu_second: f64,
    /// Transactions submitted.
    pub txs: u64,
    /// Wall seconds of the agent run.
    pub wall_seconds: f64,
    /// Agent transactions per wall second.
    pub txs_per_second: f64,
    /// Agent CPU-seconds per 10,000 transactions.
    pub cpu_seconds_per_10k: f64,
    /// Agent transactions per CPU-second.
    pub txs_per_cpu_second: f64,
    /// `txs_per_cpu_second / raw_signs_per_cpu_second` (target ≥ 0.60).
    pub ratio: f64,
    /// Accounts loaded.
    pub accounts: usize,
    /// Transactions per request.
    pub batch: usize,
    /// The run whose transactions all completed (included).
    pub completed_run: AgentRun,
    /// The run whose transactions all stayed in flight.
    pub in_flight_run: AgentRun,
    /// The run at a fixed rate whose transactions all completed.
    pub steady_run: SteadyRun,
    /// RSS growth per completed transaction in the steady run, bytes.
    pub rss_per_completed_tx: f64,
    /// Peak RSS growth over the run per transaction in flight, bytes.
    pub rss_per_in_flight_tx: f64,
}

/// One agent run against a sink, in its own process.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct AgentRun {
    /// Transactions submitted.
    pub txs: u64,
    /// Of those, included in a block of the sink.
    pub completed: u64,
    /// Most transactions in flight at once (sampled).
    pub peak_in_flight: u64,
    /// Wall seconds of the run.
    pub wall_seconds: f64,
    /// CPU-seconds of the process during the run.
    pub cpu_seconds: f64,
    /// RSS before anything, bytes.
    pub rss_start: u64,
    /// RSS with the accounts loaded, just before the run, bytes.
    pub rss_loaded: u64,
    /// Highest RSS sampled during the run (every 10 ms), bytes.
    pub rss_peak: u64,
}

impl AgentRun {
    /// Peak RSS growth over the run, bytes.
    pub fn growth(&self) -> f64 {
        self.rss_peak.saturating_sub(self.rss_loaded) as f64
    }
}

/// A run at a fixed rate against a sink that includes every transaction,
/// in its own process: RSS in an early and a late window of its second half.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct SteadyRun {
    /// Offered rate, tx/s.
    pub rate: f64,
    /// Seconds of sending.
    pub seconds: f64,
    /// Transactions included.
    pub completed: u64,
    /// Transactions included between the two windows.
    pub completed_between: u64,
    /// Highest RSS in the early window (its second half's first tenth), bytes.
    pub rss_early: u64,
    /// Highest RSS in the late window (its last tenth), bytes.
    pub rss_late: u64,
}

impl SteadyRun {
    /// RSS growth between the windows per transaction completed between them.
    pub fn per_completed_tx(&self) -> f64 {
        self.rss_late.saturating_sub(self.rss_early) as f64 / self.completed_between.max(1) as f64
    }
}

/// The three runs' figures, with the raw signing rate.
pub fn summarize(
    raw: f64,
    accounts: usize,
    batch: usize,
    [completed, in_flight]: [AgentRun; 2],
    steady: SteadyRun,
) -> AgentBench {
    let n = completed.txs;
    let per_cpu = n as f64 / completed.cpu_seconds.max(1e-9);
    AgentBench {
        raw_signs_per_cpu_second: raw,
        txs: n,
        wall_seconds: completed.wall_seconds,
        txs_per_second: n as f64 / completed.wall_seconds.max(1e-9),
        cpu_seconds_per_10k: completed.cpu_seconds / n.max(1) as f64 * 10_000.0,
        txs_per_cpu_second: per_cpu,
        ratio: per_cpu / raw,
        accounts,
        batch,
        rss_per_completed_tx: steady.per_completed_tx(),
        steady_run: steady,
        rss_per_in_flight_tx: in_flight.growth() / in_flight.peak_in_flight.max(1) as f64,
        completed_run: completed,
        in_flight_run: in_flight,
    }
}

/// Signs `n` transfers on this thread; returns signatures per CPU-second.
pub fn raw_sign_rate(n: u64) -> f64 {
    let mut keys = KeySet::new(KeySource::Seed(alloy_primitives::B256::repeat_byte(9)));
    keys.extend_to(1);
    let start = thread_cpu();
    for nonce in 0..n {
        let tx = sign::sign(
            &keys.keys[0],
            &TxRequest {
                chain_id: 9000,
                nonce,
                to: Some(Address::repeat_byte(1)),
                value: U256::from(1u64),
                gas_limit: 21_000,
                fee: Fee::Eip1559 {
                    max_fee: 2_000_000_000,
                    tip: 1,
                },
                input: Bytes::new(),
            },
        );
        std::hint::black_box(tx);
    }
    n as f64 / (thread_cpu() - start).as_secs_f64()
}

/// Samples RSS and the transactions in flight every 10 ms until dropped;
/// keeps the highest of each.
struct Peaks {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<(u64, u64)>>,
}

impl Peaks {
    fn start(in_flight: impl Fn() -> u64 + Send + 'static) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let thread = std::thread::spawn(move || {
            let (mut rss, mut flight) = (0, 0);
            while !stop.load(Ordering::Relaxed) {
                rss = rss.max(rss_bytes());
                flight = flight.max(in_flight());
                std::thread::sleep(Duration::from_millis(10));
            }
            (rss.max(rss_bytes()), flight)
        });
        Self {
            done,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> (u64, u64) {
        self.done.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or((0, 0))
    }
}

/// Runs the agent against the sink at `sink_url`: `txs` transfers from
/// `accounts` accounts, closed loop; when the sink `includes` them, the run
/// waits (up to 30 s) until all are read in its blocks.
pub async fn agent(
    sink_url: &str,
    includes: bool,
    accounts: usize,
    txs: u64,
    parallelism: usize,
    batch: usize,
) -> Result<AgentRun> {
    let rss_start = rss_bytes();
    let mut keys = KeySet::new(KeySource::Seed(alloy_primitives::B256::repeat_byte(7)));
    keys.extend_to(accounts);
    let per_account = txs.div_ceil(accounts as u64).max(1);
    let active = (txs / per_account).clamp(1, accounts as u64) as usize;
    let mut plan = LoadPlan::transfers(RateSchedule::Closed, active);
    plan.per_account = Some(per_account);
    plan.max_parallelism = parallelism;
    plan.batch = batch;
    let mut settings = LoadSettings::new(sink_url, plan);
    settings.wait = if includes {
        Duration::from_secs(30)
    } else {
        Duration::ZERO
    };
    let mut senders = keys.clone();
    senders.keys.truncate(active);
    senders.addresses.truncate(active);
    let rss_loaded = rss_bytes();
    let cpu0 = process_cpu();
    let wall = Instant::now();
    let running = load::start(settings, senders)
        .await
        .context("agent run against the sink")?;
    let engine = running.engine().clone();
    let peaks = Peaks::start(move || engine.snapshot().in_flight as u64);
    let report = running.finish().await;
    let (rss_peak, peak_in_flight) = peaks.finish();
    let report = report.context("agent run against the sink")?;
    drop(keys);
    Ok(AgentRun {
        txs: report.totals.signed,
        completed: report.totals.included,
        peak_in_flight,
        wall_seconds: wall.elapsed().as_secs_f64(),
        cpu_seconds: (process_cpu() - cpu0).as_secs_f64(),
        rss_start,
        rss_loaded,
        rss_peak,
    })
}

/// Samples RSS every 100 ms, with the time since it began, until dropped.
struct RssSamples {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<(f64, u64)>>>,
}

impl RssSamples {
    fn start() -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            let mut samples = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                samples.push((start.elapsed().as_secs_f64(), rss_bytes()));
                std::thread::sleep(Duration::from_millis(100));
            }
            samples
        });
        Self {
            done,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> Vec<(f64, u64)> {
        self.done.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

/// The highest RSS sampled within `[from, to)` seconds.
fn peak_within(samples: &[(f64, u64)], from: f64, to: f64) -> u64 {
    samples
        .iter()
        .filter(|(t, _)| (from..to).contains(t))
        .map(|s| s.1)
        .max()
        .unwrap_or(0)
}

/// Runs the agent at `rate` tx/s for `seconds` (at least `3 × RECENT`)
/// against the sink at `sink_url`, which includes every transaction, from
/// `accounts` accounts.
pub async fn steady(sink_url: &str, accounts: usize, rate: f64, seconds: f64) -> Result<SteadyRun> {
    let seconds = seconds.max(3.0 * RECENT);
    let mut keys = KeySet::new(KeySource::Seed(alloy_primitives::B256::repeat_byte(8)));
    keys.extend_to(accounts);
    let mut plan = LoadPlan::transfers(RateSchedule::Fixed(rate), accounts);
    plan.duration = Some(Duration::from_secs_f64(seconds));
    let mut settings = LoadSettings::new(sink_url, plan);
    settings.wait = Duration::from_secs(30);
    let samples = RssSamples::start();
    let report = load::run(settings, keys).await;
    let samples = samples.finish();
    let report = report.context("steady agent run against the sink")?;
    let early = (0.5 * seconds, 0.6 * seconds);
    let late = (0.9 * seconds, seconds);
    let completed_between = report
        .series
        .iter()
        .filter(|s| (early.1..late.0).contains(&(s.second as f64)))
        .map(|s| s.included)
        .sum();
    Ok(SteadyRun {
        rate,
        seconds,
        completed: report.totals.included,
        completed_between,
        rss_early: peak_within(&samples, early.0, early.1),
        rss_late: peak_within(&samples, late.0, late.1),
    })
}

impl AgentBench {
    /// Writes the summary `feth bench` prints.
    pub fn write_summary(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mib = |b: u64| b as f64 / 1_048_576.0;
        writeln!(
            out,
            "raw libsecp256k1 signing   {:>10.0} signatures per CPU-second (one thread)",
            self.raw_signs_per_cpu_second
        )?;
        writeln!(
            out,
            "agent                      {:>10.0} tx per CPU-second ({:.2} CPU-s per 10,000 tx)",
            self.txs_per_cpu_second, self.cpu_seconds_per_10k
        )?;
        writeln!(
            out,
            "ratio agent / raw signing  {:>10.2}  (target ≥ 0.60)",
            self.ratio
        )?;
        writeln!(
            out,
            "agent wall throughput      {:>10.0} tx/s ({} tx in {:.2} s, {} per request)",
            self.txs_per_second, self.txs, self.wall_seconds, self.batch
        )?;
        let (c, f) = (&self.completed_run, &self.in_flight_run);
        writeln!(
            out,
            "memory (RSS)               {:.0} MiB at start, {:.0} MiB with {} accounts loaded",
            mib(c.rss_start),
            mib(c.rss_loaded),
            self.accounts,
        )?;
        let st = &self.steady_run;
        writeln!(
            out,
            "  per completed tx         {:>10.1} B  (RSS {:.1} → {:.1} MiB over {} tx included at {:.0} tx/s, in the second half of a {:.0} s run)",
            self.rss_per_completed_tx,
            mib(st.rss_early),
            mib(st.rss_late),
            st.completed_between,
            st.rate,
            st.seconds
        )?;
        writeln!(
            out,
            "  closed-loop run          {:>10.1} MiB peak growth over {} included tx (holds the hashes of the last {:.0} s)",
            mib(c.rss_peak.saturating_sub(c.rss_loaded)),
            c.completed,
            crate::load::ledger::RECENT
        )?;
        writeln!(
            out,
            "  per tx in flight         {:>10.1} B  (peak growth {:.1} MiB with up to {} tx in flight, none included)",
            self.rss_per_in_flight_tx,
            mib(f.rss_peak.saturating_sub(f.rss_loaded)),
            f.peak_in_flight
        )
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_agent_submits_every_transaction_to_the_sink() {
        for include in [false, true] {
            let url = crate::sink::start_local(include).await;
            for batch in [1, 10] {
                let r = super::agent(&url, include, 100, 1_000, 8, batch)
                    .await
                    .unwrap();
                assert_eq!(r.txs, 1_000, "batch {batch}");
                // The sink that includes completes every one; the other none.
                let completed = if include { 1_000 } else { 0 };
                assert_eq!(r.completed, completed, "batch {batch}, include {include}");
                assert!(r.peak_in_flight > 0 && r.cpu_seconds > 0.0);
            }
        }
    }
}
