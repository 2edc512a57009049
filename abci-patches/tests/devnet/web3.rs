//! abcid behind a real CometBFT, driven by alloy's standard provider: the
//! balances, nonces, receipts and blocks a standard client reads.

use crate::common::TestNet;
use alloy_network::TransactionBuilder;
use alloy_primitives::{Address, Bytes, U256};
use alloy_provider::Provider;
use alloy_rpc_types_eth::{BlockNumberOrTag, TransactionRequest};

/// Init code of a contract whose runtime stores the first calldata word in
/// slot 0 (when there is calldata) and returns slot 0.
const STORE_INIT: &str = "6017600c60003960176000f33615600b576000356000555b60005460005260206000f3";

fn provider(net: &TestNet) -> impl Provider {
    net.wallet(&net.root)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_are_committed_as_a_standard_client_reads_them() {
    let net = TestNet::start().await;
    let p = provider(&net);
    assert_eq!(p.get_chain_id().await.unwrap(), 9000);
    let to = Address::repeat_byte(0x42);
    let before = p.get_balance(net.root_address).await.unwrap();
    let nonce_before = p.get_transaction_count(net.root_address).await.unwrap();

    // EIP-1559 (alloy's default, fees estimated through eth_feeHistory) …
    let value = U256::from(1_000_000_000_000_000u64);
    let r1 = p
        .send_transaction(TransactionRequest::default().with_to(to).with_value(value))
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    assert!(r1.status());
    assert_eq!(r1.gas_used, 21_000);
    assert_eq!(r1.from, net.root_address);
    assert_eq!(r1.to, Some(to));
    // … and legacy, priced with eth_gasPrice.
    let gas_price = p.get_gas_price().await.unwrap();
    let r2 = p
        .send_transaction(
            TransactionRequest::default()
                .with_to(to)
                .with_value(value)
                .with_gas_price(gas_price)
                .with_gas_limit(21_000),
        )
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    assert!(r2.status());

    assert_eq!(p.get_balance(to).await.unwrap(), value * U256::from(2));
    assert_eq!(
        p.get_transaction_count(net.root_address).await.unwrap(),
        nonce_before + 2
    );
    let fees = U256::from(r1.gas_used as u128 * r1.effective_gas_price)
        + U256::from(r2.gas_used as u128 * r2.effective_gas_price);
    assert_eq!(
        p.get_balance(net.root_address).await.unwrap(),
        before - value * U256::from(2) - fees
    );

    // The block holds the transaction, with the header time as timestamp.
    let n1 = r1.block_number.unwrap();
    let block = p
        .get_block_by_number(BlockNumberOrTag::Number(n1))
        .full()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(block.header.number, n1);
    assert_eq!(Some(block.header.hash), r1.block_hash);
    // The devnet's block gas limit, the same in abcid and in CometBFT.
    assert_eq!(block.header.gas_limit, 150_000_000);
    let params: serde_json::Value = reqwest::get(format!(
        "{}/consensus_params?height={n1}",
        net.devnet.state.rpc_url()
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(
        params["result"]["consensus_params"]["block"]["max_gas"],
        "150000000"
    );
    assert!(block.header.timestamp > 1_700_000_000);
    let hashes: Vec<_> = block.transactions.hashes().collect();
    assert!(hashes.contains(&r1.transaction_hash));
    let parent = p
        .get_block_by_number(BlockNumberOrTag::Number(n1 - 1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(block.header.parent_hash, parent.header.hash);
    assert!(block.header.timestamp >= parent.header.timestamp);
    let by_hash = p
        .get_block_by_hash(block.header.hash)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_hash.header.number, n1);
    let tx = p
        .get_transaction_by_hash(r1.transaction_hash)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(tx.block_number, Some(n1));
    assert_eq!(tx.inner.signer(), net.root_address);
}

/// On the "before" node (`feth devnet up --patches none`), which says so in
/// its client version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contracts_deploy_and_answer_calls() {
    let net = TestNet::start_with(|o| o.patches = "none".to_string()).await;
    let p = provider(&net);
    let version = p.get_client_version().await.unwrap();
    assert!(version.ends_with("/patches=none"), "{version}");
    let init: Bytes = hex::decode(STORE_INIT).unwrap().into();
    let deploy = p
        .send_transaction(TransactionRequest::default().with_deploy_code(init))
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    assert!(deploy.status());
    let contract = deploy.contract_address.expect("contract address");
    assert_eq!(p.get_code_at(contract).await.unwrap().len(), 23);

    let word = U256::from(0xfeed_u64);
    let store = TransactionRequest::default()
        .with_to(contract)
        .with_input(Bytes::from(word.to_be_bytes::<32>().to_vec()));
    let gas = p.estimate_gas(store.clone()).await.unwrap();
    assert!(
        gas > 21_000 + 20_000,
        "an SSTORE costs more than a transfer: {gas}"
    );
    let r = p
        .send_transaction(store)
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    assert!(r.status());
    let out = p
        .call(TransactionRequest::default().with_to(contract))
        .await
        .unwrap();
    assert_eq!(U256::from_be_slice(&out), word);
}

/// `feth devnet up --no-profiler` (what `feth bench profiler` compares
/// against): abcid serves the chain with no profiler RPC at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_devnet_without_the_profiler_serves_the_chain_and_no_profiler_rpc() {
    let net = TestNet::start_with(|o| o.no_profiler = true).await;
    let p = provider(&net);
    let to = Address::repeat_byte(0x43);
    let receipt = p
        .send_transaction(
            TransactionRequest::default()
                .with_to(to)
                .with_value(U256::from(7)),
        )
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    assert!(receipt.status());
    assert_eq!(p.get_balance(to).await.unwrap(), U256::from(7));
    let profiler =
        std::net::TcpStream::connect(("127.0.0.1", net.devnet.state.options.profiler_port));
    assert!(profiler.is_err(), "no profiler RPC listens");
    assert!(!net.devnet.state.options.dir.join("flamegraphs").exists());
}
