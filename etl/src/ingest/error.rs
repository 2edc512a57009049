//! Ingest failures.

use std::path::PathBuf;

use crate::source::SourceError;
use crate::store::StoreError;
use feth_comet::rpc::RpcError;
use feth_comet::time::TimeError;

/// Ingest failures.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// Bad `--log-tz`.
    #[error(transparent)]
    Zone(#[from] TimeError),
    /// A log cannot be read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// Redis failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The node's RPC failed before ingest could start.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// No chain id given and none found.
    #[error(
        "no chain id: none of the logs has a `Started node` line in its first 64 MiB (a \
         Cosmos SDK app never logs one). Pass --chain-id (or --comet-rpc to ask the node)"
    )]
    NoChainId,
    /// The logs (or RPC) disagree with `--chain-id` or each other.
    #[error("{0}")]
    ChainMismatch(String),
    /// Nothing to read.
    #[error("no logs given: pass --tendermint LOG… and/or --abcid LOG…")]
    NoLogs,
    /// No Redis URL.
    #[error("no Redis given: pass --redis redis://HOST:PORT/DB (or set FETH_REDIS)")]
    NoRedis,
    /// A log path is a directory or missing.
    #[error("log {0} does not exist or is not a file")]
    NotAFile(PathBuf),
    /// An empty or odd chain id / node name.
    #[error("{what} {value:?} is not usable: it must be non-empty and contain no whitespace")]
    BadName {
        /// `chain id` or `node name`.
        what: &'static str,
        /// The value.
        value: String,
    },
}
