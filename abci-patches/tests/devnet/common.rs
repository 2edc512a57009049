//! Support for abcid's devnet tests: [`TestNet`] and [`wait_until`] are
//! the devnet crate's, shared with the agent's tests.

use std::time::Duration;

use alloy_primitives::{B256, U256};
use alloy_provider::Provider;
use alloy_rpc_types_eth::TransactionReceipt;
use feth_chain::accounts::KeySet;

pub use feth_devnet::testnet::{wait_until, TestNet};

/// `count` accounts derived from `seed`, each funded with 1 ETH from the
/// root by feth's funding step.
pub async fn funded(net: &TestNet, count: usize, seed: u8) -> (KeySet, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (keys, report) = feth_load::fund::fund_seeded(
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

/// The receipt of `hash` once its transaction is committed, polled through
/// `provider` for at most `limit`.
pub async fn committed_receipt(
    provider: &impl Provider,
    hash: B256,
    limit: Duration,
) -> TransactionReceipt {
    wait_until("the transaction is committed", limit, || async {
        provider
            .get_transaction_receipt(hash)
            .await
            .unwrap()
            .is_some()
    })
    .await;
    provider
        .get_transaction_receipt(hash)
        .await
        .unwrap()
        .unwrap()
}
