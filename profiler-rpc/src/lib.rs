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
//! # Node and client: two cargo features
//!
//! The crate has two sides, selected by cargo features (both on by default):
//!
//! * `node` — what an ABCI node embeds: [`BlockProfiler`], its sampling and rendering
//!   threads (pprof-rs, inferno), the on-disk store and the JSON-RPC server ([`serve`],
//!   jsonrpsee's server). abcid depends on the crate with `default-features = false,
//!   features = ["node"]`, so it links no JSON-RPC client.
//! * `client` — what a tool uses against a node: the typed JSON-RPC [`client`]
//!   (jsonrpsee's HTTP client), [`download`] of a session's profiles into a local
//!   directory, [`merge`] of a session's blocks into one flamegraph, and [`diff`] for
//!   differential flamegraphs, [`gopprof`]: a Go node's (CometBFT's) CPU profile as
//!   folded stacks, and [`node`]: both processes in one profile, weighed in CPU time. The `feth profiler` and `feth flamegraph diff` commands of
//!   the `feth` binary are built on it; the command line itself (arguments, progress bars,
//!   printing) lives in that binary, not here.
//!
//! Both sides share the wire types ([`api`]), the configuration limits ([`config`]), the
//! errors ([`error`]), thread roles ([`role`]) and [`folded`] stacks, which are always
//! compiled. One crate with features rather than two crates: the two sides share those
//! types and the on-disk layout, and a feature keeps them in one place.

pub mod api;
#[cfg(feature = "client")]
pub mod client;
pub mod config;
#[cfg(feature = "client")]
pub mod diff;
#[cfg(feature = "client")]
pub mod download;
pub mod error;
pub mod folded;
#[cfg(feature = "client")]
pub mod gopprof;
#[cfg(feature = "node")]
mod lock;
#[cfg(feature = "client")]
pub mod merge;
#[cfg(feature = "client")]
pub mod node;
#[cfg(feature = "node")]
pub mod profiler;
#[cfg(feature = "node")]
mod render;
pub mod role;
#[cfg(feature = "node")]
pub mod rpc;
#[cfg(feature = "node")]
mod sampler;
#[cfg(feature = "node")]
mod shared;
#[cfg(feature = "node")]
mod store;
mod svg;
#[cfg(feature = "node")]
mod tag;
pub mod work;

pub use api::{
    ConsensusCost, DisableOutcome, EnableParams, ErrorReport, FetchParams, FetchResponse,
    HeightSelector, ProfileKind, ProfileSummary, SessionState, SessionStatus, Status,
};
#[cfg(feature = "client")]
pub use client::{ClientError, ProfilerClient, SessionOutcome};
pub use config::{ProfilerConfig, Retention};
pub use error::ProfilerError;
#[cfg(feature = "node")]
pub use profiler::BlockProfiler;
pub use role::{Role, RoleFilter};
#[cfg(feature = "node")]
pub use rpc::{serve, RpcServer, ServeError, ServerConfig};
#[cfg(feature = "node")]
pub use tag::{current_thread_role, tag_current_thread};
pub use work::{ThreadWork, Work};
