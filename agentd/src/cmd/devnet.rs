//! `feth devnet up | down | status | install`.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::devnet::{self, DevnetOptions};

/// `feth devnet …`
#[derive(Debug, Args)]
pub struct DevnetCommand {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Initialise (first time) and start the devnet; wait for blocks.
    Up {
        #[command(flatten)]
        options: DevnetOptions,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop the devnet's processes (by PID).
    Down {
        /// Devnet folder.
        #[arg(long, default_value = ".devnet")]
        dir: PathBuf,
    },
    /// Show whether it runs and its height.
    Status {
        /// Devnet folder.
        #[arg(long, default_value = ".devnet")]
        dir: PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Install the pinned CometBFT into the tools folder (needs Go).
    Install,
}

/// Runs a devnet command.
pub async fn run(command: DevnetCommand) -> Result<()> {
    match command.action {
        Action::Up { options, json } => {
            let state = devnet::up(options).await?;
            let status = devnet::status(&state.options.dir).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                println!("devnet up in {}", status.dir.display());
                println!("  web3 JSON-RPC  {}", status.web3);
                println!("  CometBFT RPC   {}", status.rpc);
                println!("  profiler RPC   {}", status.profiler);
                println!("  height         {}", status.height.unwrap_or_default());
                println!("  root key       {} (mode 0600)", status.root_key.display());
                println!(
                    "  logs           {}",
                    state.options.dir.join("logs").display()
                );
            }
        }
        Action::Down { dir } => {
            let stopped = devnet::down(&dir)?;
            println!("devnet in {}: stopped {stopped} process(es)", dir.display());
        }
        Action::Status { dir, json } => {
            let s = devnet::status(&dir).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                let word = |b: bool| if b { "running" } else { "stopped" };
                println!("devnet in {}", s.dir.display());
                println!("  cometbft  {}", word(s.cometbft_running));
                println!("  abcid     {}", word(s.abcid_running));
                match s.height {
                    Some(h) => println!("  height    {h} (web3 {})", s.web3),
                    None => println!("  height    unknown (web3 {} not answering)", s.web3),
                }
            }
        }
        Action::Install => {
            let path = devnet::install()?;
            println!(
                "CometBFT {} at {}",
                devnet::tools::cometbft_version(),
                path.display()
            );
        }
    }
    Ok(())
}
