//! `feth merge`: the reports of several agents (`feth load --shard I/N
//! --out FILE` on several machines) combined into one.
//!
//! - Committed TPS, block time and the per-window figures are read once from
//!   the chain over the union of the runs' windows (the lowest first block
//!   to the highest last block), never by adding the agents' views: the
//!   window's seconds are the chain's, our transactions per block are the
//!   sum of the agents' own counts of that block (their senders are
//!   disjoint, see [`check`]), and every block's transaction count an agent
//!   saw must be the chain's (else the runs were on another chain).
//! - Sent, accepted, included, rejected and unresolved are summed and kept
//!   per agent.
//! - Latency percentiles come from the agents' histograms added together
//!   ([`LogHist::merge`]), not from their percentiles.
//!
//! [`chain`] reads the blocks; [`check`] refuses what does not merge.

pub mod chain;
pub mod check;
mod summary;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use self::chain::ChainBlock;
use super::hist::LogHist;
use super::report::{AgentLimited, ChainFigures, ClosedLoopBacklog, Latencies, Totals};
use super::LoadReport;
use feth_chain::eth::EthClient;
use feth_chain::shard::{KeyRange, Shard};

/// The format version of `feth merge --json`.
pub const MERGE_VERSION: u32 = 1;

/// One agent's report and what to call it.
#[derive(Debug, Clone)]
pub struct Input {
    /// Its file name, for messages.
    pub name: String,
    /// The report.
    pub report: LoadReport,
}

/// Where to read the chain.
#[derive(Debug, Clone)]
pub struct MergeConfig {
    /// A web3 endpoint of the chain the agents loaded.
    pub endpoint: String,
    /// CometBFT's RPC for ns header times (default: the one the node names).
    pub comet_rpc: Option<String>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Blocks per window of the per-window table; `None`: no windows.
    pub window_blocks: Option<u64>,
}

/// One agent's figures in the merged report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentRow {
    /// The report file.
    pub file: String,
    /// The agent's host.
    pub host: String,
    /// Its shard, if it took one.
    pub shard: Option<Shard>,
    /// The keys it sent from.
    pub keys: KeyRange,
    /// The endpoints it sent to.
    pub endpoints: Vec<String>,
    /// Transactions submitted at least once.
    pub sent: u64,
    /// Accepted by a node.
    pub accepted: u64,
    /// Found in a block.
    pub included: u64,
    /// Refused and not in any block.
    pub rejected: u64,
    /// Neither after the agent's bounded wait.
    pub unresolved: u64,
    /// Its first and last block holding one of its transactions.
    pub blocks: (u64, u64),
    /// Its own latency percentiles.
    pub latency_ms: Latencies,
    /// Set when the agent, not the chain, limited its offered rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_limited: Option<AgentLimited>,
    /// A closed loop's backlog (accepted − committed) over its sending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_loop_backlog: Option<ClosedLoopBacklog>,
}

/// A window of consecutive blocks of the merged span.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MergedWindow {
    /// First height.
    pub from: u64,
    /// Last height.
    pub to: u64,
    /// All transactions in its blocks.
    pub txs: u64,
    /// The agents' transactions among them.
    pub ours: u64,
    /// Seconds from the previous window's last header to its last one.
    pub seconds: f64,
    /// The agents' transactions per second.
    pub tps: f64,
    /// All transactions per second.
    pub tps_all: f64,
}

/// The merged report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergedReport {
    /// Format version ([`MERGE_VERSION`]).
    pub version: u32,
    /// How many agents' reports were merged.
    pub agents: usize,
    /// Their shards (`None` for a run without `--shard`), in input order.
    pub shards: Vec<Option<Shard>>,
    /// Shards of `0..N` no report covers, when all are shards of one `N`.
    pub missing_shards: Vec<usize>,
    /// Chain id.
    pub chain_id: u64,
    /// Committed figures over the union of the runs' windows, read from the
    /// chain; `committed_tps` counts the agents' transactions.
    pub chain: ChainFigures,
    /// Mean block time over the window, ms.
    pub block_time_ms: f64,
    /// Where block times came from.
    pub block_clock: String,
    /// The agents' totals, summed.
    pub totals: Totals,
    /// Accepted by a node, summed.
    pub accepted: u64,
    /// Latency percentiles of all agents' transactions, from their merged
    /// histograms.
    pub latency_ms: Latencies,
    /// Windows of `window_blocks` blocks (empty without).
    pub windows: Vec<MergedWindow>,
    /// Each agent's own figures.
    pub per_agent: Vec<AgentRow>,
}

/// Reads the reports' window from the chain and merges them.
pub async fn run(cfg: &MergeConfig, inputs: &[Input]) -> Result<MergedReport> {
    check::mergeable(inputs)?;
    let (first, last) = span(inputs)?;
    let client = EthClient::new(&cfg.endpoint, cfg.timeout)?;
    let chain_id = client
        .chain_id()
        .await
        .with_context(|| format!("cannot reach {}", cfg.endpoint))?;
    let wanted = inputs[0].report.config.chain_id;
    if chain_id != wanted {
        bail!(
            "{} serves chain {chain_id}, the runs were on chain {wanted}",
            cfg.endpoint
        );
    }
    let (comet, block_clock) =
        feth_chain::blocks::discover_comet(&client, cfg.comet_rpc.as_deref()).await?;
    let blocks = chain::read(&client, comet.as_ref(), first - 1, last).await?;
    combine(inputs, &blocks, cfg.window_blocks, block_clock)
}

/// The union of the runs' windows: the lowest first block and the highest
/// last block of the runs that included anything.
pub fn span(inputs: &[Input]) -> Result<(u64, u64)> {
    let windows: Vec<(u64, u64)> = inputs
        .iter()
        .filter(|i| i.report.totals.included > 0)
        .map(|i| (i.report.chain.first_block, i.report.chain.last_block))
        .collect();
    let first = windows.iter().map(|w| w.0).min();
    let last = windows.iter().map(|w| w.1).max();
    match (first, last) {
        (Some(f), Some(l)) if f >= 1 && l >= f => Ok((f, l)),
        _ => bail!("none of the runs had a transaction included: there is no window to read"),
    }
}

/// Merges `inputs` over `blocks` (the block before the window, then the
/// window's blocks, in height order).
pub fn combine(
    inputs: &[Input],
    blocks: &[ChainBlock],
    window_blocks: Option<u64>,
    block_clock: String,
) -> Result<MergedReport> {
    if let (Some(_), Some(i)) = (
        window_blocks,
        inputs.iter().find(|i| i.report.dropped.blocks > 0),
    ) {
        bail!(
            "{} kept only its latest {} blocks (the run outlasted what a report holds): \
             per-window figures need every block's count; merge without --window-blocks",
            i.name,
            i.report.blocks.len()
        );
    }
    let ours = ours_per_block(inputs, blocks)?;
    let (Some(start), Some(end)) = (blocks.first(), blocks.last()) else {
        bail!("no block to merge over");
    };
    let window = &blocks[1..];
    let seconds = between(start, end);
    let totals = sum_totals(inputs);
    let all_txs: u64 = window.iter().map(|b| b.txs).sum();
    let gas_used = window
        .iter()
        .fold(0u64, |sum, b| sum.saturating_add(b.gas_used));
    let chain = ChainFigures {
        first_block: start.number + 1,
        last_block: end.number,
        start_time: u64::try_from(start.time_ns / 1_000_000_000).unwrap_or(0),
        seconds,
        all_txs,
        committed_tps: totals.included as f64 / seconds,
        committed_tps_all: all_txs as f64 / seconds,
        gas_used,
        gas_per_second: gas_used as f64 / seconds,
    };
    let (mut to_block_time, mut to_observed) = (LogHist::default(), LogHist::default());
    for i in inputs {
        if let Some(h) = &i.report.latency_hist {
            to_block_time.merge(&h.to_block_time);
            to_observed.merge(&h.to_observed);
        }
    }
    let resolution = inputs
        .iter()
        .map(|i| i.report.latency_ms.block_time_resolution_ms)
        .fold(0.0, f64::max);
    Ok(MergedReport {
        version: MERGE_VERSION,
        agents: inputs.len(),
        shards: inputs
            .iter()
            .map(|i| i.report.config.shard.map(|s| s.shard))
            .collect(),
        missing_shards: check::missing_shards(inputs),
        chain_id: inputs[0].report.config.chain_id,
        block_time_ms: seconds * 1000.0 / window.len().max(1) as f64,
        chain,
        block_clock,
        accepted: inputs.iter().map(accepted).sum(),
        totals,
        latency_ms: Latencies {
            to_block_time: to_block_time.latency(),
            to_observed: to_observed.latency(),
            block_time_resolution_ms: resolution,
        },
        windows: windows(blocks, &ours, window_blocks),
        per_agent: inputs.iter().map(agent_row).collect::<Result<_>>()?,
    })
}

/// The agents' transactions in each block of the window, after checking
/// every block an agent saw against the chain.
fn ours_per_block(inputs: &[Input], blocks: &[ChainBlock]) -> Result<BTreeMap<u64, u64>> {
    let chain: BTreeMap<u64, &ChainBlock> = blocks.iter().map(|b| (b.number, b)).collect();
    let mut ours: BTreeMap<u64, u64> = BTreeMap::new();
    for i in inputs {
        for row in &i.report.blocks {
            let Some(b) = chain.get(&row.number) else {
                continue;
            };
            if b.txs != row.txs {
                bail!(
                    "{} saw {} transaction(s) in block {}, the chain read now holds {}: \
                     the run was on another chain (or a chain since reset)",
                    i.name,
                    row.txs,
                    row.number,
                    b.txs
                );
            }
            *ours.entry(row.number).or_default() += row.ours;
        }
    }
    if let Some((h, n)) = ours
        .iter()
        .find(|(h, n)| chain.get(h).is_some_and(|b| **n > b.txs))
    {
        bail!("the agents claim {n} transactions in block {h}, which holds fewer");
    }
    Ok(ours)
}

fn windows(
    blocks: &[ChainBlock],
    ours: &BTreeMap<u64, u64>,
    size: Option<u64>,
) -> Vec<MergedWindow> {
    let (Some(size), Some(start)) = (size, blocks.first()) else {
        return Vec::new();
    };
    let mut since = start;
    blocks[1..]
        .chunks(size.max(1) as usize)
        .map(|chunk| {
            let end = &chunk[chunk.len() - 1];
            let seconds = between(since, end);
            since = end;
            let txs = chunk.iter().map(|b| b.txs).sum::<u64>();
            let mine = chunk
                .iter()
                .map(|b| ours.get(&b.number).copied().unwrap_or(0))
                .sum::<u64>();
            MergedWindow {
                from: chunk[0].number,
                to: end.number,
                txs,
                ours: mine,
                seconds,
                tps: mine as f64 / seconds,
                tps_all: txs as f64 / seconds,
            }
        })
        .collect()
}

/// Seconds between two blocks' headers (at least 1 ms).
fn between(a: &ChainBlock, b: &ChainBlock) -> f64 {
    ((b.time_ns - a.time_ns) as f64 / 1e9).max(1e-3)
}

fn sum_totals(inputs: &[Input]) -> Totals {
    let mut t = Totals::default();
    for i in inputs {
        let r = &i.report.totals;
        t.signed += r.signed;
        t.included += r.included;
        t.reverted += r.reverted;
        t.rejected += r.rejected;
        t.unresolved += r.unresolved;
        t.duplicates_folded += r.duplicates_folded;
        t.fee_resends += r.fee_resends;
        for (reason, n) in &r.rejected_by_reason {
            *t.rejected_by_reason.entry(reason.clone()).or_default() += n;
        }
        for (kind, texts) in &r.rejected_texts {
            for text in texts {
                super::report::keep_text(&mut t.rejected_texts, kind, text);
            }
        }
    }
    t
}

/// Accepted by a node: the report's count, or (older files) its seconds'.
fn accepted(i: &Input) -> u64 {
    let r = &i.report;
    r.accepted
        .unwrap_or_else(|| r.series.iter().map(|s| s.accepted).sum())
}

fn agent_row(i: &Input) -> Result<AgentRow> {
    let r = &i.report;
    Ok(AgentRow {
        file: i.name.clone(),
        host: r.environment.host.clone(),
        shard: r.config.shard.map(|s| s.shard),
        keys: check::keys(i)?,
        endpoints: r.config.endpoints.clone(),
        sent: r.totals.signed,
        accepted: accepted(i),
        included: r.totals.included,
        rejected: r.totals.rejected,
        unresolved: r.totals.unresolved,
        blocks: (r.chain.first_block, r.chain.last_block),
        latency_ms: r.latency_ms.clone(),
        agent_limited: r.agent_limited.clone(),
        closed_loop_backlog: r.closed_loop_backlog.clone(),
    })
}

#[cfg(test)]
pub(crate) mod tests;
