//! feth-etl's integration tests, one binary: real logs (`tests/fixtures/`),
//! real `redis-server`s and real CometBFT/Tendermint nodes on 127.0.0.1.

mod all_versions;
mod cometbft_038;
mod common;
mod cosmos_sdk;
mod fixtures;
mod recorded_rpc;
mod resilience;
#[path = "../../benches/common/tile.rs"]
mod tile;
