//! Argument groups shared by several subcommands, so that one flag means one
//! thing everywhere.
//!
//! Conventions of the whole command line:
//! - `--network URL[,URL…]` is always a web3 JSON-RPC endpoint (env `FETH_NETWORK`);
//! - `--comet-rpc URL` is always a CometBFT RPC endpoint;
//! - `--json` is always a switch: stdout carries exactly one JSON document, and
//!   whatever a person reads (progress, the summary) goes to stderr.

use std::io::Write;

use clap::Args;
use serde::Serialize;

/// The web3 endpoint of a default local devnet.
pub const DEFAULT_NETWORK: &str = "http://127.0.0.1:8545";

/// One or more web3 JSON-RPC endpoints.
#[derive(Debug, Clone, Args)]
pub struct NetworkArgs {
    /// web3 JSON-RPC endpoint(s), comma-separated; work is spread across them.
    #[arg(
        long = "network",
        env = "FETH_NETWORK",
        default_value = DEFAULT_NETWORK,
        value_delimiter = ',',
        value_name = "URL"
    )]
    pub urls: Vec<String>,
}

impl NetworkArgs {
    /// The first endpoint (commands that talk to one node).
    pub fn first(&self) -> anyhow::Result<&str> {
        self.urls
            .first()
            .map(String::as_str)
            .ok_or_else(|| anyhow::anyhow!("--network is empty: give a web3 URL"))
    }
}

/// Prints a command's result by the `--json` convention: with `json`, the
/// figures as one JSON document on stdout and the human `summary` on
/// stderr; without it, the summary alone on stdout.
pub fn emit<T: Serialize>(
    json: bool,
    figures: &T,
    summary: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    if json {
        summary(&mut std::io::stderr())?;
        println!("{}", serde_json::to_string_pretty(figures)?);
    } else {
        summary(&mut std::io::stdout())?;
    }
    Ok(())
}
