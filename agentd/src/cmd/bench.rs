//! `feth bench agent` (and the sink it runs against) and `feth bench profiler`.

use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use crate::bench;

/// `feth bench …`
#[derive(Debug, Args)]
pub struct BenchCommand {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// Agent throughput and CPU cost against a local accept-only JSON-RPC sink.
    Agent {
        /// Accounts to load (memory is reported with them loaded).
        #[arg(long, default_value_t = 10_000)]
        accounts: usize,
        /// Transactions to submit.
        #[arg(long, default_value_t = 100_000)]
        txs: u64,
        /// Concurrent requests.
        #[arg(long, default_value_t = 64)]
        max_parallelism: usize,
        /// Transactions per JSON-RPC batch.
        #[arg(long, default_value_t = 10)]
        batch: usize,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// What abcid's block profiler costs a saturated node, on a devnet of its own:
    /// armed against disarmed on one live node (switched by RPC, ABBA pairs of windows),
    /// then disarmed against `abcid --no-profiler` (restarted rounds, ABBA).
    Profiler {
        /// Funded sending accounts.
        #[arg(long, default_value_t = 500)]
        accounts: usize,
        /// Armed/disarmed pairs of windows on the live node.
        #[arg(long, default_value_t = 12)]
        pairs: usize,
        /// Seconds per live window.
        #[arg(long, default_value_t = 5)]
        window: u64,
        /// Off/disarmed pairs of restarted rounds (0 skips that comparison).
        #[arg(long, default_value_t = 2)]
        round_pairs: usize,
        /// Seconds measured per restarted round (after a 3 s warm-up).
        #[arg(long, default_value_t = 15)]
        round_seconds: u64,
        /// Sampling frequency while armed.
        #[arg(long, default_value_t = 99)]
        frequency_hz: i64,
        /// The devnet's CometBFT `timeout_commit`.
        #[arg(long, default_value = "500ms")]
        timeout_commit: String,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Serve the accept-only sink (used by `bench agent`, in its own process).
    #[command(hide = true)]
    Sink {
        /// Address to listen on.
        #[arg(long)]
        addr: SocketAddr,
    },
}

/// Kills the sink child on drop.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs a bench command.
pub async fn run(command: BenchCommand) -> Result<()> {
    match command.what {
        What::Sink { addr } => crate::sink::serve(addr).await,
        What::Profiler {
            accounts,
            pairs,
            window,
            round_pairs,
            round_seconds,
            frequency_hz,
            timeout_commit,
            json,
        } => {
            let r = bench::profiler(bench::ProfilerBenchPlan {
                accounts: accounts.max(1),
                pairs: pairs.max(1),
                window_secs: window.max(1),
                round_pairs,
                round_secs: round_seconds.max(1),
                frequency_hz,
                timeout_commit,
            })
            .await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                print_profiler_bench(&r);
            }
            Ok(())
        }
        What::Agent {
            accounts,
            txs,
            max_parallelism,
            batch,
            json,
        } => {
            let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            let exe = std::env::current_exe().context("cannot locate feth")?;
            let _sink = Child(
                Command::new(exe)
                    .args(["bench", "sink", "--addr", &format!("127.0.0.1:{port}")])
                    .stdout(Stdio::null())
                    .spawn()
                    .context("cannot start the sink")?,
            );
            let url = format!("http://127.0.0.1:{port}");
            for _ in 0..100 {
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let r = bench::agent(
                &url,
                accounts.max(1),
                txs.max(1),
                max_parallelism.max(1),
                batch.max(1),
            )
            .await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                let mib = |b: u64| b as f64 / 1_048_576.0;
                println!(
                    "raw libsecp256k1 signing   {:>10.0} signatures per CPU-second (one thread)",
                    r.raw_signs_per_cpu_second
                );
                println!("agent                      {:>10.0} tx per CPU-second ({:.2} CPU-s per 10,000 tx)", r.txs_per_cpu_second, r.cpu_seconds_per_10k);
                println!(
                    "ratio agent / raw signing  {:>10.2}  (target ≥ 0.60)",
                    r.ratio
                );
                println!(
                    "agent wall throughput      {:>10.0} tx/s ({} tx in {:.2} s, {} per request)",
                    r.txs_per_second, r.txs, r.wall_seconds, r.batch
                );
                println!(
                    "memory (RSS)               {:.0} MiB at start, {:.0} MiB with {} accounts loaded, {:.0} MiB after the run",
                    mib(r.rss_start),
                    mib(r.rss_loaded),
                    r.accounts,
                    mib(r.rss_end)
                );
            }
            Ok(())
        }
    }
}

fn print_profiler_bench(r: &bench::ProfilerBench) {
    let a = &r.armed;
    println!(
        "armed vs disarmed, one live node, {} ABBA pairs of {} s windows{}:",
        a.tps_ratio.pairs,
        r.plan.window_secs,
        if r.on_tmpfs { ", on tmpfs" } else { "" }
    );
    println!(
        "  committed tx/s       disarmed {:.1}   armed {:.1}",
        a.baseline_tps, a.treated_tps
    );
    println!(
        "  armed / disarmed     {}   target ≥ 0.97: {}",
        a.tps_ratio.describe(),
        verdict_at_least(&a.tps_ratio, 0.97)
    );
    println!(
        "  node CPU per tx      armed / disarmed {}",
        a.cpu_per_tx_ratio.describe()
    );
    let cost = &r.consensus_cost;
    println!(
        "  consensus thread     {:.1} µs per armed block, wall time (longest call {:.1} µs; {} blocks)",
        cost.mean_block_us(),
        cost.max_call_ns as f64 / 1e3,
        cost.blocks
    );
    println!(
        "  profiler threads     {:.1} % of one core while armed; {:.0} ms in all disarmed windows",
        r.profiler_threads_core_share_armed * 100.0,
        r.profiler_threads_cpu_ms_disarmed
    );
    if let Some(d) = &r.disarmed {
        println!(
            "disarmed vs off (abcid --no-profiler), {} ABBA pairs of restarted {} s rounds:",
            d.tps_ratio.pairs, r.plan.round_secs
        );
        println!(
            "  committed tx/s       off {:.1}   disarmed {:.1}",
            d.baseline_tps, d.treated_tps
        );
        println!(
            "  disarmed / off       {}   {}",
            d.tps_ratio.describe(),
            match (d.tps_ratio.pairs, d.tps_ratio.holds(1.0)) {
                (1, _) => "one pair: no verdict",
                (_, true) => "indistinguishable from 1",
                (_, false) => "differs from 1",
            }
        );
        println!(
            "  node CPU per tx      disarmed / off {}",
            d.cpu_per_tx_ratio.describe()
        );
    }
}

/// Whether a ratio meets a floor: at 95 % confidence, by its mean only, or not.
fn verdict_at_least(r: &bench::RatioEstimate, floor: f64) -> &'static str {
    if r.surely_at_least(floor) {
        "met (whole 95 % CI above)"
    } else if r.mean >= floor {
        "mean meets it, CI reaches below"
    } else {
        "NOT met"
    }
}
