//! Shared test support: a real devnet (CometBFT + abcid) on free ports in a
//! temporary folder, stopped when dropped.

use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use feth::accounts::KeySet;
use feth::devnet::{process, Devnet, DevnetOptions};
use feth::eth::EthClient;
use feth::fund;
use secp256k1::SecretKey;

/// A running devnet with its temp folder.
pub struct TestNet {
    pub devnet: Devnet,
    pub root: SecretKey,
    pub root_address: Address,
    _dir: tempfile::TempDir,
}

impl TestNet {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(tweak: impl Fn(&mut DevnetOptions)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let devnet = Devnet::start_private(dir.path(), tweak)
            .await
            .expect("devnet starts");
        let root = feth::keys::read_key_file(&devnet.state.root_key()).unwrap();
        Self {
            root_address: feth::keys::address_of(&root),
            root,
            devnet,
            _dir: dir,
        }
    }

    pub fn web3(&self) -> String {
        self.devnet.state.web3_url()
    }

    pub fn client(&self) -> EthClient {
        EthClient::new(&self.web3(), Duration::from_secs(10)).unwrap()
    }

    /// SIGKILLs abcid and waits until it has exited (CometBFT then stops on
    /// its own, as it does when its application disappears).
    pub fn kill_abcid(&mut self) {
        let pid = self.devnet.state.abcid_pid.take().expect("abcid runs");
        assert!(
            process::stop(pid, "abcid", Duration::ZERO),
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
        assert!(
            process::stop(pid, "cometbft", Duration::ZERO),
            "cometbft was running"
        );
    }

    /// Waits until the chain is `n` blocks past its current height.
    pub async fn wait_blocks(&self, n: u64) {
        let client = self.client();
        let start = client.block_number().await.unwrap();
        for _ in 0..600 {
            if client.block_number().await.unwrap_or(0) >= start + n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("chain did not advance {n} blocks");
    }
}

/// Polls `check` every 50 ms until it holds; panics naming `what` after `limit`.
pub async fn wait_until<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + limit;
    while !check().await {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `count` accounts derived from `seed`, each funded with 1 ETH from the root.
pub async fn funded(net: &TestNet, count: usize, seed: u8) -> (KeySet, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (keys, report) = fund::fund_seeded(
        &net.client(),
        &net.root,
        B256::repeat_byte(seed),
        count,
        U256::from(10u64).pow(U256::from(18u64)),
        &dir.path().join("keys.txt"),
    )
    .await
    .unwrap();
    assert_eq!(report.paid, count);
    (keys, dir)
}

/// An alloy wallet provider over HTTP to the devnet's web3, signing with `key`.
pub fn wallet(net: &TestNet, key: &SecretKey) -> impl alloy_provider::Provider {
    use alloy_network::EthereumWallet;
    use alloy_signer_local::PrivateKeySigner;
    let signer = PrivateKeySigner::from_bytes(&key.secret_bytes().into()).unwrap();
    alloy_provider::ProviderBuilder::new()
        .wallet(EthereumWallet::from(signer))
        .connect_http(net.web3().parse().unwrap())
}

/// The transactions of block `h`, as full objects (`eth_getBlockByNumber`
/// with `true`).
pub async fn block_txs(client: &EthClient, h: u64) -> Vec<serde_json::Value> {
    let block: serde_json::Value = client
        .call(
            "eth_getBlockByNumber",
            serde_json::json!([format!("0x{h:x}"), true]),
        )
        .await
        .unwrap();
    block["transactions"].as_array().unwrap().clone()
}
