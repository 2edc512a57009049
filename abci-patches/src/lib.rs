//! `abcid`: the reference EVM fullnode of feth.
//!
//! An ABCI 2.0 application (tendermint-abci 0.41, CometBFT 0.38) that executes
//! Ethereum transactions with revm, keeps its state in redb and serves a web3
//! JSON-RPC API with jsonrpsee. Its job is to be a realistic, measurable
//! target: signed transfers and contract calls with geth's semantics and
//! error messages, one result per transaction, crash-safe commits.
//!
//! - [`tx`]: decoding and sender recovery (libsecp256k1); [`verify`]: both,
//!   as the patches in force do them; [`senders`]: recovered senders by
//!   transaction hash (`sender-cache`).
//! - [`exec`]: block execution with revm; [`runner`]: one EVM per block or
//!   one per transaction (`session-cache`).
//! - [`mempool`]: CheckTx's pending nonces and balances, and what recheck
//!   keeps (`lite-recheck`); [`nonce_queue`]: future nonces waiting for their
//!   predecessors (`nonce-queue`); [`checkexec`]: CheckTx's execution when
//!   `check-tx-lite` is off; [`app_pool`]: abcid's own mempool
//!   (`app-mempool`, CometBFT's mempool off).
//! - [`proposal`]: PrepareProposal within the block's bytes and gas;
//!   ProcessProposal's rules; [`fee_market`]: the opt-in EIP-1559 base fee.
//! - [`call`]: read-only calls within a gas cap and a deadline;
//!   [`snapshot`]: the committed state web3 reads see (`snapshot-reads`).
//! - [`state`], [`store`]: in-memory world state and its redb persistence;
//!   [`codec`]: the compact encoding of stored transactions.
//! - [`node`]: the state shared by ABCI and web3; [`app`]: the ABCI mapping;
//!   [`abci_server`]: the ABCI socket server (unix or TCP, CometBFT's four
//!   connections at most); [`grpc_server`]: ABCI over gRPC (CometBFT's
//!   `abci = "grpc"`);
//!   [`locks`]: how they wait for each other (`parallel-abci`, `rwlock`);
//!   [`client_caps`]: the listeners' connections counted per client.
//! - [`rpc`]: the web3 server; [`blocklog`]: the per-block log line;
//!   [`txlog`]: the per-transaction lines (without `quiet-logs`).
//! - [`patches`]: the tunings as switches (`abcid --patches`).
//! - [`metrics`]: Prometheus metrics, served by `feth_metrics_http`
//!   (`abcid --metrics`).

pub mod abci_server;
pub mod app;
pub mod app_pool;
mod blocklog;
mod call;
mod checkexec;
mod client_caps;
mod codec;
pub mod dropped;
mod error;
pub mod exec;
mod fee_market;
pub mod genesis;
pub mod grpc_server;
mod locks;
mod mempool;
pub mod metrics;
pub mod node;
pub mod nonce_queue;
pub mod patches;
mod pool_journal;
pub mod proposal;
mod records;
pub mod rpc;
mod runner;
mod senders;
mod snapshot;
pub mod state;
pub mod store;
#[cfg(test)]
mod testkit;
pub mod tx;
pub mod tx_fuzz;
mod txlog;
mod verify;
