//! abcid's web3 JSON-RPC server (jsonrpsee, HTTP and WebSocket on one port).
//!
//! The shapes are geth's, built from alloy's RPC types. Errors use code
//! `-32000` with go-ethereum's messages for transaction-pool and query errors,
//! and the standard JSON-RPC codes for malformed requests
//! (abci-patches/README.md, "web3 JSON-RPC").
//!
//! - [`eth`]: state, calls, transactions and the chain's parameters;
//!   [`blocks`]: blocks, receipts and transactions by block.
//! - [`logs`]: `eth_getLogs` and the log queries filters and subscriptions
//!   share; [`filters`]: polled filters; [`pubsub`]: WebSocket
//!   subscriptions, their places bounded by [`slots`].
//! - [`submit`]: `eth_sendRawTransaction`, forwarded to CometBFT or, with
//!   `app-mempool`, admitted into the node's pool; [`txpool`]: that mempool
//!   as `txpool_*`; [`comet`]: the CometBFT RPC client.
//!
//! Every request's work is bounded ([`RpcConfig`]): log queries by blocks and
//! results, batches by size and EVM executions, calls by gas and time,
//! subscriptions per connection, subscriptions and filters per client, both
//! in all, and the heavy
//! queries and calls run a few at a time off the server's threads.

mod access_list;
mod blocks;
mod calls;
mod comet;
mod conn_cap;
mod convert;
mod error;
mod eth;
mod evm_pool;
mod filters;
mod forward;
pub mod fuzz;
mod inflight;
pub mod logs;
mod peer;
mod pubsub;
mod slots;
mod submit;
mod txpool;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use jsonrpsee::server::middleware::rpc::RpcServiceBuilder;
use jsonrpsee::server::{
    serve_with_graceful_shutdown, stop_channel, BatchRequestConfig, Methods, Server, ServerConfig,
    ServerHandle,
};
use jsonrpsee::RpcModule;
use tokio::sync::Semaphore;

use comet::CometClient;
pub use eth::client_version;
use filters::Filters;

use crate::metrics::Metrics;
use crate::node::Node;

/// The bounds of the web3 server: what one request, one connection and the
/// server as a whole may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcConfig {
    /// Most blocks one `eth_getLogs` (or filter) query spans.
    pub max_log_blocks: u64,
    /// Most logs one answer holds.
    pub max_logs: usize,
    /// Most addresses, and most topics at one position, of a log filter
    /// (geth's `--rpc.logquerylimit`).
    pub max_log_criteria: usize,
    /// How long a filter nobody polls is kept.
    pub filter_timeout: Duration,
    /// Most filters installed at once.
    pub max_filters: usize,
    /// Most calls in one JSON-RPC batch.
    pub max_batch: u32,
    /// Largest request body, in bytes (geth's 5 MiB).
    pub max_request_bytes: u32,
    /// Largest response, in bytes (geth's `--rpc.batch-response-max-size`).
    pub max_response_bytes: u32,
    /// Most open connections.
    pub max_connections: u32,
    /// Most open connections from one client address.
    pub max_connections_per_client: usize,
    /// Most requests of one client address in flight at once (a batch
    /// counts as one).
    pub max_inflight_per_client: usize,
    /// Most subscriptions, of every kind, one WebSocket connection holds.
    pub max_subscriptions_per_connection: u32,
    /// Most subscriptions, of every kind, open from one client address.
    pub max_subscriptions_per_client: usize,
    /// Most subscriptions, of every kind, open on the server at once.
    pub max_subscriptions: usize,
    /// How long a subscriber's connection may take no notification (its
    /// buffer full, every notification dropped and counted) before its
    /// subscription is closed.
    pub subscriber_timeout: Duration,
    /// Most log, receipt and fee-history queries running at once; more wait.
    pub heavy_queries: usize,
    /// Most gas one `eth_call` / `eth_estimateGas` execution may use
    /// (geth's `--rpc.gascap`); a request asking for more runs with this.
    pub gas_cap: u64,
    /// How long one `eth_call`, `eth_estimateGas` or `eth_createAccessList`
    /// may execute before it is aborted (geth's `--rpc.evmtimeout`); zero
    /// for no limit.
    pub evm_timeout: Duration,
    /// Most EVM requests executing at once, off the server's threads; more
    /// wait.
    pub evm_calls: usize,
    /// Most EVM executions one JSON-RPC batch may run in all (an estimate
    /// runs several).
    pub batch_executions: u32,
    /// Most filters one client (peer address) may have installed at once.
    pub max_filters_per_client: usize,
    /// `app-mempool`: the web3 URLs of the nodes whose pools this node's
    /// newly pooled transactions are forwarded to ([`forward`]).
    pub pool_peers: Vec<String>,
}

impl Default for RpcConfig {
    fn default() -> Self {
        Self {
            max_log_blocks: 10_000,
            max_logs: 10_000,
            max_log_criteria: 1_000,
            filter_timeout: Duration::from_secs(300),
            max_filters: 10_000,
            max_batch: 1_000,
            max_request_bytes: 5 << 20,
            max_response_bytes: 25_000_000,
            max_connections: 10_000,
            max_connections_per_client: 256,
            max_inflight_per_client: 256,
            max_subscriptions_per_connection: 100,
            max_subscriptions_per_client: 100,
            max_subscriptions: 1_000,
            subscriber_timeout: Duration::from_secs(5),
            heavy_queries: 4,
            gas_cap: 50_000_000,
            evm_timeout: Duration::from_secs(5),
            evm_calls: 4,
            batch_executions: 100,
            max_filters_per_client: 100,
            pool_peers: Vec::new(),
        }
    }
}

/// What the web3 handlers share.
pub struct Web3 {
    node: Arc<Node>,
    comet: CometClient,
    config: RpcConfig,
    filters: Filters,
    heavy: Semaphore,
    evm: Semaphore,
    evm_threads: evm_pool::EvmPool,
    notifications: pubsub::BlockNotifications,
    slots: slots::SubscriptionSlots,
    forward: Option<forward::Forwarder>,
    /// abcid's metrics, where `app-mempool`'s CheckTx is timed.
    metrics: Option<Arc<Metrics>>,
}

impl Web3 {
    /// Runs `query` on the blocking pool once one of the
    /// [`RpcConfig::heavy_queries`] slots is free: a long log query never
    /// holds a server thread, and a crowd of them waits instead of taking
    /// every core from consensus.
    async fn heavy<T: Send + 'static>(
        self: Arc<Self>,
        query: impl FnOnce(&Web3) -> error::RpcResult<T> + Send + 'static,
    ) -> error::RpcResult<T> {
        let _slot = slot(&self.heavy).await?;
        let web3 = self.clone();
        tokio::task::spawn_blocking(move || query(&web3))
            .await
            .map_err(|e| {
                error::internal_failure(format!("the query failed inside the node: {e}"))
            })?
    }

    /// Runs an EVM request on the node's low-priority EVM threads
    /// ([`evm_pool`]) once one of the [`RpcConfig::evm_calls`] slots is
    /// free, within the bounds of [`calls::CallScope`] (gas cap, deadline
    /// from when it starts, its batch's budget).
    async fn evm<T: Send + 'static>(
        self: Arc<Self>,
        extensions: jsonrpsee::Extensions,
        query: impl FnOnce(&Web3, &calls::CallScope) -> error::RpcResult<T> + Send + 'static,
    ) -> error::RpcResult<T> {
        let _slot = slot(&self.evm).await?;
        let web3 = self.clone();
        let run = move || query(&web3, &calls::CallScope::start(&web3, &extensions));
        self.evm_threads
            .run(run)
            .await
            .map_err(|e| error::internal_failure(format!("the call failed inside the node: {e}")))?
    }
}

/// One of `semaphore`'s places, once one is free.
async fn slot(semaphore: &Semaphore) -> error::RpcResult<tokio::sync::SemaphorePermit<'_>> {
    semaphore
        .acquire()
        .await
        .map_err(|_| error::server_error("the server is shutting down"))
}

/// The web3 methods over `node`, forwarding transactions to CometBFT's RPC at
/// `comet_url`; [`serve`] puts them behind a socket, and they can be called
/// in-process with `RpcModule::call` (jsonrpsee's `Methods::call`).
pub fn module(
    node: Arc<Node>,
    comet_url: &str,
    config: RpcConfig,
) -> anyhow::Result<RpcModule<Web3>> {
    methods(Arc::new(Web3::new(node, comet_url, config, None)?))
}

impl Web3 {
    fn new(
        node: Arc<Node>,
        comet_url: &str,
        config: RpcConfig,
        metrics: Option<Arc<Metrics>>,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            filters: Filters::new(
                config.filter_timeout,
                config.max_filters,
                config.max_filters_per_client,
            ),
            heavy: Semaphore::new(config.heavy_queries.max(1)),
            evm: Semaphore::new(config.evm_calls.max(1)),
            evm_threads: evm_pool::EvmPool::spawn(config.evm_calls)
                .context("cannot start the web3 server's EVM threads")?,
            notifications: pubsub::BlockNotifications::new(
                metrics
                    .as_ref()
                    .map(|m| m.notifications())
                    .unwrap_or_default(),
            ),
            slots: slots::SubscriptionSlots::new(slots::SlotLimits {
                node: config.max_subscriptions,
                client: config.max_subscriptions_per_client,
                connection: config.max_subscriptions_per_connection as usize,
            }),
            comet: CometClient::new(comet_url)?,
            forward: forwarder(&node, &config.pool_peers)?,
            metrics,
            node,
            config,
        })
    }
}

/// The forwarding of the pool to `peers`, when there are any; refused
/// without `app-mempool` (there is no pool of the node's own to share).
fn forwarder(node: &Arc<Node>, peers: &[String]) -> anyhow::Result<Option<forward::Forwarder>> {
    if peers.is_empty() {
        return Ok(None);
    }
    if !node.patches().has(crate::patches::Patch::AppMempool) {
        anyhow::bail!(
            "--pool-peers forwards the app-mempool pool: add app-mempool to --patches, or drop --pool-peers"
        );
    }
    let node = node.clone();
    let pool: forward::PoolReader = Arc::new(move || match node.pooled(usize::MAX) {
        Ok(pooled) => pooled.map(|(_, txs)| txs).unwrap_or_default(),
        Err(e) => {
            tracing::warn!("cannot read the pool to forward it: {e}");
            Vec::new()
        }
    });
    forward::Forwarder::spawn(peers, pool).map(Some)
}

/// Every web3 method, over `web3`.
fn methods(web3: Arc<Web3>) -> anyhow::Result<RpcModule<Web3>> {
    let patches = web3.node.patches();
    let mut m = RpcModule::from_arc(web3);
    eth::register(&mut m)?;
    submit::register(&mut m, patches)?;
    blocks::register(&mut m)?;
    logs::register(&mut m)?;
    filters::register(&mut m)?;
    pubsub::register(&mut m)?;
    txpool::register(&mut m)?;
    access_list::register(&mut m)?;
    Ok(m)
}

/// Starts the web3 server on `addr`, forwarding transactions to CometBFT's
/// RPC at `comet_url`, within the bounds of `config`; `metrics` times the
/// CheckTx `app-mempool` runs on its workers.
pub async fn serve(
    node: Arc<Node>,
    addr: SocketAddr,
    comet_url: &str,
    config: RpcConfig,
    metrics: Option<Arc<Metrics>>,
) -> anyhow::Result<(SocketAddr, ServerHandle)> {
    let server_config = ServerConfig::builder()
        .max_connections(config.max_connections)
        .max_request_body_size(config.max_request_bytes)
        .max_response_body_size(config.max_response_bytes)
        // jsonrpsee's bound counts subscribe calls still being answered too:
        // past the connection's own bound by the calls one client may have in
        // flight, so that the slots refuse first, by name (jsonrpsee's
        // refusal names neither bound nor flag).
        .max_subscriptions_per_connection(jsonrpsee_subscriptions(&config))
        // Counted by the in-flight layer, which names the flag (jsonrpsee's
        // own refusal does not).
        .set_batch_request_config(BatchRequestConfig::Unlimited)
        .build();
    let budget = config.batch_executions;
    let inflight = crate::client_caps::PerClient::new(config.max_inflight_per_client);
    let max_response = config.max_response_bytes;
    let max_batch = config.max_batch;
    let table = conn_cap::ConnectionTable::new(
        usize::try_from(config.max_connections).unwrap_or(usize::MAX),
        config.max_connections_per_client,
    );
    let max_body = u64::from(config.max_request_bytes);
    let module = methods(Arc::new(Web3::new(node, comet_url, config, metrics)?))?;
    let middleware = RpcServiceBuilder::new()
        .layer_fn(move |service| {
            inflight::InFlightService::new(service, inflight.clone(), max_response, max_batch)
        })
        .layer_fn(move |service| calls::BudgetService::new(service, budget));
    let builder = Server::builder()
        .set_config(server_config)
        .set_rpc_middleware(middleware)
        .to_service_builder();
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot bind the web3 server to {addr}"))?;
    let local = listener.local_addr()?;
    let methods: Methods = module.into();
    let (stop, handle) = stop_channel();
    let serve = {
        let stop = stop.clone();
        move |socket, peer, slot| {
            let service = builder.clone().build(methods.clone(), stop.clone());
            let service = peer::WithPeer::new(service, peer, max_body);
            let stopped = stop.clone().shutdown();
            tokio::spawn(async move {
                // The client's place, held while its connection is served.
                let _slot = slot;
                serve_with_graceful_shutdown(socket, service, stopped).await
            });
        }
    };
    tokio::spawn(peer::accept(listener, stop, table, serve));
    Ok((local, handle))
}

/// jsonrpsee's bound on one connection's subscriptions: the slots' bound
/// plus the calls one client may have in flight, each of which may hold a
/// jsonrpsee place while abcid refuses it.
fn jsonrpsee_subscriptions(config: &RpcConfig) -> u32 {
    let inflight = u32::try_from(config.max_inflight_per_client).unwrap_or(u32::MAX);
    config
        .max_subscriptions_per_connection
        .saturating_add(inflight)
}
