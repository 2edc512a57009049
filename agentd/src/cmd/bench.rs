//! `feth bench agent` (and the sink it runs against), `feth bench fund`,
//! `feth bench profiler`, `feth bench rpc`, `feth bench stages` and `feth bench zipf`.

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use clap::{Args, Subcommand};

use super::args::{emit, BenchDevnetArgs};
use super::fund::Via;
use crate::load::plan::{DEFAULT_BATCH, DEFAULT_MAX_PARALLELISM, MAX_PER_SENDER};
use crate::{bench, devnet, fund};

/// `feth bench …`
#[derive(Debug, Args)]
pub struct BenchCommand {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// Agent throughput and CPU cost against a local accept-only JSON-RPC sink.
    Agent(AgentBenchArgs),
    /// What abcid's block profiler costs a saturated node, on a devnet of its own:
    /// armed against disarmed on one live node (switched by RPC, ABBA pairs of windows),
    /// then disarmed against `abcid --no-profiler` (restarted rounds, ABBA).
    Profiler(ProfilerBenchArgs),
    /// How fast `feth fund` pays many fresh accounts, on a devnet of its own.
    Fund(FundBenchArgs),
    /// How fast abcid answers eth_getLogs over a long ERC-20 chain and eth_getBlockReceipts
    /// of a full block, idle against under load (ABBA), on a devnet of its own.
    Rpc(RpcBenchArgs),
    /// A Zipf sender mix at a fixed rate with pipelined nonces (--per-sender) on a devnet of
    /// its own with abcid's nonce-queue: committed TPS over the sending window against the
    /// offered rate, p99 inclusion latency in blocks, drain tail.
    Zipf(ZipfBenchArgs),
    /// Where a committed transaction's CPU and wall time go, stage by stage (RPC
    /// ingress, CheckTx, recheck, block building, execution, Commit, consensus), from the
    /// whole node's profile (abcid and CometBFT) and abcid's counters under a closed-loop
    /// load on a devnet of its own, and which ABCI connection is busiest.
    Stages(StagesBenchArgs),
    /// What per-block profiling of a Go node (feth profiler cometbft --blocks) costs it:
    /// committed TPS with a session running against none, ABBA pairs of windows under a
    /// closed-loop load, on a running node given by its URLs.
    GoProfiler(GoProfilerBenchArgs),
    /// Serve the accept-only sink (used by `bench agent`, in its own process).
    #[command(hide = true)]
    Sink {
        /// Address to listen on.
        #[arg(long)]
        addr: SocketAddr,
        /// Make blocks of the accepted transactions.
        #[arg(long)]
        include: bool,
    },
    /// One agent run against a sink (used by `bench agent`, in its own process).
    #[command(hide = true)]
    AgentRun {
        /// The sink's URL.
        #[arg(long)]
        sink: String,
        /// The sink makes blocks of what it accepts.
        #[arg(long)]
        include: bool,
        #[command(flatten)]
        args: AgentBenchArgs,
    },
    /// The steady agent run against an including sink (used by `bench agent`).
    #[command(hide = true)]
    AgentSteady {
        /// The sink's URL.
        #[arg(long)]
        sink: String,
        #[command(flatten)]
        args: AgentBenchArgs,
    },
}

/// `feth bench agent`.
#[derive(Debug, Args)]
struct AgentBenchArgs {
    /// Accounts to load (memory is reported with them loaded).
    #[arg(long, default_value_t = 10_000)]
    accounts: usize,
    /// Transactions to submit.
    #[arg(long, default_value_t = 100_000)]
    txs: u64,
    /// Concurrent requests.
    #[arg(long, default_value_t = DEFAULT_MAX_PARALLELISM)]
    max_parallelism: usize,
    /// Transactions per JSON-RPC batch.
    #[arg(long, default_value_t = DEFAULT_BATCH)]
    batch: usize,
    /// Rate of the steady run that measures memory per completed
    /// transaction, tx/s.
    #[arg(long, default_value_t = 5_000.0)]
    steady_rate: f64,
    /// Seconds of the steady run (at least 30).
    #[arg(long, default_value_t = 40.0)]
    steady_seconds: f64,
    /// Print the figures as JSON on stdout; the summary then goes to stderr.
    #[arg(long)]
    json: bool,
}

impl AgentBenchArgs {
    /// The arguments that make a child run the same agent run.
    fn child_args(&self) -> Vec<String> {
        vec![
            format!("--accounts={}", self.accounts.max(1)),
            format!("--txs={}", self.txs.max(1)),
            format!("--max-parallelism={}", self.max_parallelism.max(1)),
            format!("--batch={}", self.batch.max(1)),
            format!("--steady-rate={}", self.steady_rate),
            format!("--steady-seconds={}", self.steady_seconds),
        ]
    }
}

/// `feth bench fund`.
#[derive(Debug, Args)]
struct FundBenchArgs {
    /// Accounts to fund.
    #[arg(long, default_value_t = 100_000)]
    count: usize,
    /// How the root pays.
    #[arg(long, value_enum, default_value_t = Via::Auto)]
    via: Via,
    /// Most accounts per batch transaction.
    #[arg(long, default_value_t = fund::DEFAULT_BATCH_SIZE)]
    batch_size: usize,
    #[command(flatten)]
    devnet: BenchDevnetArgs,
    /// Print the figures as JSON on stdout; the summary then goes to stderr.
    #[arg(long)]
    json: bool,
}

impl FundBenchArgs {
    /// The benchmark's plain plan.
    fn plan(self) -> bench::FundBenchPlan {
        bench::FundBenchPlan {
            count: self.count.max(1),
            via: self.via.into(),
            batch_size: self.batch_size.max(1),
            timeout_commit: self.devnet.timeout_commit,
        }
    }
}

/// `feth bench profiler`.
#[derive(Debug, Args)]
struct ProfilerBenchArgs {
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
    #[command(flatten)]
    devnet: BenchDevnetArgs,
    /// Print the figures as JSON on stdout; the summary then goes to stderr.
    #[arg(long)]
    json: bool,
}

/// `feth bench go-profiler`.
#[derive(Debug, Args)]
struct GoProfilerBenchArgs {
    /// The node's web3 endpoint.
    #[arg(long, value_name = "URL")]
    network: String,
    /// CometBFT's RPC.
    #[arg(long, value_name = "URL")]
    comet_rpc: String,
    /// The node's Go pprof (`rpc.pprof_laddr`).
    #[arg(long, value_name = "URL")]
    pprof: String,
    /// Funded senders (`feth fund --out`).
    #[arg(long)]
    keys: std::path::PathBuf,
    /// Armed/disarmed pairs of windows.
    #[arg(long, default_value_t = 6)]
    pairs: usize,
    /// Seconds per window.
    #[arg(long, default_value_t = 10)]
    window: u64,
    /// The load's fixed rate, tx/s (default: a closed loop).
    #[arg(long)]
    rate: Option<f64>,
    /// The node's PID, to read its CPU per transaction (on this machine).
    #[arg(long)]
    node_pid: Option<u32>,
    /// Where the armed windows' profiles go.
    #[arg(long, default_value = "flamegraphs/bench-go-profiler")]
    out: std::path::PathBuf,
    /// Print the figures as JSON on stdout; the summary then goes to stderr.
    #[arg(long)]
    json: bool,
}

/// `feth bench stages`.
#[derive(Debug, Args)]
struct StagesBenchArgs {
    /// Funded sending accounts of the closed-loop load.
    #[arg(long, default_value_t = 500)]
    accounts: usize,
    /// Blocks profiled.
    #[arg(long, default_value_t = 10)]
    blocks: u32,
    /// abcid's sampling frequency, Hz (1-1000).
    #[arg(long, default_value_t = 99)]
    frequency_hz: u32,
    /// abcid's patches (`all`, `none`, or a list).
    #[arg(long, default_value = "all")]
    patches: String,
    #[command(flatten)]
    devnet: BenchDevnetArgs,
    /// A CometBFT setting, `KEY=VALUE` as `feth devnet up --set` takes it
    /// (`abci=grpc`, `mempool.size=8000`); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    comet_set: Vec<String>,
    /// Folder the whole node's profile is written into.
    #[arg(long, default_value = "flamegraphs/stages")]
    out: std::path::PathBuf,
    /// Print the figures as JSON on stdout; the summary then goes to stderr.
    #[arg(long)]
    json: bool,
}

impl StagesBenchArgs {
    /// The benchmark's plain plan.
    fn plan(&self) -> bench::stages::StagesBenchPlan {
        bench::stages::StagesBenchPlan {
            accounts: self.accounts.max(1),
            blocks: self.blocks.max(1),
            frequency_hz: self.frequency_hz,
            patches: self.patches.clone(),
            timeout_commit: self.devnet.timeout_commit,
            comet_set: self.comet_set.clone(),
        }
    }
}

impl ProfilerBenchArgs {
    /// The benchmark's plain plan.
    fn plan(self) -> bench::ProfilerBenchPlan {
        bench::ProfilerBenchPlan {
            accounts: self.accounts.max(1),
            pairs: self.pairs.max(1),
            window_secs: self.window.max(1),
            round_pairs: self.round_pairs,
            round_secs: self.round_seconds.max(1),
            frequency_hz: self.frequency_hz,
            timeout_commit: self.devnet.timeout_commit,
        }
    }
}

/// `feth bench rpc`.
#[derive(Debug, Args)]
struct RpcBenchArgs {
    /// Height of the chain built by the ERC-20 load before measuring (at most 10,000 blocks
    /// are queried: abcid's default --rpc-max-log-blocks).
    #[arg(long, default_value_t = 10_000)]
    blocks: u64,
    /// Funded senders of the load.
    #[arg(long, default_value_t = 200)]
    accounts: usize,
    /// ERC-20 transfers gathered into the one block whose receipts are read.
    #[arg(long, default_value_t = 2_400)]
    big_block_txs: usize,
    /// About how many logs the wide eth_getLogs returns (under abcid's 10,000-log cap).
    #[arg(long, default_value_t = 9_000)]
    wide_logs: usize,
    /// Calls of every query per window.
    #[arg(long, default_value_t = 20)]
    calls: usize,
    /// Loaded/idle pairs of windows.
    #[arg(long, default_value_t = 3)]
    pairs: usize,
    /// The devnet's CometBFT `timeout_commit` (outside the big block).
    #[arg(long, default_value = "50ms")]
    timeout_commit: devnet::GoDuration,
    /// The devnet's block gas limit (the big block needs 80,000 gas per transfer).
    #[arg(long, default_value_t = 300_000_000)]
    block_gas_limit: u64,
    /// Print the figures as JSON on stdout; the summary then goes to stderr.
    #[arg(long)]
    json: bool,
}

/// `feth bench zipf`.
#[derive(Debug, Args)]
struct ZipfBenchArgs {
    /// Funded senders.
    #[arg(long, default_value_t = 1_000)]
    senders: usize,
    /// Offered rate, tx/s.
    #[arg(long, default_value_t = 1_000.0)]
    rate: f64,
    /// Seconds of sending.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Sender mix: `zipf:S,V` (Zipf-Mandelbrot) or `uniform`.
    #[arg(long, default_value = "zipf:1.1,2")]
    accounts: String,
    /// Transactions in flight per sender.
    #[arg(long, default_value_t = 16,
          value_parser = clap::value_parser!(u64).range(1..=MAX_PER_SENDER as u64))]
    per_sender: u64,
    /// Consecutive nonces of one sender per request.
    #[arg(long, default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..=MAX_PER_SENDER as u64))]
    per_request: u64,
    #[command(flatten)]
    devnet: BenchDevnetArgs,
    /// abcid's patches on the devnet.
    #[arg(long, default_value = "all,nonce-queue")]
    patches: String,
    /// The devnet's block gas limit.
    #[arg(long, default_value_t = crate::devnet::DEFAULT_BLOCK_GAS_LIMIT)]
    block_gas_limit: u64,
    /// Print the figures as JSON on stdout; the summary then goes to stderr.
    #[arg(long)]
    json: bool,
}

impl ZipfBenchArgs {
    /// The benchmark's plain plan.
    fn plan(&self) -> Result<bench::ZipfBenchPlan> {
        if !(self.rate > 0.0 && self.duration > 0.0) {
            bail!("--rate and --duration must be positive");
        }
        if self.senders == 0 {
            bail!("--senders must be at least 1");
        }
        Ok(bench::ZipfBenchPlan {
            senders: self.senders,
            rate: self.rate,
            duration_secs: self.duration,
            accounts: self.accounts.clone(),
            per_sender: self.per_sender as usize,
            per_request: self.per_request.min(self.per_sender) as usize,
            timeout_commit: self.devnet.timeout_commit,
            patches: self.patches.clone(),
            block_gas_limit: self.block_gas_limit,
        })
    }
}

impl RpcBenchArgs {
    /// The benchmark's plain plan.
    fn plan(self) -> bench::RpcBenchPlan {
        bench::RpcBenchPlan {
            blocks: self.blocks.max(10),
            accounts: self.accounts.max(2),
            big_block_txs: self.big_block_txs.max(1),
            wide_logs: self.wide_logs.max(1),
            calls: self.calls.max(1),
            pairs: self.pairs.max(1),
            timeout_commit: self.timeout_commit,
            block_gas_limit: self.block_gas_limit,
        }
    }
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
        What::Sink { addr, include } => crate::sink::serve(addr, include).await,
        What::AgentRun {
            sink,
            include,
            args,
        } => {
            let r = bench::agent(
                &sink,
                include,
                args.accounts.max(1),
                args.txs.max(1),
                args.max_parallelism.max(1),
                args.batch.max(1),
            )
            .await?;
            println!("{}", serde_json::to_string(&r)?);
            Ok(())
        }
        What::AgentSteady { sink, args } => {
            ensure!(
                args.steady_rate > 0.0 && args.steady_rate.is_finite(),
                "--steady-rate must be a positive number of tx/s"
            );
            let r = bench::agent::steady(
                &sink,
                args.accounts.max(1),
                args.steady_rate,
                args.steady_seconds,
            )
            .await?;
            println!("{}", serde_json::to_string(&r)?);
            Ok(())
        }
        What::Profiler(args) => {
            let json = args.json;
            let r = bench::profiler(args.plan()).await?;
            emit(json, &r, |out| r.write_summary(out))
        }
        What::Rpc(args) => {
            let json = args.json;
            let r = bench::rpc(args.plan()).await?;
            emit(json, &r, |out| r.write_summary(out))
        }
        What::GoProfiler(a) => {
            let r = bench::go_profiler::go_profiler(bench::go_profiler::GoProfilerBenchPlan {
                web3: a.network,
                comet_rpc: a.comet_rpc,
                pprof: a.pprof,
                keys: a.keys,
                pairs: a.pairs,
                window_secs: a.window,
                rate: a.rate,
                node_pid: a.node_pid,
                out: a.out,
            })
            .await?;
            emit(a.json, &r, |out| r.write_summary(out))
        }
        What::Stages(args) => {
            let r = bench::stages::stages(args.plan(), &args.out).await?;
            emit(args.json, &r, |out| r.write_summary(out))
        }
        What::Zipf(args) => {
            let r = bench::zipf(args.plan()?).await?;
            emit(args.json, &r, |out| r.write_summary(out))
        }
        What::Fund(args) => {
            let json = args.json;
            let r = bench::fund(args.plan()).await?;
            emit(json, &r, |out| r.write_summary(out))
        }
        What::Agent(args) => {
            let raw = bench::raw_sign_rate(20_000);
            let completed = agent_run(&args, "agent-run", true).await?;
            let in_flight = agent_run(&args, "agent-run", false).await?;
            let steady = agent_run(&args, "agent-steady", true).await?;
            let r = bench::agent::summarize(
                raw,
                args.accounts.max(1),
                args.batch.max(1),
                [completed, in_flight],
                steady,
            );
            emit(args.json, &r, |out| r.write_summary(out))
        }
    }
}

/// One agent run (`bench <what>`, printing its figures as JSON) in a fresh
/// child process against a fresh sink (which makes blocks of what it
/// accepts when `include`).
async fn agent_run<T: serde::de::DeserializeOwned>(
    args: &AgentBenchArgs,
    what: &str,
    include: bool,
) -> Result<T> {
    let (url, _sink) = start_sink(include).await?;
    let exe = std::env::current_exe().context("cannot locate feth")?;
    let mut command = tokio::process::Command::new(exe);
    command.args(["bench", what, "--sink", &url]);
    if include && what == "agent-run" {
        command.arg("--include");
    }
    let out = command
        .args(args.child_args())
        .stderr(Stdio::inherit())
        .output()
        .await
        .context("cannot run the agent in a child process")?;
    if !out.status.success() {
        bail!("the agent run against the sink failed ({})", out.status);
    }
    serde_json::from_slice(&out.stdout).context("the agent run printed no figures")
}

/// Starts the accept-only sink in a child process on a free loopback port
/// and waits until it accepts connections.
async fn start_sink(include: bool) -> Result<(String, Child)> {
    let port = crate::devnet::free_port()?;
    let exe = std::env::current_exe().context("cannot locate feth")?;
    let sink = Child(
        Command::new(exe)
            .args(["bench", "sink", "--addr", &format!("127.0.0.1:{port}")])
            .args(include.then_some("--include"))
            .stdout(Stdio::null())
            .spawn()
            .context("cannot start the sink")?,
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            bail!("the sink did not listen on 127.0.0.1:{port} within 10 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok((format!("http://127.0.0.1:{port}"), sink))
}
