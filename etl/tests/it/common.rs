//! Test harness: real `redis-server` and real CometBFT/Tendermint nodes on
//! free 127.0.0.1 ports in temp dirs, stopped by PID on drop.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use feth_etl::ingest::{IngestConfig, Outcome};
use feth_etl::local_redis::LocalRedis;
use feth_etl::stats::{StatsQuery, StatsReport};

/// A free TCP port on 127.0.0.1 ([`feth_etl::local_redis::free_port`]).
pub fn free_port() -> u16 {
    feth_etl::local_redis::free_port().expect("a free port on 127.0.0.1")
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("etl/ has a parent")
        .to_path_buf()
}

/// A binary from env `var`, else `tools/bin/<name>`; panics with what to do.
pub fn tool(var: &str, name: &str, install_hint: &str) -> PathBuf {
    let p = std::env::var_os(var).map_or_else(
        || workspace_root().join("tools/bin").join(name),
        PathBuf::from,
    );
    assert!(
        p.is_file(),
        "{} not found (set {var} or install it: {install_hint})",
        p.display()
    );
    p
}

/// The CometBFT v0.38 binary.
pub fn cometbft() -> PathBuf {
    tool("FETH_COMETBFT", "cometbft", "scripts/install-tools.sh")
}

/// A child process killed (by its PID) when dropped.
pub struct Proc {
    pub child: Child,
}

impl Proc {
    /// SIGINT and wait up to 10 s (then SIGKILL).
    pub fn interrupt(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-INT", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A private redis-server with the tests' helpers.
pub struct Redis {
    _server: LocalRedis,
    pub url: String,
}

impl Redis {
    pub fn start() -> Self {
        let server = LocalRedis::start().unwrap_or_else(|e| panic!("{e:#}"));
        Redis {
            url: server.url.clone(),
            _server: server,
        }
    }

    pub async fn con(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url.as_str())
            .expect("url")
            .get_multiplexed_async_connection()
            .await
            .expect("connect to test redis")
    }

    pub async fn cmd<T: redis::FromRedisValue>(&self, args: &[&str]) -> T {
        let mut c = self.con().await;
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        cmd.query_async(&mut c)
            .await
            .unwrap_or_else(|e| panic!("redis {args:?}: {e}"))
    }

    /// Everything under `feth:` except run records and timestamps of
    /// metadata updates: what stats are computed from.
    pub async fn snapshot(&self) -> BTreeMap<String, String> {
        let mut c = self.con().await;
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg("feth:*")
            .query_async(&mut c)
            .await
            .expect("KEYS");
        keys.retain(|k| !(k.contains(":run:") || k.ends_with(":runs")));
        let mut out = BTreeMap::new();
        for chunk in keys.chunks(5000) {
            let mut p = redis::pipe();
            for k in chunk {
                p.cmd("TYPE").arg(k);
            }
            let types: Vec<String> = p.query_async(&mut c).await.expect("TYPE");
            let mut p = redis::pipe();
            for (k, t) in chunk.iter().zip(&types) {
                match t.as_str() {
                    "hash" => p.cmd("HGETALL").arg(k),
                    "zset" => p.cmd("ZRANGE").arg(k).arg(0).arg(-1).arg("WITHSCORES"),
                    "set" => p.cmd("SMEMBERS").arg(k),
                    other => panic!("unexpected type {other} of {k}"),
                };
            }
            let values: Vec<redis::Value> = p.query_async(&mut c).await.expect("values");
            for ((k, t), v) in chunk.iter().zip(&types).zip(values) {
                let v = match t.as_str() {
                    "hash" => {
                        let mut h: BTreeMap<String, String> =
                            redis::from_redis_value(v).expect("hash");
                        h.remove("updated_ms");
                        format!("{h:?}")
                    }
                    "zset" => {
                        let z: Vec<(String, f64)> = redis::from_redis_value(v).expect("zset");
                        format!("{z:?}")
                    }
                    _ => {
                        let mut s: Vec<String> = redis::from_redis_value(v).expect("set");
                        s.sort();
                        format!("{s:?}")
                    }
                };
                out.insert(k.clone(), v);
            }
        }
        out
    }
}

/// Log format of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Plain,
    Json,
}

/// A single-validator (or follower) node.
pub struct Node {
    pub proc: Option<Proc>,
    pub home: tempfile::TempDir,
    pub bin: PathBuf,
    pub rpc_port: u16,
    pub p2p_port: u16,
    pub log: PathBuf,
    pub app: String,
    pub http: reqwest::Client,
}

impl Node {
    /// Initialises a home: fast blocks, the given log format.
    pub fn init(bin: &Path, format: LogFormat, app: &str) -> Self {
        let home = tempfile::tempdir().expect("tempdir");
        let ok = Command::new(bin)
            .args(["init", "--home"])
            .arg(home.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run init");
        assert!(ok.success(), "{} init failed", bin.display());
        let cfg = home.path().join("config/config.toml");
        let text = std::fs::read_to_string(&cfg).expect("config.toml");
        let fmt = if format == LogFormat::Json {
            "json"
        } else {
            "plain"
        };
        let text: String = text
            .lines()
            .map(|l| {
                if l.starts_with("timeout_commit =") {
                    "timeout_commit = \"200ms\"".to_string()
                } else if l.starts_with("log_format =") {
                    format!("log_format = \"{fmt}\"")
                } else if l.starts_with("addr_book_strict =") {
                    "addr_book_strict = false".to_string()
                } else if l.starts_with("allow_duplicate_ip =") {
                    "allow_duplicate_ip = true".to_string()
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&cfg, text).expect("write config");
        let log = home.path().join("node.log");
        Node {
            proc: None,
            bin: bin.to_path_buf(),
            rpc_port: free_port(),
            p2p_port: free_port(),
            log,
            home,
            app: app.to_string(),
            http: reqwest::Client::new(),
        }
    }

    /// A follower of `leader`: same genesis, not a validator, peers with it.
    pub fn follower_of(leader: &Node, format: LogFormat) -> Self {
        let n = Node::init(&leader.bin, format, &leader.app);
        std::fs::copy(
            leader.home.path().join("config/genesis.json"),
            n.home.path().join("config/genesis.json"),
        )
        .expect("copy genesis");
        n
    }

    pub fn node_id(&self) -> String {
        let out = Command::new(&self.bin)
            .args(["show-node-id", "--home"])
            .arg(self.home.path())
            .output()
            .expect("show-node-id");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Starts (appending to the log) and waits until its own RPC answers.
    /// Ports come from `free_port`, which another process may take between
    /// the check and the node's bind: a node that exits at start, or a port
    /// that answers as another node, gets fresh ports and another try.
    pub async fn start(&mut self, peers: Option<&str>) {
        let id = self.node_id();
        for attempt in 1..=3 {
            self.spawn(peers);
            match self.wait_own_rpc(&id).await {
                Ok(()) => return,
                Err(why) if attempt < 3 => {
                    eprintln!("node start, attempt {attempt}: {why}; new ports");
                    self.stop();
                    self.rpc_port = free_port();
                    self.p2p_port = free_port();
                }
                Err(why) => panic!("{why}; log: {}", self.log.display()),
            }
        }
    }

    fn spawn(&mut self, peers: Option<&str>) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log file");
        let mut cmd = Command::new(&self.bin);
        cmd.arg("start")
            .arg("--home")
            .arg(self.home.path())
            .arg(format!("--proxy_app={}", self.app))
            .arg(format!("--rpc.laddr=tcp://127.0.0.1:{}", self.rpc_port))
            .arg(format!("--p2p.laddr=tcp://127.0.0.1:{}", self.p2p_port));
        if let Some(p) = peers {
            cmd.arg(format!("--p2p.persistent_peers={p}"));
        }
        let child = cmd
            .stdout(log.try_clone().expect("dup"))
            .stderr(log)
            .spawn()
            .expect("spawn node");
        self.proc = Some(Proc { child });
    }

    /// Waits until the RPC port answers as node `id` (this node).
    async fn wait_own_rpc(&mut self, id: &str) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.rpc("status").await {
                let answered = status["node_info"]["id"].as_str().unwrap_or_default();
                if answered == id {
                    return Ok(());
                }
                return Err(format!(
                    "RPC port {} answered as node {answered:?}, not {id}: another process owns it",
                    self.rpc_port
                ));
            }
            let exited = self.proc.as_mut().map(|p| p.child.try_wait());
            if let Some(Ok(Some(status))) = exited {
                return Err(format!(
                    "node exited at start ({status}); a port was taken?"
                ));
            }
            if Instant::now() > deadline {
                return Err(format!("node RPC on {} did not come up", self.rpc_port));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn stop(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.interrupt();
        }
    }

    pub fn rpc_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.rpc_port)
    }

    /// GET `path` on the node's RPC; the `result` object.
    pub async fn rpc(&self, path: &str) -> Option<serde_json::Value> {
        let r = self
            .http
            .get(format!("{}/{path}", self.rpc_url()))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .ok()?;
        let v: serde_json::Value = r.json().await.ok()?;
        v.get("result").cloned()
    }

    pub async fn height(&self) -> u64 {
        let s = self.rpc("status").await.expect("status");
        s["sync_info"]["latest_block_height"]
            .as_str()
            .and_then(|h| h.parse().ok())
            .expect("height")
    }

    pub async fn chain_id(&self) -> String {
        let s = self.rpc("status").await.expect("status");
        s["node_info"]["network"]
            .as_str()
            .expect("network")
            .to_string()
    }

    pub async fn wait_height(&self, h: u64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.height().await < h {
            assert!(Instant::now() < deadline, "node stuck below height {h}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sends `n` key=value txs (async broadcast), `bad` of them malformed
    /// validator txs the persistent kvstore rejects in DeliverTx.
    pub async fn send_txs(&self, tag: &str, n: usize, bad: usize) {
        for i in 0..n {
            let tx = if i < bad {
                format!("val:bad{tag}{i}")
            } else {
                format!("{tag}k{i}={tag}v{i}")
            };
            let r = self.rpc(&format!("broadcast_tx_async?tx=\"{tx}\"")).await;
            assert!(r.is_some(), "broadcast failed");
            if i % 5 == 4 {
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
        }
    }

    /// What the node says about heights `1..=to`: (txs, valid, invalid, header time ns).
    pub async fn truth(&self, to: u64) -> BTreeMap<u64, (u64, u64, u64, i64)> {
        let mut out = BTreeMap::new();
        for h in 1..=to {
            let b = self.rpc(&format!("block?height={h}")).await.expect("block");
            let txs = b["block"]["data"]["txs"].as_array().map_or(0, Vec::len) as u64;
            let t: jiff::Timestamp = b["block"]["header"]["time"]
                .as_str()
                .expect("time")
                .parse()
                .expect("rfc3339");
            let r = self
                .rpc(&format!("block_results?height={h}"))
                .await
                .expect("block_results");
            let results = r["txs_results"].as_array().cloned().unwrap_or_default();
            let invalid = results
                .iter()
                .filter(|x| x["code"].as_u64().unwrap_or(0) != 0)
                .count() as u64;
            assert_eq!(results.len() as u64, txs, "height {h}: results vs txs");
            out.insert(
                h,
                (
                    txs,
                    txs - invalid,
                    invalid,
                    i64::try_from(t.as_nanosecond()).expect("fits"),
                ),
            );
        }
        out
    }
}

/// Ingest configuration for tests (no progress bar, short retries).
pub fn ingest_args(redis: &str, logs: &[&Path]) -> IngestConfig {
    IngestConfig {
        tendermint: logs.iter().map(|p| p.to_path_buf()).collect(),
        redis: Some(redis.to_string()),
        redis_retry: Duration::from_secs(2),
        progress: false,
        log_tz: Some("local".into()),
        ..IngestConfig::default()
    }
}

pub async fn ingest(args: &IngestConfig) -> Outcome {
    let out = feth_etl::ingest::run(args, std::future::pending())
        .await
        .unwrap_or_else(|e| panic!("ingest failed: {e}"));
    assert!(out.rpc_error.is_none(), "rpc error: {:?}", out.rpc_error);
    out
}

pub fn stats_args(redis: &str, chain: &str) -> StatsQuery {
    StatsQuery {
        redis: redis.to_string(),
        chain_id: chain.to_string(),
        redis_retry: Duration::from_secs(2),
        ..StatsQuery::default()
    }
}

pub async fn stats(args: &StatsQuery) -> StatsReport {
    feth_etl::stats::query(args)
        .await
        .unwrap_or_else(|e| panic!("stats failed: {e}"))
}
