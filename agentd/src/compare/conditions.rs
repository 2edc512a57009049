//! What a step's node runs under, read from the node itself, never assumed:
//! the block's gas and bytes (`/consensus_params`), CometBFT's version
//! (`/status`), the application's own word (`/abci_info`,
//! `web3_clientVersion`), and, for a node feth made, `timeout_commit` and
//! the mempool as its `config.toml` holds them. What cannot be read is
//! named with the reason, so a report never states a default as a fact.

use std::fmt::Write as _;
use std::time::Duration;

use feth_comet::rpc::Rpc;
use serde::{Deserialize, Serialize};

use crate::eth::EthClient;

/// The `config.toml` keys read back from a node feth made.
pub const CONFIG_KEYS: [&str; 3] = ["consensus.timeout_commit", "mempool.type", "mempool.size"];

/// The conditions of one step's node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeConditions {
    /// What the node calls itself (`web3_clientVersion`).
    pub client: String,
    /// CometBFT's version (`/status` `node_info.version`).
    pub cometbft: Option<String>,
    /// The application's own word (`/abci_info`: data, version, app version).
    pub app: Option<String>,
    /// `block.max_gas` in force (-1: no limit).
    pub block_max_gas: Option<i64>,
    /// `block.max_bytes` in force (-1: no limit).
    pub block_max_bytes: Option<i64>,
    /// `consensus.timeout_commit` of the node's `config.toml`, for a node
    /// feth made; a node given by URL does not say it over RPC.
    pub timeout_commit: Option<String>,
    /// CometBFT's mempool type and size (`config.toml`), for a node feth made.
    pub mempool: Option<String>,
    /// Whether the node answers `txpool_status` (an application-side pool).
    pub txpool: bool,
    /// What could not be read, each with the reason.
    pub unread: Vec<String>,
}

impl NodeConditions {
    /// Reads the conditions of the node behind `web3` and `comet` (its
    /// CometBFT RPC, when known); `config` is `KEY=VALUE` of
    /// [`CONFIG_KEYS`] from the `config.toml` of a node feth made (empty for
    /// one given by URL). Never fails: what is not read is named in `unread`.
    pub async fn read(web3: Option<&str>, comet: Option<&str>, config: &[String]) -> Self {
        let mut c = Self::default();
        match web3.map(|url| EthClient::new(url, Duration::from_secs(10))) {
            Some(Ok(client)) => c.read_web3(&client).await,
            Some(Err(e)) => c.unread.push(format!("web3: {e:#}")),
            // A chain without web3 (CometBFT's kvstore): its client is
            // what `/abci_info` says.
            None => {}
        }
        match comet.map(|url| Rpc::new(url, 1, 1)) {
            Some(Ok(rpc)) => c.read_comet(&rpc).await,
            Some(Err(e)) => c.unread.push(format!("CometBFT RPC: {e}")),
            None => c
                .unread
                .push("CometBFT's RPC is not known (give --comet-rpc): no block limits, no CometBFT version".into()),
        }
        c.read_config(config);
        c
    }

    async fn read_web3(&mut self, client: &EthClient) {
        let version = client.call::<String>("web3_clientVersion", serde_json::json!([]));
        match version.await {
            // Some nodes answer on several lines (evmd: `Version dev ()\nCompiled at …`).
            Ok(v) => self.client = v.lines().next().unwrap_or_default().trim().to_string(),
            Err(e) => self.unread.push(format!("web3_clientVersion: {e:#}")),
        }
        let pool = client.call::<serde_json::Value>("txpool_status", serde_json::json!([]));
        self.txpool = pool.await.is_ok();
    }

    async fn read_comet(&mut self, rpc: &Rpc) {
        // The params at the latest stored height (see `Rpc::block_params`).
        let height = match rpc.status().await {
            Ok(s) => {
                self.cometbft = Some(s.version);
                s.latest_height
            }
            Err(e) => {
                self.unread.push(format!("/status: {e}"));
                0
            }
        };
        match rpc.block_params(height).await {
            Ok(p) => {
                self.block_max_gas = Some(p.max_gas);
                self.block_max_bytes = Some(p.max_bytes);
            }
            Err(e) => self.unread.push(format!("/consensus_params: {e}")),
        }
        match rpc.abci_info().await {
            Ok(i) => {
                let mut app = [i.data, i.version]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ");
                let _ = write!(app, " (app version {})", i.app_version);
                self.app = Some(app.trim_start().to_string());
            }
            Err(e) => self.unread.push(format!("/abci_info: {e}")),
        }
    }

    fn read_config(&mut self, config: &[String]) {
        let get = |key: &str| {
            config.iter().find_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                (k == key).then(|| v.trim_matches('"').to_string())
            })
        };
        self.timeout_commit = get("consensus.timeout_commit");
        self.mempool = match (get("mempool.type"), get("mempool.size")) {
            (Some(kind), Some(size)) => Some(format!("{kind}, size {size}")),
            (Some(kind), None) => Some(kind),
            (None, Some(size)) => Some(format!("size {size}")),
            (None, None) => None,
        };
    }

    /// Every condition two reports must share to be compared, with its
    /// value (the node's own name and version are left out: a new build is
    /// what is compared).
    pub fn comparable(&self) -> [(&'static str, String); 5] {
        [
            ("cometbft", format!("{:?}", self.cometbft)),
            ("block_max_gas", format!("{:?}", self.block_max_gas)),
            ("block_max_bytes", format!("{:?}", self.block_max_bytes)),
            ("timeout_commit", format!("{:?}", self.timeout_commit)),
            ("mempool", format!("{:?}", self.mempool)),
        ]
    }

    /// The conditions in one line; `block_ms` is the measured median block
    /// interval, said in place of a `timeout_commit` the node did not give.
    pub fn describe(&self, block_ms: Option<f64>) -> String {
        let limit = |v: Option<i64>| match v {
            Some(-1) => "no limit".to_string(),
            Some(v) => v.to_string(),
            None => "?".to_string(),
        };
        let timeout = match (&self.timeout_commit, block_ms) {
            (Some(t), _) => format!("timeout_commit {t} (config.toml)"),
            (None, Some(ms)) => format!(
                "timeout_commit not known (not a node feth made): blocks every {ms:.0} ms (median, measured)"
            ),
            (None, None) => "timeout_commit not known".to_string(),
        };
        let mempool = match (&self.mempool, self.txpool) {
            (Some(m), true) => format!("mempool {m} (config.toml), txpool_status answers"),
            (Some(m), false) => format!("mempool {m} (config.toml)"),
            (None, true) => "mempool: txpool_status answers (an application-side pool)".into(),
            (None, false) => "mempool not known".into(),
        };
        format!(
            "{}; CometBFT {}; app {}; block gas {}, bytes {} (/consensus_params); {timeout}; {mempool}",
            if self.client.is_empty() { "?" } else { &self.client },
            self.cometbft.as_deref().unwrap_or("?"),
            self.app.as_deref().unwrap_or("?"),
            limit(self.block_max_gas),
            limit(self.block_max_bytes),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::NodeConditions;

    #[test]
    fn a_devnets_config_is_read_back_and_a_live_nodes_interval_is_said_measured() {
        let mut c = NodeConditions {
            client: "abcid/0.1.0".into(),
            cometbft: Some("0.39.3".into()),
            app: Some("evmd (app version 0)".into()),
            block_max_gas: Some(10_000_000),
            block_max_bytes: Some(-1),
            ..NodeConditions::default()
        };
        let live = c.describe(Some(1_003.4));
        for part in [
            "CometBFT 0.39.3",
            "block gas 10000000, bytes no limit",
            "blocks every 1003 ms (median, measured)",
            "mempool not known",
        ] {
            assert!(live.contains(part), "{part:?} not in {live}");
        }
        c.read_config(&[
            "consensus.timeout_commit=\"1s\"".into(),
            "mempool.type=\"flood\"".into(),
            "mempool.size=5000".into(),
        ]);
        assert_eq!(c.timeout_commit.as_deref(), Some("1s"));
        assert_eq!(c.mempool.as_deref(), Some("flood, size 5000"));
        let made = c.describe(Some(1_003.4));
        assert!(made.contains("timeout_commit 1s (config.toml)"), "{made}");
        assert!(!made.contains("measured"), "{made}");
    }

    #[tokio::test]
    async fn a_node_that_does_not_answer_is_named_not_assumed() {
        // A port nothing listens on: every read fails, each is named.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let c = NodeConditions::read(Some(&url), Some(&url), &[]).await;
        assert_eq!((c.block_max_gas, c.cometbft.as_deref()), (None, None));
        let unread = c.unread.join("\n");
        for what in [
            "web3_clientVersion",
            "/status",
            "/consensus_params",
            "/abci_info",
        ] {
            assert!(unread.contains(what), "{what} not in {unread}");
        }
        let none = NodeConditions::read(Some(&url), None, &[]).await;
        assert!(none.unread.iter().any(|u| u.contains("give --comet-rpc")));
    }
}
