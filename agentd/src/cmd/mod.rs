//! The `feth` subcommands: argument structs and what they run.

pub mod devnet;
pub mod send;
