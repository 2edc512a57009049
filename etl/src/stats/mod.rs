//! Figures from what was ingested: TPS, block-time distribution,
//! valid/invalid totals, empty blocks, a txs-per-block histogram and a
//! per-window table (like the Ardor 2019 load-test report).
//!
//! Definitions:
//! * a block's *block time* is its time minus its parent's (heights `h` and
//!   `h-1` both known). Times are header times (RPC or abcid) where both
//!   blocks have one, else the chosen node's consensus commit log times;
//! * TPS = transactions of the blocks that have a block time ÷ the sum of
//!   those block times. For a contiguous range `a..=b` that is
//!   `txs(a+1..=b) / (t(b) - t(a))`;
//! * cumulative TPS of a window = the same over all windows up to it.

mod figures;
mod query;
mod report;

pub use figures::{auto_window, compute, CommitTimes};
pub use query::{query, StatsError, StatsQuery, DEFAULT_REDIS_RETRY};
pub use report::{
    BlockStat, Bucket, Distribution, IntervalSource, StatsReport, TimeSources, Window,
};
