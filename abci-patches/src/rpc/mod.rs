//! abcid's web3 JSON-RPC server (jsonrpsee, HTTP and WebSocket on one port).
//!
//! The shapes are geth's, built from alloy's RPC types. Errors use code
//! `-32000` with go-ethereum's messages for transaction-pool errors, and the
//! standard JSON-RPC codes for malformed requests (README, "web3 errors").

mod comet;
mod convert;
mod eth;
pub mod logs;

use std::net::SocketAddr;
use std::sync::Arc;

use jsonrpsee::server::{Server, ServerConfig, ServerHandle};
use jsonrpsee::RpcModule;

use comet::CometClient;
pub use eth::client_version;

use crate::node::Node;

/// What the web3 handlers share.
pub struct Web3 {
    node: Arc<Node>,
    comet: CometClient,
}

/// The web3 methods over `node`, forwarding transactions to CometBFT's RPC at
/// `comet_url`; [`serve`] puts them behind a socket, and they can be called
/// in-process with [`RpcModule::call`].
pub fn module(node: Arc<Node>, comet_url: &str) -> anyhow::Result<RpcModule<Web3>> {
    let comet = CometClient::new(comet_url)?;
    eth::module(Web3 { node, comet })
}

/// Starts the web3 server on `addr`, forwarding transactions to CometBFT's
/// RPC at `comet_url`.
pub async fn serve(
    node: Arc<Node>,
    addr: SocketAddr,
    comet_url: &str,
) -> anyhow::Result<(SocketAddr, ServerHandle)> {
    let module = module(node, comet_url)?;
    let config = ServerConfig::builder()
        .max_connections(10_000)
        .max_request_body_size(16 * 1024 * 1024)
        .max_response_body_size(64 * 1024 * 1024)
        .build();
    let server = Server::builder()
        .set_config(config)
        .build(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot bind the web3 server to {addr}: {e}"))?;
    let local = server.local_addr()?;
    Ok((local, server.start(module)))
}
