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
        Command::Send(a) => cmd::send::run(a).await,
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
