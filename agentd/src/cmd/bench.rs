//! `feth bench agent` (and the sink it runs against), `feth bench fund`,
//! `feth bench profiler`, `feth bench rpc` and `feth bench zipf`.

use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use clap::{Args, Subcommand};

use super::args::emit;
use super::fund::Via;
use crate::load::plan::{DEFAULT_BATCH, DEFAULT_MAX_PARALLELISM, MAX_PER_SENDER};
use crate::{bench, fund};

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
    /// The devnet's CometBFT `timeout_commit`.
    #[arg(long, default_value = "500ms")]
    timeout_commit: String,
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
            timeout_commit: self.timeout_commit,
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
    /// The devnet's CometBFT `timeout_commit`.
    #[arg(long, default_value = "500ms")]
    timeout_commit: String,
    /// Print the figures as JSON on stdout; the summary then goes to stderr.
    #[arg(long)]
    json: bool,
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
            timeout_commit: self.timeout_commit,
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
    timeout_commit: String,
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
    /// The devnet's CometBFT `timeout_commit`.
    #[arg(long, default_value = "500ms")]
    timeout_commit: String,
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
            timeout_commit: self.timeout_commit.clone(),
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
            emit(json, &r, |out| print_profiler_bench(out, &r))
        }
        What::Rpc(args) => {
            let json = args.json;
            let r = bench::rpc(args.plan()).await?;
            emit(json, &r, |out| print_rpc_bench(out, &r))
        }
        What::Zipf(args) => {
            let r = bench::zipf(args.plan()?).await?;
            emit(args.json, &r, |out| print_zipf_bench(out, &r))
        }
        What::Fund(args) => {
            let json = args.json;
            let r = bench::fund(args.plan()).await?;
            emit(json, &r, |out| print_fund_bench(out, &r))
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
            emit(args.json, &r, |out| print_agent_bench(out, &r))
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

fn print_agent_bench(out: &mut dyn Write, r: &bench::AgentBench) -> std::io::Result<()> {
    let mib = |b: u64| b as f64 / 1_048_576.0;
    writeln!(
        out,
        "raw libsecp256k1 signing   {:>10.0} signatures per CPU-second (one thread)",
        r.raw_signs_per_cpu_second
    )?;
    writeln!(
        out,
        "agent                      {:>10.0} tx per CPU-second ({:.2} CPU-s per 10,000 tx)",
        r.txs_per_cpu_second, r.cpu_seconds_per_10k
    )?;
    writeln!(
        out,
        "ratio agent / raw signing  {:>10.2}  (target ≥ 0.60)",
        r.ratio
    )?;
    writeln!(
        out,
        "agent wall throughput      {:>10.0} tx/s ({} tx in {:.2} s, {} per request)",
        r.txs_per_second, r.txs, r.wall_seconds, r.batch
    )?;
    let (c, f) = (&r.completed_run, &r.in_flight_run);
    writeln!(
        out,
        "memory (RSS)               {:.0} MiB at start, {:.0} MiB with {} accounts loaded",
        mib(c.rss_start),
        mib(c.rss_loaded),
        r.accounts,
    )?;
    let st = &r.steady_run;
    writeln!(
        out,
        "  per completed tx         {:>10.1} B  (RSS {:.1} → {:.1} MiB over {} tx included at {:.0} tx/s, in the second half of a {:.0} s run)",
        r.rss_per_completed_tx,
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
        r.rss_per_in_flight_tx,
        mib(f.rss_peak.saturating_sub(f.rss_loaded)),
        f.peak_in_flight
    )
}

fn print_profiler_bench(out: &mut dyn Write, r: &bench::ProfilerBench) -> std::io::Result<()> {
    let a = &r.armed;
    writeln!(
        out,
        "armed vs disarmed, one live node, {} ABBA pairs of {} s windows{}:",
        a.tps_ratio.pairs,
        r.plan.window_secs,
        if r.on_tmpfs { ", on tmpfs" } else { "" }
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
        verdict_at_least(&a.tps_ratio, 0.97)
    )?;
    writeln!(
        out,
        "  node CPU per tx      armed / disarmed {}",
        a.cpu_per_tx_ratio.describe()
    )?;
    let cost = &r.consensus_cost;
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
        r.profiler_threads_core_share_armed * 100.0,
        r.profiler_threads_cpu_ms_disarmed
    )?;
    if let Some(d) = &r.disarmed {
        writeln!(
            out,
            "disarmed vs off (abcid --no-profiler), {} ABBA pairs of restarted {} s rounds:",
            d.tps_ratio.pairs, r.plan.round_secs
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

fn print_zipf_bench(out: &mut dyn Write, r: &bench::ZipfBench) -> std::io::Result<()> {
    let p = &r.plan;
    writeln!(
        out,
        "committed    {:.1} tx/s over the {:.0} s sending window (by block header time), {:.1} % of the {:.0} tx/s offered",
        r.committed_tps,
        p.duration_secs,
        r.committed_share * 100.0,
        p.rate
    )?;
    writeln!(
        out,
        "             {:.1} tx/s over the window and the drain, by the agent's clock (a floor)",
        r.committed_tps_with_drain
    )?;
    writeln!(
        out,
        "latency      p99 {:.0} ms = {:.2} blocks of {:.0} ms (intended send → block seen; to header time: {:.0} ms)",
        r.p99_ms, r.p99_blocks, r.block_ms, r.p99_header_ms
    )?;
    writeln!(
        out,
        "drain tail   {} transaction(s) with a header time after the window; all seen included {:.1} s after it ended",
        r.drain_txs, r.drain_secs
    )?;
    let [signed, included, rejected, unresolved] = r.totals;
    writeln!(
        out,
        "totals       {signed} signed = {included} included + {rejected} rejected + {unresolved} unresolved; hottest sender's share {:.1} %",
        r.hottest_share * 100.0
    )?;
    if let Some(limited) = &r.agent_limited {
        writeln!(
            out,
            "WARNING      the agent, not the chain, limited the offered rate: {}",
            limited.reason
        )?;
    }
    writeln!(
        out,
        "conditions   {} senders, --accounts {}, --per-sender {}, --per-request {}; {}; timeout_commit {}, block gas limit {}, {} CPUs shared by agent and node, {}",
        p.senders,
        p.accounts,
        p.per_sender,
        p.per_request,
        r.client_version,
        p.timeout_commit,
        p.block_gas_limit,
        r.cpus,
        if r.on_tmpfs { "devnet on tmpfs" } else { "devnet on disk" }
    )
}

fn print_fund_bench(out: &mut dyn Write, r: &bench::FundBench) -> std::io::Result<()> {
    writeln!(
        out,
        "funded       {} fresh accounts via {} in {:.1} s: {:.0} accounts/s",
        r.accounts, r.via, r.seconds, r.accounts_per_second
    )?;
    writeln!(
        out,
        "chain        {} root transaction(s) in {} blocks, {:.0} gas per account",
        r.root_txs, r.blocks, r.gas_per_account
    )?;
    writeln!(
        out,
        "conditions   devnet timeout_commit {}, block gas limit {}, {}",
        r.timeout_commit,
        r.block_gas_limit,
        if r.on_tmpfs { "on tmpfs" } else { "on disk" }
    )
}

fn print_rpc_bench(out: &mut dyn Write, r: &bench::RpcBench) -> std::io::Result<()> {
    let p = &r.plan;
    writeln!(
        out,
        "conditions   {}; block gas limit {}, timeout_commit {}, {} CPUs, {}",
        r.client_version,
        p.block_gas_limit,
        p.timeout_commit,
        r.cpus,
        if r.on_tmpfs {
            "devnet on tmpfs"
        } else {
            "devnet on disk"
        }
    )?;
    writeln!(
        out,
        "chain        blocks {}..={} of ERC-20 load ({} tx, {:.1} tx per block), built in {:.0} s",
        r.range_from,
        r.range_to,
        r.range_txs,
        r.range_txs as f64 / (r.range_to - r.range_from + 1) as f64,
        r.build_seconds
    )?;
    writeln!(
        out,
        "big block    {} holds {} transactions",
        r.big_block, r.big_block_txs
    )?;
    let tps: Vec<f64> = r.windows.iter().filter_map(|w| w.load_tps).collect();
    writeln!(
        out,
        "windows      {} ABBA pairs, {} calls of each query per window; load: closed-loop ERC-20 from {} senders, {:.0} committed tx/s on average",
        p.pairs,
        p.calls,
        p.accounts,
        tps.iter().sum::<f64>() / tps.len().max(1) as f64
    )?;
    for q in &r.queries {
        let s = &q.spec;
        let what = match s.query {
            bench::rpc::Query::SelectiveLogs => "eth_getLogs, one holder's Transfer topic",
            bench::rpc::Query::WideLogs => "eth_getLogs, every Transfer of the token",
            bench::rpc::Query::BigBlockReceipts => "eth_getBlockReceipts of the big block",
        };
        writeln!(
            out,
            "{what}: {} block(s), {} result(s)",
            s.blocks, s.results
        )?;
        for (mode, l) in [("idle", &q.idle_ms), ("loaded", &q.loaded_ms)] {
            writeln!(
                out,
                "  {mode:<7} p50 {:>8.1} ms  p90 {:>8.1} ms  p99 {:>8.1} ms",
                l.p50, l.p90, l.p99
            )?;
        }
        writeln!(out, "  loaded / idle p50  {}", q.p50_ratio.describe())?;
    }
    Ok(())
}
