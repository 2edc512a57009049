//! A single-validator CometBFT node running its built-in kvstore application
//! (`proxy_app = "kvstore"`, in memory), configured like the abcid devnet,
//! on free loopback ports, stopped by PID when dropped.
//!
//! It owns `<dir>/kvstore/` (CometBFT home, a new chain each start: an
//! earlier one there is deleted) and `<dir>/kvstore.log`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use feth_comet::rpc::Rpc;

use crate::devnet::{self, config, process, tools, DevnetOptions};

/// How to run the node. The defaults are the abcid devnet's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvNodeConfig {
    /// Folder for the node's home and log (a tmpfs such as `/dev/shm` keeps
    /// disk writes out of the measurement).
    pub dir: PathBuf,
    /// CometBFT `consensus.timeout_commit`, e.g. `500ms`.
    pub timeout_commit: devnet::GoDuration,
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
    /// How long to wait for the first blocks.
    pub wait: Duration,
}

impl KvNodeConfig {
    /// A node in `dir` with the abcid devnet's defaults.
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            timeout_commit: devnet::DEFAULT_TIMEOUT_COMMIT,
            mempool_size: devnet::DEFAULT_MEMPOOL_SIZE,
            mempool_max_txs_bytes: devnet::DEFAULT_MEMPOOL_MAX_TXS_BYTES,
            rpc_max_body_bytes: devnet::DEFAULT_RPC_MAX_BODY_BYTES,
            rpc_max_open_connections: devnet::DEFAULT_RPC_MAX_OPEN_CONNECTIONS,
            set: Vec::new(),
            wait: Duration::from_secs(devnet::DEFAULT_WAIT_SECS),
        }
    }

    /// The devnet options whose `config.toml` this node runs with: the same
    /// writer as the abcid devnet's, the application swapped for the kvstore.
    fn devnet_options(&self, ports: devnet::Ports) -> DevnetOptions {
        let mut set = vec!["proxy_app=kvstore".to_string()];
        set.extend(self.set.iter().cloned());
        DevnetOptions {
            dir: self.dir.clone(),
            timeout_commit: self.timeout_commit,
            mempool_size: self.mempool_size,
            mempool_max_txs_bytes: self.mempool_max_txs_bytes,
            rpc_max_body_bytes: self.rpc_max_body_bytes,
            rpc_max_open_connections: self.rpc_max_open_connections,
            set,
            // No abcid: its patches do not apply, and `none` keeps
            // CometBFT's mempool on (`app-mempool` would turn it off).
            patches: "none".to_string(),
            ..DevnetOptions::default()
        }
        .with_ports(ports)
    }
}

/// A running kvstore node; stopped (SIGTERM, then SIGKILL) when dropped.
#[derive(Debug)]
pub struct KvNode {
    pid: u32,
    name: String,
    rpc_port: u16,
    log: PathBuf,
}

impl KvNode {
    /// Starts a new chain and waits until it commits blocks; on free ports,
    /// tried again on new ones when a port was taken meanwhile.
    pub async fn start(cfg: KvNodeConfig) -> Result<Self> {
        let cometbft = tools::cometbft(true)?;
        std::fs::create_dir_all(&cfg.dir)
            .with_context(|| format!("cannot create {}", cfg.dir.display()))?;
        devnet::on_free_ports("kvstore node", |ports| {
            Self::start_on(&cometbft, &cfg, ports)
        })
        .await
    }

    async fn start_on(cometbft: &Path, cfg: &KvNodeConfig, ports: devnet::Ports) -> Result<Self> {
        let home = cfg.dir.join("kvstore");
        if home.exists() {
            std::fs::remove_dir_all(&home)
                .with_context(|| format!("cannot delete the old chain in {}", home.display()))?;
        }
        devnet::init_cometbft(cometbft, &home)?;
        let opts = cfg.devnet_options(ports);
        config::write_config(&home, &opts)?;
        let log = cfg.dir.join("kvstore.log");
        let mut cmd = Command::new(cometbft);
        cmd.arg("start").arg("--home").arg(&home);
        let node = Self {
            pid: process::spawn_logged(cmd, &log)?,
            name: cometbft
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("cometbft")
                .to_string(),
            rpc_port: opts.rpc_port,
            log,
        };
        node.wait_for_blocks(cfg.wait).await?;
        Ok(node)
    }

    /// Waits until the RPC answers and, after that, one more block is
    /// committed.
    async fn wait_for_blocks(&self, wait: Duration) -> Result<()> {
        let rpc = Rpc::new(&self.rpc_url(), 1, 1)?;
        let deadline = Instant::now() + wait;
        let mut first = None;
        loop {
            if !process::is_running(self.pid, &self.name) {
                bail!(
                    "the kvstore node exited during start-up (see {}):\n{}",
                    self.log.display(),
                    process::tail(&self.log, 20)
                );
            }
            // The RPC's own retries would outlast a short deadline: one try
            // at a time.
            let height = tokio::time::timeout(Duration::from_secs(1), rpc.status())
                .await
                .ok()
                .and_then(Result::ok)
                .map(|s| s.latest_height);
            match (first, height) {
                (Some(h), Some(now)) if now > h => return Ok(()),
                (None, Some(now)) => first = Some(now),
                _ => {}
            }
            if Instant::now() > deadline {
                bail!(
                    "the kvstore node committed no block within {} s; see {}",
                    wait.as_secs_f64(),
                    self.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// CometBFT's RPC URL.
    pub fn rpc_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.rpc_port)
    }

    /// The CometBFT process's PID.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The node's log file.
    pub fn log(&self) -> &Path {
        &self.log
    }
}

impl Drop for KvNode {
    fn drop(&mut self) {
        process::stop(self.pid, &self.name, Duration::from_secs(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_runs_the_devnet_settings_with_the_kvstore_application() {
        let cfg = KvNodeConfig {
            timeout_commit: devnet::GoDuration::from_millis(500),
            set: vec!["mempool.recheck=false".into()],
            ..KvNodeConfig::new(Path::new("/tmp/kv"))
        };
        let opts =
            cfg.devnet_options(devnet::Ports::take(&mut vec![8, 7, 6, 5, 4, 3, 2, 1]).unwrap());
        assert_eq!((opts.rpc_port, opts.p2p_port), (1, 2));
        assert_eq!((opts.metrics_port, opts.cometbft_metrics_port), (6, 7));
        assert_eq!(opts.timeout_commit.to_string(), "500ms");
        assert_eq!(opts.mempool_size, devnet::DEFAULT_MEMPOOL_SIZE);
        assert_eq!(
            opts.set,
            vec!["proxy_app=kvstore", "mempool.recheck=false"],
            "the application first, the caller's settings after"
        );
        assert!(!opts.app_mempool(), "CometBFT's mempool stays on");
    }
}
