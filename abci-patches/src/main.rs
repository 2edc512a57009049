//! The `abcid` binary: opens the node's state, serves ABCI to CometBFT and
//! web3 JSON-RPC to clients.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, ValueEnum};

use abcid::abci_server::{AbciAddr, AbciServer, ABCI_CONNECTIONS};
use abcid::app_pool::PoolLimits;
use abcid::grpc_server::{GrpcAbci, GrpcBounds};
use abcid::node::{Node, NodeConfig, DEFAULT_MAX_TX_GAS_WANTED};
use abcid::nonce_queue::QueueConfig;
use abcid::store::PersistPause;
use abcid::{app::AbciApp, patches::Patches, rpc::RpcConfig};

use feth_profiler_rpc::{BlockProfiler, ProfilerConfig, ServerConfig, ThreadWork, Work};

/// Reference EVM fullnode: an ABCI 2.0 application behind CometBFT.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Directory of abcid's state (created if absent).
    #[arg(long)]
    home: PathBuf,
    /// Where CometBFT connects (its `proxy_app`): `unix://PATH` (a socket
    /// made mode 0600) or a TCP address `[tcp://]HOST:PORT`.
    #[arg(long, default_value = "127.0.0.1:26658")]
    abci: AbciAddr,
    /// How CometBFT talks to abcid there: its `abci` setting, `socket` (the
    /// length-prefixed protocol, unix or TCP) or `grpc` (TCP only).
    #[arg(long, value_enum, default_value_t = AbciProtocol::Socket)]
    abci_protocol: AbciProtocol,
    /// `--abci-protocol grpc`: most connections open at once (CometBFT
    /// opens 4); one more is closed at accept.
    #[arg(long, default_value_t = GrpcBounds::default().max_connections)]
    grpc_max_connections: usize,
    /// `--abci-protocol grpc`: most connections open at once from one
    /// client address (CometBFT's 4), so another client cannot take
    /// CometBFT's places; one more is closed at accept.
    #[arg(long, default_value_t = GrpcBounds::default().max_connections_per_client)]
    grpc_max_connections_per_client: usize,
    /// `--abci-protocol grpc`: most calls in flight on one connection
    /// (HTTP/2's max concurrent streams); a client past it waits, as
    /// CometBFT's does.
    #[arg(long, default_value_t = GrpcBounds::default().max_calls_per_connection)]
    grpc_max_calls_per_connection: u32,
    /// Address of the web3 JSON-RPC server (HTTP and WebSocket).
    #[arg(long, default_value = "127.0.0.1:8545")]
    web3: SocketAddr,
    /// CometBFT's RPC, where eth_sendRawTransaction forwards transactions.
    #[arg(long, default_value = "http://127.0.0.1:26657")]
    cometbft_rpc: String,
    /// Log layout.
    #[arg(long, value_enum, default_value_t = LogFormat::Plain)]
    log_format: LogFormat,
    /// Address of the profiler's JSON-RPC server (`profiler_enable`, …).
    #[arg(long, default_value = "127.0.0.1:6060")]
    profiler_addr: SocketAddr,
    /// Bearer token of the profiler RPC; required when not on loopback.
    #[arg(long, env = "ABCID_PROFILER_TOKEN", hide_env_values = true)]
    profiler_token: Option<String>,
    /// Where captured profiles are written (default `<home>/flamegraphs`).
    #[arg(long)]
    profiler_dir: Option<PathBuf>,
    /// Folder name of this chain under the profiler directory.
    #[arg(long, default_value = "abcid")]
    chain_name: String,
    /// Run without the profiler.
    #[arg(long)]
    no_profiler: bool,
    /// Serve Prometheus metrics at `http://ADDR/metrics` (docs/GUIDE.md,
    /// "Pictures: feth report and live metrics"); off when absent.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// Tunings in force: `all`, `none`, a comma-separated list of names, or
    /// `all,-NAME` (abci-patches/README.md, "Patches").
    #[arg(long, default_value = "all")]
    patches: Patches,
    /// Tests only, in debug builds only (a release build has no such flag):
    /// `async-commit`'s writer stops at POINT (`queued`, `written`,
    /// `committed`) of block HEIGHT and waits to be SIGKILLed.
    #[cfg(debug_assertions)]
    #[arg(long, value_name = "POINT@HEIGHT")]
    test_persist_pause: Option<PersistPause>,
    #[command(flatten)]
    rpc: RpcArgs,
    #[command(flatten)]
    queue: QueueArgs,
    #[command(flatten)]
    pool: PoolArgs,
    /// The most gas CheckTx tells CometBFT a transaction wants, which it
    /// counts against `block.max_gas` when it reaps a proposal (0: the gas
    /// limit, uncapped). PrepareProposal still fits the block by gas limits.
    #[arg(long, default_value_t = DEFAULT_MAX_TX_GAS_WANTED)]
    max_tx_gas_wanted: u64,
}

/// The bounds of the `app-mempool` patch's pool (abci-patches/README.md,
/// "Patches"), as CometBFT's `mempool.size` and `mempool.max_txs_bytes`.
#[derive(Debug, clap::Args)]
struct PoolArgs {
    /// Most transactions in the pool.
    #[arg(long, default_value_t = PoolLimits::default().max_txs)]
    app_mempool_size: usize,
    /// Most raw bytes in the pool, all transactions together.
    #[arg(long, default_value_t = PoolLimits::default().max_bytes)]
    app_mempool_max_bytes: u64,
    /// Transactions each sender keeps in a full pool against a newcomer of
    /// a sender holding fewer who pays as much (geth's account slots).
    #[arg(long, default_value_t = PoolLimits::default().account_slots)]
    app_mempool_account_slots: usize,
    /// The web3 URLs of the nodes whose pools newly pooled transactions are
    /// forwarded to (comma-separated; every node of a network names every
    /// other).
    #[arg(long, value_delimiter = ',', value_name = "URL,...")]
    pool_peers: Vec<String>,
}

/// The bounds of the `nonce-queue` patch (abci-patches/README.md, "Patches").
#[derive(Debug, clap::Args)]
struct QueueArgs {
    /// How far ahead of a sender's next nonce a transaction may be queued.
    #[arg(long, default_value_t = QueueConfig::default().window)]
    nonce_queue_window: u64,
    /// Most queued transactions, all senders together.
    #[arg(long, default_value_t = QueueConfig::default().max_queued)]
    nonce_queue_max: usize,
    /// Most queued transactions of one sender.
    #[arg(long, default_value_t = QueueConfig::default().max_per_sender)]
    nonce_queue_per_sender: usize,
    /// Seconds a queued transaction may wait for its predecessor.
    #[arg(long, default_value_t = QueueConfig::default().ttl.as_secs())]
    nonce_queue_ttl: u64,
}

impl QueueArgs {
    fn config(&self) -> QueueConfig {
        QueueConfig {
            window: self.nonce_queue_window,
            max_queued: self.nonce_queue_max,
            max_per_sender: self.nonce_queue_per_sender,
            ttl: std::time::Duration::from_secs(self.nonce_queue_ttl),
        }
    }
}

/// The web3 server's bounds (abci-patches/README.md, "web3 JSON-RPC").
#[derive(Debug, clap::Args)]
struct RpcArgs {
    /// Most blocks one eth_getLogs or filter query spans.
    #[arg(long, default_value_t = RpcConfig::default().max_log_blocks)]
    rpc_max_log_blocks: u64,
    /// Most logs one eth_getLogs answer holds.
    #[arg(long, default_value_t = RpcConfig::default().max_logs)]
    rpc_max_logs: usize,
    /// Most calls in one JSON-RPC batch.
    #[arg(long, default_value_t = RpcConfig::default().max_batch)]
    rpc_max_batch: u32,
    /// Most subscriptions, of every kind, one WebSocket connection holds.
    #[arg(long, default_value_t = RpcConfig::default().max_subscriptions_per_connection)]
    rpc_max_subscriptions: u32,
    /// Most subscriptions, of every kind, open from one client address.
    #[arg(long, default_value_t = RpcConfig::default().max_subscriptions_per_client)]
    rpc_max_subscriptions_per_client: usize,
    /// Most subscriptions, of every kind, open at once on the node.
    #[arg(long, default_value_t = RpcConfig::default().max_subscriptions)]
    rpc_max_subscriptions_total: usize,
    /// Seconds an unpolled filter is kept.
    #[arg(long, default_value_t = RpcConfig::default().filter_timeout.as_secs())]
    rpc_filter_timeout: u64,
    /// Most gas one eth_call / eth_estimateGas execution may use (geth's
    /// --rpc.gascap).
    #[arg(long, default_value_t = RpcConfig::default().gas_cap)]
    rpc_gas_cap: u64,
    /// Milliseconds an eth_call, eth_estimateGas or eth_createAccessList may
    /// execute before it is aborted (geth's --rpc.evmtimeout); 0: no limit.
    #[arg(long, default_value_t = RpcConfig::default().evm_timeout.as_millis() as u64)]
    rpc_evm_timeout_ms: u64,
    /// Most EVM requests executing at once; more wait.
    #[arg(long, default_value_t = RpcConfig::default().evm_calls)]
    rpc_evm_calls: usize,
    /// Most EVM executions one JSON-RPC batch may run in all.
    #[arg(long, default_value_t = RpcConfig::default().batch_executions)]
    rpc_batch_executions: u32,
    /// Most filters one client (peer address) may have installed.
    #[arg(long, default_value_t = RpcConfig::default().max_filters_per_client)]
    rpc_max_filters_per_client: usize,
    /// Largest request body, in bytes (geth's 5 MiB).
    #[arg(long, default_value_t = RpcConfig::default().max_request_bytes)]
    rpc_max_request_bytes: u32,
    /// Largest response, in bytes (geth's --rpc.batch-response-max-size).
    #[arg(long, default_value_t = RpcConfig::default().max_response_bytes)]
    rpc_max_response_bytes: u32,
    /// Most open connections, HTTP and WebSocket.
    #[arg(long, default_value_t = RpcConfig::default().max_connections)]
    rpc_max_connections: u32,
    /// Most open connections from one client address.
    #[arg(long, default_value_t = RpcConfig::default().max_connections_per_client)]
    rpc_max_connections_per_client: usize,
    /// Most requests of one client address in flight at once (a batch
    /// counts as one).
    #[arg(long, default_value_t = RpcConfig::default().max_inflight_per_client)]
    rpc_max_inflight_per_client: usize,
}

impl RpcArgs {
    fn config(&self) -> RpcConfig {
        RpcConfig {
            max_log_blocks: self.rpc_max_log_blocks.max(1),
            max_logs: self.rpc_max_logs,
            max_batch: self.rpc_max_batch,
            max_subscriptions_per_connection: self.rpc_max_subscriptions,
            filter_timeout: std::time::Duration::from_secs(self.rpc_filter_timeout),
            gas_cap: self.rpc_gas_cap,
            evm_timeout: std::time::Duration::from_millis(self.rpc_evm_timeout_ms),
            evm_calls: self.rpc_evm_calls.max(1),
            batch_executions: self.rpc_batch_executions,
            max_subscriptions_per_client: self.rpc_max_subscriptions_per_client,
            max_subscriptions: self.rpc_max_subscriptions_total,
            max_filters_per_client: self.rpc_max_filters_per_client,
            max_request_bytes: self.rpc_max_request_bytes,
            max_response_bytes: self.rpc_max_response_bytes,
            max_connections: self.rpc_max_connections,
            max_connections_per_client: self.rpc_max_connections_per_client,
            max_inflight_per_client: self.rpc_max_inflight_per_client,
            ..RpcConfig::default()
        }
    }
}

/// CometBFT's two ABCI clients (its `abci` setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AbciProtocol {
    Socket,
    Grpc,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    Plain,
    Json,
}

fn main() {
    let args = Args::parse();
    init_tracing(args.log_format);
    if let Err(e) = run(args) {
        tracing::error!("{e:#}");
        eprintln!("abcid: {e:#}");
        std::process::exit(1);
    }
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Plain => builder.init(),
        LogFormat::Json => builder.json().flatten_event(false).init(),
    }
}

/// `app-mempool`'s journal, in the node's home.
const POOL_JOURNAL: &str = "pool.journal";

/// The crash test's pause (`--test-persist-pause`, debug builds only).
#[cfg(debug_assertions)]
fn persist_pause(args: &Args) -> Option<PersistPause> {
    args.test_persist_pause
}

/// A release build has no test hook: its writer never pauses.
#[cfg(not(debug_assertions))]
fn persist_pause(_: &Args) -> Option<PersistPause> {
    None
}

fn run(args: Args) -> anyhow::Result<()> {
    let listen = AbciListen::from_args(&args)?;
    std::fs::create_dir_all(&args.home)
        .with_context(|| format!("cannot create home directory {}", args.home.display()))?;
    let config = NodeConfig {
        patches: args.patches,
        queue: args.queue.config(),
        persist_pause: persist_pause(&args),
        pool: PoolLimits {
            max_txs: args.pool.app_mempool_size,
            max_bytes: args.pool.app_mempool_max_bytes,
            account_slots: args.pool.app_mempool_account_slots,
        },
        max_tx_gas_wanted: args.max_tx_gas_wanted,
    };
    let node = Arc::new(Node::open_with(&args.home, config).context("cannot open abcid's state")?);
    let (height, app_hash) = node.enter()?.info()?;
    tracing::info!(height, %app_hash, home = %args.home.display(), "state loaded");
    tracing::info!(patches = %args.patches, version = %abcid::rpc::client_version(args.patches), "patches in force");
    let journal = args.home.join(POOL_JOURNAL);
    if let Some(r) = node
        .reload_pool(&journal)
        .context("cannot reload the pool from its journal")?
    {
        tracing::info!(read = r.read, admitted = r.admitted, journal = %journal.display(), "pool reloaded from its journal");
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("web3")
        .build()
        .context("cannot start the async runtime")?;
    let (profiler, profiler_server) = if args.no_profiler {
        (None, None)
    } else {
        let dir = args
            .profiler_dir
            .clone()
            .unwrap_or_else(|| args.home.join("flamegraphs"));
        let mut config = ProfilerConfig::new(args.chain_name.clone(), dir);
        config.thread_work = profiled_threads();
        let profiler = BlockProfiler::new(config)
            .context("cannot start the block profiler (use --no-profiler to run without it)")?;
        let server = runtime
            .block_on(feth_profiler_rpc::serve(
                profiler.clone(),
                ServerConfig {
                    addr: args.profiler_addr,
                    token: args.profiler_token.clone(),
                },
            ))
            .context("cannot start the profiler RPC server")?;
        tracing::info!(addr = %server.local_addr(), "profiler JSON-RPC listening");
        (Some(profiler), Some(server))
    };

    let app = AbciApp::new(node.clone(), profiler);
    let (web3_addr, web3_handle) = runtime
        .block_on(abcid::rpc::serve(
            node.clone(),
            args.web3,
            &args.cometbft_rpc,
            RpcConfig {
                pool_peers: args.pool.pool_peers.clone(),
                ..args.rpc.config()
            },
            Some(app.metrics()),
        ))
        .context("cannot start the web3 server")?;
    tracing::info!(addr = %web3_addr, "web3 JSON-RPC listening");

    let metrics_server = match args.metrics {
        Some(addr) => {
            let metrics = app.metrics();
            let render: feth_metrics_http::Render = Arc::new(move || metrics.encode());
            let (bound, task) = runtime
                .block_on(feth_metrics_http::serve(addr, render))
                .context("cannot start the metrics server (--metrics)")?;
            tracing::info!(addr = %bound, "Prometheus metrics at /metrics");
            Some(task)
        }
        None => None,
    };
    let abci = serve_abci(listen, app)?;
    runtime.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        anyhow::Ok(())
    })?;
    tracing::info!("stopping");
    let _ = web3_handle.stop();
    if let Some(server) = profiler_server {
        runtime.block_on(server.stop());
    }
    if let Some(task) = metrics_server {
        task.abort();
    }
    abci.stop();
    // `async-commit`: what Commit acknowledged goes to disk before exiting
    // (CometBFT would replay it otherwise).
    let written = node
        .flush()
        .context("cannot write the last committed blocks")?;
    if written > 0 {
        tracing::info!(
            blocks = written,
            "wrote the committed blocks not yet on disk"
        );
    }
    Ok(())
}

/// What serves ABCI: the socket server's accept thread, or the gRPC
/// server's own runtime.
enum AbciServing {
    Socket(std::thread::JoinHandle<()>),
    Grpc(tokio::runtime::Runtime),
}

impl AbciServing {
    /// Leaves the server behind without waiting for a call in progress:
    /// every commit is durable (or, with `async-commit`, flushed next), so
    /// exiting now loses nothing.
    fn stop(self) {
        match self {
            Self::Socket(accept_loop) => drop(accept_loop),
            Self::Grpc(runtime) => runtime.shutdown_background(),
        }
    }
}

/// Where and how abcid serves CometBFT (`--abci`, `--abci-protocol`),
/// checked before anything is opened.
enum AbciListen {
    Socket(AbciAddr),
    /// The address and the listener's bounds.
    Grpc(SocketAddr, GrpcBounds),
}

impl AbciListen {
    fn from_args(args: &Args) -> anyhow::Result<Self> {
        match (args.abci_protocol, &args.abci) {
            (AbciProtocol::Socket, addr) => Ok(Self::Socket(addr.clone())),
            (AbciProtocol::Grpc, AbciAddr::Tcp(addr)) => {
                let bounds = GrpcBounds {
                    max_connections: args.grpc_max_connections,
                    max_connections_per_client: args.grpc_max_connections_per_client,
                    max_calls_per_connection: args.grpc_max_calls_per_connection,
                };
                Ok(Self::Grpc(*addr, bounds))
            }
            (AbciProtocol::Grpc, other) => anyhow::bail!(
                "--abci-protocol grpc takes a TCP address (CometBFT's gRPC client dials TCP), not {other}"
            ),
        }
    }
}

/// Starts serving ABCI to CometBFT. The gRPC server runs on a runtime of its
/// own, so web3 work never delays a consensus call.
fn serve_abci(listen: AbciListen, app: AbciApp) -> anyhow::Result<AbciServing> {
    let (addr, bounds) = match listen {
        AbciListen::Grpc(addr, bounds) => (addr, bounds),
        AbciListen::Socket(addr) => {
            let server = AbciServer::bind(&addr, app, ABCI_CONNECTIONS)
                .with_context(|| format!("cannot bind the ABCI server to {addr}"))?;
            tracing::info!(addr = %server.local_addr()?, "ABCI listening");
            let thread = std::thread::Builder::new()
                .name("abci-accept".to_string())
                .spawn(move || server.listen())
                .context("cannot start the ABCI thread")?;
            return Ok(AbciServing::Socket(thread));
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(ABCI_CONNECTIONS)
        .enable_all()
        .thread_name("abci-grpc")
        .build()
        .context("cannot start the gRPC ABCI runtime")?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(addr))
        .with_context(|| format!("cannot bind the gRPC ABCI server to {addr}"))?;
    tracing::info!(addr = %listener.local_addr()?, "ABCI (gRPC) listening");
    runtime.spawn(async move {
        if let Err(e) = GrpcAbci::new(app).serve(listener, bounds).await {
            tracing::error!(error = %e, "the gRPC ABCI server stopped");
        }
    });
    Ok(AbciServing::Grpc(runtime))
}

/// What the unmarked samples of abcid's own threads count as in its block profiles: the
/// web3 runtime's workers serve RPC (the admission they do is marked `check_tx` where it
/// runs), the background writer of `async-commit` commits. The ABCI connections' threads
/// are tagged by the handlers, and the node's work marked inside them (see
/// `feth_profiler_rpc::work`).
fn profiled_threads() -> Vec<ThreadWork> {
    vec![
        ThreadWork::new("web3", Work::Rpc),
        ThreadWork::new("persist", Work::Commit),
    ]
}
