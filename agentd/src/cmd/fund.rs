//! `feth fund`: create (or reuse) accounts and fund them from the root key.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use alloy_primitives::{keccak256, B256};
use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use serde_json::json;

use super::args::{emit, NetworkArgs};
use crate::accounts::{KeySet, KeySource};
use crate::eth::EthClient;
use crate::fund::{self, FundPlan, FundVia};
use crate::{keys, units};

/// `feth fund …`
#[derive(Debug, Args)]
pub struct FundArgs {
    #[command(flatten)]
    network: NetworkArgs,
    /// Number of accounts.
    #[arg(long)]
    count: usize,
    /// Amount each account should hold: wei, or with a unit (`5gwei`, `0.5eth`).
    #[arg(long)]
    amount: String,
    /// New keys file to create (mode 0600).
    #[arg(long, default_value = "feth-keys.txt", conflicts_with = "load")]
    out: PathBuf,
    /// Reuse an existing keys file, extending it to --count accounts.
    #[arg(long, value_name = "FILE")]
    load: Option<PathBuf>,
    /// Top up every account below --amount (default: fund only never-used accounts).
    #[arg(long)]
    redeposit: bool,
    /// Derive keys from this seed (32-byte hex, or any text that is hashed).
    #[arg(long, conflicts_with = "load")]
    seed: Option<String>,
    /// The paying root's key file (mode 0600).
    #[arg(long, default_value = ".devnet/root.key")]
    root_key: PathBuf,
    /// Seconds to wait for the chain to include the transfers.
    #[arg(long, default_value_t = 300)]
    wait: u64,
    /// How the root pays: batches through a disperse contract it deploys
    /// (auto: when the node runs contracts), or one transfer per account.
    #[arg(long, value_enum, default_value_t = Via::Auto)]
    via: Via,
    /// Most accounts paid by one batch transaction (also bounded by the
    /// block's gas limit).
    #[arg(long, default_value_t = fund::DEFAULT_BATCH_SIZE)]
    batch_size: usize,
    /// Print the report as JSON on stdout; the summary then goes to stderr.
    #[arg(long)]
    json: bool,
}

/// `--via`: how the root pays.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum Via {
    Auto,
    Batch,
    Transfers,
}

impl From<Via> for FundVia {
    fn from(via: Via) -> Self {
        match via {
            Via::Auto => FundVia::Auto,
            Via::Batch => FundVia::Batch,
            Via::Transfers => FundVia::Transfers,
        }
    }
}

fn seed_of(text: &str) -> B256 {
    text.parse::<B256>()
        .unwrap_or_else(|_| keccak256(text.as_bytes()))
}

/// Runs `feth fund`.
pub async fn run(args: FundArgs) -> Result<()> {
    if args.count == 0 {
        bail!("--count must be at least 1");
    }
    if args.batch_size == 0 {
        bail!("--batch-size must be at least 1");
    }
    let amount = units::parse_amount(&args.amount)?;
    keys::check_private(&args.root_key)?;
    let root = keys::read_key_file(&args.root_key)?;
    let (path, mut set) = match &args.load {
        Some(path) => {
            let set = KeySet::load(path)?;
            if let Some(cut) = set.cut {
                bail!(
                    "{} is shard {} of a keys file (no seed, not every key): fund with the whole keys file",
                    path.display(),
                    cut.shard
                );
            }
            (path.clone(), set)
        }
        None => {
            if args.out.exists() {
                bail!(
                    "{} exists; pass --load {} to reuse and extend it, or choose another --out",
                    args.out.display(),
                    args.out.display()
                );
            }
            let source = args
                .seed
                .as_deref()
                .map_or(KeySource::Random, |s| KeySource::Seed(seed_of(s)));
            (args.out.clone(), KeySet::new(source))
        }
    };
    set.extend_to(args.count);
    // Keys are saved before any value moves, so none is ever lost.
    set.save(&path)?;
    let client = EthClient::new(args.network.first()?, Duration::from_secs(30))?;
    let plan = FundPlan {
        amount,
        redeposit: args.redeposit,
        wait: Duration::from_secs(args.wait),
        progress: true,
        via: args.via.into(),
        batch_size: args.batch_size,
    };
    let accounts = &set.addresses[..args.count];
    let report = fund::fund(&client, &root, accounts, &plan, &fund::journal_path(&path)).await?;
    let figures = json!({ "keys_file": path, "amount_wei": amount, "report": report });
    emit(args.json, &figures, |out| {
        print_summary(out, &path, set.len(), &report)
    })?;
    if report.underfunded > 0 {
        bail!(
            "{} account(s) are still below the amount; re-run the same command",
            report.underfunded
        );
    }
    Ok(())
}

fn print_summary(
    out: &mut dyn Write,
    path: &Path,
    accounts: usize,
    report: &fund::FundReport,
) -> std::io::Result<()> {
    writeln!(
        out,
        "keys file   {} ({accounts} accounts, mode 0600)",
        path.display()
    )?;
    if report.resumed > 0 {
        writeln!(
            out,
            "resumed     {} payment(s) of an interrupted run",
            report.resumed
        )?;
    }
    writeln!(
        out,
        "funded      {} account(s), {} wei in all, {} root transaction(s) ({})",
        report.paid,
        report.value_wei,
        report.root_txs,
        if report.via.is_empty() {
            "none needed"
        } else {
            &report.via
        }
    )?;
    writeln!(
        out,
        "skipped     {} account(s) already funded",
        report.skipped
    )?;
    writeln!(
        out,
        "took        {:.2} s ({:.0} accounts/s)",
        report.seconds, report.accounts_per_second
    )
}
