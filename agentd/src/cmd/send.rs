//! `feth send`: signed value transfers from one key, waited until committed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, B256, U256};
use anyhow::{bail, Context, Result};
use clap::Args;

use super::args::NetworkArgs;
use serde::Serialize;

use crate::eth::EthClient;
use crate::sign::{self, TxRequest};
use crate::{fees, keys};

/// `feth send …`
#[derive(Debug, Args)]
pub struct SendArgs {
    #[command(flatten)]
    network: NetworkArgs,
    /// File holding the sender's hex private key (mode 0600).
    #[arg(long)]
    key_file: PathBuf,
    /// Recipient (default: a fresh random address).
    #[arg(long)]
    to: Option<Address>,
    /// Value of each transfer, in wei.
    #[arg(long, default_value = "1000000000000000")]
    value: U256,
    /// Number of transfers (consecutive nonces).
    #[arg(long, default_value_t = 1)]
    count: u64,
    /// Seconds to wait for all receipts.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Sent {
    hash: B256,
    nonce: u64,
    block: Option<u64>,
    success: Option<bool>,
}

#[derive(Debug, Serialize)]
struct Report {
    from: Address,
    to: Address,
    sent: Vec<Sent>,
    committed: usize,
    recipient_balance: U256,
    seconds: f64,
}

/// Runs `feth send`.
pub async fn run(args: SendArgs) -> Result<()> {
    keys::check_private(&args.key_file)?;
    let key = keys::read_key_file(&args.key_file)?;
    let from = keys::address_of(&key);
    let to = args
        .to
        .unwrap_or_else(|| keys::address_of(&keys::random_key()));
    let client = EthClient::new(args.network.first()?, Duration::from_secs(10))?;
    let chain_id = client
        .chain_id()
        .await
        .with_context(|| format!("cannot reach {}", args.network.urls.join(",")))?;
    let fee = fees::detect(&client).await?;
    let first_nonce = client.nonce(from, true).await?;
    let started = Instant::now();
    let mut sent = Vec::with_capacity(args.count as usize);
    for i in 0..args.count {
        let tx = sign::sign(
            &key,
            &TxRequest {
                chain_id,
                nonce: first_nonce + i,
                to: Some(to),
                value: args.value,
                gas_limit: 21_000,
                fee,
                input: Bytes::new(),
            },
        );
        let hash = client
            .send_raw(&tx.raw)
            .await
            .with_context(|| format!("eth_sendRawTransaction (nonce {})", first_nonce + i))?;
        sent.push(Sent {
            hash,
            nonce: first_nonce + i,
            block: None,
            success: None,
        });
    }
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    while sent.iter().any(|s| s.block.is_none()) && Instant::now() < deadline {
        for s in sent.iter_mut().filter(|s| s.block.is_none()) {
            if let Some(r) = client.receipt(s.hash).await? {
                s.block = Some(r.block_number.to());
                s.success = r.status.map(|v| v.to::<u64>() == 1);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let report = Report {
        from,
        to,
        committed: sent.iter().filter(|s| s.block.is_some()).count(),
        recipient_balance: client.balance(to).await?,
        seconds: started.elapsed().as_secs_f64(),
        sent,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "{} transfer(s) of {} wei  {} → {}",
            report.sent.len(),
            args.value,
            from,
            to
        );
        for s in &report.sent {
            match (s.block, s.success) {
                (Some(b), Some(true)) => {
                    println!("  nonce {:>4}  {}  committed in block {b}", s.nonce, s.hash)
                }
                (Some(b), _) => println!("  nonce {:>4}  {}  FAILED in block {b}", s.nonce, s.hash),
                (None, _) => println!(
                    "  nonce {:>4}  {}  not committed after {} s",
                    s.nonce, s.hash, args.timeout
                ),
            }
        }
        println!(
            "{} of {} committed in {:.2} s; recipient balance {} wei",
            report.committed,
            report.sent.len(),
            report.seconds,
            report.recipient_balance
        );
    }
    if report.committed < report.sent.len() {
        bail!(
            "{} transfer(s) not committed",
            report.sent.len() - report.committed
        );
    }
    Ok(())
}
