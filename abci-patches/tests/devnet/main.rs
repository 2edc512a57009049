//! abcid on a real devnet: the built abcid behind the pinned CometBFT on
//! free loopback ports in a temporary folder (`feth_devnet::testnet`),
//! driven by standard clients (alloy) and by feth's own load engine.
//!
//! The in-process tests of the node are the `it` binary's; these need
//! CometBFT (`feth devnet install`, or `make setup-test`).

mod bounds;
mod common;
mod faults;
mod grpc;
mod logs;
mod nonce_queue;
mod web3;
