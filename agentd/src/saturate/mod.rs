//! Finding the highest open-loop rate a chain keeps up with (its knee).
//!
//! - [`probe`]: one measured step at one offered rate.
//! - [`search`]: the search over any probe, and the verdict of each step.
//! - [`evm`]: the probe of any web3 node, through `feth load`'s engine.

pub mod evm;
pub mod probe;
pub mod search;

pub use evm::{EvmProbe, EvmProbeConfig};
pub use probe::{Clock, MachineShare, Probe, StepMeasure, WindowExtras};
pub use search::{find_knee, judge, Outcome, SearchConfig, SearchEvent, SearchReport, Verdict};
