//! feth's chain client: what the agent needs to talk to any standard
//! Ethereum JSON-RPC node (geth, abcid, a Cosmos SDK EVM chain) and to sign
//! what it sends.
//!
//! - [`eth`]: the JSON-RPC client, with hand-written batches on the send
//!   path and transient errors retried.
//! - [`keys`]: secp256k1 keys and key files (mode 0600); [`sign`]:
//!   libsecp256k1 signing of legacy and EIP-1559 transactions.
//! - [`fees`]: the fee models and the base fee a sender follows.
//! - [`accounts`]: keys files of many senders; [`shard`]: `--shard I/N`,
//!   one agent's share of a keys file.
//! - [`blocks`]: windows of committed blocks, their transactions, gas and
//!   commit times, read from the chain.
//!
//! The crate depends on nothing of feth's above it; the agent, the devnet
//! and the tests use it as the one way to reach a node.

pub mod accounts;
pub mod blocks;
pub mod eth;
pub mod fees;
pub mod keys;
pub mod shard;
pub mod sign;
