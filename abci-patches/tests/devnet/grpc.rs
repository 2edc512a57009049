//! abcid behind CometBFT's gRPC ABCI client (`abci = "grpc"`, a devnet made
//! with `--set abci=grpc`, CometBFT's mempool on): CometBFT reaches abcid
//! over TCP, transfers sent at once on many connections are checked (one
//! call in flight per connection: the rest wait in CometBFT's client) and
//! committed, and CheckTx's refusal reaches the web3 client.

use crate::common::{committed_receipt, wait_until, TestNet};
use alloy_network::TransactionBuilder;
use alloy_primitives::{Address, U256};
use alloy_provider::Provider;
use alloy_rpc_types_eth::TransactionRequest;
use feth_chain::keys;
use std::time::Duration;

const ETHER: u128 = 1_000_000_000_000_000_000;

/// A plain transfer of `value` wei to `to` with nonce `nonce`.
fn transfer(to: Address, value: u128, nonce: u64) -> TransactionRequest {
    TransactionRequest::default()
        .with_to(to)
        .with_value(U256::from(value))
        .with_nonce(nonce)
        .with_gas_limit(21_000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_devnet_over_grpc_commits_concurrent_transfers_and_reports_refusals() {
    let net = TestNet::start_with(|o| {
        o.set.push("abci=grpc".to_string());
        // CometBFT's mempool, so that CheckTx goes over gRPC.
        o.patches = "all,-app-mempool".to_string();
        o.abcid_args.extend([
            "--grpc-max-calls-per-connection".to_string(),
            "1".to_string(),
        ]);
    })
    .await;
    let state = &net.devnet.state;
    let settings = state.cometbft_settings(&["abci", "proxy_app"]).unwrap();
    let proxy_app = format!("proxy_app=\"127.0.0.1:{}\"", state.options.abci_port);
    assert_eq!(settings, ["abci=\"grpc\"".to_string(), proxy_app]);
    let log = std::fs::read_to_string(state.abcid_log()).unwrap();
    assert!(log.contains("ABCI (gRPC) listening"), "{log}");
    let mempool = state.cometbft_settings(&["mempool.type"]).unwrap();
    assert_eq!(mempool, ["mempool.type=\"flood\"".to_string()]);

    let wallet = net.wallet(&net.root);
    let n = wallet
        .get_transaction_count(net.root_address)
        .await
        .unwrap();
    // Ten accounts funded one after the other (each send answered before
    // the next), then a transfer from each, all ten in flight at once on
    // connections of their own: CometBFT's mempool checks them concurrently
    // over gRPC, in whatever order they arrive.
    let senders: Vec<_> = (0..10).map(|_| keys::random_key()).collect();
    for (i, key) in senders.iter().enumerate() {
        let tx = transfer(keys::address_of(key), ETHER, n + i as u64);
        let _pending = wallet.send_transaction(tx).await.unwrap();
    }
    wait_until("the ten are funded", Duration::from_secs(60), || async {
        wallet
            .get_transaction_count(net.root_address)
            .await
            .unwrap()
            == n + 10
    })
    .await;
    let sends = senders.iter().zip(1u64..).map(|(key, value)| {
        let wallet = net.wallet(key);
        let tx = transfer(Address::repeat_byte(0x62), u128::from(value), 0);
        async move { *wallet.send_transaction(tx).await.unwrap().tx_hash() }
    });
    let hashes = futures::future::join_all(sends).await;
    for hash in &hashes {
        let receipt = committed_receipt(&wallet, *hash, Duration::from_secs(60)).await;
        assert!(receipt.status(), "{hash} failed");
    }
    assert_eq!(
        wallet
            .get_balance(Address::repeat_byte(0x62))
            .await
            .unwrap(),
        U256::from((1..=10u64).sum::<u64>())
    );

    // A used nonce: CheckTx refuses it over gRPC, and web3 says why.
    let stale = transfer(Address::repeat_byte(0x62), 1, n);
    let err = wallet
        .send_transaction(stale)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("nonce too low"), "{err}");
}
