//! Finding the highest open-loop rate a chain keeps up with.
//!
//! - [`probe`]: one measured step at one offered rate.

pub mod probe;

pub use probe::{Clock, Probe, StepMeasure};
