//! `feth bench`: figures that answer "did this change make it faster?".
//!
//! - [`agent`]: how fast the agent prepares and submits signed transfers, against the raw
//!   libsecp256k1 signing rate measured in the same run.
//! - [`fund`]: how many fresh accounts per second `feth fund` pays on a devnet.
//! - [`profiler`]: what abcid's embedded block profiler costs a saturated node, in
//!   committed TPS.
//! - [`rpc`]: how fast abcid answers `eth_getLogs` over a long chain and
//!   `eth_getBlockReceipts` of a full block, idle and under load.
//! - [`stages`]: where a committed transaction's CPU and wall time go, stage by
//!   stage, from the whole node's profile and abcid's counters, and which stage is serial.
//! - [`zipf`](mod@zipf): a Zipf sender mix at a fixed rate with pipelined nonces
//!   (`--per-sender`) on abcid's `nonce-queue`: committed against offered.

pub mod agent;
pub mod background;
pub mod fund;
pub mod go_profiler;
pub mod profiler;
pub mod rpc;
pub mod stages;
pub mod stats;
pub mod zipf;

pub use agent::{agent, raw_sign_rate, AgentBench};

pub use fund::{fund, FundBench, FundBenchPlan};
pub use profiler::{profiler, ProfilerBench, ProfilerBenchPlan};
pub use rpc::{rpc, RpcBench, RpcBenchPlan};
pub use stats::RatioEstimate;
pub use zipf::{zipf, ZipfBench, ZipfBenchPlan};

/// The `timeout_commit` of the devnets the benchmarks start: half the
/// devnet's default, for more blocks per window.
pub const BENCH_TIMEOUT_COMMIT: crate::devnet::GoDuration =
    crate::devnet::GoDuration::from_millis(500);
