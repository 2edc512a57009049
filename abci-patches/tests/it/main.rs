//! abcid's in-process tests: a node in a temporary directory driven through
//! its ABCI application and its web3 module, with real signed transactions.

mod abci_grpc;
mod abci_socket;
mod app_mempool;
mod common;
mod exec;
mod filters;
mod finalize;
mod gas_limit;
mod hostile;
mod logs;
mod mempool;
mod nonce_queue;
mod patches;
mod restart;
mod rpc;
mod rpc_bounds;
mod rpc_fuzz;
