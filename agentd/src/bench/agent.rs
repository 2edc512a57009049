//! `feth bench agent`: how fast the agent prepares and submits signed
//! transfers, against the raw libsecp256k1 signing rate measured in the same
//! run, both per CPU-second.

use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, U256};
use anyhow::{Context, Result};
use serde::Serialize;

use crate::accounts::{KeySet, KeySource};
use crate::load::engine::LoadPlan;
use crate::load::pick::RateSchedule;
use crate::load::{self, LoadSettings};
use crate::procstat::{process_cpu, thread_cpu};
use crate::sign::{self, Fee, TxRequest};

/// Resident memory of this process, bytes.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Figures of one `feth bench agent` run.
#[derive(Debug, Clone, Serialize)]
pub struct AgentBench {
    /// Raw signatures per CPU-second (one thread, libsecp256k1).
    pub raw_signs_per_cpu_second: f64,
    /// Transactions submitted.
    pub txs: u64,
    /// Wall seconds of the agent run.
    pub wall_seconds: f64,
    /// Agent transactions per wall second.
    pub txs_per_second: f64,
    /// Agent CPU-seconds per 10,000 transactions.
    pub cpu_seconds_per_10k: f64,
    /// Agent transactions per CPU-second.
    pub txs_per_cpu_second: f64,
    /// `txs_per_cpu_second / raw_signs_per_cpu_second` (target ≥ 0.60).
    pub ratio: f64,
    /// Accounts loaded.
    pub accounts: usize,
    /// Transactions per request.
    pub batch: usize,
    /// RSS before loading accounts, bytes.
    pub rss_start: u64,
    /// RSS with the accounts loaded, bytes.
    pub rss_loaded: u64,
    /// RSS after the run, bytes.
    pub rss_end: u64,
}

/// Signs `n` transfers on this thread; returns signatures per CPU-second.
pub fn raw_sign_rate(n: u64) -> f64 {
    let mut keys = KeySet::new(KeySource::Seed(alloy_primitives::B256::repeat_byte(9)));
    keys.extend_to(1);
    let start = thread_cpu();
    for nonce in 0..n {
        let tx = sign::sign(
            &keys.keys[0],
            &TxRequest {
                chain_id: 9000,
                nonce,
                to: Some(Address::repeat_byte(1)),
                value: U256::from(1u64),
                gas_limit: 21_000,
                fee: Fee::Eip1559 {
                    max_fee: 2_000_000_000,
                    tip: 1,
                },
                input: Bytes::new(),
            },
        );
        std::hint::black_box(tx);
    }
    n as f64 / (thread_cpu() - start).as_secs_f64()
}

/// Runs the agent against the sink at `sink_url`.
pub async fn agent(
    sink_url: &str,
    accounts: usize,
    txs: u64,
    parallelism: usize,
    batch: usize,
) -> Result<AgentBench> {
    let rss_start = rss_bytes();
    let raw = raw_sign_rate(20_000);
    let mut keys = KeySet::new(KeySource::Seed(alloy_primitives::B256::repeat_byte(7)));
    keys.extend_to(accounts);
    let rss_loaded = rss_bytes();
    let per_account = txs.div_ceil(accounts as u64).max(1);
    let active = (txs / per_account).clamp(1, accounts as u64) as usize;
    let mut plan = LoadPlan::transfers(RateSchedule::Closed, active);
    plan.per_account = Some(per_account);
    plan.max_parallelism = parallelism;
    plan.batch = batch;
    let mut settings = LoadSettings::new(sink_url, plan);
    settings.wait = Duration::ZERO;
    let mut senders = keys.clone();
    senders.keys.truncate(active);
    senders.addresses.truncate(active);
    let cpu0 = process_cpu();
    let wall = Instant::now();
    let report = load::run(settings, senders)
        .await
        .context("agent run against the sink")?;
    let wall_seconds = wall.elapsed().as_secs_f64();
    let cpu = (process_cpu() - cpu0).as_secs_f64();
    let n = report.totals.signed;
    let per_cpu = n as f64 / cpu;
    drop(keys);
    Ok(AgentBench {
        raw_signs_per_cpu_second: raw,
        txs: n,
        wall_seconds,
        txs_per_second: n as f64 / wall_seconds,
        cpu_seconds_per_10k: cpu / n as f64 * 10_000.0,
        txs_per_cpu_second: per_cpu,
        ratio: per_cpu / raw,
        accounts,
        batch,
        rss_start,
        rss_loaded,
        rss_end: rss_bytes(),
    })
}

#[cfg(test)]
mod tests {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_agent_submits_every_transaction_to_the_sink() {
        let url = crate::sink::start_local().await;
        for batch in [1, 10] {
            let r = super::agent(&url, 100, 1_000, 8, batch).await.unwrap();
            assert_eq!(r.txs, 1_000, "batch {batch}");
            assert!(r.ratio > 0.0);
        }
    }
}
