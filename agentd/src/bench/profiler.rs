//! `feth bench profiler`: what abcid's embedded block profiler costs a saturated node, in
//! committed TPS, on a devnet of its own.
//!
//! Two comparisons, each interleaved within the run so that drift cancels:
//!
//! * **Armed vs disarmed, on one live node.** Under one continuous closed-loop load, the
//!   profiler is armed and disarmed by RPC — as an engineer does on a production node —
//!   for windows of `window_secs`, in ABBA order (armed then disarmed, disarmed then
//!   armed, …). Each adjacent pair gives a ratio; the run reports their mean with a 95 %
//!   bootstrap confidence interval. No restart comes between the two modes, so neither a
//!   warm-up nor the slow drift of a growing chain weighs on one side.
//! * **Disarmed vs off** (`abcid --no-profiler`), a different process: every round restarts
//!   the node, warms up, then measures `round_secs`; rounds alternate ABBA as well.
//!
//! A window counts the transactions of the blocks committed in it over their CometBFT
//! header times (nanoseconds). It also records the node's CPU (abcid and CometBFT) per
//! committed transaction, steadier than TPS under closed-loop saturation, and the CPU of the
//! profiler's own threads; over the armed windows, `profiler_status` gives what the hooks
//! cost the consensus thread per block.
//!
//! The load sends value transfers between the funded accounts, so the state stays the same
//! size over the run.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use feth_comet::rpc::Rpc;
use feth_profiler_rpc::api::EnableParams;
use feth_profiler_rpc::{ConsensusCost, ProfilerClient, SessionState};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::background::{fund_senders, BackgroundLoad};
use super::stats::RatioEstimate;
use crate::accounts::KeySet;
use crate::blocks::{comet_window, next_block};
use crate::devnet::{self, Devnet};
use crate::load::plan::WorkloadKind;
use crate::procstat;
use crate::progress;

/// Load before the first measured window, after each (re)start: the mempool fills and
/// blocks reach a steady size.
const WARM_UP: Duration = Duration::from_secs(3);
/// Blocks let pass after a mode switch before a window opens: the first armed block's
/// window opens at the next `end_block`; after disarming, the last captures are rendered.
const SETTLE_BLOCKS: usize = 2;
/// Blocks armed per session: more than any window holds (the session must outlast it).
const SESSION_BLOCKS: i64 = 200;
/// Prefix of the profiler's own thread names in abcid.
const PROFILER_THREADS: &str = feth_profiler_rpc::role::PROFILER_THREAD_PREFIX;

/// How abcid runs in a window of `feth bench profiler`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfilerMode {
    /// `abcid --no-profiler`: no profiler at all.
    Off,
    /// Profiler embedded, not armed.
    Disarmed,
    /// Profiler armed on every block of the window.
    Armed,
}

impl ProfilerMode {
    /// Pair `i` of a comparison of `treated` against `baseline`, in ABBA order.
    fn pair(i: usize, baseline: Self, treated: Self) -> [Self; 2] {
        if i.is_multiple_of(2) {
            [treated, baseline]
        } else {
            [baseline, treated]
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
    /// Armed/disarmed pairs of windows on the live node.
    pub pairs: usize,
    /// Seconds per live window.
    pub window_secs: u64,
    /// Off/disarmed pairs of restarted rounds (0: skip that comparison).
    pub round_pairs: usize,
    /// Seconds measured per restarted round.
    pub round_secs: u64,
    /// Sampling frequency while armed.
    pub frequency_hz: i64,
    /// CometBFT `timeout_commit` of the devnet.
    pub timeout_commit: devnet::GoDuration,
}

/// One measured window.
#[derive(Debug, Clone, Serialize)]
pub struct Window {
    /// How abcid ran.
    pub mode: ProfilerMode,
    /// The window holds blocks `first_height + 1 ..= last_height`.
    pub first_height: u64,
    /// Last block of the window.
    pub last_height: u64,
    /// Transactions in the window's blocks.
    pub txs: u64,
    /// Committed TPS: `txs` over the header times of `first_height` and `last_height`.
    pub committed_tps: f64,
    /// CPU of abcid and CometBFT per committed transaction, microseconds.
    pub node_cpu_us_per_tx: f64,
    /// CPU of the profiler's own threads in abcid, milliseconds.
    pub profiler_threads_cpu_ms: f64,
    /// Wall seconds between the window's first and last observed block.
    pub wall_secs: f64,
}

/// One comparison: `treated` against `baseline`, pair by pair.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The reference mode.
    pub baseline: ProfilerMode,
    /// The mode whose cost is measured.
    pub treated: ProfilerMode,
    /// Mean committed TPS over the baseline's windows.
    pub baseline_tps: f64,
    /// Mean committed TPS over the treated windows.
    pub treated_tps: f64,
    /// Treated TPS / baseline TPS, per pair.
    pub tps_ratio: RatioEstimate,
    /// Treated node CPU per tx / baseline's, per pair (above 1: the treated mode costs
    /// more CPU per transaction).
    pub cpu_per_tx_ratio: RatioEstimate,
}

impl Comparison {
    fn of(windows: &[Window], baseline: ProfilerMode, treated: ProfilerMode) -> Option<Self> {
        let mean_tps = |mode| {
            let tps: Vec<f64> = windows
                .iter()
                .filter(|w| w.mode == mode)
                .map(|w| w.committed_tps)
                .collect();
            tps.iter().sum::<f64>() / tps.len().max(1) as f64
        };
        // Windows come in pairs of one of each mode, in either order.
        let pairs: Vec<(&Window, &Window)> = windows
            .chunks_exact(2)
            .filter_map(|p| match (p[0].mode, p[1].mode) {
                (a, b) if a == baseline && b == treated => Some((&p[0], &p[1])),
                (a, b) if a == treated && b == baseline => Some((&p[1], &p[0])),
                _ => None,
            })
            .collect();
        let ratio = |f: fn(&Window) -> f64| {
            let ratios: Vec<f64> = pairs
                .iter()
                .map(|(base, treat)| f(treat) / f(base).max(1e-9))
                .collect();
            RatioEstimate::of(&ratios)
        };
        Some(Self {
            baseline,
            treated,
            baseline_tps: mean_tps(baseline),
            treated_tps: mean_tps(treated),
            tps_ratio: ratio(|w| w.committed_tps)?,
            cpu_per_tx_ratio: ratio(|w| w.node_cpu_us_per_tx)?,
        })
    }
}

/// Figures of `feth bench profiler`.
#[derive(Debug, Clone, Serialize)]
pub struct ProfilerBench {
    /// What was run.
    pub plan: ProfilerBenchPlan,
    /// Whether the devnet ran on tmpfs (`/dev/shm`), out of reach of disk latency.
    pub on_tmpfs: bool,
    /// The live node's windows, in the order run.
    pub live: Vec<Window>,
    /// The restarted rounds, in the order run.
    pub rounds: Vec<Window>,
    /// Armed against disarmed (target: TPS ratio ≥ 0.97).
    pub armed: Comparison,
    /// Disarmed against off (target: indistinguishable from 1); absent with no rounds.
    pub disarmed: Option<Comparison>,
    /// What the armed hooks cost the consensus thread over the armed windows.
    pub consensus_cost: ConsensusCost,
    /// CPU of the profiler's threads while armed, as a share of one core.
    pub profiler_threads_core_share_armed: f64,
    /// CPU of the profiler's threads over all disarmed windows and rounds, milliseconds.
    pub profiler_threads_cpu_ms_disarmed: f64,
}

/// Starts a devnet of its own (release abcid next to this feth, free loopback ports, a
/// temporary folder on tmpfs when there is one), funds `plan.accounts` senders, then runs
/// both comparisons (see the module docs).
pub async fn profiler(plan: ProfilerBenchPlan) -> Result<ProfilerBench> {
    // On tmpfs when there is one: this compares CPU work, not fsync latency.
    let (dir, on_tmpfs) = devnet::scratch_dir()?;
    let mut net = Devnet::start_private(dir.path(), |o| {
        o.timeout_commit = plan.timeout_commit;
    })
    .await
    .context("starting the devnet")?;
    let client = crate::eth::EthClient::new(&net.state.web3_url(), Duration::from_secs(10))?;
    let keys_file = dir.path().join("keys.txt");
    let keys = fund_senders(&net, &client, 11, plan.accounts, &keys_file).await?;

    let bar = ProgressBar::new(2 * (plan.pairs + plan.round_pairs) as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed:>4} window {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(250));

    let (live, consensus_cost) = live_pairs(&net, &keys, &plan, &bar).await?;
    let mut rounds = Vec::with_capacity(2 * plan.round_pairs);
    for i in 0..plan.round_pairs {
        for mode in ProfilerMode::pair(i, ProfilerMode::Off, ProfilerMode::Disarmed) {
            rounds.push(restarted_round(&mut net, &keys, &plan, mode, &bar).await?);
        }
    }
    bar.finish_and_clear();

    let armed = Comparison::of(&live, ProfilerMode::Disarmed, ProfilerMode::Armed)
        .context("no armed/disarmed pair was measured")?;
    let disarmed = Comparison::of(&rounds, ProfilerMode::Off, ProfilerMode::Disarmed);
    let armed_windows = live.iter().filter(|w| w.mode == ProfilerMode::Armed);
    let (armed_ms, armed_secs) = armed_windows.fold((0.0, 0.0), |(ms, s), w| {
        (ms + w.profiler_threads_cpu_ms, s + w.wall_secs)
    });
    let profiler_threads_cpu_ms_disarmed = live
        .iter()
        .chain(&rounds)
        .filter(|w| w.mode == ProfilerMode::Disarmed)
        .map(|w| w.profiler_threads_cpu_ms)
        .sum();
    Ok(ProfilerBench {
        plan,
        on_tmpfs,
        live,
        rounds,
        armed,
        disarmed,
        consensus_cost,
        profiler_threads_core_share_armed: armed_ms / 1e3 / f64::max(armed_secs, 1e-9),
        profiler_threads_cpu_ms_disarmed,
    })
}

/// The live comparison: one node, one continuous load, the profiler switched by RPC.
async fn live_pairs(
    net: &Devnet,
    keys: &KeySet,
    plan: &ProfilerBenchPlan,
    bar: &ProgressBar,
) -> Result<(Vec<Window>, ConsensusCost)> {
    let profiler = ProfilerClient::new(&net.state.profiler_url(), None)?;
    let rpc = Rpc::new(&net.state.rpc_url(), 20, 2)?;
    let load = BackgroundLoad::start(net, keys, WorkloadKind::Transfer, Duration::from_secs(30));
    tokio::time::sleep(WARM_UP).await;
    let before = profiler.status().await?.consensus_cost;
    let mut windows = Vec::with_capacity(2 * plan.pairs);
    for i in 0..plan.pairs {
        for mode in ProfilerMode::pair(i, ProfilerMode::Disarmed, ProfilerMode::Armed) {
            bar.set_message(format!("live node, {}", mode.as_str()));
            // Every armed window is a session of its own (ABBA repeats a mode).
            profiler.disable().await?;
            if mode == ProfilerMode::Armed {
                profiler
                    .enable(EnableParams {
                        blocks: Some(SESSION_BLOCKS),
                        frequency_hz: Some(plan.frequency_hz),
                    })
                    .await
                    .context("cannot arm the profiler")?;
            }
            let mut height = rpc.status().await?.latest_height;
            for _ in 0..SETTLE_BLOCKS {
                height = next_block(&rpc, height).await?;
            }
            let window = measure(net, &rpc, mode, height, plan.window_secs).await?;
            if mode == ProfilerMode::Armed {
                let session = profiler.status().await?.session;
                anyhow::ensure!(
                    session.is_some_and(|s| s.state == SessionState::Armed),
                    "the profiler disarmed itself before the window ended; make --window shorter"
                );
            }
            report(bar, "live", &window);
            windows.push(window);
        }
    }
    profiler.disable().await?;
    let after = profiler.status().await?.consensus_cost;
    load.finish().await?;
    Ok((windows, after.since(&before)))
}

/// One restarted round: restart abcid in `mode`, load, warm up, measure.
async fn restarted_round(
    net: &mut Devnet,
    keys: &KeySet,
    plan: &ProfilerBenchPlan,
    mode: ProfilerMode,
    bar: &ProgressBar,
) -> Result<Window> {
    bar.set_message(format!("restarted node, {}", mode.as_str()));
    net.state.options.no_profiler = mode == ProfilerMode::Off;
    net.restart().await.context("restarting the devnet")?;
    let rpc = Rpc::new(&net.state.rpc_url(), 20, 2)?;
    let load = BackgroundLoad::start(net, keys, WorkloadKind::Transfer, Duration::from_secs(30));
    tokio::time::sleep(WARM_UP).await;
    let height = next_block(&rpc, rpc.status().await?.latest_height).await?;
    let window = measure(net, &rpc, mode, height, plan.round_secs).await;
    load.finish().await?;
    let window = window?;
    report(bar, "restarted", &window);
    Ok(window)
}

fn report(bar: &ProgressBar, node: &str, w: &Window) {
    bar.inc(1);
    let line = format!(
        "{node:<9} {:<8} {:>8.1} committed tx/s  {:>6.1} µs node CPU per tx  blocks {}..={}",
        w.mode.as_str(),
        w.committed_tps,
        w.node_cpu_us_per_tx,
        w.first_height + 1,
        w.last_height
    );
    progress::println(bar, line);
}

/// Measures the blocks committed during the `seconds` after block `first`, which has just
/// been observed.
async fn measure(
    net: &Devnet,
    rpc: &Rpc,
    mode: ProfilerMode,
    first: u64,
    seconds: u64,
) -> Result<Window> {
    let cpu0 = NodeCpu::read(net)?;
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let last = next_block(rpc, rpc.status().await?.latest_height).await?;
    let cpu1 = NodeCpu::read(net)?;
    let wall_secs = started.elapsed().as_secs_f64();
    // Nanosecond header times: web3's whole-second timestamps would skew a 5 s window by
    // up to 20 %.
    let blocks = comet_window(rpc, first, last, false).await?;
    let (txs, committed_tps) = (blocks.txs, blocks.txs as f64 / blocks.seconds());
    Ok(Window {
        mode,
        first_height: first,
        last_height: last,
        txs,
        committed_tps,
        node_cpu_us_per_tx: (cpu1.node - cpu0.node).as_secs_f64() * 1e6 / txs.max(1) as f64,
        profiler_threads_cpu_ms: cpu1.profiler.saturating_sub(cpu0.profiler).as_secs_f64() * 1e3,
        wall_secs,
    })
}

/// CPU used so far by the devnet's processes, read from `/proc`.
struct NodeCpu {
    /// abcid and CometBFT, all threads.
    node: Duration,
    /// abcid's profiler threads.
    profiler: Duration,
}

impl NodeCpu {
    fn read(net: &Devnet) -> Result<Self> {
        let (Some(abcid), Some(cometbft)) = (net.state.abcid_pid, net.state.cometbft_pid) else {
            anyhow::bail!("the devnet's processes are not running");
        };
        Ok(Self {
            node: procstat::pid_cpu(abcid)? + procstat::pid_cpu(cometbft)?,
            profiler: procstat::threads_cpu(abcid, PROFILER_THREADS)?,
        })
    }
}

impl ProfilerBench {
    /// Writes the summary `feth bench` prints.
    pub fn write_summary(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let a = &self.armed;
        writeln!(
            out,
            "armed vs disarmed, one live node, {} ABBA pairs of {} s windows{}:",
            a.tps_ratio.pairs,
            self.plan.window_secs,
            if self.on_tmpfs { ", on tmpfs" } else { "" }
        )?;
        writeln!(
            out,
            "  committed tx/s       disarmed {:.1}   armed {:.1}",
            a.baseline_tps, a.treated_tps
        )?;
        writeln!(
            out,
            "  armed / disarmed     {}   target ≥ 0.97: {}",
            a.tps_ratio.describe(),
            a.tps_ratio.verdict_at_least(0.97)
        )?;
        writeln!(
            out,
            "  node CPU per tx      armed / disarmed {}",
            a.cpu_per_tx_ratio.describe()
        )?;
        let cost = &self.consensus_cost;
        writeln!(
            out,
            "  consensus thread     {:.1} µs per armed block, wall time (longest call {:.1} µs; {} blocks)",
            cost.mean_block_us(),
            cost.max_call_ns as f64 / 1e3,
            cost.blocks
        )?;
        writeln!(
            out,
            "  profiler threads     {:.1} % of one core while armed; {:.0} ms in all disarmed windows",
            self.profiler_threads_core_share_armed * 100.0,
            self.profiler_threads_cpu_ms_disarmed
        )?;
        if let Some(d) = &self.disarmed {
            writeln!(
                out,
                "disarmed vs off (abcid --no-profiler), {} ABBA pairs of restarted {} s rounds:",
                d.tps_ratio.pairs, self.plan.round_secs
            )?;
            writeln!(
                out,
                "  committed tx/s       off {:.1}   disarmed {:.1}",
                d.baseline_tps, d.treated_tps
            )?;
            writeln!(
                out,
                "  disarmed / off       {}   {}",
                d.tps_ratio.describe(),
                match (d.tps_ratio.pairs, d.tps_ratio.holds(1.0)) {
                    (1, _) => "one pair: no verdict",
                    (_, true) => "indistinguishable from 1",
                    (_, false) => "differs from 1",
                }
            )?;
            writeln!(
                out,
                "  node CPU per tx      disarmed / off {}",
                d.cpu_per_tx_ratio.describe()
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_alternate_and_compare_in_either_order() {
        use ProfilerMode::{Armed, Disarmed};
        assert_eq!(ProfilerMode::pair(0, Disarmed, Armed), [Armed, Disarmed]);
        assert_eq!(ProfilerMode::pair(1, Disarmed, Armed), [Disarmed, Armed]);
        let w = |mode, tps: f64, cpu: f64| Window {
            mode,
            first_height: 1,
            last_height: 9,
            txs: 100,
            committed_tps: tps,
            node_cpu_us_per_tx: cpu,
            profiler_threads_cpu_ms: 0.0,
            wall_secs: 5.0,
        };
        let windows = [
            w(Armed, 90.0, 110.0),
            w(Disarmed, 100.0, 100.0),
            w(Disarmed, 200.0, 100.0),
            w(Armed, 190.0, 105.0),
        ];
        let c = Comparison::of(&windows, Disarmed, Armed).unwrap();
        assert!(
            (c.tps_ratio.mean - (0.9 + 0.95) / 2.0).abs() < 1e-12,
            "{c:?}"
        );
        assert!((c.cpu_per_tx_ratio.mean - 1.075).abs() < 1e-12, "{c:?}");
        assert!((c.baseline_tps - 150.0).abs() < 1e-12);
        assert!((c.treated_tps - 140.0).abs() < 1e-12);
        assert!(Comparison::of(&windows[..1], Disarmed, Armed).is_none());
    }
}
