//! abcid's `nonce-queue` patch behind a real CometBFT: nonces that arrive
//! out of order, each on a connection of its own, all land, in nonce order.

use crate::common::{committed_receipt, TestNet};
use alloy_network::TransactionBuilder;
use alloy_primitives::{Address, U256};
use alloy_provider::Provider;
use alloy_rpc_types_eth::TransactionRequest;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nonces_sent_out_of_order_on_three_connections_land_in_order() {
    let net = TestNet::start_with(|o| o.patches = "all,nonce-queue".to_string()).await;
    let connect = || net.wallet(&net.root);
    let first = connect();
    let version = first.get_client_version().await.unwrap();
    assert!(version.ends_with("/patches=all,nonce-queue"), "{version}");
    let n = first.get_transaction_count(net.root_address).await.unwrap();
    let mut hashes = Vec::new();
    for offset in [2u64, 0, 1] {
        // A new provider, so a new HTTP connection, for each.
        let tx = TransactionRequest::default()
            .with_to(Address::repeat_byte(0x61))
            .with_value(U256::from(10 + offset))
            .with_nonce(n + offset)
            .with_gas_limit(21_000);
        let pending = connect().send_transaction(tx).await.unwrap();
        hashes.push((offset, *pending.tx_hash()));
    }
    hashes.sort();
    let mut receipts = Vec::new();
    for (_, hash) in &hashes {
        receipts.push(committed_receipt(&first, *hash, Duration::from_secs(30)).await);
    }
    assert!(receipts.iter().all(|r| r.status()), "{receipts:?}");
    // In nonce order: by block, then by position within it.
    let places: Vec<(u64, u64)> = receipts
        .iter()
        .map(|r| (r.block_number.unwrap(), r.transaction_index.unwrap()))
        .collect();
    let mut sorted = places.clone();
    sorted.sort();
    assert_eq!(places, sorted, "nonce order: {places:?}");
    assert_eq!(
        first.get_transaction_count(net.root_address).await.unwrap(),
        n + 3
    );
}
