//! Shared test support: a real devnet (CometBFT + abcid) on free ports in a
//! temporary folder, stopped when dropped ([`TestNet`], shared with abcid's
//! devnet tests), and the agent's helpers on top of it.

use std::process::Stdio;

use alloy_primitives::{B256, U256};
use feth::accounts::KeySet;
use feth::eth::EthClient;
use feth::fund;

pub use feth_devnet::testnet::{wait_until, TestNet};

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

/// A busy loop (one CPU's worth), on `cpu` or wherever the kernel puts it,
/// killed by PID when dropped; it also ends with the test process (its
/// parent), even when that is killed and cannot drop it.
pub struct Hog(std::process::Child);

impl Hog {
    /// A busy loop pinned to `cpu`.
    pub fn on_cpu(cpu: usize) -> Self {
        Self::spawn(&["taskset", "-c", &cpu.to_string()])
    }

    /// A busy loop on any CPU.
    pub fn anywhere() -> Self {
        Self::spawn(&[])
    }

    fn spawn(prefix: &[&str]) -> Self {
        let mut argv: Vec<&str> = prefix.to_vec();
        argv.extend(["sh", "-c", "while kill -0 $PPID; do :; done"]);
        let child = std::process::Command::new(argv[0])
            .args(&argv[1..])
            .stdout(Stdio::null())
            .spawn()
            .expect("the busy loop starts");
        Self(child)
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
