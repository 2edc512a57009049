//! `feth bench zipf`: the hot-account run on a devnet of its own. A
//! Zipf-Mandelbrot sender mix puts several transactions per block on the
//! hottest senders; with `--per-sender K` the agent pipelines their nonces
//! and abcid's `nonce-queue` patch orders them. Figures: committed TPS over
//! the sending window against the offered rate, p99 inclusion latency in
//! blocks, and the drain tail (our transactions included after the window).
//!
//! CometBFT's header time of block H is its BFT time, the median of the
//! validators' precommit times for H − 1: it trails the block's proposal by
//! about `timeout_commit`. Figures by header time are therefore flattering
//! by up to a block; the benchmark also gives the wall-clock ones (the agent
//! seeing the block), which are not.

use std::time::{Duration, Instant};

use alloy_primitives::{B256, U256};
use anyhow::{Context, Result};
use serde::Serialize;

use crate::accounts::{KeySet, KeySource};
use crate::devnet::{self, Devnet};
use crate::eth::EthClient;
use crate::fund::{self, FundPlan};
use crate::load::pick::{AccountDist, Picker, RateSchedule};
use crate::load::plan::LoadPlan;
use crate::load::report::AgentLimited;
use crate::load::{self, LoadReport, LoadSettings};

/// What `feth bench zipf` runs.
#[derive(Debug, Clone, Serialize)]
pub struct ZipfBenchPlan {
    /// Funded senders.
    pub senders: usize,
    /// Offered rate, tx/s.
    pub rate: f64,
    /// Seconds of sending.
    pub duration_secs: f64,
    /// Sender mix.
    pub accounts: String,
    /// Transactions in flight per sender.
    pub per_sender: usize,
    /// Consecutive nonces of one sender per request.
    pub per_request: usize,
    /// The devnet's CometBFT `timeout_commit`.
    pub timeout_commit: devnet::GoDuration,
    /// abcid's `--patches`.
    pub patches: String,
    /// The devnet's block gas limit.
    pub block_gas_limit: u64,
}

/// The figures of `feth bench zipf`.
#[derive(Debug, Clone, Serialize)]
pub struct ZipfBench {
    /// What was run.
    pub plan: ZipfBenchPlan,
    /// What the node calls itself (`web3_clientVersion`).
    pub client_version: String,
    /// Logical CPUs of the machine (agent and node share it).
    pub cpus: usize,
    /// Whether the devnet ran on tmpfs.
    pub on_tmpfs: bool,
    /// Our transactions committed with a block time inside the sending
    /// window, per second of it.
    pub committed_tps: f64,
    /// `committed_tps / rate`.
    pub committed_share: f64,
    /// The hottest sender's share of the transactions sent.
    pub hottest_share: f64,
    /// Inclusion latency p99, intended send → the agent saw the including
    /// block (100 ms polling), ms.
    pub p99_ms: f64,
    /// Inclusion latency p99, intended send → block header time, ms.
    pub p99_header_ms: f64,
    /// Mean block interval over the run, ms.
    pub block_ms: f64,
    /// `p99_ms / block_ms`.
    pub p99_blocks: f64,
    /// Our transactions whose block header time is after the sending window.
    pub drain_txs: u64,
    /// Wall seconds from the window's end until the agent had seen every
    /// transaction included (its inclusion wait polls every 250 ms).
    pub drain_secs: f64,
    /// Our transactions included, per wall second of the window and the
    /// drain: a floor of the committed rate.
    pub committed_tps_with_drain: f64,
    /// Set when the agent, not the chain, limited the offered rate.
    pub agent_limited: Option<AgentLimited>,
    /// Transactions signed, included, rejected, left unresolved.
    pub totals: [u64; 4],
}

/// Starts the devnet, funds the senders and runs the load.
pub async fn zipf(plan: ZipfBenchPlan) -> Result<ZipfBench> {
    let dist: AccountDist = plan.accounts.parse()?;
    let (dir, on_tmpfs) = devnet::scratch_dir()?;
    let net = Devnet::start_private(dir.path(), |o| {
        o.timeout_commit = plan.timeout_commit;
        o.patches = plan.patches.clone();
        o.block_gas_limit = plan.block_gas_limit;
    })
    .await
    .context("starting the devnet")?;
    let root = crate::keys::read_key_file(&net.state.root_key())?;
    let web3 = net.state.web3_url();
    let client = EthClient::new(&web3, Duration::from_secs(30))?;
    let mut keys = KeySet::new(KeySource::Seed(B256::repeat_byte(17)));
    keys.extend_to(plan.senders);
    let fund_plan = FundPlan {
        progress: true,
        ..FundPlan::new(U256::from(10u64).pow(U256::from(18u64)))
    };
    let journal = dir.path().join("keys.txt.funding.json");
    let funded = fund::fund(&client, &root, &keys.addresses, &fund_plan, &journal).await?;
    anyhow::ensure!(
        funded.underfunded == 0,
        "{} senders are still unfunded",
        funded.underfunded
    );
    let started = Instant::now();
    let report = load::start(settings(&plan, &web3, dist), keys)
        .await?
        .finish()
        .await?;
    let wall = started.elapsed().as_secs_f64();
    let client_version = client
        .call::<String>("web3_clientVersion", serde_json::json!([]))
        .await
        .unwrap_or_default();
    Ok(figures(plan, &report, client_version, on_tmpfs, wall))
}

fn settings(plan: &ZipfBenchPlan, web3: &str, dist: AccountDist) -> LoadSettings {
    let mut load = LoadPlan::transfers(RateSchedule::Fixed(plan.rate), plan.senders);
    load.duration = Some(Duration::from_secs_f64(plan.duration_secs));
    load.picker = Picker::new(dist, plan.senders);
    load.per_sender = plan.per_sender;
    load.per_request = plan.per_request;
    let mut settings = LoadSettings::new(web3, load);
    settings.progress = true;
    settings
}

/// The benchmark's figures from the load's report.
fn figures(
    plan: ZipfBenchPlan,
    r: &LoadReport,
    client_version: String,
    on_tmpfs: bool,
    wall: f64,
) -> ZipfBench {
    let window = plan.duration_secs;
    let (mut inside, mut drain_txs) = (0u64, 0u64);
    for s in &r.series {
        if (s.second as f64) < window {
            inside += s.included;
        } else {
            drain_txs += s.included;
        }
    }
    let committed_tps = inside as f64 / window;
    let blocks = (r.chain.last_block + 1)
        .saturating_sub(r.chain.first_block)
        .max(1);
    let block_ms = r.chain.seconds * 1000.0 / blocks as f64;
    let p99_ms = r.latency_ms.to_observed.p99;
    let t = &r.totals;
    ZipfBench {
        client_version,
        cpus: r.environment.cpus,
        on_tmpfs,
        committed_tps,
        committed_share: committed_tps / plan.rate,
        hottest_share: hottest_share(&plan),
        p99_ms,
        p99_header_ms: r.latency_ms.to_block_time.p99,
        block_ms,
        p99_blocks: p99_ms / block_ms.max(1e-9),
        drain_txs,
        drain_secs: (wall - window).max(0.0),
        committed_tps_with_drain: t.included as f64 / wall.max(window),
        agent_limited: r.agent_limited.clone(),
        totals: [t.signed, t.included, t.rejected, t.unresolved],
        plan,
    }
}

/// The hottest sender's expected share of the transactions.
fn hottest_share(plan: &ZipfBenchPlan) -> f64 {
    match plan.accounts.parse::<AccountDist>() {
        Ok(AccountDist::Zipf { s, v }) => {
            let total: f64 = (1..=plan.senders).map(|k| (k as f64 + v).powf(-s)).sum();
            (1.0 + v).powf(-s) / total
        }
        _ => 1.0 / plan.senders.max(1) as f64,
    }
}

impl ZipfBench {
    /// Writes the summary `feth bench` prints.
    pub fn write_summary(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let p = &self.plan;
        writeln!(
            out,
            "committed    {:.1} tx/s over the {:.0} s sending window (by block header time), {:.1} % of the {:.0} tx/s offered",
            self.committed_tps,
            p.duration_secs,
            self.committed_share * 100.0,
            p.rate
        )?;
        writeln!(
            out,
            "             {:.1} tx/s over the window and the drain, by the agent's clock (a floor)",
            self.committed_tps_with_drain
        )?;
        writeln!(
            out,
            "latency      p99 {:.0} ms = {:.2} blocks of {:.0} ms (intended send → block seen; to header time: {:.0} ms)",
            self.p99_ms, self.p99_blocks, self.block_ms, self.p99_header_ms
        )?;
        writeln!(
            out,
            "drain tail   {} transaction(s) with a header time after the window; all seen included {:.1} s after it ended",
            self.drain_txs, self.drain_secs
        )?;
        let [signed, included, rejected, unresolved] = self.totals;
        writeln!(
            out,
            "totals       {signed} signed = {included} included + {rejected} rejected + {unresolved} unresolved; hottest sender's share {:.1} %",
            self.hottest_share * 100.0
        )?;
        if let Some(limited) = &self.agent_limited {
            writeln!(
                out,
                "WARNING      the agent, not the chain, limited the offered rate: {}",
                limited.reason
            )?;
        }
        writeln!(
            out,
            "conditions   {} senders, --accounts {}, --per-sender {}, --per-request {}; {}; timeout_commit {}, block gas limit {}, {} CPUs shared by agent and node, {}",
            p.senders,
            p.accounts,
            p.per_sender,
            p.per_request,
            self.client_version,
            p.timeout_commit,
            p.block_gas_limit,
            self.cpus,
            if self.on_tmpfs { "devnet on tmpfs" } else { "devnet on disk" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hottest_of_a_thousand_zipf_1_1_2_senders_sends_about_7_percent() {
        let plan = ZipfBenchPlan {
            senders: 1000,
            rate: 1000.0,
            duration_secs: 10.0,
            accounts: "zipf:1.1,2".to_string(),
            per_sender: 16,
            per_request: 1,
            timeout_commit: devnet::GoDuration::from_millis(500),
            patches: "all,nonce-queue".to_string(),
            block_gas_limit: 150_000_000,
        };
        // A run measured 7.4 % for the hottest sender; the law says 7.3 %.
        let share = hottest_share(&plan);
        assert!((share - 0.073).abs() < 0.002, "{share}");
    }
}
