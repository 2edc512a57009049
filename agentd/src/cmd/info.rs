//! `feth info` and `feth block`, as the original feth had.

use std::time::Duration;

use alloy_primitives::Address;
use anyhow::{bail, Context, Result};
use clap::Args;

use serde::Serialize;

use super::args::NetworkArgs;
use crate::eth::EthClient;

/// `feth info --account ADDR`
#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    network: NetworkArgs,
    /// The account.
    #[arg(long)]
    account: Address,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct AccountInfo {
    address: Address,
    balance_wei: alloy_primitives::U256,
    nonce: u64,
    pending_nonce: u64,
}

/// Runs `feth info`.
pub async fn info(args: InfoArgs) -> Result<()> {
    let client = EthClient::new(args.network.first()?, Duration::from_secs(10))?;
    let info = AccountInfo {
        address: args.account,
        balance_wei: client
            .balance(args.account)
            .await
            .with_context(|| format!("cannot reach {}", args.network.urls.join(",")))?,
        nonce: client.nonce(args.account, false).await?,
        pending_nonce: client.nonce(args.account, true).await?,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        println!("account        {}", info.address);
        println!("balance        {} wei", info.balance_wei);
        println!(
            "nonce          {} (pending {})",
            info.nonce, info.pending_nonce
        );
    }
    Ok(())
}

/// `feth block --start H --count N`
#[derive(Debug, Args)]
pub struct BlockArgs {
    #[command(flatten)]
    network: NetworkArgs,
    /// First height.
    #[arg(long)]
    start: u64,
    /// Number of blocks.
    #[arg(long, default_value_t = 10)]
    count: u64,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct BlockRow {
    height: u64,
    timestamp: u64,
    txs: usize,
    /// Seconds since the previous block (when it is known).
    block_time: Option<u64>,
}

/// Runs `feth block`.
pub async fn block(args: BlockArgs) -> Result<()> {
    if args.count == 0 {
        bail!("--count must be at least 1");
    }
    let client = EthClient::new(args.network.first()?, Duration::from_secs(10))?;
    let mut previous = match args.start.checked_sub(1) {
        Some(h) => client.block(h).await?.map(|b| b.timestamp.to::<u64>()),
        None => None,
    };
    let mut rows = Vec::new();
    for h in args.start..args.start + args.count {
        let Some(b) = client
            .block(h)
            .await
            .with_context(|| format!("cannot reach {}", args.network.urls.join(",")))?
        else {
            break;
        };
        let ts: u64 = b.timestamp.to();
        rows.push(BlockRow {
            height: h,
            timestamp: ts,
            txs: b.transactions.len(),
            block_time: previous.map(|p| ts.saturating_sub(p)),
        });
        previous = Some(ts);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        println!(
            "{:>10}  {:>12}  {:>6}  {:>10}",
            "height", "timestamp", "txs", "block time"
        );
        for r in &rows {
            let bt = r.block_time.map_or("-".to_string(), |t| format!("{t} s"));
            println!(
                "{:>10}  {:>12}  {:>6}  {:>10}",
                r.height, r.timestamp, r.txs, bt
            );
        }
    }
    Ok(())
}
