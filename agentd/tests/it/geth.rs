//! A real `geth --dev` (installed into tools/bin by `scripts/setup.sh
//! --test`) on a free loopback port, with its data in a temporary folder,
//! killed by PID when dropped.
//!
//! Its dev account is prefunded and unlocked but its key is random, so
//! [`GethDev::fund`] pays a key of ours from it with `eth_sendTransaction`;
//! `feth fund` then works with that key as against any node.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use feth::accounts::{KeySet, KeySource};
use feth::eth::EthClient;
use feth::fund::{self, FundPlan, FundVia};
use secp256k1::SecretKey;
use serde_json::json;

use crate::common::wait_until;

/// Block gas limit of the dev chain: 1,000 transfers a second fit 14 times.
const GAS_LIMIT: u64 = 300_000_000;

/// A running `geth --dev`.
pub struct GethDev {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
}

impl GethDev {
    /// Starts geth sealing a block every second; its txpool takes thousands
    /// of pending and queued transactions per account, so that one sender
    /// is bounded by neither.
    pub async fn start() -> Self {
        let geth = feth::devnet::tools::tools_dir().join("bin/geth");
        assert!(
            geth.is_file(),
            "{} is missing: run `bash scripts/setup.sh --test`",
            geth.display()
        );
        for attempt in 1..=3 {
            let ports = feth::devnet::free_ports(2).unwrap();
            let (http, auth) = (ports[0], ports[1]);
            let dir = tempfile::tempdir().unwrap();
            let log = std::fs::File::create(dir.path().join("geth.log")).unwrap();
            let child = Command::new(&geth)
                .args(["--dev", "--dev.period", "1"])
                .args(["--dev.gaslimit", &GAS_LIMIT.to_string()])
                .arg("--datadir")
                .arg(dir.path().join("data"))
                .args(["--http", "--http.addr", "127.0.0.1"])
                .args(["--http.port", &http.to_string()])
                .args(["--http.api", "eth,net,web3,txpool"])
                .args(["--authrpc.port", &auth.to_string()])
                .args([
                    "--ipcdisable",
                    "--nodiscover",
                    "--maxpeers",
                    "0",
                    "--port",
                    "0",
                ])
                .args([
                    "--txpool.accountslots",
                    "4096",
                    "--txpool.globalslots",
                    "20000",
                ])
                .args([
                    "--txpool.accountqueue",
                    "1024",
                    "--txpool.globalqueue",
                    "4096",
                ])
                .args(["--verbosity", "2"])
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap();
            let mut node = Self {
                child,
                url: format!("http://127.0.0.1:{http}"),
                dir,
            };
            if node.answers().await {
                return node;
            }
            let log = std::fs::read_to_string(node.dir.path().join("geth.log")).unwrap_or_default();
            eprintln!("geth start, attempt {attempt}, failed:\n{log}");
            let _ = node.child.kill();
        }
        panic!("geth --dev did not start in three attempts");
    }

    /// Polls (20 s at most) until the web3 server answers; `false` when geth
    /// exited or never answered.
    async fn answers(&mut self) -> bool {
        let client = self.client();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return false;
            }
            if client.block_number().await.is_ok() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    /// The web3 endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn client(&self) -> EthClient {
        EthClient::new(&self.url, Duration::from_secs(10)).unwrap()
    }

    /// Pays `wei` to `to` from the dev account and waits until it is committed.
    pub async fn fund(&self, to: Address, wei: U256) {
        let client = self.client();
        let accounts: Vec<Address> = client.call("eth_accounts", json!([])).await.unwrap();
        let dev = accounts.first().expect("geth --dev has a dev account");
        let _: alloy_primitives::B256 = client
            .call(
                "eth_sendTransaction",
                json!([{ "from": dev, "to": to, "value": wei }]),
            )
            .await
            .unwrap();
        wait_until(
            "the dev account's payment is committed",
            Duration::from_secs(30),
            || async { client.balance(to).await.unwrap_or_default() >= wei },
        )
        .await;
    }
}

impl GethDev {
    /// `count` senders of the seed `repeat_byte(seed)`, 20 ETH each, paid
    /// by `feth fund` (its batch path) from a root key the dev account
    /// funded; the folder holds the funding journal.
    pub async fn funded(&self, count: usize, seed: u8) -> (KeySet, tempfile::TempDir) {
        let root = SecretKey::from_byte_array([0x42; 32]).unwrap();
        let eth = U256::from(10u64).pow(U256::from(18u64));
        let need = eth * U256::from(20 * count as u64 + 80);
        self.fund(feth::keys::address_of(&root), need).await;
        let dir = tempfile::tempdir().unwrap();
        let mut keys = KeySet::new(KeySource::Seed(B256::repeat_byte(seed)));
        keys.extend_to(count);
        // geth's gas schedule prices a new account far above abcid's (about
        // 222,000 gas for a batch paying one): batches are sized by its own
        // estimates.
        let plan = FundPlan {
            via: FundVia::Batch,
            ..FundPlan::new(eth * U256::from(20u64))
        };
        let journal = dir.path().join("keys.txt.funding.json");
        let funded = fund::fund(&self.client(), &root, &keys.addresses, &plan, &journal)
            .await
            .unwrap();
        assert_eq!((funded.paid, funded.underfunded), (count, 0));
        assert_eq!(funded.via, "batch");
        (keys, dir)
    }
}

impl Drop for GethDev {
    fn drop(&mut self) {
        // Its data is a throw-away temporary folder: no graceful shutdown needed.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
