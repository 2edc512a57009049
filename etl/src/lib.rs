//! feth-etl: Tendermint/CometBFT (and abcid) logs into Redis, and block
//! times, TPS and valid/invalid counts out of it.
//!
//! * [`parse`]: one log line → at most one block event (zero-copy, fast);
//! * [`detect`]: which version and format wrote a log;
//! * [`source`]: files, gzip, `--follow` across rotation;
//! * [`store`]: the Redis layout (idempotent writes, one transaction per batch);
//! * [`ingest`]: the pipeline from logs to Redis;
//! * [`stats`]: the figures; [`output`]: tables, CSV, JSON;
//! * `local_redis` (feature `local-redis`): a private redis-server for
//!   tests, benchmarks and `feth compare`.
//!
//! The node's RPC (header times, block results) and CometBFT's timestamps
//! are `feth-comet`'s, shared with the agent.
//!
//! The command line (`feth etl`) lives in the `feth` binary, which turns its
//! arguments into [`ingest::IngestConfig`] and [`stats::StatsQuery`].

pub mod detect;
pub mod ingest;
#[cfg(feature = "local-redis")]
pub mod local_redis;
pub mod output;
pub mod parse;
pub mod source;
pub mod stats;
pub mod store;
