//! feth: answer "did this change make our chain faster?" for a
//! Tendermint/CometBFT chain with an EVM layer.
//!
//! The layers below this crate are their own crates, re-exported here under
//! the names the agent's code uses:
//! - `feth-chain` ([`eth`], [`keys`], [`sign`], [`fees`], [`accounts`],
//!   [`shard`], [`blocks`]): the JSON-RPC client and everything a sender
//!   needs to sign and price what it sends;
//! - `feth-devnet` ([`devnet`], [`procstat`]): a local CometBFT + abcid devnet
//!   in one command, and processes' CPU read from /proc;
//! - `feth-load` ([`load`], [`fund`], [`refusal`], [`units`], [`sync`]):
//!   the load engine and funding senders.
//!
//! This crate holds the agent's products on top of them:
//! - [`saturate`]: the search for the highest rate a chain keeps up with.
//! - [`compare`]: `feth compare`'s report, its renderings and the regression gate;
//!   [`bisect`]: which commit made the chain slower, each probe judged by that gate.
//! - [`kvstore`]: CometBFT's own kvstore application, the consensus
//!   engine's ceiling for `feth compare`.
//! - [`report`]: `feth report`'s HTML page and Markdown summary.
//! - [`bench`]: the micro-benchmarks of `feth bench`.
//! - [`comet_pprof`]: CometBFT's own CPU profile over a window of blocks;
//!   [`go_profile`]: a Go node profiled per block, its CPU by role;
//!   [`node_profile`]: it and abcid's block profiles in one flamegraph.
//! - [`cmd`]: the `feth` subcommands (arguments and dispatch).

pub use feth_chain::{accounts, blocks, eth, fees, keys, shard, sign};
pub use feth_devnet as devnet;
pub use feth_devnet::procstat;
pub use feth_load as load;
pub use feth_load::{fund, refusal, sync, units};

pub mod bench;
pub mod bisect;
pub mod cmd;
pub mod comet_pprof;
pub mod compare;
pub mod go_profile;
pub mod kvstore;
pub mod node_profile;
pub mod progress;
pub mod report;
pub mod saturate;
pub mod sink;
pub mod stats;
