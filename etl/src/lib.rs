//! feth-etl: Tendermint/CometBFT (and abcid) logs into Redis, and block
//! times, TPS and valid/invalid counts out of it.
//!
//! * [`parse`]: one log line → at most one block event (zero-copy, fast);
//! * [`detect`]: which version and format wrote a log;
//! * [`time`]: log timestamps → UTC (plain logs have no zone: `--log-tz`);
//! * [`source`]: files, gzip, `--follow` across rotation;
//! * [`rpc`]: header times and tx results from the node's RPC;
//! * [`store`]: the Redis layout (idempotent writes, one transaction per batch);
//! * [`ingest`]: the pipeline from logs to Redis;
//! * [`stats`]: the figures; [`output`]: tables, CSV, JSON;
//! * [`cli`]: clap arguments and the entry points the `feth` binary calls.

pub mod cli;
pub mod detect;
pub mod ingest;
pub mod local_redis;
pub mod output;
pub mod parse;
pub mod rpc;
pub mod source;
pub mod stats;
pub mod store;
pub mod time;
