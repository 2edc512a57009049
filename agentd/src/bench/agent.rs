//! `feth bench agent`: how fast the agent prepares and submits signed
//! transfers, against the raw libsecp256k1 signing rate measured in the same
//! run, both per CPU-second.

use std::path::Path;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, U256};
use anyhow::{Context, Result};
use serde::Serialize;

use crate::accounts::{KeySet, KeySource};
use crate::load::engine::EngineConfig;
use crate::load::pick::RateSchedule;
use crate::load::{self, LoadSettings};
use crate::sign::{self, Fee, TxRequest};

/// CPU time of the whole process so far.
pub fn process_cpu() -> Duration {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn thread_cpu() -> Duration {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn cpu_clock(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe {
        libc::clock_gettime(clock, &mut ts);
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Resident memory of this process, bytes.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Figures of one `feth bench agent` run.
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
    /// RSS before loading accounts, bytes.
    pub rss_start: u64,
    /// RSS with the accounts loaded, bytes.
    pub rss_loaded: u64,
    /// RSS after the run, bytes.
    pub rss_end: u64,
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

/// Runs the agent against the sink at `sink_url`.
pub async fn agent(
    sink_url: &str,
    accounts: usize,
    txs: u64,
    parallelism: usize,
    batch: usize,
) -> Result<AgentBench> {
    let rss_start = rss_bytes();
    let raw = raw_sign_rate(20_000);
    let mut keys = KeySet::new(KeySource::Seed(alloy_primitives::B256::repeat_byte(7)));
    keys.extend_to(accounts);
    let rss_loaded = rss_bytes();
    let per_account = txs.div_ceil(accounts as u64).max(1);
    let active = (txs / per_account).clamp(1, accounts as u64) as usize;
    let mut engine = EngineConfig::transfers(RateSchedule::Closed, active);
    engine.per_account = Some(per_account);
    engine.max_parallelism = parallelism;
    engine.batch = batch;
    let mut settings = LoadSettings::new(sink_url, engine);
    settings.wait = Duration::ZERO;
    let mut senders = keys.clone();
    senders.keys.truncate(active);
    senders.addresses.truncate(active);
    let cpu0 = process_cpu();
    let wall = Instant::now();
    let report = load::run(settings, senders)
        .await
        .context("agent run against the sink")?;
    let wall_seconds = wall.elapsed().as_secs_f64();
    let cpu = (process_cpu() - cpu0).as_secs_f64();
    let n = report.totals.signed;
    let per_cpu = n as f64 / cpu;
    drop(keys);
    Ok(AgentBench {
        raw_signs_per_cpu_second: raw,
        txs: n,
        wall_seconds,
        txs_per_second: n as f64 / wall_seconds,
        cpu_seconds_per_10k: cpu / n as f64 * 10_000.0,
        txs_per_cpu_second: per_cpu,
        ratio: per_cpu / raw,
        accounts,
        batch,
        rss_start,
        rss_loaded,
        rss_end: rss_bytes(),
    })
}

/// How abcid runs in a round of `feth bench profiler`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfilerMode {
    /// `abcid --no-profiler`: no profiler at all.
    Off,
    /// Profiler embedded, not armed.
    Disarmed,
    /// Profiler armed on every block of the round.
    Armed,
}

impl ProfilerMode {
    /// Order of the modes in cycle `i`: forwards, then backwards, so that a
    /// drift over the run cancels out (ABC CBA …).
    fn cycle(i: usize) -> [ProfilerMode; 3] {
        let forwards = [Self::Off, Self::Disarmed, Self::Armed];
        if i.is_multiple_of(2) {
            forwards
        } else {
            [forwards[2], forwards[1], forwards[0]]
        }
    }

    /// Name as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Disarmed => "disarmed",
            Self::Armed => "armed",
        }
    }
}

/// What `feth bench profiler` runs.
#[derive(Debug, Clone, Serialize)]
pub struct ProfilerBenchPlan {
    /// Funded sending accounts.
    pub accounts: usize,
    /// Seconds of saturating load per round.
    pub seconds: u64,
    /// Cycles of the three modes.
    pub cycles: usize,
    /// Sampling frequency while armed.
    pub frequency_hz: i64,
    /// CometBFT `timeout_commit` of the devnet.
    pub timeout_commit: String,
}

/// One round of `feth bench profiler`.
#[derive(Debug, Clone, Serialize)]
pub struct ProfilerRound {
    /// How abcid ran.
    pub mode: ProfilerMode,
    /// Committed TPS of the blocks of the measured window (after the
    /// warm-up), from their header times.
    pub committed_tps: f64,
    /// Blocks captured in the round (armed rounds).
    pub profiles: usize,
}

/// Figures of `feth bench profiler`.
#[derive(Debug, Clone, Serialize)]
pub struct ProfilerBench {
    /// What was run.
    pub plan: ProfilerBenchPlan,
    /// Whether the devnet ran on tmpfs (`/dev/shm`), out of reach of disk latency.
    pub on_tmpfs: bool,
    /// Rounds in the order run.
    pub rounds: Vec<ProfilerRound>,
    /// Mean committed TPS without the profiler.
    pub off_tps: f64,
    /// Mean committed TPS, disarmed.
    pub disarmed_tps: f64,
    /// Mean committed TPS, armed on every block.
    pub armed_tps: f64,
    /// `armed / disarmed` (target ≥ 0.97).
    pub armed_ratio: f64,
    /// `disarmed / off` (target: indistinguishable from 1).
    pub disarmed_ratio: f64,
}

/// Load before a round's measured window: the node restarted, its mempool
/// fills and its blocks reach a steady size.
const WARM_UP: Duration = Duration::from_secs(3);

/// Transactions per second committed in blocks `first + 1 ..= last`, over the
/// time between the headers of `first` and `last` (nanosecond header times:
/// web3's whole-second block timestamps would skew a 15 s window by up to 7 %).
async fn steady_tps(rpc: &feth_etl::rpc::Rpc, first: u64, last: u64) -> Result<f64> {
    anyhow::ensure!(
        last > first + 1,
        "only {} blocks in the measured window; make --seconds longer",
        last.saturating_sub(first)
    );
    let heights: Vec<u64> = (first..=last).collect();
    let (facts, missing) = rpc.fetch(&heights, &[]).await?;
    anyhow::ensure!(
        missing.is_empty(),
        "the node did not describe blocks {missing:?}"
    );
    let time = |h: u64| facts.get(&h).and_then(|f| f.time_ns);
    let (Some(start), Some(end)) = (time(first), time(last)) else {
        anyhow::bail!("no header time for block {first} or {last}");
    };
    anyhow::ensure!(
        end > start,
        "block {last}'s header time is not after block {first}'s"
    );
    let txs: u64 = (first + 1..=last)
        .map(|h| facts.get(&h).and_then(|f| f.txs).unwrap_or(0))
        .sum();
    Ok(txs as f64 / ((end - start) as f64 / 1e9))
}

/// Starts a devnet of its own (release abcid next to this feth, free
/// loopback ports, a temporary folder on tmpfs when there is one), funds `plan.accounts` senders, then
/// saturates it for `plan.seconds` per round in three modes — without the
/// profiler, disarmed, armed on every block — `plan.cycles` times, in ABC
/// CBA order. Every round starts from a restarted node, so that all rounds
/// begin alike.
pub async fn profiler(plan: ProfilerBenchPlan) -> Result<ProfilerBench> {
    use crate::devnet::{self, Devnet, DevnetOptions};
    use crate::fund;
    use feth_profiler_rpc::api::EnableParams;
    use feth_profiler_rpc::ProfilerClient;

    // On tmpfs when there is one: CometBFT and abcid both fsync every block,
    // and a virtual disk's fsync latency varies far more than the profiler's
    // cost; this benchmark compares CPU work.
    let shm = Path::new("/dev/shm");
    let on_tmpfs = shm.is_dir();
    let dir = if on_tmpfs {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .context("cannot create a temporary devnet folder")?;
    let mut options = DevnetOptions::for_test(dir.path(), devnet::free_ports()?);
    options.timeout_commit = plan.timeout_commit.clone();
    let mut net = Devnet::start(options)
        .await
        .context("starting the devnet")?;

    let root = crate::keys::read_key_file(&net.state.root_key())?;
    let client = crate::eth::EthClient::new(&net.state.web3_url(), Duration::from_secs(10))?;
    let (keys, _) = fund::fund_seeded(
        &client,
        &root,
        alloy_primitives::B256::repeat_byte(11),
        plan.accounts,
        U256::from(10u64).pow(U256::from(20u64)),
        &dir.path().join("keys.txt"),
    )
    .await
    .context("funding the senders")?;

    let mut rounds = Vec::with_capacity(plan.cycles * 3);
    for mode in (0..plan.cycles).flat_map(ProfilerMode::cycle) {
        net.state.options.no_profiler = mode == ProfilerMode::Off;
        net.restart().await.context("restarting the devnet")?;
        let profiler = ProfilerClient::new(&net.state.profiler_url(), None)?;
        if mode == ProfilerMode::Armed {
            profiler
                .enable(EnableParams {
                    blocks: Some(200),
                    frequency_hz: Some(plan.frequency_hz),
                })
                .await
                .context("cannot arm the profiler")?;
        }
        // Saturate; measure only the blocks committed between the end of the
        // warm-up and a second before the load stops.
        let mut engine = EngineConfig::transfers(RateSchedule::Closed, keys.len());
        engine.duration =
            Some(WARM_UP + Duration::from_secs(plan.seconds) + Duration::from_secs(1));
        let mut settings = LoadSettings::new(&net.state.web3_url(), engine);
        settings.wait = Duration::from_secs(30);
        let load = tokio::spawn(load::run(settings, keys.clone()));
        let rpc = feth_etl::rpc::Rpc::new(&net.state.rpc_url(), 20, 2)?;
        tokio::time::sleep(WARM_UP).await;
        let first = rpc.status().await?.latest_height;
        tokio::time::sleep(Duration::from_secs(plan.seconds)).await;
        let last = rpc.status().await?.latest_height;
        let report = load.await.context("the load task panicked")??;
        anyhow::ensure!(
            report.totals.included > 0,
            "round {}: nothing was included",
            rounds.len() + 1
        );
        let committed_tps = steady_tps(&rpc, first, last).await?;
        let mut profiles = 0;
        if mode == ProfilerMode::Armed {
            let status = profiler.disable().await?;
            profiles = status.session.map_or(0, |s| s.blocks_captured as usize);
            profiler.wait_idle(Duration::from_secs(120)).await?;
        }
        eprintln!(
            "round {:>2}  {:<8}  {:>9.1} committed tx/s  {:>4} blocks profiled",
            rounds.len() + 1,
            mode.as_str(),
            committed_tps,
            profiles
        );
        rounds.push(ProfilerRound {
            mode,
            committed_tps,
            profiles,
        });
    }
    let mean = |mode: ProfilerMode| {
        let v: Vec<f64> = rounds
            .iter()
            .filter(|r| r.mode == mode)
            .map(|r| r.committed_tps)
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let (off_tps, disarmed_tps, armed_tps) = (
        mean(ProfilerMode::Off),
        mean(ProfilerMode::Disarmed),
        mean(ProfilerMode::Armed),
    );
    Ok(ProfilerBench {
        plan,
        on_tmpfs,
        rounds,
        off_tps,
        disarmed_tps,
        armed_tps,
        armed_ratio: armed_tps / disarmed_tps.max(1e-9),
        disarmed_ratio: disarmed_tps / off_tps.max(1e-9),
    })
}

#[cfg(test)]
mod tests {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_agent_submits_every_transaction_to_the_sink() {
        let url = crate::sink::start_local().await;
        for batch in [1, 10] {
            let r = super::agent(&url, 100, 1_000, 8, batch).await.unwrap();
            assert_eq!(r.txs, 1_000, "batch {batch}");
            assert!(r.ratio > 0.0);
        }
    }
}
