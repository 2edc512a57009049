//! Per-block CPU flamegraphs of `check_tx` and `deliver_tx`, armed and disarmed over
//! JSON-RPC on a live ABCI node.
//!
//! An ABCI application embeds a [`BlockProfiler`] with two calls on its consensus
//! connection — [`BlockProfiler::begin_block`] when FinalizeBlock starts and
//! [`BlockProfiler::end_block`] after Commit — and tags the thread of each ABCI
//! connection with [`tag_current_thread`]. [`serve`] exposes the `profiler_*` JSON-RPC
//! methods on their own port (loopback by default). A chain engineer arms the profiler
//! for the next N blocks — each captured from the end of the previous block's Commit to
//! the end of its own, so that the CheckTx work between blocks is in it (see [`profiler`])
//! — and for each captured block gets, under `flamegraphs/<chain-id>/<height>/`:
//!
//! * SVG flamegraphs of all threads and of each role (`check_tx`, `deliver_tx`),
//! * pprof protobuf profiles (`go tool pprof`, speedscope) with `thread` and
//!   `block_height` labels,
//! * folded stacks, the input of merged and differential flamegraphs ([`diff`]).
//!
//! Cost on the consensus thread: an atomic load when disarmed; when armed, one uncontended
//! lock and up to two channel sends per call, measured by the node itself and reported as
//! `consensus_cost` by `profiler_status`. pprof-rs runs one guard per session on the
//! profiler's `fethprof-sample` thread, which collects each block's samples as the
//! difference from the previous block's; symbolising, rendering and writing run on its
//! `fethprof-render` thread (`SCHED_BATCH`, nice 19: spare CPU only), and their failures
//! are reported by `profiler_status`, never propagated to the node.
//!
//! Stack quality: samples are unwound with frame pointers (signal-safe). pprof-rs's
//! frame-pointer walk starts at the interrupted function's frame pointer and does not record
//! the interrupted instruction, so the innermost recorded frame is the *caller* of the
//! function that was running; when that function had no frame set up at the time (frameless
//! leaf functions, shrink-wrapped prologues) its caller is missing too. Self time therefore
//! shows one or two levels up the stack; the call paths above are exact.
//!
//! The `feth profiler` and `feth flamegraph diff` commands live in [`cli`], on top of the
//! typed JSON-RPC [`client`].

#![warn(missing_docs)]

pub mod api;
pub mod cli;
pub mod client;
pub mod config;
pub mod diff;
pub mod error;
pub mod folded;
pub mod profiler;
mod render;
pub mod role;
pub mod rpc;
mod sampler;
mod shared;
mod store;

pub use api::{
    ConsensusCost, DisableOutcome, EnableParams, FetchParams, FetchResponse, HeightSelector,
    ProfileKind, ProfileSummary, SessionState, SessionStatus, Status,
};
pub use client::{ClientError, ProfilerClient};
pub use config::{ProfilerConfig, Retention};
pub use error::ProfilerError;
pub use profiler::BlockProfiler;
pub use role::{tag_current_thread, Role, RoleFilter};
pub use rpc::{serve, RpcServer, ServeError, ServerConfig};
