//! What an ingest run reads, where it writes, and how.

use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::Duration;

/// How long to retry when Redis is unreachable or refuses writes.
pub const DEFAULT_REDIS_RETRY: Duration = Duration::from_secs(30);
/// Heights per /block_results JSON-RPC batch (CometBFT 0.38+ allows 10 by
/// default; larger batches are split when the node refuses them).
pub const DEFAULT_RPC_BATCH: usize = 10;
/// RPC requests in flight at once.
pub const DEFAULT_RPC_CONCURRENCY: usize = 4;
/// Heights per Redis transaction (MULTI/EXEC).
pub const DEFAULT_BATCH_HEIGHTS: usize = 20_000;

/// An ingest run's configuration. `Default` gives no logs, no Redis and the
/// `DEFAULT_*` constants, with a progress bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestConfig {
    /// Node logs (Tendermint 0.34, CometBFT 0.37/0.38/1.x; plain or JSON;
    /// plain text or gzip).
    pub tendermint: Vec<PathBuf>,
    /// abcid logs (its per-block `block committed` lines).
    pub abcid: Vec<PathBuf>,
    /// CometBFT RPC URL for header times and tx results.
    pub comet_rpc: Option<String>,
    /// The heights the RPC is asked about (header times, results); `None`:
    /// every height read. The logs are read whole either way.
    pub rpc_heights: Option<RangeInclusive<u64>>,
    /// Redis URL (required; `None` is reported as an error).
    pub redis: Option<String>,
    /// Chain id; `None`: from the RPC, else from the logs.
    pub chain_id: Option<String>,
    /// Node name for lines without a prefix; `None`: from the file name.
    pub node: Option<String>,
    /// Keep reading the logs as they grow, across rotation, until shutdown.
    pub follow: bool,
    /// Time zone of plain logs' timestamps; `None`: this machine's.
    pub log_tz: Option<String>,
    /// Retry budget for Redis.
    pub redis_retry: Duration,
    /// Heights per /block_results batch.
    pub rpc_batch: usize,
    /// RPC requests in flight at once.
    pub rpc_concurrency: usize,
    /// Heights per Redis transaction.
    pub batch_heights: usize,
    /// Show a progress bar on stderr (never with `follow`).
    pub progress: bool,
}

impl Default for IngestConfig {
    fn default() -> Self {
        Self {
            tendermint: Vec::new(),
            abcid: Vec::new(),
            comet_rpc: None,
            rpc_heights: None,
            redis: None,
            chain_id: None,
            node: None,
            follow: false,
            log_tz: None,
            redis_retry: DEFAULT_REDIS_RETRY,
            rpc_batch: DEFAULT_RPC_BATCH,
            rpc_concurrency: DEFAULT_RPC_CONCURRENCY,
            batch_heights: DEFAULT_BATCH_HEIGHTS,
            progress: true,
        }
    }
}
