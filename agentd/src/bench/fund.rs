//! `feth bench fund`: how fast `feth fund` pays many fresh accounts on a
//! devnet of its own, in accounts per second, with the blocks and gas it
//! took.

use std::time::{Duration, Instant};

use alloy_primitives::{B256, U256};
use anyhow::{Context, Result};
use serde::Serialize;

use crate::accounts::{KeySet, KeySource};
use crate::devnet::{self, Devnet};
use crate::eth::EthClient;
use crate::fund::{self, FundPlan, FundVia};

/// What `feth bench fund` runs.
#[derive(Debug, Clone)]
pub struct FundBenchPlan {
    /// Accounts to fund.
    pub count: usize,
    /// Batches or transfers.
    pub via: FundVia,
    /// Most accounts per batch.
    pub batch_size: usize,
    /// The devnet's CometBFT `timeout_commit`.
    pub timeout_commit: devnet::GoDuration,
}

/// The figures of one funding run.
#[derive(Debug, Clone, Serialize)]
pub struct FundBench {
    /// Accounts funded.
    pub accounts: usize,
    /// The path taken.
    pub via: String,
    /// Seconds from the first read to the last confirmation.
    pub seconds: f64,
    /// Accounts funded per second.
    pub accounts_per_second: f64,
    /// The root's transactions.
    pub root_txs: usize,
    /// Blocks committed during the run.
    pub blocks: u64,
    /// Gas used by those blocks, per account funded.
    pub gas_per_account: f64,
    /// The devnet's `timeout_commit` and block gas limit.
    pub timeout_commit: devnet::GoDuration,
    /// Block gas limit of the devnet.
    pub block_gas_limit: u64,
    /// Whether the devnet ran on tmpfs.
    pub on_tmpfs: bool,
}

/// Funds `plan.count` fresh accounts on a new devnet and measures it.
pub async fn fund(plan: FundBenchPlan) -> Result<FundBench> {
    let (dir, on_tmpfs) = devnet::scratch_dir()?;
    let net = Devnet::start_private(dir.path(), |o| {
        o.timeout_commit = plan.timeout_commit;
    })
    .await
    .context("starting the devnet")?;
    let root = crate::keys::read_key_file(&net.state.root_key())?;
    let client = EthClient::new(&net.state.web3_url(), Duration::from_secs(30))?;
    let mut keys = KeySet::new(KeySource::Seed(B256::repeat_byte(15)));
    keys.extend_to(plan.count);
    let fund_plan = FundPlan {
        progress: true,
        via: plan.via,
        batch_size: plan.batch_size,
        wait: Duration::from_secs(3600),
        ..FundPlan::new(U256::from(1_000_000_000u64))
    };
    let first = client.block_number().await?;
    let started = Instant::now();
    let journal = dir.path().join("keys.txt.funding.json");
    let report = fund::fund(&client, &root, &keys.addresses, &fund_plan, &journal).await?;
    let seconds = started.elapsed().as_secs_f64();
    let last = client.block_number().await?;
    let (gas, block_gas_limit) = gas_used(&client, first + 1, last).await?;
    Ok(FundBench {
        accounts: report.paid,
        via: report.via,
        seconds,
        accounts_per_second: report.paid as f64 / seconds,
        root_txs: report.root_txs,
        blocks: last - first,
        gas_per_account: gas as f64 / report.paid.max(1) as f64,
        timeout_commit: plan.timeout_commit,
        block_gas_limit,
        on_tmpfs,
    })
}

/// Gas used by blocks `from..=to`, and the last one's gas limit.
async fn gas_used(client: &EthClient, from: u64, to: u64) -> Result<(u64, u64)> {
    let mut gas = 0;
    let mut limit = 0;
    for number in from..=to {
        let block = client
            .block(number)
            .await?
            .with_context(|| format!("block {number} is missing"))?;
        gas += block.gas_used.to::<u64>();
        limit = block.gas_limit.map_or(0, |g| g.to::<u64>());
    }
    Ok((gas, limit))
}

impl FundBench {
    /// Writes the summary `feth bench` prints.
    pub fn write_summary(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(
            out,
            "funded       {} fresh accounts via {} in {:.1} s: {:.0} accounts/s",
            self.accounts, self.via, self.seconds, self.accounts_per_second
        )?;
        writeln!(
            out,
            "chain        {} root transaction(s) in {} blocks, {:.0} gas per account",
            self.root_txs, self.blocks, self.gas_per_account
        )?;
        writeln!(
            out,
            "conditions   devnet timeout_commit {}, block gas limit {}, {}",
            self.timeout_commit,
            self.block_gas_limit,
            if self.on_tmpfs { "on tmpfs" } else { "on disk" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_the_rate_the_chain_and_the_conditions() {
        let r = FundBench {
            accounts: 1000,
            via: "batches".to_string(),
            seconds: 4.0,
            accounts_per_second: 250.0,
            root_txs: 4,
            blocks: 9,
            gas_per_account: 27_000.4,
            timeout_commit: devnet::GoDuration::from_millis(300),
            block_gas_limit: 150_000_000,
            on_tmpfs: true,
        };
        let mut out = Vec::new();
        r.write_summary(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "funded       1000 fresh accounts via batches in 4.0 s: 250 accounts/s",
                "chain        4 root transaction(s) in 9 blocks, 27000 gas per account",
                "conditions   devnet timeout_commit 300ms, block gas limit 150000000, on tmpfs",
            ]
        );
    }
}
