//! The tests that measure the machine: its CPU per transaction, the share
//! of it the node had, a knee, a profiler's samples or the agent's memory.
//! `make test` runs them first, one at a time, on an otherwise idle machine
//! (`cargo test --workspace -- quiet::`); the rest of the suite runs
//! afterwards beside the fuzz builds (`scripts/test.sh`).

mod bench_profiler;
mod bench_stages;
mod compare_deploy;
mod compare_live;
mod compare_run;
mod kvstore;
mod pipeline;
mod profiler_devnet;
mod recipes;
mod saturate;
mod soak;
