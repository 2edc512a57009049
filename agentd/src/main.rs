//! The `feth` command-line tool.

use clap::{Parser, Subcommand};

use feth::cmd;

/// Fund accounts, load an EVM-on-CometBFT chain and report committed TPS.
#[derive(Debug, Parser)]
#[command(name = "feth", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a local devnet: the pinned CometBFT and abcid.
    Devnet(cmd::devnet::DevnetCommand),
    /// Create and fund many accounts from a root key.
    Fund(cmd::fund::FundArgs),
    /// Fire parallel signed transfers and report committed TPS.
    Load(cmd::load::LoadArgs),
    /// Balance and nonce of an account.
    Info(cmd::info::InfoArgs),
    /// Heights, timestamps, transaction counts and block times.
    Block(cmd::info::BlockArgs),
    /// Arm the block profiler of a running node, or fetch what it captured.
    Profiler(feth_profiler_rpc::cli::ProfilerArgs),
    /// Flamegraph tools: differential flamegraphs of two sets of profiles.
    Flamegraph(feth_profiler_rpc::cli::FlamegraphArgs),
    /// Node logs into Redis; block times, TPS and valid/invalid counts out.
    Etl(feth_etl::cli::EtlArgs),
    /// Benchmarks that print figures.
    Bench(cmd::bench::BenchCommand),
    /// Send signed value transfers and wait until they are committed.
    Send(cmd::send::SendArgs),
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FETH_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Devnet(c) => cmd::devnet::run(c).await,
        Command::Fund(a) => cmd::fund::run(a).await,
        Command::Load(a) => cmd::load::run(a).await,
        Command::Info(a) => cmd::info::info(a).await,
        Command::Block(a) => cmd::info::block(a).await,
        Command::Profiler(a) => feth_profiler_rpc::cli::run_profiler(a).await,
        Command::Flamegraph(a) => feth_profiler_rpc::cli::run_flamegraph(a).await,
        Command::Etl(a) => feth_etl::cli::run(a).await,
        Command::Bench(c) => cmd::bench::run(c).await,
        Command::Send(a) => cmd::send::run(a).await,
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
