//! The tunings of abcid as named switches: the [`feth_patches`] crate, which
//! the devnet and `feth compare` share to check a patch set before anything
//! starts.

pub use feth_patches::{Patch, PatchError, Patches};
