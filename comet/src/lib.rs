//! feth-comet: a CometBFT node's RPC, as every part of feth reads it.
//!
//! * [`rpc`]: status, header times, block results, consensus parameters
//!   and the mempool from the node's RPC, batched and bounded;
//! * [`retry`]: idempotent RPC reads retried over transient transport
//!   errors (the agent's web3 client uses it too);
//! * [`facts`]: what is known of one block, and where its time came from;
//! * [`time`]: CometBFT's timestamps (RFC 3339 header times, the log
//!   clock) to UTC.
//!
//! It depends on nothing of feth's: the chain client, the log ETL and the
//! agent use it as their one way to reach CometBFT.

pub mod facts;
pub mod retry;
pub mod rpc;
pub mod time;
