//! feth: answer "did this change make our chain faster?" for a
//! Tendermint/CometBFT chain with an EVM layer.
//!
//! - [`devnet`]: a local CometBFT + abcid devnet in one command.
//! - [`eth`]: the JSON-RPC client; [`sign`]: libsecp256k1 transaction signing;
//!   [`keys`]: key files; [`fees`]: fee models and the base fee followed;
//!   [`refusal`]: what a node's refusal of a transaction means.
//! - [`compare`]: `feth compare`'s report, its renderings and the regression gate.
//! - [`kvstore`]: CometBFT's own kvstore application, the consensus
//!   engine's ceiling for `feth compare`.
//! - [`load`]: the load engine; [`saturate`]: the search for the highest
//!   rate a chain keeps up with; [`blocks`]: windows of committed blocks.
//! - [`report`]: `feth report`'s HTML page and Markdown summary.
//! - [`accounts`]: keys files; [`shard`]: `--shard I/N`, shares of one
//!   keys file for several agents.
//! - [`cmd`]: the `feth` subcommands.

pub mod accounts;
pub mod bench;
pub mod blocks;
pub mod cmd;
pub mod compare;
pub mod devnet;
pub mod eth;
pub mod fees;
pub mod fund;
pub mod keys;
pub mod kvstore;
pub mod load;
pub mod procstat;
pub mod progress;
pub mod refusal;
pub mod report;
pub mod saturate;
pub mod shard;
pub mod sign;
pub mod sink;
pub mod stats;
pub mod sync;
pub mod units;
