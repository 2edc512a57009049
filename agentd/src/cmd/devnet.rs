//! `feth devnet up | down | status | install`, and for a devnet of several
//! nodes (`up --validators N --full-nodes M`): `kill | restart NODE` and
//! `net partition | heal | slow NODE…`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};

use crate::devnet::links::{self, LinkShape};
use crate::devnet::network::{self, NetworkOptions, NetworkState, NetworkStatus, PortPlan};
use crate::devnet::recipe::{
    Overrides, Recipe, RecipeDevnet, RecipeOptions, RecipeState, Redeploy, ABCI_TCP_ADDR,
};
use crate::devnet::{self, DevnetOptions, LogFormat};

/// `feth devnet …`
#[derive(Debug, Args)]
pub struct DevnetCommand {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Initialise (first time) and start the devnet; wait for blocks.
    Up {
        #[command(flatten)]
        options: Box<DevnetArgs>,
        #[command(flatten)]
        network: NetworkArgs,
        #[command(flatten)]
        chain: ChainArgs,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop the devnet's processes (by PID).
    Down {
        /// Devnet folder.
        #[arg(long, default_value = devnet::DEFAULT_DIR)]
        dir: PathBuf,
    },
    /// Show whether it runs and its height.
    Status {
        /// Devnet folder.
        #[arg(long, default_value = devnet::DEFAULT_DIR)]
        dir: PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Install the pinned CometBFT into the tools folder (needs Go).
    Install,
    /// SIGKILL a node's CometBFT and abcid (a devnet of several nodes).
    Kill {
        /// The node (`v0`, `f1`, …; see `feth devnet status`).
        node: String,
        /// Devnet folder.
        #[arg(long, default_value = devnet::DEFAULT_DIR)]
        dir: PathBuf,
    },
    /// SIGKILL a node if it runs, start it again and wait until it sees a
    /// new block (after block-syncing what it missed).
    Restart {
        /// The node (`v0`, `f1`, …).
        node: String,
        /// Devnet folder.
        #[arg(long, default_value = devnet::DEFAULT_DIR)]
        dir: PathBuf,
    },
    /// Faults of the links between nodes.
    Net {
        #[command(subcommand)]
        action: NetAction,
        /// Devnet folder.
        #[arg(long, global = true, default_value = devnet::DEFAULT_DIR)]
        dir: PathBuf,
    },
}

/// `feth devnet net …`
#[derive(Debug, Subcommand)]
enum NetAction {
    /// Cut each named node off from every other node.
    Partition {
        /// The nodes to cut off.
        #[arg(required = true)]
        nodes: Vec<String>,
    },
    /// Undo the partitions and slowdowns of the named nodes (all if none).
    Heal {
        /// The nodes to heal; all when none is named.
        nodes: Vec<String>,
    },
    /// Give every link of the named nodes (all if none) another shape.
    Slow {
        /// The nodes to slow; all when none is named.
        nodes: Vec<String>,
        #[command(flatten)]
        shape: ShapeArgs,
    },
}

/// A link's shape on the command line.
#[derive(Debug, Clone, Args)]
pub struct ShapeArgs {
    /// Delay of each direction of a link (`50ms`, `1s`).
    #[arg(long, value_parser = parse_millis, default_value = "0")]
    latency: u64,
    /// Random variation of that delay, ± (`10ms`).
    #[arg(long, value_parser = parse_millis, default_value = "0")]
    jitter: u64,
    /// Bandwidth cap of each direction (`10mbit`, `500kbit`); none by default.
    #[arg(long, value_parser = parse_kbit)]
    bandwidth: Option<u64>,
}

impl ShapeArgs {
    fn shape(&self) -> LinkShape {
        LinkShape {
            latency_ms: self.latency,
            jitter_ms: self.jitter,
            bandwidth_kbit: self.bandwidth,
        }
    }
}

fn parse_millis(text: &str) -> Result<u64, String> {
    links::parse_millis(text).map_err(|e| format!("{e:#}"))
}

fn parse_kbit(text: &str) -> Result<u64, String> {
    links::parse_kbit(text).map_err(|e| format!("{e:#}"))
}

/// `feth devnet up --chain`: a devnet of any chain from its recipe.
#[derive(Debug, Clone, Args)]
pub struct ChainArgs {
    /// A chain recipe: a built-in one's name (`abcid`, `kvstore`, `evmd`)
    /// or a recipe file (see docs/RECIPES.md). The devnet is a new chain
    /// made by the recipe; `--set` edits its `config.toml`.
    #[arg(long, value_name = "RECIPE", conflicts_with_all = ["validators", "full_nodes"])]
    chain: Option<String>,
    /// The chain's node binary (default: the recipe's).
    #[arg(
        long,
        value_name = "PATH",
        requires = "chain",
        conflicts_with = "abcid"
    )]
    binary: Option<PathBuf>,
    /// A recipe var, as NAME=VALUE (repeatable): `timeout_commit=500ms`.
    #[arg(long = "var", value_name = "NAME=VALUE", requires = "chain")]
    vars: Vec<String>,
    /// A key of the app's own config (`app.toml`), as KEY=VALUE (repeatable).
    #[arg(long = "app", value_name = "KEY=VALUE", requires = "chain")]
    app: Vec<String>,
    /// A genesis edit, as /POINTER=JSON (repeatable).
    #[arg(long = "genesis", value_name = "/POINTER=JSON", requires = "chain")]
    genesis: Vec<String>,
    /// One of the recipe's ports, as NAME=PORT (repeatable): `ws=8546`. The
    /// port flags above set the ports a recipe names `rpc`, `p2p`, `abci`,
    /// `web3`, `profiler`, `metrics`, `comet_metrics` and `pprof`; its
    /// others are free ports.
    #[arg(long = "port", value_name = "NAME=PORT", requires = "chain")]
    ports: Vec<String>,
}

impl ChainArgs {
    /// The recipe and its options, when `--chain` is given, with what the
    /// devnet's own flags in `args` mean for it ([`DevnetArgs::recipe_settings`]).
    fn recipe(self, args: &DevnetArgs) -> Result<Option<(Recipe, RecipeOptions)>> {
        let Some(chain) = &self.chain else {
            return Ok(None);
        };
        let mut recipe = Recipe::find(chain)?;
        if let Some(secs) = args.wait {
            recipe.spec.ready_secs = secs;
        }
        let mut fixed: BTreeMap<String, u16> = args
            .clone()
            .options()
            .ports()
            .named()
            .into_iter()
            .filter(|(name, _)| recipe.spec.ports.iter().any(|p| p == name))
            .map(|(name, port)| (name.to_string(), port))
            .collect();
        for item in &self.ports {
            let (name, port) = parse_port(item)?;
            fixed.insert(name, port);
        }
        let change = self.change(args, &recipe)?;
        let options = RecipeOptions {
            dir: args.dir.clone(),
            binary: change.binary,
            vars: change.vars,
            overrides: change.overrides,
            fresh: args.fresh,
            ports: fixed,
        };
        Ok(Some((recipe, options)))
    }

    /// What the flags set on `recipe`'s devnet beside its ports: the
    /// binary (`--binary`, `--abcid`), vars (abcid's devnet flags', then
    /// `--var`) and settings (theirs, then `--set`, `--app`, `--genesis`).
    fn change(&self, args: &DevnetArgs, recipe: &Recipe) -> Result<Redeploy> {
        let flags = args.recipe_settings(recipe)?;
        let mut overrides = Overrides {
            comet: flags.comet,
            ..Overrides::default()
        };
        let settings = args.set.iter().map(|s| format!("comet:{s}"));
        let app = self.app.iter().map(|s| format!("app:{s}"));
        let genesis = self.genesis.iter().map(|s| format!("genesis:{s}"));
        for setting in settings.chain(app).chain(genesis) {
            overrides.add(&setting)?;
        }
        let binary = match (&self.binary, &args.abcid) {
            (None, Some(build)) => Some(abcid_build(recipe, build)?),
            (binary, _) => binary.clone(),
        };
        Ok(Redeploy {
            binary,
            vars: flags.vars.into_iter().chain(self.vars.clone()).collect(),
            overrides,
        })
    }
}

/// `--abcid BUILD` beside `--chain`: the binary of a recipe whose node
/// binary is abcid (its default is `${abcid}`), refused for any other.
fn abcid_build(recipe: &Recipe, build: &std::path::Path) -> Result<PathBuf> {
    if recipe.spec.binary.default.as_deref() != Some("${abcid}") {
        bail!(
            "--abcid gives an abcid build, and recipe `{}` does not run abcid: give its \
             node's binary with --binary",
            recipe.spec.name
        );
    }
    devnet::tools::build(build)
}

/// `--port NAME=PORT`.
fn parse_port(item: &str) -> Result<(String, u16)> {
    let (name, port) = item
        .split_once('=')
        .with_context(|| format!("--port {item}: expected NAME=PORT (`ws=8546`)"))?;
    let port = port
        .parse()
        .with_context(|| format!("--port {item}: `{port}` is not a port number (1 to 65535)"))?;
    Ok((name.to_string(), port))
}

/// `feth devnet up`'s settings of a devnet of several nodes.
#[derive(Debug, Clone, Args)]
pub struct NetworkArgs {
    /// CometBFT validators, each with its own abcid (more than 1: a network
    /// whose links go through toxiproxy).
    #[arg(long, default_value_t = 1)]
    validators: usize,
    /// Non-validating full nodes, each with its own abcid.
    #[arg(long, default_value_t = 0)]
    full_nodes: usize,
    /// Node k's ports are the given ports plus k × this.
    #[arg(long, default_value_t = network::DEFAULT_PORT_STRIDE)]
    port_stride: u16,
    #[command(flatten)]
    shape: ShapeArgs,
}

impl NetworkArgs {
    /// The network these arguments ask for, or `None` for one node.
    fn options(&self, node: DevnetOptions) -> anyhow::Result<Option<NetworkOptions>> {
        let shape = self.shape.shape();
        if self.validators == 1 && self.full_nodes == 0 {
            if !shape.is_clear() {
                anyhow::bail!("--latency, --jitter and --bandwidth shape links between nodes: add --validators N (N > 1) or --full-nodes M");
            }
            return Ok(None);
        }
        Ok(Some(NetworkOptions {
            node,
            validators: self.validators,
            full_nodes: self.full_nodes,
            links: shape,
            ports: PortPlan::Stride(self.port_stride),
        }))
    }
}

/// `feth devnet up`'s settings; [`DevnetArgs::options`] makes them plain
/// [`DevnetOptions`].
#[derive(Debug, Clone, Args)]
pub struct DevnetArgs {
    /// Folder holding the devnet's homes, logs and key.
    #[arg(long, default_value = devnet::DEFAULT_DIR)]
    dir: PathBuf,
    /// EIP-155 chain id [default: 9000]. With --chain: the recipe's var
    /// `evm_chain_id`.
    #[arg(long)]
    chain_id: Option<u64>,
    /// CometBFT RPC port.
    #[arg(long, default_value_t = devnet::Ports::DEFAULT.rpc)]
    rpc_port: u16,
    /// CometBFT P2P port.
    #[arg(long, default_value_t = devnet::Ports::DEFAULT.p2p)]
    p2p_port: u16,
    /// ABCI port between CometBFT and abcid (with --abci-tcp).
    #[arg(long, default_value_t = devnet::Ports::DEFAULT.abci)]
    abci_port: u16,
    /// Connect CometBFT and abcid over TCP on --abci-port instead of the
    /// unix socket `DIR/abcid/abci.sock` (mode 0600). With --chain: the
    /// recipe's var `abci_addr`, as `127.0.0.1:${abci_port}`.
    #[arg(long)]
    abci_tcp: bool,
    /// abcid's web3 JSON-RPC port.
    #[arg(long, default_value_t = devnet::Ports::DEFAULT.web3)]
    web3_port: u16,
    /// abcid's profiler JSON-RPC port.
    #[arg(long, default_value_t = devnet::Ports::DEFAULT.profiler)]
    profiler_port: u16,
    /// abcid's Prometheus metrics port (`abcid --metrics`).
    #[arg(long, default_value_t = devnet::Ports::DEFAULT.metrics)]
    metrics_port: u16,
    /// CometBFT's Prometheus metrics port (`instrumentation.prometheus_listen_addr`).
    #[arg(long, default_value_t = devnet::Ports::DEFAULT.cometbft_metrics)]
    cometbft_metrics_port: u16,
    /// CometBFT's Go pprof port (`rpc.pprof_laddr`), read by `feth profiler
    /// cometbft`.
    #[arg(long, default_value_t = devnet::Ports::DEFAULT.cometbft_pprof)]
    cometbft_pprof_port: u16,
    /// CometBFT `consensus.timeout_commit` [default: 500ms, the abcid
    /// recipe's; several nodes: 1s; with --chain, the recipe's].
    #[arg(long, value_name = "DURATION")]
    timeout_commit: Option<devnet::GoDuration>,
    /// CometBFT `mempool.size`, in transactions [default: 10000; with
    /// --chain, the recipe's].
    #[arg(long, value_name = "TXS")]
    mempool_size: Option<u64>,
    /// CometBFT `mempool.max_txs_bytes` [default: 1073741824; with --chain,
    /// the recipe's].
    #[arg(long, value_name = "BYTES")]
    mempool_max_txs_bytes: Option<u64>,
    /// CometBFT `rpc.max_body_bytes` [default: 10000000; with --chain, the
    /// recipe's].
    #[arg(long, value_name = "BYTES")]
    rpc_max_body_bytes: Option<u64>,
    /// CometBFT `rpc.max_open_connections` [default: 2000; with --chain, the
    /// recipe's].
    #[arg(long, value_name = "N")]
    rpc_max_open_connections: Option<u64>,
    /// Any other `config.toml` setting, as KEY=VALUE (repeatable); the key
    /// must be one `cometbft init` wrote.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Root account's genesis balance, in wei [default:
    /// 1000000000000000000000000000]. With --chain: the recipe's var
    /// `root_balance`.
    #[arg(long, value_name = "WEI")]
    root_balance: Option<String>,
    /// Log layout of both processes [default: plain]. With --chain: the
    /// recipe's var `log_format`.
    #[arg(long, value_enum)]
    log_format: Option<LogFormatArg>,
    /// Delete the folder first and start a new chain.
    #[arg(long)]
    fresh: bool,
    /// Seconds to wait for the first block and the web3 server [default:
    /// 60; with --chain, the recipe's `ready_secs`].
    #[arg(long, value_name = "SECS")]
    wait: Option<u64>,
    /// Run abcid without its block profiler (`abcid --no-profiler`). With
    /// --chain: the recipe's var `profiler`, as `false`.
    #[arg(long)]
    no_profiler: bool,
    /// abcid's tunings in force (`abcid --patches`): `all`, `none`, names
    /// separated by commas, or `all,-NAME` [default: all]. With --chain:
    /// the recipe's var `patches`.
    #[arg(long, value_name = "PATCHES")]
    patches: Option<String>,
    /// Block gas limit of a new chain (genesis and CometBFT's
    /// `block.max_gas`) [default: 150000000, a fast EVM chain's]. With
    /// --chain: the recipe's var `block_gas`.
    #[arg(long, value_name = "GAS")]
    block_gas_limit: Option<u64>,
    /// Give a new chain an EIP-1559 base fee that follows the gas used
    /// (target: half the block gas limit; at most 1/8 per block; never below
    /// the 1 gwei it starts at). Off: the base fee is 1 gwei, constant.
    /// With --chain: the recipe's var `fee_market`, as that JSON object.
    #[arg(long)]
    fee_market: bool,
    /// Run this abcid build: the binary, or a folder holding it (a checkout
    /// with `target/release/abcid` will do); default: the one next to feth.
    /// With --chain: the binary of a recipe that runs abcid.
    #[arg(long, value_name = "BINARY_OR_DIR")]
    abcid: Option<PathBuf>,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormatArg {
    /// CometBFT's plain and abcid's text lines.
    Plain,
    /// One JSON object per line.
    Json,
}

impl From<LogFormatArg> for LogFormat {
    fn from(f: LogFormatArg) -> Self {
        match f {
            LogFormatArg::Plain => LogFormat::Plain,
            LogFormatArg::Json => LogFormat::Json,
        }
    }
}

/// abcid's EIP-1559 base fee of `--fee-market`, as its genesis
/// `app_state.fee_market` (the recipe's var `fee_market`).
const FEE_MARKET_JSON: &str = r#"{"elasticity": 2, "max_change_denominator": 8}"#;

/// What `up`'s flags of abcid's own devnet set on a recipe devnet.
#[derive(Debug, Default, PartialEq)]
struct RecipeSettings {
    /// `config.toml` settings: CometBFT's own keys.
    comet: Vec<(String, toml::Value)>,
    /// The recipe's vars, as NAME=VALUE.
    vars: Vec<String>,
}

impl DevnetArgs {
    /// What the flags given mean for `recipe`'s devnet: CometBFT's settings
    /// as its `config.toml` keys (every recipe has them), the EVM chain's
    /// as the recipe's var of that meaning, refused (naming the flag and
    /// what to give instead) when the recipe has none. `--var` and `--set`
    /// come after these, so they win.
    fn recipe_settings(&self, recipe: &Recipe) -> Result<RecipeSettings> {
        let mut out = RecipeSettings::default();
        if let Some(d) = self.timeout_commit {
            let value = toml::Value::String(d.to_string());
            out.comet.push(("consensus.timeout_commit".into(), value));
        }
        let counts = [
            ("--mempool-size", "mempool.size", self.mempool_size),
            (
                "--mempool-max-txs-bytes",
                "mempool.max_txs_bytes",
                self.mempool_max_txs_bytes,
            ),
            (
                "--rpc-max-body-bytes",
                "rpc.max_body_bytes",
                self.rpc_max_body_bytes,
            ),
            (
                "--rpc-max-open-connections",
                "rpc.max_open_connections",
                self.rpc_max_open_connections,
            ),
        ];
        let cache = self.mempool_size.map(devnet::config::mempool_cache_size);
        let counts = counts
            .into_iter()
            .chain([("--mempool-size", "mempool.cache_size", cache)]);
        for (flag, key, value) in counts {
            let Some(n) = value else { continue };
            out.comet
                .push((key.into(), devnet::config::toml_integer(flag, n)?));
        }
        let vars = [
            (
                "--chain-id",
                "evm_chain_id",
                self.chain_id.map(|n| n.to_string()),
            ),
            (
                "--block-gas-limit",
                "block_gas",
                self.block_gas_limit.map(|n| n.to_string()),
            ),
            ("--patches", "patches", self.patches.clone()),
            ("--root-balance", "root_balance", self.root_balance_wei()?),
            (
                "--log-format",
                "log_format",
                self.log_format
                    .map(|f| LogFormat::from(f).as_str().to_string()),
            ),
            (
                "--fee-market",
                "fee_market",
                self.fee_market.then(|| FEE_MARKET_JSON.to_string()),
            ),
            (
                "--abci-tcp",
                "abci_addr",
                self.abci_tcp.then(|| ABCI_TCP_ADDR.to_string()),
            ),
            (
                "--no-profiler",
                "profiler",
                self.no_profiler.then(|| "false".to_string()),
            ),
        ];
        for (flag, var, value) in vars {
            let Some(value) = value else { continue };
            if !recipe.spec.vars.contains_key(var) {
                bail!(
                    "{flag} sets a recipe's var `{var}`, and recipe `{}` has none: set what \
                     it means for this chain with --var, --genesis, --app or --set",
                    recipe.spec.name
                );
            }
            out.vars.push(format!("{var}={value}"));
        }
        out.vars.extend(self.app_pool_bounds(recipe));
        Ok(out)
    }

    /// `--mempool-size` and `--mempool-max-txs-bytes` bound abcid's own pool
    /// too (the app-mempool patch's), as on abcid's devnet, in a recipe with
    /// the vars for it (`app_mempool_bounds` switches them on).
    fn app_pool_bounds(&self, recipe: &Recipe) -> Vec<String> {
        let vars = &recipe.spec.vars;
        let given = [
            ("app_mempool_size", self.mempool_size),
            ("app_mempool_max_bytes", self.mempool_max_txs_bytes),
        ];
        let mut out: Vec<String> = given
            .into_iter()
            .filter(|(var, _)| vars.contains_key(*var))
            .filter_map(|(var, n)| Some(format!("{var}={}", n?)))
            .collect();
        if !out.is_empty() && vars.contains_key("app_mempool_bounds") {
            out.insert(0, "app_mempool_bounds=true".into());
        }
        out
    }

    /// `--root-balance` checked to be a number of wei (decimal or `0x`
    /// hex), as given.
    fn root_balance_wei(&self) -> Result<Option<String>> {
        let Some(given) = &self.root_balance else {
            return Ok(None);
        };
        given.parse::<alloy_primitives::U256>().with_context(|| {
            format!("--root-balance {given}: not a number of wei (decimal, or hex with 0x)")
        })?;
        Ok(Some(given.clone()))
    }

    /// The plain options these arguments ask for.
    pub fn options(self) -> DevnetOptions {
        DevnetOptions {
            dir: self.dir,
            chain_id: self.chain_id.unwrap_or(devnet::DEFAULT_CHAIN_ID),
            rpc_port: self.rpc_port,
            p2p_port: self.p2p_port,
            abci_port: self.abci_port,
            abci_tcp: self.abci_tcp,
            web3_port: self.web3_port,
            profiler_port: self.profiler_port,
            metrics_port: self.metrics_port,
            cometbft_metrics_port: self.cometbft_metrics_port,
            cometbft_pprof_port: self.cometbft_pprof_port,
            timeout_commit: self
                .timeout_commit
                .unwrap_or(devnet::DEFAULT_TIMEOUT_COMMIT),
            mempool_size: self.mempool_size.unwrap_or(devnet::DEFAULT_MEMPOOL_SIZE),
            mempool_max_txs_bytes: self
                .mempool_max_txs_bytes
                .unwrap_or(devnet::DEFAULT_MEMPOOL_MAX_TXS_BYTES),
            rpc_max_body_bytes: self
                .rpc_max_body_bytes
                .unwrap_or(devnet::DEFAULT_RPC_MAX_BODY_BYTES),
            rpc_max_open_connections: self
                .rpc_max_open_connections
                .unwrap_or(devnet::DEFAULT_RPC_MAX_OPEN_CONNECTIONS),
            set: self.set,
            root_balance: self
                .root_balance
                .unwrap_or_else(|| devnet::DEFAULT_ROOT_BALANCE.to_string()),
            log_format: self.log_format.map_or(LogFormat::Plain, LogFormat::from),
            fresh: self.fresh,
            wait: self.wait.unwrap_or(devnet::DEFAULT_WAIT_SECS),
            no_profiler: self.no_profiler,
            patches: self
                .patches
                .unwrap_or_else(|| devnet::DEFAULT_PATCHES.to_string()),
            block_gas_limit: self
                .block_gas_limit
                .unwrap_or(devnet::DEFAULT_BLOCK_GAS_LIMIT),
            fee_market: self.fee_market,
            abcid: self.abcid,
            abcid_args: Vec::new(),
            // Read from the build when the devnet starts.
            all_pools: true,
        }
    }
}

/// `feth devnet up` of a recipe devnet: a new one (`--chain`), or the
/// stopped one in `--dir` started again on its chain, as it was made or
/// with the build and settings given ([`RecipeDevnet::redeploy`]); `None` when the
/// folder holds none and no `--chain` is given. Left running: `feth devnet
/// down` stops it by PID.
async fn up_recipe(
    options: &DevnetArgs,
    chain: ChainArgs,
    several: bool,
) -> Result<Option<RecipeState>> {
    let dir = &options.dir;
    let saved = dir.join(devnet::recipe::STATE_FILE);
    if options.fresh || !saved.is_file() {
        let Some((recipe, opts)) = chain.recipe(options)? else {
            return Ok(None);
        };
        return Ok(Some(RecipeDevnet::up(&recipe, &opts).await?.detach()));
    }
    let old = RecipeState::load(dir)?.recipe.name;
    if let Some(name) = &chain.chain {
        let given = Recipe::find(name)?.spec.name;
        if given != old {
            bail!(
                "{} holds a devnet of `{old}`, not `{given}`: --fresh replaces it with a new chain",
                dir.display()
            );
        }
    }
    if several {
        bail!(
            "{} holds a devnet of one node of `{old}`: --fresh makes a new chain",
            dir.display()
        );
    }
    let state = RecipeState::load(dir)?;
    refuse_other_ports(options, &chain, &state)?;
    let recipe = Recipe {
        spec: state.recipe,
        source: state.source,
    };
    let change = chain.change(options, &recipe)?;
    let net = RecipeDevnet::redeploy(dir, &change)
        .await
        .with_context(|| format!("cannot start the devnet in {} again", dir.display()))?;
    Ok(Some(net.detach()))
}

/// A port given (other than its flag's default) that is not the one the
/// devnet in `state` was made with: its ports are kept as made.
fn refuse_other_ports(options: &DevnetArgs, chain: &ChainArgs, state: &RecipeState) -> Result<()> {
    let defaults = devnet::Ports::DEFAULT.named();
    let flags = options.clone().options().ports().named();
    let given = flags.into_iter().filter(|named| !defaults.contains(named));
    let mut given: Vec<(String, u16)> = given.map(|(n, p)| (n.to_string(), p)).collect();
    for item in &chain.ports {
        given.push(parse_port(item)?);
    }
    for (name, port) in given {
        match state.ports.get(&name) {
            Some(&made) if made == port => {}
            Some(&made) => bail!(
                "{} holds a devnet whose `{name}` port is {made}, not {port}: its ports stay \
                 as it was made (--fresh makes a new chain on the ports given)",
                state.dir.display()
            ),
            None if state.recipe.ports.contains(&name) => bail!(
                "{} holds a devnet made by a feth that recorded no ports: --fresh makes a \
                 new chain on the ports given",
                state.dir.display()
            ),
            None => {}
        }
    }
    Ok(())
}

/// Whether `feth devnet up` of one node without `--chain` makes the abcid
/// recipe's devnet: yes, unless the folder holds a devnet of abcid's own
/// devnet code (that code starts it again, or with `--fresh` replaces it)
/// or the abcid build predates the recipe (no `--abci-protocol`, before
/// 2bf6a78: that code runs it, as said on stderr). A recipe devnet in the
/// folder is started again by its recipe.
fn runs_the_abcid_recipe(options: &DevnetArgs) -> Result<bool> {
    let dir = &options.dir;
    if dir.join(devnet::recipe::STATE_FILE).is_file() && !options.fresh {
        return Ok(false);
    }
    if dir.join(devnet::STATE_FILE).is_file() || network::is_network(dir) {
        return Ok(false);
    }
    let build = match &options.abcid {
        Some(given) => devnet::tools::build(given)?,
        None => devnet::tools::abcid()?,
    };
    if !devnet::tools::abcid_has_flag(&build, "--abci-protocol") {
        eprintln!(
            "{}: an abcid build from before 2bf6a78 (no --abci-protocol), which the abcid \
             recipe cannot start: abcid's own devnet runs it",
            build.display()
        );
        return Ok(false);
    }
    Ok(true)
}

/// abcid's metrics URL, or why there is none.
fn metrics_line(url: Option<&str>) -> &str {
    url.unwrap_or("off (this abcid build has no --metrics)")
}

/// Runs a devnet command.
pub async fn run(command: DevnetCommand) -> Result<()> {
    match command.action {
        Action::Up {
            options,
            network,
            mut chain,
            json,
        } => {
            let several = network.validators != 1 || network.full_nodes != 0;
            if chain.chain.is_none() && !several && runs_the_abcid_recipe(&options)? {
                chain.chain = Some("abcid".into());
            }
            if let Some(state) = up_recipe(&options, chain, several).await? {
                return print_recipe(&state, json);
            }
            if let Some(opts) = network.options(options.clone().options())? {
                let state = network::up(opts).await?;
                let status = network::status(&state.options.node.dir).await?;
                return print_network(&status, json);
            }
            let state = devnet::up((*options).options()).await?;
            let status = devnet::status(&state.options.dir).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                println!("devnet up in {}", status.dir.display());
                println!("  web3 JSON-RPC  {}", status.web3);
                println!("  CometBFT RPC   {}", status.rpc);
                println!("  profiler RPC   {}", status.profiler);
                println!(
                    "  abcid metrics  {}",
                    metrics_line(status.metrics.as_deref())
                );
                println!("  CometBFT metr. {}", status.cometbft_metrics);
                println!("  height         {}", status.height.unwrap_or_default());
                println!("  root key       {} (mode 0600)", status.root_key.display());
                println!(
                    "  logs           {}",
                    state.options.dir.join("logs").display()
                );
            }
        }
        Action::Down { dir } if dir.join(devnet::recipe::STATE_FILE).is_file() => {
            let stopped = RecipeState::load(&dir)?.down()?;
            println!("devnet in {}: stopped {stopped} process(es)", dir.display());
        }
        Action::Down { dir } if network::is_network(&dir) => {
            let stopped = network::down(&dir)?;
            println!(
                "network in {}: stopped {stopped} process(es)",
                dir.display()
            );
        }
        Action::Down { dir } => {
            let stopped = devnet::down(&dir)?;
            println!("devnet in {}: stopped {stopped} process(es)", dir.display());
        }
        Action::Status { dir, json } if dir.join(devnet::recipe::STATE_FILE).is_file() => {
            let state = RecipeState::load(&dir)?;
            let height = state.height().await;
            print_status(RecipeStatus { state, height }, json)?;
        }
        Action::Status { dir, json } if network::is_network(&dir) => {
            print_network(&network::status(&dir).await?, json)?;
        }
        Action::Status { dir, json } => {
            let s = devnet::status(&dir).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                let word = |b: bool| if b { "running" } else { "stopped" };
                println!("devnet in {}", s.dir.display());
                println!("  cometbft  {}", word(s.cometbft_running));
                println!("  abcid     {}", word(s.abcid_running));
                match s.height {
                    Some(h) => println!("  height    {h} (web3 {})", s.web3),
                    None => println!("  height    unknown (web3 {} not answering)", s.web3),
                }
                println!("  metrics   abcid {}", metrics_line(s.metrics.as_deref()));
                println!("            CometBFT {}", s.cometbft_metrics);
            }
        }
        Action::Install => {
            let path = devnet::install()?;
            println!(
                "CometBFT {} at {}",
                devnet::tools::cometbft_version(),
                path.display()
            );
        }
        Action::Kill { node, dir } => {
            let killed = NetworkState::load(&dir)?.kill(&node)?;
            println!("{node}: killed {killed} process(es) (SIGKILL)");
        }
        Action::Restart { node, dir } => {
            NetworkState::load(&dir)?.restart(&node).await?;
            println!("{node}: restarted; it sees new blocks");
        }
        Action::Net { action, dir } => {
            let mut state = NetworkState::load(&dir)?;
            match action {
                NetAction::Partition { nodes } => state.partition(&nodes).await?,
                NetAction::Heal { nodes } => state.heal(&nodes).await?,
                NetAction::Slow { nodes, shape } => state.slow(&nodes, shape.shape()).await?,
            }
            let cut = if state.partitioned.is_empty() {
                "none".to_string()
            } else {
                state.partitioned.join(", ")
            };
            println!("partitioned: {cut}");
            for (node, shape) in &state.slowed {
                println!("{node}'s links: {shape}");
            }
        }
    }
    Ok(())
}

/// A recipe devnet's state and its chain's height, as `status` prints it.
#[derive(serde::Serialize)]
struct RecipeStatus {
    #[serde(flatten)]
    state: RecipeState,
    /// CometBFT's latest height; `None` when its RPC does not answer.
    height: Option<u64>,
}

/// Prints `feth devnet status` of a recipe devnet.
fn print_status(s: RecipeStatus, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(());
    }
    print_recipe(&s.state, false)?;
    match s.height {
        Some(h) => println!("  height         {h}"),
        None if s.state.pids().is_empty() => println!(
            "  stopped        `feth devnet up --dir {}` starts it again",
            s.state.dir.display()
        ),
        None => println!("  height         unknown (CometBFT RPC not answering)"),
    }
    Ok(())
}

/// Prints a recipe devnet: its processes, where it answers, its key.
fn print_recipe(s: &RecipeState, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(s)?);
        return Ok(());
    }
    let version = s.binary_version.as_deref().unwrap_or("no version printed");
    println!(
        "devnet of `{}` ({}) in {}",
        s.recipe.name,
        s.source,
        s.dir.display()
    );
    println!("  binary         {} ({version})", s.binary.display());
    for p in &s.processes {
        let word = if p.running() { "running" } else { "stopped" };
        println!(
            "  process {:<6} PID {} {word}, log {}",
            p.name,
            p.pid,
            p.log.display()
        );
    }
    println!("  CometBFT RPC   {}", s.urls.comet_rpc);
    let urls = [
        ("web3", &s.urls.web3),
        ("Go pprof", &s.urls.pprof),
        ("profiler", &s.urls.profiler),
        ("metrics", &s.urls.metrics),
        ("CometBFT metr.", &s.urls.comet_metrics),
    ];
    for (name, url) in urls {
        if let Some(url) = url {
            println!("  {name:<14} {url}");
        }
    }
    if let Some(key) = &s.root_key {
        println!("  root key       {} (mode 0600)", key.display());
    }
    if !s.settings.is_empty() {
        println!("  settings       {}", s.settings.join(" "));
    }
    Ok(())
}

/// Prints a network's condition: every node's endpoints, the root key, the
/// links.
fn print_network(s: &NetworkStatus, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(s)?);
        return Ok(());
    }
    println!(
        "network in {} (root key {}, mode 0600)",
        s.dir.display(),
        s.root_key.display()
    );
    println!("  links  {} (toxiproxy {})", s.links, s.toxiproxy);
    for (node, shape) in &s.slowed {
        println!("  {node}'s links  {shape}");
    }
    for n in &s.nodes {
        let word = |b: bool| if b { "up" } else { "down" };
        let height = n.status.height.map_or("?".to_string(), |h| h.to_string());
        let cut = if n.partitioned { "  PARTITIONED" } else { "" };
        println!(
            "  {:<4} {:<9} cometbft {:<4} abcid {:<4} height {:<7} web3 {}  rpc {}  profiler {}{cut}",
            n.name,
            format!("{:?}", n.role).to_lowercase(),
            word(n.status.cometbft_running),
            word(n.status.abcid_running),
            height,
            n.status.web3,
            n.status.rpc,
            n.status.profiler,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Up {
        #[command(flatten)]
        args: DevnetArgs,
    }

    #[derive(Parser)]
    struct UpChain {
        #[command(flatten)]
        args: DevnetArgs,
        /// Parsed for the flags `--chain` conflicts with.
        #[command(flatten)]
        _network: NetworkArgs,
        #[command(flatten)]
        chain: ChainArgs,
    }

    #[derive(Parser)]
    struct UpNet {
        #[command(flatten)]
        args: DevnetArgs,
        #[command(flatten)]
        network: NetworkArgs,
    }

    #[test]
    fn timeout_commit_is_typed_and_a_bad_one_is_refused_when_parsed() {
        let up = Up::try_parse_from(["up"]).expect("parses");
        assert_eq!(
            up.args.options().timeout_commit,
            devnet::DEFAULT_TIMEOUT_COMMIT
        );
        let up = Up::try_parse_from(["up", "--timeout-commit", "1.5s"]).expect("parses");
        assert_eq!(up.args.options().timeout_commit.to_string(), "1500ms");
        for bad in ["500", "1sec", "-1s"] {
            let flag = format!("--timeout-commit={bad}");
            let err = Up::try_parse_from(["up", flag.as_str()])
                .err()
                .expect("refused")
                .to_string();
            assert!(err.contains("e.g. 500ms, 1s or 1m30s"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_port_other_than_the_one_a_devnet_was_made_with_is_refused_when_started_again() {
        let spec = Recipe::find("kvstore").unwrap().spec;
        let state: RecipeState = serde_json::from_value(serde_json::json!({
            "recipe": spec, "source": "builtin:kvstore", "dir": "/tmp/net",
            "binary": "/bin/true", "binary_version": null,
            "urls": {"comet_rpc": "http://x", "web3": null, "pprof": null, "profiler": null},
            "processes": [], "root_key": null, "settings": [],
            "ports": {"rpc": 26700, "p2p": 26656}
        }))
        .unwrap();
        let refused = |args: &[&str]| {
            let up = UpChain::try_parse_from([&["up"][..], args].concat()).expect("parses");
            refuse_other_ports(&up.args, &up.chain, &state)
                .err()
                .map(|e| e.to_string())
        };
        assert_eq!(refused(&[]), None, "a default is not given");
        assert_eq!(refused(&["--rpc-port", "26700"]), None, "as made");
        let err = refused(&["--rpc-port", "26701"]).unwrap();
        assert!(
            err.contains("whose `rpc` port is 26700, not 26701"),
            "{err}"
        );
        let err = refused(&["--chain", "kvstore", "--port", "p2p=1"]).unwrap();
        assert!(err.contains("whose `p2p` port is 26656, not 1"), "{err}");
        assert_eq!(refused(&["--web3-port", "1"]), None, "kvstore has none");
    }

    #[test]
    fn abcid_devnet_flags_set_a_recipes_comet_keys_and_vars_and_only_when_given() {
        let parse = |args: &[&str]| {
            let up = Up::try_parse_from([&["up"][..], args].concat()).expect("parses");
            up.args
        };
        let kvstore = Recipe::find("kvstore").unwrap();
        let none = parse(&[]).recipe_settings(&kvstore).unwrap();
        assert_eq!(
            none,
            RecipeSettings::default(),
            "abcid's defaults are not given"
        );
        let flags = [
            "--timeout-commit",
            "1s",
            "--mempool-size",
            "300",
            "--wait",
            "9",
        ];
        let given = parse(&[&flags[..], &["--block-gas-limit", "30000000"]].concat());
        let settings = given.recipe_settings(&kvstore).unwrap();
        let comet = [
            (
                "consensus.timeout_commit".into(),
                toml::Value::String("1s".into()),
            ),
            ("mempool.size".into(), toml::Value::Integer(300)),
            ("mempool.cache_size".into(), toml::Value::Integer(20_000)),
        ];
        assert_eq!(settings.comet, comet);
        let huge = parse(&["--mempool-size", &u64::MAX.to_string()]).recipe_settings(&kvstore);
        let err = huge.unwrap_err().to_string();
        assert!(
            err.contains("--mempool-size 18446744073709551615: TOML holds"),
            "{err}"
        );
        assert_eq!(settings.vars, ["block_gas=30000000"]);
        let err = parse(&["--patches", "none"]).recipe_settings(&kvstore);
        let err = err.unwrap_err().to_string();
        assert!(
            err.contains("`patches`, and recipe `kvstore` has none"),
            "{err}"
        );

        // Through `--chain`: `--var` and `--set` come last, so they win;
        // `--wait` is the recipe's readiness time.
        let chain = |args: &[&str]| {
            let up = UpChain::try_parse_from([&["up"][..], args].concat()).expect("parses");
            up.chain.recipe(&up.args).unwrap().unwrap()
        };
        let more = ["--var", "patches=none", "--set", "mempool.size=5"];
        let (recipe, opts) =
            chain(&[&["--chain", "abcid", "--patches", "all"][..], &more].concat());
        assert_eq!(opts.vars, ["patches=all", "patches=none"]);
        let sizes = [("mempool.size".into(), toml::Value::Integer(5))];
        assert_eq!(opts.overrides.comet, sizes);
        assert_eq!(recipe.spec.ready_secs, 60, "the recipe's own");
        let (recipe, opts) = chain(&["--chain", "kvstore", "--wait", "9", "--mempool-size", "7"]);
        assert_eq!(recipe.spec.ready_secs, 9);
        let sizes = [
            ("mempool.size".into(), toml::Value::Integer(7)),
            ("mempool.cache_size".into(), toml::Value::Integer(20_000)),
        ];
        assert_eq!(opts.overrides.comet, sizes);
        assert!(opts.vars.is_empty(), "kvstore has no app pool");

        // abcid's own pool is bounded as CometBFT's, as on abcid's devnet.
        let pool = ["--mempool-size", "30000", "--mempool-max-txs-bytes", "4096"];
        let (_, opts) = chain(&[&["--chain", "abcid"][..], &pool].concat());
        let bounds = [
            "app_mempool_bounds=true",
            "app_mempool_size=30000",
            "app_mempool_max_bytes=4096",
        ];
        assert_eq!(opts.vars, bounds);
        let cache = ("mempool.cache_size".into(), toml::Value::Integer(60_000));
        assert!(opts.overrides.comet.contains(&cache), "{opts:?}");
    }

    #[test]
    fn abcid_genesis_log_and_transport_flags_set_the_abcid_recipes_vars() {
        let parse = |args: &[&str]| {
            let up = Up::try_parse_from([&["up"][..], args].concat()).expect("parses");
            up.args
        };
        let abcid = Recipe::find("abcid").unwrap();
        let kvstore = Recipe::find("kvstore").unwrap();
        let flags = [
            "--root-balance",
            "0x10",
            "--log-format",
            "json",
            "--fee-market",
            "--abci-tcp",
            "--no-profiler",
        ];
        let settings = parse(&flags).recipe_settings(&abcid).unwrap();
        let fee = format!("fee_market={FEE_MARKET_JSON}");
        let want = [
            "root_balance=0x10",
            "log_format=json",
            &fee,
            "abci_addr=127.0.0.1:${abci_port}",
            "profiler=false",
        ];
        assert_eq!(settings.vars, want);
        for (flag, var) in [
            (&flags[..2], "root_balance"),
            (&flags[2..4], "log_format"),
            (&flags[4..5], "fee_market"),
            (&flags[5..6], "abci_addr"),
            (&flags[6..], "profiler"),
        ] {
            let err = parse(flag).recipe_settings(&kvstore).unwrap_err();
            let err = err.to_string();
            let want = format!("{} sets a recipe's var `{var}`", flag[0]);
            assert!(err.contains(&want), "{err}");
        }
        let err = parse(&["--root-balance", "1e18"]).recipe_settings(&abcid);
        let err = err.unwrap_err().to_string();
        assert!(
            err.contains("--root-balance 1e18: not a number of wei"),
            "{err}"
        );

        // `--abcid` is the binary of a recipe that runs abcid, a folder
        // holding it will do; no other recipe takes it, nor `--binary` too.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("abcid"), "").unwrap();
        let d = dir.path().to_str().unwrap();
        let chain = |args: &[&str]| {
            let up = UpChain::try_parse_from([&["up"][..], args].concat()).expect("parses");
            up.chain.recipe(&up.args)
        };
        let (_, opts) = chain(&["--chain", "abcid", "--abcid", d]).unwrap().unwrap();
        assert_eq!(opts.binary, Some(dir.path().join("abcid")));
        let err = chain(&["--chain", "kvstore", "--abcid", d]).unwrap_err();
        assert!(
            err.to_string()
                .contains("recipe `kvstore` does not run abcid"),
            "{err}"
        );
        let both = ["up", "--chain", "abcid", "--abcid", d, "--binary", d];
        assert!(UpChain::try_parse_from(both).is_err());
    }

    #[test]
    fn the_defaults_help_names_are_the_ones_used() {
        use clap::CommandFactory;
        let help = Up::command().render_long_help().to_string();
        let abcid = Recipe::find("abcid").unwrap().spec;
        let several = format!("several nodes: {}", devnet::DEFAULT_TIMEOUT_COMMIT);
        assert!(help.contains(&several), "{help}");
        let defaults = [
            devnet::DEFAULT_CHAIN_ID.to_string(),
            abcid.vars["timeout_commit"].clone(),
            devnet::DEFAULT_MEMPOOL_SIZE.to_string(),
            devnet::DEFAULT_MEMPOOL_MAX_TXS_BYTES.to_string(),
            devnet::DEFAULT_RPC_MAX_BODY_BYTES.to_string(),
            devnet::DEFAULT_RPC_MAX_OPEN_CONNECTIONS.to_string(),
            devnet::DEFAULT_WAIT_SECS.to_string(),
            devnet::DEFAULT_PATCHES.to_string(),
            devnet::DEFAULT_BLOCK_GAS_LIMIT.to_string(),
            devnet::DEFAULT_ROOT_BALANCE.to_string(),
            LogFormat::Plain.as_str().to_string(),
        ];
        for value in defaults {
            assert!(
                help.contains(&format!("[default: {value}")),
                "{value}:\n{help}"
            );
        }
    }

    /// One node's devnet is the abcid recipe's, several nodes' abcid's own
    /// devnet code's: every default but `timeout_commit` is the same in both.
    #[test]
    fn the_abcid_recipe_has_abcid_devnets_defaults() {
        let abcid = Recipe::find("abcid").unwrap().spec;
        let vars = [
            ("evm_chain_id", devnet::DEFAULT_CHAIN_ID.to_string()),
            ("block_gas", devnet::DEFAULT_BLOCK_GAS_LIMIT.to_string()),
            ("patches", devnet::DEFAULT_PATCHES.to_string()),
            ("root_balance", devnet::DEFAULT_ROOT_BALANCE.to_string()),
            ("log_format", LogFormat::Plain.as_str().to_string()),
            ("app_mempool_size", devnet::DEFAULT_MEMPOOL_SIZE.to_string()),
            (
                "app_mempool_max_bytes",
                devnet::DEFAULT_MEMPOOL_MAX_TXS_BYTES.to_string(),
            ),
        ];
        for (var, value) in vars {
            assert_eq!(abcid.vars[var], value, "{var}");
        }
        let comet = [
            ("mempool.size", devnet::DEFAULT_MEMPOOL_SIZE),
            (
                "mempool.max_txs_bytes",
                devnet::DEFAULT_MEMPOOL_MAX_TXS_BYTES,
            ),
            (
                "mempool.cache_size",
                devnet::config::mempool_cache_size(devnet::DEFAULT_MEMPOOL_SIZE),
            ),
            ("rpc.max_body_bytes", devnet::DEFAULT_RPC_MAX_BODY_BYTES),
            (
                "rpc.max_open_connections",
                devnet::DEFAULT_RPC_MAX_OPEN_CONNECTIONS,
            ),
        ];
        for (key, value) in comet {
            let value = toml::Value::Integer(value.try_into().unwrap());
            assert_eq!(abcid.comet[key], value, "{key}");
        }
        assert_eq!(abcid.ready_secs, devnet::DEFAULT_WAIT_SECS);
    }

    #[test]
    fn one_node_is_the_abcid_recipes_unless_a_folder_or_a_build_says_otherwise() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let build = |name: &str, help: &str| {
            let path = tmp.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\necho '{help}'\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path
        };
        let new = build("abcid", "--abci <ADDR>  --abci-protocol <PROTOCOL>");
        let old = build("abcid-old", "--abci <ADDR>  --patches <PATCHES>");
        let dir = tmp.path().join("net");
        let runs = |build: &std::path::Path, fresh: bool| {
            let d = dir.to_str().unwrap();
            let mut args = vec!["up", "--dir", d, "--abcid", build.to_str().unwrap()];
            if fresh {
                args.push("--fresh");
            }
            let up = Up::try_parse_from(args).expect("parses");
            runs_the_abcid_recipe(&up.args).unwrap()
        };
        assert!(runs(&new, false), "a new folder");
        assert!(!runs(&old, false), "a build before --abci-protocol");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(devnet::recipe::STATE_FILE), "{}").unwrap();
        assert!(!runs(&new, false), "its recipe starts it again");
        assert!(runs(&new, true), "a new chain");
        std::fs::write(dir.join(devnet::STATE_FILE), "{}").unwrap();
        std::fs::remove_file(dir.join(devnet::recipe::STATE_FILE)).unwrap();
        assert!(!runs(&new, true), "abcid's own devnet code's folder");
    }

    #[test]
    fn validators_and_link_flags_make_a_network() {
        let up = UpNet::try_parse_from(["up"]).expect("parses");
        assert!(up.network.options(up.args.options()).unwrap().is_none());
        let up = UpNet::try_parse_from(["up", "--latency", "50ms"]).expect("parses");
        let err = up.network.options(up.args.options()).unwrap_err();
        assert!(err.to_string().contains("--validators"), "{err}");
        let up = UpNet::try_parse_from([
            "up",
            "--validators",
            "4",
            "--full-nodes",
            "1",
            "--latency",
            "50ms",
            "--jitter",
            "10ms",
            "--bandwidth",
            "10mbit",
        ])
        .expect("parses");
        let net = up.network.options(up.args.options()).unwrap().unwrap();
        assert_eq!((net.validators, net.full_nodes), (4, 1));
        assert_eq!(net.ports, PortPlan::Stride(network::DEFAULT_PORT_STRIDE));
        assert_eq!(
            net.links,
            LinkShape {
                latency_ms: 50,
                jitter_ms: 10,
                bandwidth_kbit: Some(10_000)
            }
        );
        assert!(UpNet::try_parse_from(["up", "--latency", "50"]).is_err());
    }

    #[test]
    fn no_flags_give_the_default_options() {
        let up = Up::try_parse_from(["up"]).expect("parses");
        assert_eq!(up.args.options(), DevnetOptions::default());
    }

    #[test]
    fn flags_reach_the_options() {
        let up = Up::try_parse_from([
            "up",
            "--web3-port",
            "9545",
            "--log-format",
            "json",
            "--set",
            "a.b=1",
            "--block-gas-limit",
            "30000000",
        ])
        .expect("parses");
        let o = up.args.options();
        assert_eq!((o.web3_port, o.log_format), (9545, LogFormat::Json));
        assert_eq!(o.block_gas_limit, 30_000_000);
        assert_eq!(o.set, vec!["a.b=1".to_string()]);
    }
}
