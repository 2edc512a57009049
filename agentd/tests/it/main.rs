//! feth's integration tests: one binary, each module a real devnet scenario
//! (CometBFT + abcid on free loopback ports in a temporary folder).

mod abcid_faults;
mod abcid_web3;
mod bench_profiler;
mod common;
mod etl_devnet;
mod load;
mod profiler_devnet;
mod saturate;
