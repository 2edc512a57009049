//! A local devnet in one command: the pinned CometBFT and abcid, started
//! detached with their logs in files, stopped by PID.
//!
//! Layout of a devnet folder (default `.devnet/`):
//! `cometbft/` (CometBFT home), `abcid/` (abcid's state), `logs/`,
//! `root.key` (the funded root's private key, mode 0600) and `devnet.json`
//! (ports, PIDs, binaries).
//!
//! A devnet of several validators and full nodes, their links through
//! toxiproxy, is [`network`]'s: one such folder per node.

pub mod config;
mod duration;
pub mod links;
pub mod network;
mod ports;
pub mod process;
pub mod procstat;
pub mod recipe;
#[cfg(feature = "test-utils")]
pub mod testnet;
pub mod tools;
pub mod toxiproxy;

pub use duration::{DurationError, GoDuration};
pub use ports::{free_port, free_ports, Ports};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use feth_chain::eth::EthClient;
use feth_chain::keys;
use feth_patches::{Patch, Patches};

/// Log layout of both processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// CometBFT's plain and abcid's text lines.
    Plain,
    /// One JSON object per line.
    Json,
}

impl LogFormat {
    /// Its name in CometBFT's `log_format` and `abcid --log-format`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plain => "plain",
            Self::Json => "json",
        }
    }
}

/// Default folder of a devnet.
pub const DEFAULT_DIR: &str = ".devnet";
/// The state file of a devnet of abcid's own devnet code, in its folder.
pub const STATE_FILE: &str = "devnet.json";
/// Default EIP-155 chain id.
pub const DEFAULT_CHAIN_ID: u64 = 9000;
/// Default CometBFT `consensus.timeout_commit`.
pub const DEFAULT_TIMEOUT_COMMIT: GoDuration = GoDuration::from_millis(1_000);
/// Default CometBFT `mempool.size` (transactions).
pub const DEFAULT_MEMPOOL_SIZE: u64 = 10_000;
/// Default CometBFT `mempool.max_txs_bytes`.
pub const DEFAULT_MEMPOOL_MAX_TXS_BYTES: u64 = 1 << 30;
/// Default CometBFT `rpc.max_body_bytes`.
pub const DEFAULT_RPC_MAX_BODY_BYTES: u64 = 10_000_000;
/// Default CometBFT `rpc.max_open_connections`.
pub const DEFAULT_RPC_MAX_OPEN_CONNECTIONS: u64 = 2_000;
/// Default genesis balance of the root account, in wei (10⁹ ether).
pub const DEFAULT_ROOT_BALANCE: &str = "1000000000000000000000000000";
/// Default tunings of abcid: all of them (`abcid --patches`).
pub const DEFAULT_PATCHES: &str = "all";
/// Default seconds to wait for the first block and the web3 server.
pub const DEFAULT_WAIT_SECS: u64 = 60;
/// Default block gas limit (abcid's default, written into the genesis as
/// `app_state.block_gas_limit` and CometBFT's `block.max_gas`): 150 M, a
/// realistic limit for a fast EVM chain (BNB Chain runs about 140 M per
/// 0.75 s block, Base 150 M and more per 2 s). It holds 7,142 transfers per
/// block, 14k transfers/s at 500 ms blocks: above what a 2-core machine
/// commits, so it bounds contract-heavy blocks without capping transfer TPS.
pub const DEFAULT_BLOCK_GAS_LIMIT: u64 = 150_000_000;

/// How to set up and run a devnet. Every port is configurable so that
/// several devnets (tests, benchmarks) run side by side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevnetOptions {
    /// Folder holding the devnet's homes, logs and key.
    pub dir: PathBuf,
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// CometBFT RPC port.
    pub rpc_port: u16,
    /// CometBFT P2P port.
    pub p2p_port: u16,
    /// ABCI port between CometBFT and abcid, used over TCP (`abci_tcp`, gRPC).
    pub abci_port: u16,
    /// Connect CometBFT and abcid over TCP (`abci_port`) rather than the
    /// unix socket `abcid/abci.sock` in the devnet's folder (mode 0600).
    #[serde(default)]
    pub abci_tcp: bool,
    /// abcid's web3 JSON-RPC port.
    pub web3_port: u16,
    /// abcid's profiler JSON-RPC port.
    #[serde(default = "default_profiler_port")]
    pub profiler_port: u16,
    /// abcid's Prometheus metrics port (`abcid --metrics`).
    #[serde(default = "default_metrics_port")]
    pub metrics_port: u16,
    /// CometBFT's Prometheus metrics port (`instrumentation.prometheus`).
    #[serde(default = "default_cometbft_metrics_port")]
    pub cometbft_metrics_port: u16,
    /// CometBFT's Go pprof port (`rpc.pprof_laddr`); 0 in a devnet made
    /// before CometBFT served it.
    #[serde(default)]
    pub cometbft_pprof_port: u16,
    /// CometBFT `consensus.timeout_commit`.
    pub timeout_commit: GoDuration,
    /// CometBFT `mempool.size` (transactions).
    pub mempool_size: u64,
    /// CometBFT `mempool.max_txs_bytes`.
    pub mempool_max_txs_bytes: u64,
    /// CometBFT `rpc.max_body_bytes`.
    pub rpc_max_body_bytes: u64,
    /// CometBFT `rpc.max_open_connections`.
    pub rpc_max_open_connections: u64,
    /// Any other `config.toml` setting, as KEY=VALUE.
    pub set: Vec<String>,
    /// Root account's genesis balance, in wei.
    pub root_balance: String,
    /// Log layout of both processes.
    pub log_format: LogFormat,
    /// Delete the folder first and start a new chain.
    pub fresh: bool,
    /// Seconds to wait for the first block and the web3 server.
    pub wait: u64,
    /// Run abcid without its block profiler (`abcid --no-profiler`).
    #[serde(default)]
    pub no_profiler: bool,
    /// abcid's tunings in force (`abcid --patches`).
    #[serde(default = "default_patches")]
    pub patches: String,
    /// Block gas limit of a new chain (genesis `app_state.block_gas_limit`
    /// and CometBFT's `block.max_gas`).
    #[serde(default = "default_block_gas_limit")]
    pub block_gas_limit: u64,
    /// An EIP-1559 base fee that rises with full blocks and falls with empty
    /// ones (genesis `app_state.fee_market`: target half the block gas
    /// limit, at most 1/8 per block, never below 1 gwei); off: constant.
    #[serde(default)]
    pub fee_market: bool,
    /// The abcid binary to run, when not the one found next to feth
    /// (another build, for `feth compare --build-a/--build-b`).
    #[serde(default)]
    pub abcid: Option<PathBuf>,
    /// Further abcid flags, passed as given after the devnet's own (e.g.
    /// `--rpc-max-log-blocks 100` for a test of the web3 limits).
    #[serde(default)]
    pub abcid_args: Vec<String>,
    /// Whether the build's `all` holds `app-mempool` (builds before its
    /// pools were forwarded between nodes, `--pool-peers`, did not).
    #[serde(default = "default_all_pools")]
    pub all_pools: bool,
}

fn default_all_pools() -> bool {
    true
}

fn default_block_gas_limit() -> u64 {
    DEFAULT_BLOCK_GAS_LIMIT
}

fn default_patches() -> String {
    DEFAULT_PATCHES.to_string()
}

fn default_profiler_port() -> u16 {
    Ports::DEFAULT.profiler
}

fn default_metrics_port() -> u16 {
    Ports::DEFAULT.metrics
}

fn default_cometbft_metrics_port() -> u16 {
    Ports::DEFAULT.cometbft_metrics
}

impl Default for DevnetOptions {
    fn default() -> Self {
        Self {
            dir: PathBuf::from(DEFAULT_DIR),
            chain_id: DEFAULT_CHAIN_ID,
            rpc_port: Ports::DEFAULT.rpc,
            p2p_port: Ports::DEFAULT.p2p,
            abci_port: Ports::DEFAULT.abci,
            abci_tcp: false,
            web3_port: Ports::DEFAULT.web3,
            profiler_port: Ports::DEFAULT.profiler,
            metrics_port: Ports::DEFAULT.metrics,
            cometbft_metrics_port: Ports::DEFAULT.cometbft_metrics,
            cometbft_pprof_port: Ports::DEFAULT.cometbft_pprof,
            timeout_commit: DEFAULT_TIMEOUT_COMMIT,
            mempool_size: DEFAULT_MEMPOOL_SIZE,
            mempool_max_txs_bytes: DEFAULT_MEMPOOL_MAX_TXS_BYTES,
            rpc_max_body_bytes: DEFAULT_RPC_MAX_BODY_BYTES,
            rpc_max_open_connections: DEFAULT_RPC_MAX_OPEN_CONNECTIONS,
            set: Vec::new(),
            root_balance: DEFAULT_ROOT_BALANCE.to_string(),
            log_format: LogFormat::Plain,
            fresh: false,
            wait: DEFAULT_WAIT_SECS,
            no_profiler: false,
            patches: default_patches(),
            block_gas_limit: DEFAULT_BLOCK_GAS_LIMIT,
            fee_market: false,
            abcid: None,
            abcid_args: Vec::new(),
            all_pools: true,
        }
    }
}

/// The longest path a unix socket address holds (`sun_path` less its NUL).
pub(crate) const MAX_SOCKET_PATH: usize = 107;

impl DevnetOptions {
    /// Where CometBFT reaches abcid (`proxy_app`, `abcid --abci`): the unix
    /// socket `DIR/abcid/abci.sock` (absolute), or `tcp://127.0.0.1:PORT`
    /// with `abci_tcp`, or `127.0.0.1:PORT` over gRPC (CometBFT hands
    /// `proxy_app` to gRPC's resolver, which takes no `tcp://`).
    pub fn abci_addr(&self) -> Result<String> {
        if self.abci_grpc() {
            return Ok(format!("127.0.0.1:{}", self.abci_port));
        }
        if self.abci_tcp {
            return Ok(format!("tcp://127.0.0.1:{}", self.abci_port));
        }
        let path = self.abci_socket()?;
        let len = path.as_os_str().len();
        if len > MAX_SOCKET_PATH {
            bail!(
                "the ABCI socket path {} is {len} bytes, longer than a unix socket takes ({MAX_SOCKET_PATH}): use a shorter --dir, or --abci-tcp",
                path.display()
            );
        }
        Ok(format!("unix://{}", path.display()))
    }

    /// Whether CometBFT talks to abcid over gRPC: `--set abci=grpc`, its
    /// `abci` setting (the last `--set abci=…` counts, as in the file).
    pub fn abci_grpc(&self) -> bool {
        self.set
            .iter()
            .rev()
            .filter_map(|text| config::parse_override(text).ok())
            .find(|(key, _)| key == "abci")
            .is_some_and(|(_, value)| value.as_str() == Some("grpc"))
    }

    /// abcid's patches as a set (feth-patches' parser), `all` being what the
    /// build's `all` holds ([`DevnetOptions::all_pools`]); refused, naming
    /// the problem, before anything starts.
    pub fn patch_set(&self) -> Result<Patches> {
        let all = if self.all_pools {
            Patches::ALL
        } else {
            Patches::ALL.without(Patch::AppMempool)
        };
        Patches::parse_in(&self.patches, all)
            .with_context(|| format!("the devnet's abcid patches `{}`", self.patches))
    }

    /// Whether abcid's patches hold `app-mempool` ([`DevnetOptions::patch_set`]).
    /// Its pool takes CometBFT's mempool bounds, and CometBFT's mempool is off
    /// (`mempool.type = "nop"`, unless `--set mempool.type=…` says otherwise).
    pub fn app_mempool(&self) -> bool {
        self.patch_set().is_ok_and(|set| set.has(Patch::AppMempool))
    }

    /// Whether CometBFT reaches abcid over TCP: asked for, or gRPC (whose
    /// client in CometBFT 0.38 dials TCP only).
    fn abci_over_tcp(&self) -> bool {
        self.abci_tcp || self.abci_grpc()
    }

    /// The unix socket between CometBFT and abcid (absolute).
    pub fn abci_socket(&self) -> Result<PathBuf> {
        let dir = std::path::absolute(&self.dir)
            .with_context(|| format!("cannot make {} absolute", self.dir.display()))?;
        Ok(dir.join("abcid").join("abci.sock"))
    }

    /// These options for `abcid`: TCP when the build cannot listen on a
    /// unix socket (an older one, run by `feth compare --build-a`), and
    /// what its `all` holds.
    pub(crate) fn for_abcid(mut self, abcid: &Path) -> Result<Self> {
        let help = tools::abcid_help(abcid);
        self.all_pools = help.split_whitespace().any(|word| word == "--pool-peers");
        if !self.abci_tcp && !tools::takes_unix_abci(&help) {
            tracing::warn!(
                "{} cannot listen on a unix socket: CometBFT connects over TCP",
                abcid.display()
            );
            self.abci_tcp = true;
        }
        self.patch_set()?;
        Ok(self)
    }

    /// A devnet of its own in `dir` (tests, benchmarks): the given ports
    /// (see [`Ports::free`]) and 300 ms blocks; defaults for the rest.
    pub fn private(dir: &Path, ports: Ports) -> Self {
        Self {
            dir: dir.to_path_buf(),
            timeout_commit: GoDuration::from_millis(300),
            ..Self::default()
        }
        .with_ports(ports)
    }

    /// The same options on other ports.
    pub fn with_ports(self, ports: Ports) -> Self {
        Self {
            rpc_port: ports.rpc,
            p2p_port: ports.p2p,
            abci_port: ports.abci,
            web3_port: ports.web3,
            profiler_port: ports.profiler,
            metrics_port: ports.metrics,
            cometbft_metrics_port: ports.cometbft_metrics,
            cometbft_pprof_port: ports.cometbft_pprof,
            ..self
        }
    }

    /// The ports these options listen on.
    pub fn ports(&self) -> Ports {
        Ports {
            rpc: self.rpc_port,
            p2p: self.p2p_port,
            abci: self.abci_port,
            web3: self.web3_port,
            profiler: self.profiler_port,
            metrics: self.metrics_port,
            cometbft_metrics: self.cometbft_metrics_port,
            cometbft_pprof: self.cometbft_pprof_port,
        }
    }
}

/// A temporary folder for devnets measured by a benchmark or a comparison:
/// on tmpfs (`/dev/shm`) when there is one, since CometBFT and abcid fsync
/// every block and a virtual disk's fsync latency varies more than most
/// changes measured. Returns the folder and whether it is on tmpfs.
pub fn scratch_dir() -> Result<(tempfile::TempDir, bool)> {
    let shm = Path::new("/dev/shm");
    let on_tmpfs = shm.is_dir();
    let dir = if on_tmpfs {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .context("cannot create a temporary devnet folder")?;
    Ok((dir, on_tmpfs))
}

/// Runs `start` on free loopback ports ([`Ports::free`]). A port is
/// free when chosen but another process may bind it first, and then the
/// processes `start` runs exit at start: such a start is tried again on new
/// ports, three times in all. `what` names it in the warnings.
pub async fn on_free_ports<T, Fut>(what: &str, mut start: impl FnMut(Ports) -> Fut) -> Result<T>
where
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut attempt = 1;
    loop {
        match start(Ports::free()?).await {
            Ok(started) => return Ok(started),
            Err(e) if attempt < 3 => {
                tracing::warn!("{what} start, attempt {attempt}: {e:#}; trying new ports");
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// What `devnet.json` records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DevnetState {
    /// The options it was started with.
    pub options: DevnetOptions,
    /// CometBFT binary.
    pub cometbft: PathBuf,
    /// abcid binary.
    pub abcid: PathBuf,
    /// CometBFT's PID, while running.
    pub cometbft_pid: Option<u32>,
    /// abcid's PID, while running.
    pub abcid_pid: Option<u32>,
    /// CometBFT's start time (`/proc/<pid>/stat` field 22) recorded at
    /// spawn: `down` signals its PID only while it is that process.
    #[serde(default)]
    pub cometbft_started: Option<u64>,
    /// abcid's start time recorded at spawn.
    #[serde(default)]
    pub abcid_started: Option<u64>,
    /// Whether abcid serves its metrics (an older build, run by `feth
    /// compare --build-a`, has no `--metrics`).
    #[serde(default)]
    pub abcid_metrics: bool,
}

impl DevnetState {
    /// The web3 JSON-RPC URL.
    pub fn web3_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.options.web3_port)
    }

    /// abcid's profiler RPC URL.
    pub fn profiler_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.options.profiler_port)
    }

    /// CometBFT's RPC URL.
    pub fn rpc_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.options.rpc_port)
    }

    /// abcid's Prometheus metrics URL, when it serves them.
    pub fn metrics_url(&self) -> Option<String> {
        self.abcid_metrics
            .then(|| format!("http://127.0.0.1:{}/metrics", self.options.metrics_port))
    }

    /// CometBFT's Prometheus metrics URL.
    pub fn cometbft_metrics_url(&self) -> String {
        format!(
            "http://127.0.0.1:{}/metrics",
            self.options.cometbft_metrics_port
        )
    }

    /// CometBFT's Go pprof URL (`/debug/pprof/…` under it), when it serves
    /// one.
    pub fn cometbft_pprof_url(&self) -> Option<String> {
        let port = self.options.cometbft_pprof_port;
        (port != 0).then(|| format!("http://127.0.0.1:{port}"))
    }

    /// The root key file.
    pub fn root_key(&self) -> PathBuf {
        self.options.dir.join("root.key")
    }

    /// CometBFT's home folder (`config/config.toml`, `data/`).
    pub fn cometbft_home(&self) -> PathBuf {
        self.options.dir.join("cometbft")
    }

    /// The values CometBFT's `config.toml` holds for `keys` (dotted, as
    /// `--set` takes them), as `KEY=VALUE`: what the node runs with.
    pub fn cometbft_settings(&self, keys: &[&str]) -> Result<Vec<String>> {
        config::read_settings(&self.cometbft_home(), keys)
    }

    /// CometBFT's log file.
    pub fn cometbft_log(&self) -> PathBuf {
        self.options.dir.join("logs").join("cometbft.log")
    }

    /// abcid's log file.
    pub fn abcid_log(&self) -> PathBuf {
        self.options.dir.join("logs").join("abcid.log")
    }

    fn save(&self) -> Result<()> {
        let path = self.options.dir.join(STATE_FILE);
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Reads `devnet.json` from `dir`.
    pub fn load(dir: &Path) -> Result<Self> {
        let path = dir.join(STATE_FILE);
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "no devnet in {} (missing devnet.json); start one with `feth devnet up`",
                dir.display()
            )
        })?;
        serde_json::from_str(&text).with_context(|| format!("cannot parse {}", path.display()))
    }

    /// Whether CometBFT and abcid are running.
    pub fn running(&self) -> (bool, bool) {
        let alive = |pid: Option<u32>, started: Option<u64>, bin: &Path| {
            pid.is_some_and(|p| process::is_ours(p, started, binary_name(bin)))
        };
        (
            alive(self.cometbft_pid, self.cometbft_started, &self.cometbft),
            alive(self.abcid_pid, self.abcid_started, &self.abcid),
        )
    }
}

/// Installs the pinned CometBFT if it is not there yet; returns its path.
pub fn install() -> Result<PathBuf> {
    tools::cometbft(true)
}

/// Initialises (first time) and starts a devnet; waits until it produces
/// blocks and its web3 server answers.
pub async fn up(opts: DevnetOptions) -> Result<DevnetState> {
    if opts.fresh && opts.dir.exists() {
        if let Ok(old) = DevnetState::load(&opts.dir) {
            if old.running() != (false, false) {
                bail!(
                    "the devnet in {} is running; `feth devnet down` before --fresh",
                    opts.dir.display()
                );
            }
        }
        std::fs::remove_dir_all(&opts.dir)
            .with_context(|| format!("cannot delete {}", opts.dir.display()))?;
    }
    if let Ok(old) = DevnetState::load(&opts.dir) {
        if old.running() != (false, false) {
            bail!(
                "a devnet is already running in {} (web3 {}); stop it with `feth devnet down --dir {}`",
                opts.dir.display(),
                old.web3_url(),
                opts.dir.display()
            );
        }
    }
    let cometbft = tools::cometbft(true)?;
    let abcid = match &opts.abcid {
        Some(path) => tools::build(path)?,
        None => tools::abcid()?,
    };
    std::fs::create_dir_all(opts.dir.join("logs"))
        .with_context(|| format!("cannot create {}", opts.dir.display()))?;
    let opts = opts.for_abcid(&abcid)?;
    let cmt_home = opts.dir.join("cometbft");
    if !cmt_home.join("config").join("genesis.json").is_file() {
        init(&cometbft, &cmt_home, &opts)?;
    }
    config::write_config(&cmt_home, &opts)?;

    let abcid_metrics = tools::abcid_has_flag(&abcid, "--metrics");
    if !abcid_metrics {
        tracing::warn!(
            "{} has no --metrics: abcid's metrics are off",
            abcid.display()
        );
    }
    let mut state = DevnetState {
        options: opts.clone(),
        cometbft,
        abcid,
        cometbft_pid: None,
        abcid_pid: None,
        cometbft_started: None,
        abcid_started: None,
        abcid_metrics,
    };
    start_abcid(&mut state)?;
    if let Err(e) = start_cometbft(&mut state) {
        stop_processes(&mut state, false);
        return Err(e);
    }
    state.save()?;
    if let Err(e) = wait_ready(&state).await {
        // Half a devnet is no use (CometBFT spins without its app): stop what
        // this call started; the logs stay for the error's pointers.
        stop_processes(&mut state, false);
        state.save()?;
        return Err(e);
    }
    Ok(state)
}

fn init(cometbft: &Path, home: &Path, opts: &DevnetOptions) -> Result<()> {
    init_cometbft(cometbft, home)?;
    let key = keys::random_key();
    keys::write_secret_file(&opts.dir.join("root.key"), keys::key_hex(&key).as_bytes())?;
    config::write_genesis(home, opts, keys::address_of(&key))
}

/// `cometbft init --home home`: a single validator's keys, genesis and
/// default `config.toml`.
pub fn init_cometbft(cometbft: &Path, home: &Path) -> Result<()> {
    let out = Command::new(cometbft)
        .args(["init", "--home"])
        .arg(home)
        .output()
        .with_context(|| format!("cannot run {}", cometbft.display()))?;
    if !out.status.success() {
        bail!(
            "`cometbft init` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Starts abcid and waits until its ABCI port accepts connections.
fn start_abcid(state: &mut DevnetState) -> Result<()> {
    let o = &state.options;
    let mut cmd = Command::new(&state.abcid);
    cmd.arg("--home")
        .arg(o.dir.join("abcid"))
        .arg("--abci")
        .arg(o.abci_addr()?)
        .arg("--web3")
        .arg(format!("127.0.0.1:{}", o.web3_port))
        .arg("--cometbft-rpc")
        .arg(state.rpc_url())
        .arg("--log-format")
        .arg(o.log_format.as_str())
        .arg("--patches")
        .arg(&o.patches);
    if o.abci_grpc() {
        cmd.args(["--abci-protocol", "grpc"]);
    }
    if state.abcid_metrics {
        cmd.arg("--metrics")
            .arg(format!("127.0.0.1:{}", o.metrics_port));
    }
    if o.no_profiler {
        cmd.arg("--no-profiler");
    } else {
        cmd.arg("--profiler-addr")
            .arg(format!("127.0.0.1:{}", o.profiler_port))
            .arg("--profiler-dir")
            .arg(o.dir.join("flamegraphs"))
            .arg("--chain-name")
            .arg(format!("feth-devnet-{}", o.chain_id));
    }
    if o.app_mempool() {
        cmd.arg("--app-mempool-size")
            .arg(o.mempool_size.to_string())
            .arg("--app-mempool-max-bytes")
            .arg(o.mempool_max_txs_bytes.to_string());
    }
    cmd.args(&o.abcid_args);
    let pid = process::spawn_logged(cmd, &state.abcid_log())?;
    state.abcid_pid = Some(pid);
    state.abcid_started = process::start_time(pid);
    let deadline = Instant::now() + Duration::from_secs(30);
    // By the binary's own name: a build kept as `abcid-before` is abcid too.
    let name = binary_name(&state.abcid).to_string();
    while !abci_listening(o)? {
        if !process::is_ours(pid, state.abcid_started, &name) || Instant::now() > deadline {
            process::stop_spawned(pid, state.abcid_started, &name, Duration::ZERO);
            state.abcid_pid = None;
            state.abcid_started = None;
            bail!(
                "abcid did not start (see {}):\n{}",
                state.abcid_log().display(),
                process::tail(&state.abcid_log(), 20)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Whether abcid listens for CometBFT. The unix socket is there once abcid
/// listens (it binds under another name and renames it into place), so it is
/// not connected to: a probe would take one of the four connections abcid
/// allows.
fn abci_listening(o: &DevnetOptions) -> Result<bool> {
    if o.abci_over_tcp() {
        return Ok(std::net::TcpStream::connect(("127.0.0.1", o.abci_port)).is_ok());
    }
    use std::os::unix::fs::FileTypeExt;
    let socket = o.abci_socket()?;
    Ok(std::fs::symlink_metadata(socket).is_ok_and(|m| m.file_type().is_socket()))
}

fn start_cometbft(state: &mut DevnetState) -> Result<()> {
    let mut cmd = Command::new(&state.cometbft);
    cmd.arg("start").arg("--home").arg(state.cometbft_home());
    let pid = process::spawn_logged(cmd, &state.cometbft_log())?;
    state.cometbft_pid = Some(pid);
    state.cometbft_started = process::start_time(pid);
    Ok(())
}

/// Waits until CometBFT's RPC answers and, after that, a new block is
/// committed and visible through web3. (A block replayed into abcid during
/// CometBFT's handshake shows up before the RPC listens: it does not count.)
async fn wait_ready(state: &DevnetState) -> Result<()> {
    let client = EthClient::new(&state.web3_url(), Duration::from_secs(2))?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()?;
    let health = format!("{}/health", state.rpc_url());
    let deadline = Instant::now() + Duration::from_secs(state.options.wait);
    let mut first: Option<u64> = None;
    loop {
        let (cmt, app) = state.running();
        if !cmt || !app {
            let (name, log) = if !cmt {
                ("CometBFT", state.cometbft_log())
            } else {
                ("abcid", state.abcid_log())
            };
            bail!(
                "{name} exited during start-up (see {}):\n{}",
                log.display(),
                process::tail(&log, 20)
            );
        }
        let rpc_up = match http.get(&health).send().await {
            Ok(r) => r.status().is_success(),
            Err(_) => false,
        };
        if rpc_up {
            if let Ok(height) = client.block_number().await {
                match first {
                    Some(h) if height > h => return Ok(()),
                    None => first = Some(height),
                    _ => {}
                }
            }
        }
        if Instant::now() > deadline {
            bail!(
                "the devnet produced no block within {} s; see {} and {}",
                state.options.wait,
                state.cometbft_log().display(),
                state.abcid_log().display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Stops the devnet in `dir` (CometBFT first, then abcid). Returns how many
/// processes were stopped.
pub fn down(dir: &Path) -> Result<usize> {
    let mut state = DevnetState::load(dir)?;
    let stopped = stop_processes(&mut state, true);
    state.save()?;
    Ok(stopped)
}

/// A binary's file name: the name `process::is_ours` matches its process by.
pub(crate) fn binary_name(bin: &Path) -> &str {
    bin.file_name().and_then(|n| n.to_str()).unwrap_or_default()
}

fn stop_processes(state: &mut DevnetState, graceful: bool) -> usize {
    let grace = if graceful {
        Duration::from_secs(10)
    } else {
        Duration::ZERO
    };
    // By the binaries' own names, as `running` checks them: an abcid build
    // kept as `baseline/build` is still the devnet's abcid.
    let cometbft = binary_name(&state.cometbft).to_string();
    let abcid = binary_name(&state.abcid).to_string();
    let mut stopped = 0;
    if let Some(pid) = state.cometbft_pid.take() {
        let started = state.cometbft_started.take();
        stopped += usize::from(process::stop_spawned(pid, started, &cometbft, grace));
    }
    if let Some(pid) = state.abcid_pid.take() {
        let started = state.abcid_started.take();
        stopped += usize::from(process::stop_spawned(pid, started, &abcid, grace));
    }
    stopped
}

/// A devnet's condition, for `feth devnet status`.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// Folder.
    pub dir: PathBuf,
    /// CometBFT running.
    pub cometbft_running: bool,
    /// abcid running.
    pub abcid_running: bool,
    /// Latest height through web3, if it answers.
    pub height: Option<u64>,
    /// web3 URL.
    pub web3: String,
    /// CometBFT RPC URL.
    pub rpc: String,
    /// Profiler RPC URL.
    pub profiler: String,
    /// abcid's Prometheus metrics URL (none from a build without them).
    pub metrics: Option<String>,
    /// CometBFT's Prometheus metrics URL.
    pub cometbft_metrics: String,
    /// CometBFT's Go pprof URL (none in a devnet made before it served one).
    pub cometbft_pprof: Option<String>,
    /// Root key file.
    pub root_key: PathBuf,
}

/// Reads a devnet's condition.
pub async fn status(dir: &Path) -> Result<Status> {
    let state = DevnetState::load(dir)?;
    let (cometbft_running, abcid_running) = state.running();
    let client = EthClient::new(&state.web3_url(), Duration::from_secs(2))?;
    let height = client.block_number().await.ok();
    Ok(Status {
        dir: dir.to_path_buf(),
        cometbft_running,
        abcid_running,
        height,
        web3: state.web3_url(),
        rpc: state.rpc_url(),
        profiler: state.profiler_url(),
        metrics: state.metrics_url(),
        cometbft_metrics: state.cometbft_metrics_url(),
        cometbft_pprof: state.cometbft_pprof_url(),
        root_key: state.root_key(),
    })
}

/// A devnet owned by the caller (tests, benchmarks): stopped on drop.
#[derive(Debug)]
pub struct Devnet {
    /// Its recorded state.
    pub state: DevnetState,
}

impl Devnet {
    /// Starts a devnet with `opts`.
    pub async fn start(opts: DevnetOptions) -> Result<Self> {
        Ok(Self {
            state: up(opts).await?,
        })
    }

    /// Starts a devnet of its own in `dir` on free loopback ports
    /// ([`DevnetOptions::private`], then `tweak`), tried again on new ports
    /// when CometBFT or abcid exits at start ([`on_free_ports`]).
    pub async fn start_private(dir: &Path, tweak: impl Fn(&mut DevnetOptions)) -> Result<Self> {
        on_free_ports("devnet", |ports| {
            let mut options = DevnetOptions::private(dir, ports);
            tweak(&mut options);
            Self::start(options)
        })
        .await
    }

    /// Stops whatever still runs and starts both again on the same chain.
    pub async fn restart(&mut self) -> Result<()> {
        stop_processes(&mut self.state, true);
        self.state.save()?;
        let mut opts = self.state.options.clone();
        opts.fresh = false;
        self.state = up(opts).await?;
        Ok(())
    }
}

impl Drop for Devnet {
    fn drop(&mut self) {
        stop_processes(&mut self.state, true);
        let _ = self.state.save();
    }
}
