//! `feth load --refill-key FILE`: senders that run low are topped up during
//! the run, by a task of their own, while every other sender goes on.
//!
//! - Each sender's balance is estimated from the last one read and what it
//!   has sent since, at the most each transaction can cost (gas limit times
//!   the fee cap, plus the value). Only senders estimated below
//!   `--refill-balance`, or refused for insufficient funds (the engine backs
//!   those off and resends the same transaction, see
//!   [`super::engine::Engine::take_starved`]), have their balance read, in
//!   JSON-RPC batches.
//! - Those really below it are paid up to `--refill-amount` by the root
//!   through [`crate::fund::fund`] (plain transfers sent in nonce order, no
//!   contract to deploy mid-run): cost-checked first, journalled next to the
//!   keys file, and settled before anything new is paid, so an interrupted
//!   run resumed later never pays anyone twice.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use anyhow::{Context, Result};
use secp256k1::SecretKey;

use super::engine::Engine;
use super::report::RefillReport;
use crate::fund::{self, FundPlan, FundVia};
use feth_chain::eth::EthClient;

/// How senders are topped up during a run.
#[derive(Debug, Clone)]
pub struct RefillConfig {
    /// The paying root (not one of the senders).
    pub root: SecretKey,
    /// Top a sender up to this balance, wei.
    pub amount: U256,
    /// Once its balance is below this, wei.
    pub below: U256,
    /// How often balances are checked.
    pub interval: Duration,
    /// The funding journal of the refills (resumable).
    pub journal: PathBuf,
}

/// The last balance read of a sender and its sent count then.
#[derive(Debug, Clone, Copy)]
struct Known {
    balance: U256,
    sent: u64,
}

/// The refill task's state.
pub struct Refiller {
    cfg: RefillConfig,
    client: Arc<EthClient>,
    engine: Arc<Engine>,
    addresses: Vec<Address>,
    known: Vec<Known>,
    cost_per_tx: U256,
    /// What the refills did so far.
    pub report: RefillReport,
}

impl Refiller {
    /// Reads every sender's balance once; `addresses[i]` is the engine's
    /// account `i`.
    pub async fn new(
        cfg: RefillConfig,
        client: Arc<EthClient>,
        engine: Arc<Engine>,
        addresses: Vec<Address>,
    ) -> Result<Self> {
        let state = fund::read_accounts(&client, &addresses, false)
            .await
            .context("cannot read the senders' balances for --refill-key")?;
        let known = state
            .iter()
            .map(|(balance, _)| Known {
                balance: *balance,
                sent: 0,
            })
            .collect();
        let report = RefillReport {
            balances_read: addresses.len() as u64,
            ..Default::default()
        };
        Ok(Self {
            cost_per_tx: engine.max_cost_per_tx(),
            cfg,
            client,
            engine,
            addresses,
            known,
            report,
        })
    }

    /// Refills every `interval` until `stop` turns true.
    pub async fn run(mut self, mut stop: tokio::sync::watch::Receiver<bool>) -> RefillReport {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(self.cfg.interval) => {}
                _ = stop.changed() => return self.report,
            }
            if *stop.borrow() {
                return self.report;
            }
            if let Err(e) = self.round().await {
                self.report.failed_rounds += 1;
                tracing::warn!("refill round failed (retrying next round): {e:#}");
            }
        }
    }

    /// The senders estimated below the threshold, and those refused for
    /// insufficient funds.
    fn candidates(&self) -> Vec<usize> {
        let mut out: Vec<usize> = (0..self.known.len())
            .filter(|&a| self.estimate(a) < self.cfg.below)
            .collect();
        out.extend(self.engine.take_starved());
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The lowest balance account `a` can have now.
    fn estimate(&self, a: usize) -> U256 {
        let k = self.known[a];
        let spent = U256::from(self.engine.sent_by(a).saturating_sub(k.sent)) * self.cost_per_tx;
        k.balance.saturating_sub(spent)
    }

    /// Reads the candidates' balances and tops up those below the threshold.
    async fn round(&mut self) -> Result<()> {
        let candidates = self.candidates();
        if candidates.is_empty() {
            return Ok(());
        }
        let low = self.read(candidates).await?;
        if low.is_empty() {
            return Ok(());
        }
        let started = Instant::now();
        let addresses: Vec<Address> = low.iter().map(|&a| self.addresses[a]).collect();
        let plan = FundPlan {
            redeposit: true,
            via: FundVia::Transfers,
            ..FundPlan::new(self.cfg.amount)
        };
        let paid = fund::fund(
            &self.client,
            &self.cfg.root,
            &addresses,
            &plan,
            &self.cfg.journal,
        )
        .await
        .context("cannot top up the senders that ran low")?;
        self.report.rounds += 1;
        self.report.topped_up += (paid.paid + paid.resumed) as u64;
        self.report.value_wei += paid.value_wei;
        self.report.seconds += started.elapsed().as_secs_f64();
        self.read(low).await?;
        Ok(())
    }

    /// Reads the balances of `accounts`; returns those below the threshold.
    async fn read(&mut self, accounts: Vec<usize>) -> Result<Vec<usize>> {
        let sent: Vec<u64> = accounts.iter().map(|&a| self.engine.sent_by(a)).collect();
        let addresses: Vec<Address> = accounts.iter().map(|&a| self.addresses[a]).collect();
        let state = fund::read_accounts(&self.client, &addresses, false).await?;
        self.report.balances_read += accounts.len() as u64;
        let mut low = Vec::new();
        for ((&a, sent), (balance, _)) in accounts.iter().zip(sent).zip(state) {
            self.known[a] = Known { balance, sent };
            if balance < self.cfg.below {
                low.push(a);
            }
        }
        Ok(low)
    }
}
