//! A Go node's allocation and lock profiles over a window: the change of
//! `/debug/pprof/allocs` (bytes allocated, by call stack), and of `mutex`
//! and `block` (time waited) where the node enables them. GC time is a
//! question of allocations, a mempool's reorg one of locks.

use anyhow::Result;
use feth_profiler_rpc::folded::FoldedStacks;
use feth_profiler_rpc::gopprof;
use serde::Serialize;

use crate::comet_pprof;

/// One of the profiles taken beside the CPU windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extra {
    /// Bytes allocated (`allocs`, `alloc_space`).
    Allocs,
    /// Time waited on contended mutexes (`mutex`, `delay`).
    Mutex,
    /// Time goroutines blocked (`block`, `delay`).
    Block,
}

impl Extra {
    /// All three.
    pub const ALL: [Extra; 3] = [Extra::Allocs, Extra::Mutex, Extra::Block];

    /// The profile's name at `/debug/pprof/<name>` and in file names.
    pub fn name(self) -> &'static str {
        match self {
            Extra::Allocs => "allocs",
            Extra::Mutex => "mutex",
            Extra::Block => "block",
        }
    }

    fn value(self) -> (&'static str, &'static str) {
        match self {
            Extra::Allocs => ("alloc_space", "bytes"),
            Extra::Mutex | Extra::Block => ("delay", "nanoseconds"),
        }
    }

    fn off_note(self) -> &'static str {
        match self {
            Extra::Allocs => "no allocation was sampled",
            Extra::Mutex => {
                "nothing recorded: the node does not enable mutex profiling (runtime.SetMutexProfileFraction)"
            }
            Extra::Block => {
                "nothing recorded: the node does not enable block profiling (runtime.SetBlockProfileRate)"
            }
        }
    }
}

/// What one of them held.
#[derive(Debug, Clone, Serialize)]
pub struct ExtraProfile {
    /// `allocs`, `mutex` or `block`.
    pub kind: &'static str,
    /// The value folded (`alloc_space`, `delay`).
    pub value: &'static str,
    /// Its unit (`bytes`, `nanoseconds`).
    pub unit: &'static str,
    /// Seconds the change was taken over.
    pub seconds: u64,
    /// The value's total.
    pub total: u64,
    /// The call sites with the most of it, most first.
    pub top: Vec<(String, u64)>,
    /// Why there is nothing, when there is nothing.
    pub note: Option<String>,
}

/// A taken profile: what it held, its raw bytes and folded stacks.
#[derive(Debug, Clone)]
pub struct TakenExtra {
    /// Its summary.
    pub summary: ExtraProfile,
    /// As the node served it.
    pub raw: Vec<u8>,
    /// Folded under the process label.
    pub stacks: FoldedStacks,
}

/// Takes the change of `extra` over the next `seconds` from `pprof_url`.
pub async fn take(pprof_url: &str, extra: Extra, seconds: u64, label: &str) -> Result<TakenExtra> {
    let raw = comet_pprof::fetch(pprof_url, extra.name(), seconds).await?;
    let (value, unit) = extra.value();
    let stacks = gopprof::fold_value(&raw, label, value)?.stacks;
    let total = stacks.total();
    let summary = ExtraProfile {
        kind: extra.name(),
        value,
        unit,
        seconds,
        total,
        top: comet_pprof::top_functions(&stacks, 10),
        note: (total == 0).then(|| extra.off_note().to_string()),
    };
    Ok(TakenExtra {
        summary,
        raw,
        stacks,
    })
}
