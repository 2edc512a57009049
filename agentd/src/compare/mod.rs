//! `feth compare`: committed TPS of several node configurations (abcid's
//! patch sets, or two builds), measured in one interleaved run.
//!
//! - [`ladder`]: the steps and the order of their runs.
//! - [`etl`]: a run's logs through the etl; [`profile`]: profiled blocks and
//!   differential flamegraphs.

pub mod etl;
pub mod ladder;
pub mod profile;
