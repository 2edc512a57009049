//! `feth send`: signed value transfers from one key, waited until committed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, B256, U256};
use anyhow::{bail, Context, Result};
use clap::Args;

use serde::Serialize;

use super::args::NetworkArgs;
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

/// Signs and sends `count` transfers with consecutive nonces.
async fn send_all(
    client: &EthClient,
    key: &secp256k1::SecretKey,
    to: Address,
    args: &SendArgs,
) -> Result<Vec<Sent>> {
    let chain_id = client
        .chain_id()
        .await
        .with_context(|| format!("cannot reach {}", client.url()))?;
    let fee = fees::detect(client).await?;
    let first_nonce = client.nonce(keys::address_of(key), true).await?;
    let mut sent = Vec::with_capacity(args.count as usize);
    for nonce in first_nonce..first_nonce + args.count {
        let request = TxRequest {
            chain_id,
            nonce,
            to: Some(to),
            value: args.value,
            gas_limit: 21_000,
            fee,
            input: Bytes::new(),
        };
        let hash = client
            .send_raw(&sign::sign(key, &request).raw)
            .await
            .with_context(|| format!("eth_sendRawTransaction (nonce {nonce})"))?;
        sent.push(Sent {
            hash,
            nonce,
            block: None,
            success: None,
        });
    }
    Ok(sent)
}

/// Polls receipts until every transfer is in a block or `timeout` passed.
async fn await_receipts(client: &EthClient, sent: &mut [Sent], timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while sent.iter().any(|s| s.block.is_none()) && Instant::now() < deadline {
        for s in sent.iter_mut().filter(|s| s.block.is_none()) {
            if let Some(r) = client.receipt(s.hash).await? {
                s.block = Some(r.block_number.to());
                s.success = r.status.map(|v| v.to::<u64>() == 1);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

fn print_report(report: &Report, value: U256, timeout: u64) {
    println!(
        "{} transfer(s) of {value} wei  {} → {}",
        report.sent.len(),
        report.from,
        report.to
    );
    for s in &report.sent {
        match (s.block, s.success) {
            (Some(b), Some(true)) => {
                println!("  nonce {:>4}  {}  committed in block {b}", s.nonce, s.hash)
            }
            (Some(b), _) => println!("  nonce {:>4}  {}  FAILED in block {b}", s.nonce, s.hash),
            (None, _) => println!(
                "  nonce {:>4}  {}  not committed after {timeout} s",
                s.nonce, s.hash
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

/// Runs `feth send`.
pub async fn run(args: SendArgs) -> Result<()> {
    keys::check_private(&args.key_file)?;
    let key = keys::read_key_file(&args.key_file)?;
    let from = keys::address_of(&key);
    let to = args
        .to
        .unwrap_or_else(|| keys::address_of(&keys::random_key()));
    let client = EthClient::new(args.network.first()?, Duration::from_secs(10))?;
    let started = Instant::now();
    let mut sent = send_all(&client, &key, to, &args).await?;
    await_receipts(&client, &mut sent, Duration::from_secs(args.timeout)).await?;
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
        print_report(&report, args.value, args.timeout);
    }
    if report.committed < report.sent.len() {
        bail!(
            "{} transfer(s) not committed",
            report.sent.len() - report.committed
        );
    }
    Ok(())
}
