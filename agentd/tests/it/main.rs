//! feth's integration tests: one binary, most modules a real devnet scenario
//! (CometBFT + abcid on free loopback ports in a temporary folder), others
//! the `feth` binary on files (`compare_gate`), a tool CI relies on
//! (`jenkinsfile`) or the flags the docs name (`docs_flags`).

mod bench_profiler;
mod bench_stages;
mod common;
mod compare_deploy;
mod compare_gate;
mod compare_live;
mod compare_run;
mod deploy_manifests;
mod devnet_network;
mod devnet_nodes;
mod docs_flags;
mod etl_devnet;
mod fees;
mod fund;
mod geth;
mod jenkinsfile;
mod kvstore;
mod load;
mod many_agents;
mod node_metrics;
mod per_sender;
mod pipeline;
mod profiler_devnet;
mod prom;
mod reads;
mod recipes;
mod refill;
mod report;
mod saturate;
mod scenario;
mod soak;
