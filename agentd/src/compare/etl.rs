//! A run's node logs through the etl: valid and invalid transactions and
//! block times of the measured window, as `feth etl` would report them.
//!
//! Every run gets a private Redis: each run's fresh chain reuses the heights
//! of the one before, and an idempotent ingest would fold them together.

use std::path::PathBuf;

use anyhow::{Context, Result};
use feth_etl::ingest::{self, IngestConfig};
use feth_etl::local_redis::LocalRedis;
use feth_etl::stats::{self, StatsQuery};
use serde::{Deserialize, Serialize};

use crate::devnet::recipe::RecipeState;

/// What the etl says of a window of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EtlFigures {
    /// Blocks of the window in Redis.
    pub blocks: u64,
    /// Valid transactions.
    pub valid: u64,
    /// Invalid transactions.
    pub invalid: u64,
    /// Blocks whose valid/invalid split no source gave.
    pub results_unknown_blocks: u64,
    /// Median block time, ms.
    pub block_time_p50_ms: Option<f64>,
    /// 95th percentile block time, ms.
    pub block_time_p95_ms: Option<f64>,
}

/// Where a run's etl reads: the node's log (in any format the etl reads)
/// and the CometBFT RPC for header times and results.
#[derive(Debug, Clone)]
pub struct EtlSource {
    tendermint: PathBuf,
    comet_rpc: String,
}

impl EtlSource {
    /// A recipe devnet: the log its recipe names (`[logs]`); `None` when it
    /// names none.
    pub fn recipe(net: &RecipeState) -> Option<Self> {
        Some(Self {
            tendermint: net.etl_log()?,
            comet_rpc: net.urls.comet_rpc.clone(),
        })
    }
}

/// Ingests `source`'s logs (with its RPC for header times and results) and
/// reads the figures of blocks `from ..= to`.
pub async fn window(source: &EtlSource, from: u64, to: u64) -> Result<EtlFigures> {
    let redis = tokio::task::spawn_blocking(LocalRedis::start)
        .await
        .context("the redis-server start task failed")?
        .context("cannot start a private redis-server for the etl")?;
    let cfg = IngestConfig {
        tendermint: vec![source.tendermint.clone()],
        comet_rpc: Some(source.comet_rpc.clone()),
        // Only the window's blocks are asked about, not the chain's past.
        rpc_heights: Some(from..=to),
        redis: Some(redis.url.clone()),
        progress: false,
        ..IngestConfig::default()
    };
    let outcome = ingest::run(&cfg, std::future::pending())
        .await
        .context("the etl could not ingest the run's logs")?;
    if let Some(e) = outcome.rpc_error {
        return Err(e).context("the etl could not read the node's RPC");
    }
    let query = StatsQuery {
        redis: redis.url.clone(),
        chain_id: outcome.report.chain_id,
        from: Some(from),
        to: Some(to),
        ..StatsQuery::default()
    };
    let figures = stats::query(&query)
        .await
        .context("the etl has no figures for the window")?;
    let ms = |s: f64| s * 1e3;
    Ok(EtlFigures {
        blocks: figures.blocks,
        valid: figures.valid,
        invalid: figures.invalid,
        results_unknown_blocks: figures.results_unknown_blocks,
        block_time_p50_ms: figures.block_time.map(|d| ms(d.p50)),
        block_time_p95_ms: figures.block_time.map(|d| ms(d.p95)),
    })
}
