//! Starting, stopping and reading a network: the toxiproxy server and its
//! proxies first, then every node's abcid and CometBFT, then a wait until
//! every node sees a new block.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::{create, is_network, LinkShape, NetworkOptions, NetworkState, NodeRole, PortPlan};
use crate::toxiproxy::{self, Toxiproxy};
use crate::{self as devnet, process, DevnetOptions, DevnetState};

/// Creates (first time) and starts a network; waits until every node sees
/// a new block.
pub async fn up(opts: NetworkOptions) -> Result<NetworkState> {
    let dir = &opts.node.dir;
    if opts.node.fresh && dir.exists() {
        refuse_running(dir, "`feth devnet down` before --fresh")?;
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot delete {}", dir.display()))?;
    }
    let mut state = if is_network(dir) {
        refuse_running(dir, "stop it with `feth devnet down` first")?;
        let mut old = NetworkState::load(dir)?;
        let (v, f) = (old.options.validators, old.options.full_nodes);
        if (v, f) != (opts.validators, opts.full_nodes) {
            bail!(
                "{} holds a network of {v} validator(s) and {f} full node(s); start it with those, or with --fresh for a new chain",
                dir.display()
            );
        }
        old.options.links = opts.links;
        old
    } else {
        if dir.join("devnet.json").is_file() {
            bail!(
                "{} holds a single-node devnet; use another --dir, or --fresh for a new chain",
                dir.display()
            );
        }
        create(&opts)?
    };
    start(&mut state).await?;
    Ok(state)
}

/// Fails when a devnet (network or single node) in `dir` runs.
fn refuse_running(dir: &Path, what_to_do: &str) -> Result<()> {
    let running = if is_network(dir) {
        NetworkState::load(dir).is_ok_and(|s| s.any_running())
    } else {
        DevnetState::load(dir).is_ok_and(|s| s.running() != (false, false))
    };
    if running {
        bail!("a devnet is running in {}; {what_to_do}", dir.display());
    }
    Ok(())
}

/// Starts the proxy and every node; stops all of it again on failure.
async fn start(state: &mut NetworkState) -> Result<()> {
    state.partitioned.clear();
    state.slowed.clear();
    let result = start_all(state).await;
    if result.is_err() {
        stop_all(state, false);
    }
    state.save()?;
    result
}

async fn start_all(state: &mut NetworkState) -> Result<()> {
    let log = state.options.node.dir.join("logs").join("toxiproxy.log");
    let pid = toxiproxy::start_server(&state.toxiproxy, state.toxiproxy_port, &log).await?;
    state.toxiproxy_pid = Some(pid);
    let proxy = state.proxy_client()?;
    for link in &state.links {
        let upstream = link.upstream(&state.node(&link.to)?.state);
        let listen = format!("127.0.0.1:{}", link.port);
        proxy
            .create(&link.proxy(), &listen, &format!("127.0.0.1:{upstream}"))
            .await?;
    }
    state.sync_links().await?;
    for node in &mut state.nodes {
        devnet::start_abcid(&mut node.state)?;
        devnet::start_cometbft(&mut node.state)?;
    }
    state.save()?;
    let waits = state.nodes.iter().map(|n| devnet::wait_ready(&n.state));
    futures::future::try_join_all(waits).await?;
    Ok(())
}

/// Stops every node (in parallel, CometBFT before its abcid) and then the
/// proxy; returns how many processes were stopped.
pub(super) fn stop_all(state: &mut NetworkState, graceful: bool) -> usize {
    let stopped = std::thread::scope(|s| {
        let handles: Vec<_> = state
            .nodes
            .iter_mut()
            .map(|n| s.spawn(|| devnet::stop_processes(&mut n.state, graceful)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(0))
            .sum::<usize>()
    });
    let proxy = state.toxiproxy_pid.take().map_or(0, |pid| {
        usize::from(process::stop(
            pid,
            toxiproxy::SERVER_NAME,
            Duration::from_secs(5),
        ))
    });
    stopped + proxy
}

/// Stops the network in `dir`; returns how many processes were stopped.
pub fn down(dir: &Path) -> Result<usize> {
    let mut state = NetworkState::load(dir)?;
    let stopped = stop_all(&mut state, true);
    state.save()?;
    Ok(stopped)
}

/// One node's condition, for `feth devnet status`.
#[derive(Debug, Clone, Serialize)]
pub struct NodeStatus {
    /// Its name.
    pub name: String,
    /// Validator or full node.
    pub role: NodeRole,
    /// CometBFT node ID.
    pub id: String,
    /// Cut off from every other node.
    pub partitioned: bool,
    /// Its processes, height, endpoints and root key.
    #[serde(flatten)]
    pub status: devnet::Status,
}

/// A network's condition, for `feth devnet up|status`.
#[derive(Debug, Clone, Serialize)]
pub struct NetworkStatus {
    /// Folder.
    pub dir: PathBuf,
    /// The funded root's key file (every node's folder has a copy).
    pub root_key: PathBuf,
    /// Every node.
    pub nodes: Vec<NodeStatus>,
    /// toxiproxy's API URL.
    pub toxiproxy: String,
    /// toxiproxy running.
    pub toxiproxy_running: bool,
    /// The shape of every link not slowed.
    pub links: LinkShape,
    /// Nodes whose links have another shape.
    pub slowed: std::collections::BTreeMap<String, LinkShape>,
}

/// Reads a network's condition.
pub async fn status(dir: &Path) -> Result<NetworkStatus> {
    let state = NetworkState::load(dir)?;
    let mut nodes = Vec::with_capacity(state.nodes.len());
    for node in &state.nodes {
        nodes.push(NodeStatus {
            name: node.name.clone(),
            role: node.role,
            id: node.id.clone(),
            partitioned: state.partitioned.contains(&node.name),
            status: devnet::status(&node.state.options.dir).await?,
        });
    }
    Ok(NetworkStatus {
        dir: dir.to_path_buf(),
        root_key: state.root_key(),
        nodes,
        toxiproxy: format!("http://127.0.0.1:{}", state.toxiproxy_port),
        toxiproxy_running: state
            .toxiproxy_pid
            .is_some_and(|p| process::is_running(p, toxiproxy::SERVER_NAME)),
        links: state.options.links,
        slowed: state.slowed.clone(),
    })
}

impl NetworkOptions {
    /// A network of its own in `dir` (tests, benchmarks): free loopback
    /// ports, 300 ms blocks, a 1 s `timeout_propose` (a round whose proposer
    /// is cut off or dead moves on after 1 s rather than 3 s), clear links;
    /// defaults for the rest.
    pub fn private(dir: &Path, validators: usize, full_nodes: usize) -> Self {
        Self {
            node: DevnetOptions {
                dir: dir.to_path_buf(),
                timeout_commit: crate::GoDuration::from_millis(300),
                set: vec!["consensus.timeout_propose=1s".to_string()],
                ..DevnetOptions::default()
            },
            validators,
            full_nodes,
            links: LinkShape::default(),
            ports: PortPlan::Free,
        }
    }
}

/// A network owned by the caller (tests, benchmarks): stopped on drop.
#[derive(Debug)]
pub struct Network {
    /// Its recorded state.
    pub state: NetworkState,
}

impl Network {
    /// Starts a network with `opts`.
    pub async fn start(opts: NetworkOptions) -> Result<Self> {
        Ok(Self {
            state: up(opts).await?,
        })
    }

    /// Starts a new network in `dir` ([`NetworkOptions::private`], then
    /// `tweak`). A free port may be taken by another process before a node
    /// binds it: a start that fails is tried again from scratch on new
    /// ports, three times in all.
    pub async fn start_private(
        dir: &Path,
        validators: usize,
        full_nodes: usize,
        tweak: impl Fn(&mut NetworkOptions),
    ) -> Result<Self> {
        let mut attempt = 1;
        loop {
            let mut opts = NetworkOptions::private(dir, validators, full_nodes);
            opts.node.fresh = true;
            tweak(&mut opts);
            match Self::start(opts).await {
                Ok(net) => return Ok(net),
                Err(e) if attempt < 3 => {
                    tracing::warn!("network start, attempt {attempt}: {e:#}; trying new ports");
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The toxiproxy client of this network.
    pub fn proxy(&self) -> Result<Toxiproxy> {
        self.state.proxy_client()
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        stop_all(&mut self.state, true);
        let _ = self.state.save();
    }
}
