//! `feth devnet up | down | status | install`.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};

use crate::devnet::{self, DevnetOptions, LogFormat};

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
        options: DevnetArgs,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop the devnet's processes (by PID).
    Down {
        /// Devnet folder.
        #[arg(long, default_value = devnet::DEFAULT_DIR)]
        dir: PathBuf,
    },
    /// Show whether it runs and its height.
    Status {
        /// Devnet folder.
        #[arg(long, default_value = devnet::DEFAULT_DIR)]
        dir: PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Install the pinned CometBFT into the tools folder (needs Go).
    Install,
}

/// `feth devnet up`'s settings; [`DevnetArgs::options`] makes them plain
/// [`DevnetOptions`].
#[derive(Debug, Clone, Args)]
pub struct DevnetArgs {
    /// Folder holding the devnet's homes, logs and key.
    #[arg(long, default_value = devnet::DEFAULT_DIR)]
    dir: PathBuf,
    /// EIP-155 chain id.
    #[arg(long, default_value_t = devnet::DEFAULT_CHAIN_ID)]
    chain_id: u64,
    /// CometBFT RPC port.
    #[arg(long, default_value_t = devnet::DEFAULT_PORTS[0])]
    rpc_port: u16,
    /// CometBFT P2P port.
    #[arg(long, default_value_t = devnet::DEFAULT_PORTS[1])]
    p2p_port: u16,
    /// ABCI port between CometBFT and abcid.
    #[arg(long, default_value_t = devnet::DEFAULT_PORTS[2])]
    abci_port: u16,
    /// abcid's web3 JSON-RPC port.
    #[arg(long, default_value_t = devnet::DEFAULT_PORTS[3])]
    web3_port: u16,
    /// abcid's profiler JSON-RPC port.
    #[arg(long, default_value_t = devnet::DEFAULT_PORTS[4])]
    profiler_port: u16,
    /// CometBFT `consensus.timeout_commit`.
    #[arg(long, default_value = devnet::DEFAULT_TIMEOUT_COMMIT)]
    timeout_commit: String,
    /// CometBFT `mempool.size` (transactions).
    #[arg(long, default_value_t = devnet::DEFAULT_MEMPOOL_SIZE)]
    mempool_size: u64,
    /// CometBFT `mempool.max_txs_bytes`.
    #[arg(long, default_value_t = devnet::DEFAULT_MEMPOOL_MAX_TXS_BYTES)]
    mempool_max_txs_bytes: u64,
    /// CometBFT `rpc.max_body_bytes`.
    #[arg(long, default_value_t = devnet::DEFAULT_RPC_MAX_BODY_BYTES)]
    rpc_max_body_bytes: u64,
    /// CometBFT `rpc.max_open_connections`.
    #[arg(long, default_value_t = devnet::DEFAULT_RPC_MAX_OPEN_CONNECTIONS)]
    rpc_max_open_connections: u64,
    /// Any other `config.toml` setting, as KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Root account's genesis balance, in wei.
    #[arg(long, default_value = devnet::DEFAULT_ROOT_BALANCE)]
    root_balance: String,
    /// Log layout of both processes.
    #[arg(long, value_enum, default_value_t = LogFormatArg::Plain)]
    log_format: LogFormatArg,
    /// Delete the folder first and start a new chain.
    #[arg(long)]
    fresh: bool,
    /// Seconds to wait for the first block and the web3 server.
    #[arg(long, default_value_t = devnet::DEFAULT_WAIT_SECS)]
    wait: u64,
    /// Run abcid without its block profiler (`abcid --no-profiler`).
    #[arg(long)]
    no_profiler: bool,
    /// abcid's tunings in force (`abcid --patches`): `all`, `none`, names
    /// separated by commas, or `all,-NAME`.
    #[arg(long, default_value = devnet::DEFAULT_PATCHES)]
    patches: String,
    /// Block gas limit of a new chain (genesis and CometBFT's
    /// `block.max_gas`); 150 M, a fast EVM chain's, by default.
    #[arg(long, default_value_t = devnet::DEFAULT_BLOCK_GAS_LIMIT)]
    block_gas_limit: u64,
    /// Run this abcid build: the binary, or a folder holding it (a checkout
    /// with `target/release/abcid` will do); default: the one next to feth.
    #[arg(long, value_name = "BINARY_OR_DIR")]
    abcid: Option<PathBuf>,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormatArg {
    /// CometBFT's plain and abcid's text lines.
    Plain,
    /// One JSON object per line.
    Json,
}

impl DevnetArgs {
    /// The plain options these arguments ask for.
    pub fn options(self) -> DevnetOptions {
        DevnetOptions {
            dir: self.dir,
            chain_id: self.chain_id,
            rpc_port: self.rpc_port,
            p2p_port: self.p2p_port,
            abci_port: self.abci_port,
            web3_port: self.web3_port,
            profiler_port: self.profiler_port,
            timeout_commit: self.timeout_commit,
            mempool_size: self.mempool_size,
            mempool_max_txs_bytes: self.mempool_max_txs_bytes,
            rpc_max_body_bytes: self.rpc_max_body_bytes,
            rpc_max_open_connections: self.rpc_max_open_connections,
            set: self.set,
            root_balance: self.root_balance,
            log_format: match self.log_format {
                LogFormatArg::Plain => LogFormat::Plain,
                LogFormatArg::Json => LogFormat::Json,
            },
            fresh: self.fresh,
            wait: self.wait,
            no_profiler: self.no_profiler,
            patches: self.patches,
            block_gas_limit: self.block_gas_limit,
            abcid: self.abcid,
            abcid_args: Vec::new(),
        }
    }
}

/// Runs a devnet command.
pub async fn run(command: DevnetCommand) -> Result<()> {
    match command.action {
        Action::Up { options, json } => {
            let state = devnet::up(options.options()).await?;
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Up {
        #[command(flatten)]
        args: DevnetArgs,
    }

    #[test]
    fn no_flags_give_the_default_options() {
        let up = Up::try_parse_from(["up"]).expect("parses");
        assert_eq!(up.args.options(), DevnetOptions::default());
    }

    #[test]
    fn flags_reach_the_options() {
        let up = Up::try_parse_from([
            "up",
            "--web3-port",
            "9545",
            "--log-format",
            "json",
            "--set",
            "a.b=1",
            "--block-gas-limit",
            "30000000",
        ])
        .expect("parses");
        let o = up.args.options();
        assert_eq!((o.web3_port, o.log_format), (9545, LogFormat::Json));
        assert_eq!(o.block_gas_limit, 30_000_000);
        assert_eq!(o.set, vec!["a.b=1".to_string()]);
    }
}
