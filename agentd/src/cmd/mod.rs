//! The `feth` command line: every subcommand's arguments, turned into the
//! plain configuration types of the libraries, and what each one runs.

pub mod args;
pub mod bench;
pub mod bisect;
pub mod compare;
pub mod devnet;
pub mod etl;
pub mod every_step;
pub mod flamegraph;
pub mod fund;
pub mod go_blocks;
pub mod info;
pub mod keys;
pub mod load;
pub mod merge;
pub mod profiler;
pub mod report;
pub mod saturate;
pub mod send;

use clap::{Parser, Subcommand};

/// Fund accounts, load an EVM-on-CometBFT chain and report committed TPS.
#[derive(Debug, Parser)]
#[command(name = "feth", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a local devnet: the pinned CometBFT and abcid.
    Devnet(devnet::DevnetCommand),
    /// Create and fund many accounts from a root key.
    Fund(fund::FundArgs),
    /// Fire parallel signed transfers and report committed TPS.
    Load(Box<load::LoadArgs>),
    /// Combine several agents' `feth load --out` reports, committed TPS read once from the chain.
    Merge(merge::MergeArgs),
    /// Balance and nonce of an account.
    Info(info::InfoArgs),
    /// Heights, timestamps, transaction counts and block times.
    Block(info::BlockArgs),
    /// Find the highest open-loop rate the chain keeps up with (its knee).
    Saturate(saturate::SaturateArgs),
    /// Arm the block profiler of a running node, or fetch what it captured.
    Profiler(profiler::ProfilerArgs),
    /// Flamegraph tools: differential flamegraphs of two sets of profiles.
    Flamegraph(flamegraph::FlamegraphArgs),
    /// Node logs into Redis; block times, TPS and valid/invalid counts out.
    Etl(etl::EtlArgs),
    /// Benchmarks that print figures.
    Bench(bench::BenchCommand),
    /// Is the chain faster after a change? Gate a candidate report against a baseline.
    Compare(Box<compare::CompareArgs>),
    /// Which commit made the chain slower: a bisection judged by the comparison's gate.
    Bisect(Box<bisect::BisectArgs>),
    /// Send signed value transfers and wait until they are committed.
    Send(send::SendArgs),
    /// An HTML page of a run's charts, flamegraphs and parameters, and a Markdown summary.
    Report(report::ReportArgs),
    /// Keys files: split one into a shard file per agent.
    #[command(subcommand)]
    Keys(keys::KeysCommand),
}

impl Cli {
    /// Runs the chosen subcommand.
    pub async fn run(self) -> anyhow::Result<()> {
        match self.command {
            Command::Devnet(c) => devnet::run(c).await,
            Command::Fund(a) => fund::run(a).await,
            Command::Load(a) => load::run(*a).await,
            Command::Merge(a) => merge::run(a).await,
            Command::Info(a) => info::info(a).await,
            Command::Block(a) => info::block(a).await,
            Command::Saturate(a) => saturate::run(a).await,
            Command::Profiler(a) => profiler::run(a).await,
            Command::Flamegraph(a) => flamegraph::run(a).await,
            Command::Etl(a) => etl::run(a).await,
            Command::Bench(c) => bench::run(c).await,
            Command::Compare(a) => compare::run(*a).await,
            Command::Bisect(a) => bisect::run(*a).await,
            Command::Send(a) => send::run(a).await,
            Command::Report(a) => report::run(a).await,
            Command::Keys(c) => keys::run(c),
        }
    }
}

/// An ending of `feth` that is not an ordinary error: `main` prints the
/// message like any error but exits with `status` instead of 1 (e.g.
/// [`compare::REGRESSION_STATUS`]).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Exit {
    /// The process exit status.
    pub status: i32,
    /// What to print.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
