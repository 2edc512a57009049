//! Argument groups shared by several subcommands, so that one flag means one
//! thing everywhere.
//!
//! Conventions of the whole command line:
//! - `--network URL[,URL…]` is always a web3 JSON-RPC endpoint (env `FETH_NETWORK`);
//! - `--comet-rpc URL` is always a CometBFT RPC endpoint;
//! - `--json` is always a switch: stdout carries exactly one JSON document, and
//!   whatever a person reads (progress, the summary) goes to stderr.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context};
use clap::Args;
use serde::Serialize;

use crate::accounts::KeySet;

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

/// The senders of `--keys FILE [--senders N]`: the keys file, or its first
/// `senders` accounts.
pub fn load_senders(file: &Path, senders: Option<usize>) -> anyhow::Result<KeySet> {
    let mut keys = KeySet::load(file).with_context(|| {
        format!(
            "create accounts first: feth fund --count N --amount A --out {}",
            file.display()
        )
    })?;
    if let Some(n) = senders {
        if n == 0 || n > keys.len() {
            bail!("--senders {n}: the keys file holds {} accounts", keys.len());
        }
        keys.keys.truncate(n);
        keys.addresses.truncate(n);
    }
    Ok(keys)
}
