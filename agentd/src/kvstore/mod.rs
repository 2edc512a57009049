//! CometBFT's own kvstore application as the consensus engine's ceiling:
//! a node of its own, an open-loop sender at a fixed rate, and a
//! [`Probe`](crate::saturate::Probe) for the saturation search.
//!
//! - [`node`]: a single-validator CometBFT running `proxy_app = "kvstore"`,
//!   configured like the abcid devnet.
//! - [`load`]: the open-loop sender ([`schedule`] its bookkeeping, [`wire`]
//!   its JSON-RPC batches).
//! - [`probe`]: [`KvProbe`], one measured step at one rate.
//! - [`window`]: what a window's blocks say.

pub mod load;
pub mod node;
pub mod probe;
pub mod schedule;
pub mod window;
pub mod wire;

pub use node::{KvNode, KvNodeConfig};
pub use probe::{KvProbe, KvReferenceConfig, KvTarget};
