//! Test support (feature `test-utils`): a real devnet on free loopback
//! ports in a temporary folder, stopped when dropped, a node made slow on
//! purpose (its web3 behind a toxiproxy link with latency), and a polling
//! wait.
//!
//! Shared by the agent's devnet tests and abcid's: one way to start a
//! chain for a test, so both suites exercise the same start-up path the
//! `feth devnet up` user does. Failures panic, as a test's should.

use std::future::Future;
use std::time::{Duration, Instant};

use alloy_network::EthereumWallet;
use alloy_primitives::Address;
use alloy_signer_local::PrivateKeySigner;
use feth_chain::eth::EthClient;
use feth_chain::keys;
use secp256k1::SecretKey;

use crate::links::LinkShape;
use crate::toxiproxy::{self, Toxiproxy};
use crate::{process, tools, Devnet, DevnetOptions};

/// How often [`wait_until`] and [`TestNet::wait_blocks`] poll.
const POLL: Duration = Duration::from_millis(50);

/// A running devnet with its temporary folder and its funded root key.
pub struct TestNet {
    /// The devnet's processes and state.
    pub devnet: Devnet,
    /// The funded root's private key.
    pub root: SecretKey,
    /// The root's address.
    pub root_address: Address,
    dir: tempfile::TempDir,
}

impl TestNet {
    /// Starts a devnet with the defaults of [`DevnetOptions::private`].
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts a devnet whose options `tweak` adjusts first.
    pub async fn start_with(tweak: impl Fn(&mut DevnetOptions)) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let devnet = Devnet::start_private(dir.path(), tweak)
            .await
            .expect("devnet starts");
        let root = keys::read_key_file(&devnet.state.root_key()).expect("the root key reads");
        Self {
            root_address: keys::address_of(&root),
            root,
            devnet,
            dir,
        }
    }

    /// The web3 URL.
    pub fn web3(&self) -> String {
        self.devnet.state.web3_url()
    }

    /// A JSON-RPC client of the web3 endpoint (10 s timeout).
    pub fn client(&self) -> EthClient {
        EthClient::new(&self.web3(), Duration::from_secs(10)).expect("a web3 client")
    }

    /// An alloy wallet provider over HTTP to the web3 endpoint, signing
    /// with `key`.
    pub fn wallet(&self, key: &SecretKey) -> impl alloy_provider::Provider {
        let signer = PrivateKeySigner::from_bytes(&key.secret_bytes().into()).expect("a valid key");
        alloy_provider::ProviderBuilder::new()
            .wallet(EthereumWallet::from(signer))
            .connect_http(self.web3().parse().expect("a valid URL"))
    }

    /// SIGKILLs abcid and waits until it has exited (CometBFT then stops on
    /// its own, as it does when its application disappears).
    pub fn kill_abcid(&mut self) {
        let pid = self.devnet.state.abcid_pid.take().expect("abcid runs");
        let name = crate::binary_name(&self.devnet.state.abcid);
        assert!(
            process::stop(pid, name, Duration::ZERO),
            "abcid was running"
        );
    }

    /// SIGKILLs CometBFT and waits until it has exited.
    pub fn kill_cometbft(&mut self) {
        let pid = self
            .devnet
            .state
            .cometbft_pid
            .take()
            .expect("cometbft runs");
        let name = crate::binary_name(&self.devnet.state.cometbft);
        assert!(
            process::stop(pid, name, Duration::ZERO),
            "cometbft was running"
        );
    }

    /// The web3 endpoint made slow on purpose: behind a toxiproxy link
    /// (a server of the test's own, on free loopback ports) that delays each
    /// direction by `latency_ms`, so every request takes at least twice that
    /// on any machine.
    pub async fn slow_web3(&self, latency_ms: u64) -> SlowLink {
        SlowLink::start(&self.web3(), latency_ms, self.dir.path()).await
    }

    /// Waits until the chain is `n` blocks past its current height (at
    /// most 30 s).
    pub async fn wait_blocks(&self, n: u64) {
        let client = self.client();
        let start = client.block_number().await.expect("a block number");
        let deadline = Instant::now() + Duration::from_secs(30);
        while client.block_number().await.unwrap_or(0) < start + n {
            assert!(
                Instant::now() < deadline,
                "chain did not advance {n} blocks"
            );
            tokio::time::sleep(POLL).await;
        }
    }
}

/// An HTTP endpoint behind a toxiproxy link with latency; its server (started
/// by [`TestNet::slow_web3`]) is stopped by PID when this is dropped.
pub struct SlowLink {
    pid: u32,
    url: String,
}

impl SlowLink {
    async fn start(upstream: &str, latency_ms: u64, dir: &std::path::Path) -> Self {
        let bin = tools::toxiproxy(false).expect("toxiproxy installed (scripts/setup.sh --test)");
        let ports = crate::free_ports(2).expect("two free ports");
        let (api, listen) = (ports[0], ports[1]);
        let log = dir.join("slow-link-toxiproxy.log");
        let pid = toxiproxy::start_server(&bin, api, &log)
            .await
            .expect("toxiproxy starts");
        let link = Self {
            pid,
            url: format!("http://127.0.0.1:{listen}"),
        };
        let client = Toxiproxy::new(api).expect("a toxiproxy client");
        let upstream = upstream.trim_start_matches("http://");
        let at = format!("127.0.0.1:{listen}");
        client.create("slow", &at, upstream).await.expect("a proxy");
        let shape = LinkShape {
            latency_ms,
            ..LinkShape::default()
        };
        client.shape("slow", &shape).await.expect("its latency");
        link
    }

    /// The slowed endpoint's URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for SlowLink {
    fn drop(&mut self) {
        process::stop(self.pid, toxiproxy::SERVER_NAME, Duration::ZERO);
    }
}

/// Polls `check` every 50 ms until it holds; panics naming `what` after
/// `limit`.
pub async fn wait_until<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(POLL).await;
    }
}
