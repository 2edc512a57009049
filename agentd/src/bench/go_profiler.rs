//! `feth bench go-profiler`: what per-block profiling of a Go node (see
//! [`crate::go_profile`]) costs it, in committed TPS under a closed-loop
//! load, on a running node given by its URLs (evmd, or any chain whose node
//! serves Go's pprof).
//!
//! One node, one continuous load: windows with a per-block session running
//! (CPU captures and the allocation and lock profiles) and windows with
//! nothing armed alternate in ABBA pairs, so drift cancels; each pair gives
//! a log-ratio, and the run reports the geometric mean with its 95 %
//! interval and the smallest change its noise could see. A window counts the
//! transactions of the blocks committed in it over their CometBFT header
//! times. With `--node-pid`, the node's CPU per committed transaction too.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use feth_comet::rpc::Rpc;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::background::BackgroundLoad;
use crate::accounts::KeySet;
use crate::blocks::{comet_window, next_block};
use crate::go_profile::blocks::BlocksConfig;
use crate::go_profile::roles::RoleTable;
use crate::go_profile::{self};
use crate::load::pick::RateSchedule;
use crate::load::plan::WorkloadKind;
use crate::procstat;
use crate::stats::LogRatio;

/// Load before the first window: the mempool fills, blocks reach their size.
const WARM_UP: Duration = Duration::from_secs(5);
/// The goal: armed TPS at least this share of disarmed.
pub const GOAL: f64 = 0.97;

/// What to run, against which node.
#[derive(Debug, Clone, Serialize)]
pub struct GoProfilerBenchPlan {
    /// The node's web3 endpoint (the load).
    pub web3: String,
    /// CometBFT's RPC (blocks and their times).
    pub comet_rpc: String,
    /// The node's Go pprof.
    pub pprof: String,
    /// Funded senders.
    pub keys: PathBuf,
    /// Armed/disarmed pairs of windows.
    pub pairs: usize,
    /// Seconds per window.
    pub window_secs: u64,
    /// The load's fixed rate, tx/s; `None`: a closed loop.
    pub rate: Option<f64>,
    /// The node's PID, to read its CPU (it must run on this machine).
    pub node_pid: Option<u32>,
    /// Where the armed windows' profiles go.
    pub out: PathBuf,
}

/// One measured window.
#[derive(Debug, Clone, Serialize)]
pub struct GoWindow {
    /// Whether a per-block session ran over it.
    pub armed: bool,
    /// The window holds blocks `first_height + 1 ..= last_height`.
    pub first_height: u64,
    /// Its last block.
    pub last_height: u64,
    /// Transactions in its blocks.
    pub txs: u64,
    /// Committed TPS over the blocks' header times.
    pub committed_tps: f64,
    /// The node's CPU per committed transaction, µs (with `--node-pid`).
    pub node_cpu_us_per_tx: Option<f64>,
}

/// Figures of `feth bench go-profiler`.
#[derive(Debug, Clone, Serialize)]
pub struct GoProfilerBench {
    /// What was run.
    pub plan: GoProfilerBenchPlan,
    /// The windows, in the order run.
    pub windows: Vec<GoWindow>,
    /// Armed TPS over disarmed, paired.
    pub tps_ratio: Option<LogRatio>,
    /// Armed node CPU per tx over disarmed, paired (with `--node-pid`).
    pub cpu_ratio: Option<LogRatio>,
    /// The goal's verdict: met, not met, or inconclusive.
    pub verdict: String,
}

/// Runs the pairs (see the module docs).
pub async fn go_profiler(plan: GoProfilerBenchPlan) -> Result<GoProfilerBench> {
    let keys = KeySet::load(&plan.keys)?;
    let rpc = Rpc::new(&plan.comet_rpc, 20, 2)?;
    let table = RoleTable::default_table()?;
    let schedule = plan.rate.map_or(RateSchedule::Closed, RateSchedule::Fixed);
    let load = BackgroundLoad::start_at(
        &plan.web3,
        &keys,
        (schedule, WorkloadKind::Transfer),
        Duration::from_secs(30),
    );
    let bar = progress(2 * plan.pairs);
    tokio::time::sleep(WARM_UP).await;
    let mut windows = Vec::with_capacity(2 * plan.pairs);
    for i in 0..plan.pairs {
        // ABBA: disarmed first in even pairs, armed first in odd ones.
        for armed in [i % 2 == 1, i % 2 == 0] {
            anyhow::ensure!(
                !load.is_finished(),
                "the load stopped before the windows ended"
            );
            bar.set_message(if armed { "armed" } else { "disarmed" });
            let window = match armed {
                true => armed_window(&plan, &rpc, &table, i).await?,
                false => window(&plan, &rpc, false).await?,
            };
            bar.inc(1);
            windows.push(window);
        }
    }
    bar.finish_and_clear();
    load.finish().await?;
    Ok(summarise(plan, windows))
}

/// A window with a per-block session running from before its first block
/// to after its last.
async fn armed_window(
    plan: &GoProfilerBenchPlan,
    rpc: &Rpc,
    table: &RoleTable,
    i: usize,
) -> Result<GoWindow> {
    let cfg = BlocksConfig {
        pprof_url: plan.pprof.clone(),
        comet_rpc: plan.comet_rpc.clone(),
        // One-second captures: a session of this many heights outlasts the window.
        blocks: u32::try_from(plan.window_secs + 3).unwrap_or(u32::MAX),
        capture_secs: None,
        label: "node".to_string(),
        timeout: Duration::from_secs(plan.window_secs * 4 + 60),
    };
    let out = plan.out.join(format!("pair-{i}"));
    let session = go_profile::profile_blocks(&cfg, table, &out);
    let measured = async {
        // The session's first capture begins at the next height.
        let h = rpc.status().await?.latest_height;
        next_block(rpc, h).await?;
        window(plan, rpc, true).await
    };
    let (session, measured) = tokio::join!(session, measured);
    session.context("the per-block session")?;
    measured
}

/// One window from the next block on, `plan.window_secs` long.
async fn window(plan: &GoProfilerBenchPlan, rpc: &Rpc, armed: bool) -> Result<GoWindow> {
    let first = next_block(rpc, rpc.status().await?.latest_height).await?;
    let cpu0 = node_cpu(plan.node_pid)?;
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(plan.window_secs)).await;
    let last = rpc.status().await?.latest_height;
    let cpu1 = node_cpu(plan.node_pid)?;
    anyhow::ensure!(
        last > first,
        "no block in {:?}: is the chain making blocks?",
        started.elapsed()
    );
    let blocks = comet_window(rpc, first, last, false).await?;
    let txs = blocks.txs;
    anyhow::ensure!(
        txs > 0,
        "blocks {first}–{last} hold no transaction: the load is not getting through \
         (are the senders funded, their fees above the node's?)"
    );
    Ok(GoWindow {
        armed,
        first_height: first,
        last_height: last,
        txs,
        committed_tps: txs as f64 / blocks.seconds(),
        node_cpu_us_per_tx: cpu0
            .zip(cpu1)
            .map(|(a, b)| b.saturating_sub(a).as_secs_f64() * 1e6 / txs.max(1) as f64),
    })
}

fn node_cpu(pid: Option<u32>) -> Result<Option<Duration>> {
    pid.map(procstat::pid_cpu).transpose()
}

fn summarise(plan: GoProfilerBenchPlan, windows: Vec<GoWindow>) -> GoProfilerBench {
    let pairs = |f: fn(&GoWindow) -> Option<f64>| -> Vec<(f64, f64)> {
        windows
            .chunks_exact(2)
            .filter_map(|p| {
                let (off, on) = match p[0].armed {
                    true => (&p[1], &p[0]),
                    false => (&p[0], &p[1]),
                };
                Some((f(off)?, f(on)?))
            })
            .collect()
    };
    let tps_ratio = LogRatio::paired(&pairs(|w| Some(w.committed_tps)));
    let cpu_ratio = LogRatio::paired(&pairs(|w| w.node_cpu_us_per_tx));
    let verdict = match tps_ratio.map(|r| (r.low, r.high)) {
        Some((Some(low), _)) if low >= GOAL => {
            format!("met: the whole interval is at or above {GOAL}")
        }
        Some((_, Some(high))) if high < GOAL => {
            format!("NOT met: the whole interval is below {GOAL}")
        }
        Some((Some(_), Some(_))) => {
            format!("inconclusive: the interval reaches below {GOAL}; run more pairs")
        }
        _ => "inconclusive: fewer than two pairs".to_string(),
    };
    GoProfilerBench {
        plan,
        windows,
        tps_ratio,
        cpu_ratio,
        verdict,
    }
}

fn progress(len: usize) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed:>4} window {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

impl GoProfilerBench {
    /// Writes the summary `feth bench` prints.
    pub fn write_summary(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mean = |armed: bool| {
            let tps: Vec<f64> = self
                .windows
                .iter()
                .filter(|w| w.armed == armed)
                .map(|w| w.committed_tps)
                .collect();
            tps.iter().sum::<f64>() / tps.len().max(1) as f64
        };
        writeln!(
            out,
            "per-block Go profiling on {}: {} pairs of {} s windows, ABBA, {}",
            self.plan.pprof,
            self.plan.pairs,
            self.plan.window_secs,
            self.plan
                .rate
                .map_or("a closed-loop load".to_string(), |r| format!(
                    "a load of {r} tx/s"
                ))
        )?;
        writeln!(
            out,
            "  committed TPS: disarmed {:.1}, armed {:.1}",
            mean(false),
            mean(true)
        )?;
        let describe = |r: &Option<LogRatio>| {
            r.as_ref().map_or("not measured".to_string(), |r| {
                let mde = r.mde.map_or(String::new(), |m| {
                    format!("; could see ±{:.1} %", 100.0 * m)
                });
                format!("{}{mde}", r.describe())
            })
        };
        writeln!(out, "  armed / disarmed TPS: {}", describe(&self.tps_ratio))?;
        writeln!(
            out,
            "  armed / disarmed node CPU per tx: {}",
            describe(&self.cpu_ratio)
        )?;
        writeln!(
            out,
            "  goal armed / disarmed TPS ≥ {GOAL}: {}",
            self.verdict
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(armed: bool, tps: f64) -> GoWindow {
        GoWindow {
            armed,
            first_height: 1,
            last_height: 9,
            txs: 1,
            committed_tps: tps,
            node_cpu_us_per_tx: None,
        }
    }

    fn plan() -> GoProfilerBenchPlan {
        GoProfilerBenchPlan {
            web3: String::new(),
            comet_rpc: String::new(),
            pprof: String::new(),
            keys: PathBuf::new(),
            pairs: 3,
            window_secs: 10,
            rate: None,
            node_pid: None,
            out: PathBuf::new(),
        }
    }

    #[test]
    fn pairs_are_matched_in_either_order_and_the_verdict_follows_the_interval() {
        let met = summarise(
            plan(),
            vec![
                w(false, 100.0),
                w(true, 99.0),
                w(true, 99.5),
                w(false, 100.0),
                w(false, 100.0),
                w(true, 99.2),
            ],
        );
        let r = met.tps_ratio.unwrap();
        assert_eq!(r.rounds, 3);
        assert!(
            (r.ratio - (0.99f64 * 0.995 * 0.992).cbrt()).abs() < 1e-9,
            "{r:?}"
        );
        assert!(met.verdict.starts_with("met"), "{}", met.verdict);
        assert!(met.cpu_ratio.is_none(), "no PID, no CPU");
        let not_met = summarise(
            plan(),
            vec![
                w(false, 100.0),
                w(true, 80.0),
                w(true, 81.0),
                w(false, 100.0),
                w(false, 100.0),
                w(true, 80.5),
            ],
        );
        assert!(
            not_met.verdict.starts_with("NOT met"),
            "{}",
            not_met.verdict
        );
        let noisy = summarise(
            plan(),
            vec![
                w(false, 100.0),
                w(true, 99.0),
                w(true, 60.0),
                w(false, 100.0),
                w(false, 100.0),
                w(true, 130.0),
            ],
        );
        assert!(
            noisy.verdict.starts_with("inconclusive"),
            "{}",
            noisy.verdict
        );
        let one = summarise(plan(), vec![w(false, 100.0), w(true, 99.0)]);
        assert!(
            one.verdict.contains("fewer than two pairs"),
            "{}",
            one.verdict
        );
    }
}
