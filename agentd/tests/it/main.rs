//! feth's integration tests: one binary, most modules a real devnet scenario
//! (CometBFT + abcid on free loopback ports in a temporary folder), others
//! the `feth` binary on files (`compare_gate`), a tool CI relies on
//! (`jenkinsfile`) or the flags the docs name (`docs_flags`).

mod bisect_repo;
mod common;
mod compare_deploy;
mod compare_gate;
mod deploy_manifests;
mod devnet_builds;
mod devnet_network;
mod devnet_nodes;
mod docs_flags;
mod etl_devnet;
mod fees;
mod fund;
mod geth;
mod go_blocks;
mod jenkinsfile;
mod load;
mod many_agents;
mod mempool_attacks;
mod node_metrics;
mod per_sender;
mod prom;
mod quiet;
mod reads;
mod refill;
mod report;
mod scenario;
