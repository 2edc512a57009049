//! A devnet of several nodes in one command: N CometBFT validators and M
//! non-validating full nodes, each with its own abcid, home, ports and logs,
//! every link between two nodes going through a toxiproxy proxy.
//!
//! Layout of a network folder: one single-node devnet folder per node
//! (`v0/`, `v1/`, …, `f0/`, …: `cometbft/`, `abcid/`, `logs/`, `root.key`,
//! `devnet.json`, so that `feth devnet status --dir DIR/v1` works too),
//! `root.key`, `logs/toxiproxy.log` and `network.json` (nodes, links, PIDs,
//! faults in force).
//!
//! Wiring: one proxy per ordered pair of nodes (dialer i → target j); node
//! i's `p2p.persistent_peers` names node j's ID at proxy (i,j)'s address,
//! with peer exchange off, so no node ever learns another's direct address.
//! With `app-mempool`, a second proxy per ordered pair leads to node j's
//! web3 port, and node i's abcid forwards its pool there (`--pool-peers`):
//! the pools share what CometBFT's mempool, off with the patch, would have,
//! over links of the same shape, cut by the same partitions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::links::LinkShape;
use super::toxiproxy::{self, Toxiproxy};
use super::{config, free_ports, process, tools, DevnetOptions, DevnetState, Ports};
use feth_chain::keys;

/// Whether a node votes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeRole {
    /// In the genesis validator set, with equal power.
    Validator,
    /// Follows the chain without voting.
    Full,
}

/// Where the nodes' ports come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PortPlan {
    /// Node k uses each of the template's ports plus k × this.
    Stride(u16),
    /// Free loopback ports, chosen at start (tests, benchmarks).
    Free,
}

/// How to set up a network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkOptions {
    /// Every node's settings; `dir` is the network's folder and the ports
    /// are node 0's (with [`PortPlan::Stride`]).
    pub node: DevnetOptions,
    /// Validators (at least 1).
    pub validators: usize,
    /// Non-validating full nodes.
    pub full_nodes: usize,
    /// The shape of every link.
    pub links: LinkShape,
    /// Where the nodes' ports come from.
    pub ports: PortPlan,
}

/// Default distance between two nodes' ports ([`PortPlan::Stride`]).
pub const DEFAULT_PORT_STRIDE: u16 = 10;

/// One node of a network.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Node {
    /// `v0`, `v1`, … for validators, `f0`, … for full nodes.
    pub name: String,
    /// Validator or full node.
    pub role: NodeRole,
    /// CometBFT node ID.
    pub id: String,
    /// Its processes, ports and files (a single-node devnet's state).
    pub state: DevnetState,
}

/// A link: the proxy through which `from` dials `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// Dialing node.
    pub from: String,
    /// Dialed node.
    pub to: String,
    /// The proxy's loopback port.
    pub port: u16,
    /// What it carries.
    #[serde(default)]
    pub carries: Carries,
}

/// What a link carries to the dialed node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Carries {
    /// CometBFT's peer-to-peer traffic, to its p2p port.
    #[default]
    P2p,
    /// `app-mempool`: abcid's forwarded transactions, to its web3 port.
    Pool,
}

impl Link {
    /// The proxy's name in toxiproxy.
    pub fn proxy(&self) -> String {
        match self.carries {
            Carries::P2p => format!("{}-{}", self.from, self.to),
            Carries::Pool => format!("{}-{}-pool", self.from, self.to),
        }
    }

    /// The dialed node's port it leads to.
    pub(crate) fn upstream(&self, to: &DevnetState) -> u16 {
        match self.carries {
            Carries::P2p => to.options.p2p_port,
            Carries::Pool => to.options.web3_port,
        }
    }

    /// Whether it touches `node`.
    pub fn touches(&self, node: &str) -> bool {
        self.from == node || self.to == node
    }
}

/// What `network.json` records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NetworkState {
    /// The options it was created with.
    pub options: NetworkOptions,
    /// Validators first, then full nodes.
    pub nodes: Vec<Node>,
    /// Every ordered pair of nodes.
    pub links: Vec<Link>,
    /// The toxiproxy server binary.
    pub toxiproxy: PathBuf,
    /// Its API port on 127.0.0.1.
    pub toxiproxy_port: u16,
    /// Its PID, while running.
    pub toxiproxy_pid: Option<u32>,
    /// Nodes cut off from every other node (`feth devnet net partition`).
    #[serde(default)]
    pub partitioned: Vec<String>,
    /// Nodes whose links have another shape (`feth devnet net slow`).
    #[serde(default)]
    pub slowed: BTreeMap<String, LinkShape>,
}

/// The file that marks a folder as a network's.
pub(crate) fn state_file(dir: &Path) -> PathBuf {
    dir.join("network.json")
}

/// Whether `dir` holds a network (rather than a single-node devnet).
pub fn is_network(dir: &Path) -> bool {
    state_file(dir).is_file()
}

impl NetworkState {
    /// Reads `network.json` from `dir`.
    pub fn load(dir: &Path) -> Result<Self> {
        let path = state_file(dir);
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "no network in {} (missing network.json); start one with `feth devnet up --validators N`",
                dir.display()
            )
        })?;
        serde_json::from_str(&text).with_context(|| format!("cannot parse {}", path.display()))
    }

    /// Writes `network.json` and every node's `devnet.json`.
    pub fn save(&self) -> Result<()> {
        for node in &self.nodes {
            node.state.save()?;
        }
        let path = state_file(&self.options.node.dir);
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    }

    /// The node called `name`, or an error listing the names there are.
    pub fn node(&self, name: &str) -> Result<&Node> {
        let i = self.index(name)?;
        Ok(&self.nodes[i])
    }

    pub(super) fn index(&self, name: &str) -> Result<usize> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .with_context(|| {
                let names: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
                format!(
                    "no node {name:?} in {}; its nodes are {}",
                    self.options.node.dir.display(),
                    names.join(", ")
                )
            })
    }

    /// The toxiproxy API client.
    pub(crate) fn proxy_client(&self) -> Result<Toxiproxy> {
        Toxiproxy::new(self.toxiproxy_port)
    }

    /// The network's root key file.
    pub fn root_key(&self) -> PathBuf {
        self.options.node.dir.join("root.key")
    }

    /// Whether any of its processes runs.
    pub(crate) fn any_running(&self) -> bool {
        self.toxiproxy_pid
            .is_some_and(|p| process::is_running(p, toxiproxy::SERVER_NAME))
            || self
                .nodes
                .iter()
                .any(|n| n.state.running() != (false, false))
    }
}

/// One node's logs, for the etl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLogs {
    /// The node's name (`v0`, `f1`; `node0` for a single-node devnet).
    pub name: String,
    /// CometBFT's log (a recipe devnet's: the one its recipe names).
    pub cometbft: PathBuf,
    /// abcid's log, when abcid runs.
    pub abcid: Option<PathBuf>,
}

/// A recipe devnet's logs: the one its recipe names for the etl, and
/// abcid's when a process of that name runs.
fn recipe_logs(state: &crate::recipe::RecipeState) -> Result<NodeLogs> {
    let cometbft = state.etl_log().with_context(|| {
        format!(
            "recipe `{}` names no log for the etl (`[logs]`): give the log with --tendermint",
            state.recipe.name
        )
    })?;
    Ok(NodeLogs {
        name: SINGLE_NODE.to_string(),
        cometbft,
        abcid: state.log_of("abcid"),
    })
}

/// The logs of every node of the devnet in `dir` (a network's nodes in
/// order, or a single-node devnet's one node, a recipe devnet's too), or of
/// node `only`.
pub fn node_logs(dir: &Path, only: Option<&str>) -> Result<Vec<NodeLogs>> {
    let logs = |name: &str, state: &DevnetState| NodeLogs {
        name: name.to_string(),
        cometbft: state.cometbft_log(),
        abcid: Some(state.abcid_log()),
    };
    let all = if is_network(dir) {
        let net = NetworkState::load(dir)?;
        if let Some(name) = only {
            return Ok(vec![logs(name, &net.node(name)?.state)]);
        }
        net.nodes.iter().map(|n| logs(&n.name, &n.state)).collect()
    } else if dir.join(crate::recipe::STATE_FILE).is_file() {
        vec![recipe_logs(&crate::recipe::RecipeState::load(dir)?)?]
    } else {
        vec![logs(SINGLE_NODE, &DevnetState::load(dir)?)]
    };
    match only {
        Some(name) if name != SINGLE_NODE => bail!(
            "{} holds a single-node devnet, whose node the etl calls {SINGLE_NODE}, not {name:?}",
            dir.display()
        ),
        _ => Ok(all),
    }
}

/// The name the etl gives the node of a single-node devnet.
pub(crate) const SINGLE_NODE: &str = "node0";

/// The names of a network's nodes: `v0…` then `f0…`.
fn node_names(validators: usize, full_nodes: usize) -> Vec<(String, NodeRole)> {
    let v = (0..validators).map(|i| (format!("v{i}"), NodeRole::Validator));
    let f = (0..full_nodes).map(|i| (format!("f{i}"), NodeRole::Full));
    v.chain(f).collect()
}

/// The ports of node `k` (see [`DevnetOptions::with_ports`]).
fn node_ports(opts: &NetworkOptions, k: usize, free: &mut Vec<u16>) -> Result<Ports> {
    match opts.ports {
        PortPlan::Free => Ports::take(free),
        PortPlan::Stride(stride) => u16::try_from(k)
            .ok()
            .and_then(|k| k.checked_mul(stride))
            .and_then(|by| opts.node.ports().offset(by))
            .with_context(|| {
                format!("node {k}'s ports run past 65535; use lower ports or fewer nodes")
            }),
    }
}

/// The CometBFT node ID of the home `home`.
fn node_id(cometbft: &Path, home: &Path) -> Result<String> {
    let out = Command::new(cometbft)
        .args(["show-node-id", "--home"])
        .arg(home)
        .output()
        .with_context(|| format!("cannot run {}", cometbft.display()))?;
    if !out.status.success() {
        bail!(
            "`cometbft show-node-id` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Checks the options before anything is written.
fn check(opts: &NetworkOptions) -> Result<()> {
    if opts.validators == 0 {
        bail!("--validators must be at least 1");
    }
    if opts.validators + opts.full_nodes > 50 {
        bail!(
            "at most 50 nodes in a devnet ({} asked)",
            opts.validators + opts.full_nodes
        );
    }
    Ok(())
}

/// Creates a new network's folders, keys, genesis, configs and link plan
/// (nothing started). `ports` holds enough free ports for the plan.
pub(super) fn create(opts: &NetworkOptions) -> Result<NetworkState> {
    check(opts)?;
    let dir = &opts.node.dir;
    std::fs::create_dir_all(dir.join("logs"))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let cometbft = tools::cometbft(true)?;
    let abcid = match &opts.node.abcid {
        Some(path) => tools::build(path)?,
        None => tools::abcid()?,
    };
    let toxiproxy = tools::toxiproxy(true)?;
    let names = node_names(opts.validators, opts.full_nodes);
    let n = names.len();
    let carried = carried(&opts.node.clone().for_abcid(&abcid)?, &abcid);
    let mut free = free_ports(Ports::COUNT * n + carried.len() * n * (n - 1) + 1)?;
    let abcid_metrics = tools::abcid_has_flag(&abcid, "--metrics");
    let root = keys::random_key();
    let root_hex = keys::key_hex(&root);
    keys::write_secret_file(&dir.join("root.key"), root_hex.as_bytes())?;
    let mut nodes = Vec::with_capacity(n);
    for (k, (name, role)) in names.into_iter().enumerate() {
        let node_dir = dir.join(&name);
        let options = DevnetOptions {
            dir: node_dir.clone(),
            fresh: false,
            ..opts.node.clone()
        }
        .with_ports(node_ports(opts, k, &mut free)?)
        .for_abcid(&abcid)?;
        std::fs::create_dir_all(node_dir.join("logs"))
            .with_context(|| format!("cannot create {}", node_dir.display()))?;
        let home = node_dir.join("cometbft");
        super::init_cometbft(&cometbft, &home)?;
        keys::write_secret_file(&node_dir.join("root.key"), root_hex.as_bytes())?;
        let id = node_id(&cometbft, &home)?;
        let state = DevnetState {
            options,
            cometbft: cometbft.clone(),
            abcid: abcid.clone(),
            cometbft_pid: None,
            abcid_pid: None,
            cometbft_started: None,
            abcid_started: None,
            abcid_metrics,
        };
        nodes.push(Node {
            name,
            role,
            id,
            state,
        });
    }
    distinct_ports(&nodes)?;
    let mut links = Vec::new();
    for carries in carried {
        for from in &nodes {
            for to in nodes.iter().filter(|to| to.name != from.name) {
                let port = free.pop().context("ran out of free ports")?;
                links.push(Link {
                    from: from.name.clone(),
                    to: to.name.clone(),
                    port,
                    carries,
                });
            }
        }
    }
    for node in &mut nodes {
        name_pool_peers(node, &links);
    }
    let toxiproxy_port = free.pop().context("ran out of free ports")?;
    genesis::write(&nodes, &opts.node, keys::address_of(&root))?;
    let state = NetworkState {
        options: opts.clone(),
        nodes,
        links,
        toxiproxy,
        toxiproxy_port,
        toxiproxy_pid: None,
        partitioned: Vec::new(),
        slowed: BTreeMap::new(),
    };
    for node in &state.nodes {
        write_node_config(&state, node)?;
    }
    state.save()?;
    Ok(state)
}

/// What the links carry: CometBFT's traffic, and with `app-mempool` (when
/// the build can forward, which [`DevnetOptions::all_pools`] read from it)
/// abcid's forwarded transactions.
fn carried(node: &DevnetOptions, abcid: &Path) -> Vec<Carries> {
    if !node.app_mempool() {
        return vec![Carries::P2p];
    }
    if !node.all_pools {
        tracing::warn!(
            "{} cannot forward its pool (no --pool-peers): a transaction is proposed only by the node it was sent to",
            abcid.display()
        );
        return vec![Carries::P2p];
    }
    vec![Carries::P2p, Carries::Pool]
}

/// Gives `node`'s abcid its pool's peers: the proxies of its pool links.
fn name_pool_peers(node: &mut Node, links: &[Link]) {
    let peers: Vec<String> = links
        .iter()
        .filter(|l| l.carries == Carries::Pool && l.from == node.name)
        .map(|l| format!("http://127.0.0.1:{}", l.port))
        .collect();
    if !peers.is_empty() {
        let args = &mut node.state.options.abcid_args;
        args.extend(["--pool-peers".to_string(), peers.join(",")]);
    }
}

/// Fails when two nodes would listen on one port (a stride too small for
/// the ports given).
fn distinct_ports(nodes: &[Node]) -> Result<()> {
    let mut seen = std::collections::BTreeMap::new();
    for node in nodes {
        // 0: a port an older devnet did not serve (CometBFT's pprof).
        for port in node
            .state
            .options
            .ports()
            .all()
            .into_iter()
            .filter(|&p| p != 0)
        {
            if let Some(other) = seen.insert(port, &node.name) {
                bail!(
                    "nodes {other} and {} would both use port {port}: use a larger --port-stride or other ports",
                    node.name
                );
            }
        }
    }
    Ok(())
}

/// Writes node's `config.toml`: the devnet's settings, its moniker, and its
/// persistent peers at the proxies it dials (then the user's `--set`).
fn write_node_config(state: &NetworkState, node: &Node) -> Result<()> {
    let peers: Vec<String> = state
        .links
        .iter()
        .filter(|l| l.carries == Carries::P2p && l.from == node.name)
        .map(|l| Ok(format!("{}@127.0.0.1:{}", state.node(&l.to)?.id, l.port)))
        .collect::<Result<_>>()?;
    let mut options = node.state.options.clone();
    let network = [
        format!("moniker=\"{}\"", node.name),
        format!("p2p.persistent_peers=\"{}\"", peers.join(",")),
        "p2p.allow_duplicate_ip=true".to_string(),
        "p2p.pex=false".to_string(),
        "p2p.addr_book_strict=false".to_string(),
    ];
    options.set = network.into_iter().chain(options.set).collect();
    config::write_config(&node.state.cometbft_home(), &options)
}

mod faults;
mod genesis;
mod run;

pub use run::*;
