//! The `feth` subcommands: argument structs and what they run.

pub mod bench;
pub mod devnet;
pub mod fund;
pub mod info;
pub mod load;
pub mod send;
