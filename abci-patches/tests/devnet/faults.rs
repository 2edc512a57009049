//! Bad transactions get their documented errors and change nothing; killing
//! abcid or CometBFT with SIGKILL mid-stream loses nothing committed.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::common::{wait_until, TestNet};
use alloy_primitives::{Address, Bytes, U256};
use feth_chain::eth::{EthClient, RpcError};
use feth_chain::sign::{self, Fee, TxRequest};
use feth_devnet::{Devnet, DevnetOptions, DevnetState, Ports};
use secp256k1::SecretKey;

const GWEI: u128 = 1_000_000_000;

fn transfer(key: &SecretKey, chain_id: u64, nonce: u64, to: Address, value: U256) -> Bytes {
    sign::sign(
        key,
        &TxRequest {
            chain_id,
            nonce,
            to: Some(to),
            value,
            gas_limit: 21_000,
            fee: Fee::Eip1559 {
                max_fee: 2 * GWEI,
                tip: 1,
            },
            input: Bytes::new(),
        },
    )
    .raw
}

enum BadSig {
    HighS,
    ZeroR,
}

/// Re-encodes a signed EIP-1559 transaction with a broken signature.
fn resign(raw: &[u8], bad: BadSig) -> Bytes {
    use alloy_consensus::TxEnvelope;
    use alloy_eips::eip2718::{Decodable2718, Encodable2718};
    use alloy_primitives::Signature;
    let TxEnvelope::Eip1559(signed) = TxEnvelope::decode_2718(&mut &raw[..]).unwrap() else {
        panic!("not an EIP-1559 transaction");
    };
    let sig = *signed.signature();
    // secp256k1 group order n.
    let n = U256::from_str_radix(
        "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141",
        16,
    )
    .unwrap();
    let broken = match bad {
        BadSig::HighS => Signature::new(sig.r(), n - sig.s(), !sig.v()),
        BadSig::ZeroR => Signature::new(U256::ZERO, sig.s(), sig.v()),
    };
    let tx = signed.strip_signature();
    let env: TxEnvelope = alloy_consensus::Signed::new_unhashed(tx, broken).into();
    env.encoded_2718().into()
}

async fn rejection(client: &EthClient, raw: &[u8]) -> String {
    match client.send_raw(raw).await {
        Err(RpcError::Rpc { code, message }) => {
            assert_eq!(code, -32000, "{message}");
            message
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_transactions_get_their_documented_errors() {
    let net = TestNet::start().await;
    // CometBFT reaches abcid on the devnet's private unix socket.
    let options = &net.devnet.state.options;
    let socket = options.abci_socket().unwrap();
    assert_eq!(
        options.abci_addr().unwrap(),
        format!("unix://{}", socket.display())
    );
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let client = net.client();
    let root = net.root_address;
    let to = Address::repeat_byte(7);
    let one = U256::from(1u64);
    // Commit one good transfer so that nonce 0 is used.
    let good = transfer(&net.root, 9000, 0, to, one);
    client.send_raw(&good).await.unwrap();
    net.wait_blocks(2).await;
    let balance = client.balance(root).await.unwrap();
    let nonce = client.nonce(root, false).await.unwrap();
    assert_eq!(nonce, 1);

    let cases: Vec<(&str, Bytes)> = vec![
        (
            "invalid chain id: have 1, want 9000",
            transfer(&net.root, 1, 1, to, one),
        ),
        (
            "nonce too low: next nonce 1, tx nonce 0",
            transfer(&net.root, 9000, 0, to, U256::from(2u64)),
        ),
        (
            "nonce too high: next nonce 1, tx nonce 5",
            transfer(&net.root, 9000, 5, to, one),
        ),
        ("insufficient funds for gas * price + value", {
            let poor = feth_chain::keys::random_key();
            transfer(&poor, 9000, 0, to, one)
        }),
        // The free-spam attack: value + gas × fee wraps in 256 bits.
        (
            "insufficient funds for gas * price + value: tx cost overflows 256 bits",
            transfer(&net.root, 9000, 1, to, U256::MAX),
        ),
        (
            "oversized data",
            sign::sign(
                &net.root,
                &TxRequest {
                    chain_id: 9000,
                    nonce: 1,
                    to: Some(to),
                    value: one,
                    gas_limit: 29_000_000,
                    fee: Fee::Eip1559 {
                        max_fee: 2 * GWEI,
                        tip: 1,
                    },
                    input: vec![1u8; 200 * 1024].into(),
                },
            )
            .raw,
        ),
        (
            "invalid transaction encoding",
            Bytes::from_static(&[0x02, 0xde, 0xad, 0xbe, 0xef]),
        ),
        (
            "intrinsic gas too low",
            sign::sign(
                &net.root,
                &TxRequest {
                    chain_id: 9000,
                    nonce: 1,
                    to: Some(to),
                    value: one,
                    gas_limit: 20_000,
                    fee: Fee::Eip1559 {
                        max_fee: 2 * GWEI,
                        tip: 1,
                    },
                    input: Bytes::new(),
                },
            )
            .raw,
        ),
        (
            "max fee per gas less than block base fee",
            sign::sign(
                &net.root,
                &TxRequest {
                    chain_id: 9000,
                    nonce: 1,
                    to: Some(to),
                    value: one,
                    gas_limit: 21_000,
                    fee: Fee::Eip1559 {
                        max_fee: 10,
                        tip: 1,
                    },
                    input: Bytes::new(),
                },
            )
            .raw,
        ),
    ];
    for (expected, raw) in &cases {
        let message = rejection(&client, raw).await;
        assert!(
            message.starts_with(expected),
            "expected {expected:?}, got {message:?}"
        );
    }
    // Malleable (high-s) and zero-r signatures are refused outright.
    for bad in [BadSig::HighS, BadSig::ZeroR] {
        let raw = resign(&transfer(&net.root, 9000, 1, to, one), bad);
        assert_eq!(
            rejection(&client, &raw).await,
            "invalid sender: bad signature"
        );
    }
    // The same bytes twice: the mempool cache answers "already known".
    let next = transfer(&net.root, 9000, 1, to, one);
    client.send_raw(&next).await.unwrap();
    assert_eq!(rejection(&client, &next).await, "already known");

    net.wait_blocks(2).await;
    // Only the one good transfer changed anything.
    assert_eq!(client.nonce(root, false).await.unwrap(), 2);
    assert_eq!(client.balance(to).await.unwrap(), U256::from(2u64));
    assert!(client.balance(root).await.unwrap() < balance);
}

/// Sends `count` transfers of 1 wei to `to` from `key`, starting at `nonce`;
/// returns the hashes the node accepted.
async fn stream(
    client: &EthClient,
    key: &SecretKey,
    nonce: u64,
    count: u64,
    to: Address,
) -> Vec<alloy_primitives::B256> {
    let mut accepted = Vec::new();
    for i in 0..count {
        let raw = transfer(key, 9000, nonce + i, to, U256::from(1u64));
        match client.send_raw(&raw).await {
            Ok(h) => accepted.push(h),
            Err(_) => break,
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    accepted
}

/// Block `height` as web3 answers it, transactions as hashes.
async fn block_at(client: &EthClient, height: u64) -> serde_json::Value {
    client
        .call(
            "eth_getBlockByNumber",
            serde_json::json!([format!("0x{height:x}"), false]),
        )
        .await
        .unwrap()
}

async fn app_hashes(client: &EthClient, upto: u64) -> Vec<alloy_primitives::B256> {
    let mut out = Vec::new();
    for h in 1..=upto {
        let block = block_at(client, h).await;
        out.push(block["stateRoot"].as_str().unwrap().parse().unwrap());
    }
    out
}

/// On CometBFT's mempool path (`all,-app-mempool`), where a dead CometBFT
/// stops web3 taking transactions. With abcid's own pool web3 goes on
/// taking them and what it accepted survives a SIGKILL
/// (`agentd/tests/it/mempool_attacks.rs`).
async fn crash_and_recover(kill_abcid: bool) {
    let mut net = TestNet::start_with(|o| o.patches = "all,-app-mempool".into()).await;
    let to = Address::repeat_byte(0x99);
    let client = net.client();
    let sent = stream(&client, &net.root, 0, 60, to).await;
    assert_eq!(sent.len(), 60);
    net.wait_blocks(3).await;
    let h0 = client.block_number().await.unwrap();
    let history = app_hashes(&client, h0).await;
    // Kill in the middle of a second stream.
    let key = net.root;
    let web3 = net.web3();
    let background = tokio::spawn(async move {
        let c = EthClient::new(&web3, Duration::from_secs(2)).unwrap();
        stream(&c, &key, 60, 400, to).await
    });
    // Kill once some of the second stream is committed, while it still sends.
    let watcher = net.client();
    let address = net.root_address;
    wait_until(
        "part of the second stream is committed",
        Duration::from_secs(60),
        || {
            let w = &watcher;
            async move { w.nonce(address, false).await.unwrap_or(0) >= 80 }
        },
    )
    .await;
    if kill_abcid {
        net.kill_abcid();
    } else {
        net.kill_cometbft();
    }
    let accepted_before_crash = background.await.unwrap();
    assert!(
        accepted_before_crash.len() < 400,
        "the kill stopped the stream mid-way ({} of 400 accepted)",
        accepted_before_crash.len()
    );
    net.devnet.restart().await.expect("restart after SIGKILL");
    let client = net.client();
    let height = client.block_number().await.unwrap();
    assert!(height > 0);

    // Every transfer accepted before the crash is either committed or was
    // lost from the mempool; the committed ones form a nonce prefix, and the
    // recipient's balance equals their number.
    let committed_nonce = client.nonce(net.root_address, false).await.unwrap();
    assert!(
        committed_nonce >= 60,
        "the first 60 transfers were committed before the crash"
    );
    assert!(committed_nonce <= 60 + accepted_before_crash.len() as u64);
    assert_eq!(
        client.balance(to).await.unwrap(),
        U256::from(committed_nonce)
    );
    for hash in &sent {
        assert!(
            client.receipt(*hash).await.unwrap().is_some(),
            "receipt of {hash} survived"
        );
    }
    let hashes_after = app_hashes(&client, height).await;
    assert_eq!(
        hashes_after[..history.len()],
        history[..],
        "app hashes before the crash are unchanged"
    );

    // The chain goes on.
    let first = transfer(&net.root, 9000, committed_nonce, to, U256::from(1u64));
    if let Err(e) = client.send_raw(&first).await {
        panic!("first transfer after restart refused: {e}");
    }
    let more = stream(&client, &net.root, committed_nonce + 1, 19, to).await;
    assert_eq!(more.len(), 19);
    net.wait_blocks(3).await;
    assert_eq!(
        client.nonce(net.root_address, false).await.unwrap(),
        committed_nonce + 20
    );
    assert_eq!(
        client.balance(to).await.unwrap(),
        U256::from(committed_nonce + 20)
    );
    // History did not change.
    assert_eq!(app_hashes(&client, height).await, hashes_after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_of_abcid_loses_nothing_committed() {
    crash_and_recover(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_of_cometbft_loses_nothing_committed() {
    crash_and_recover(false).await;
}

/// The height in the last "state loaded" line of abcid's log: where its
/// store's head was when it last started.
fn loaded_height(net: &TestNet) -> u64 {
    let log = std::fs::read_to_string(net.devnet.state.abcid_log()).unwrap();
    let line = log
        .lines()
        .rfind(|l| l.contains("state loaded"))
        .expect("abcid logged its loaded state");
    let value = line.split("height=").nth(1).expect("a height field");
    value.split_whitespace().next().unwrap().parse().unwrap()
}

/// `async-commit`: abcid SIGKILLed while its writer is stopped at `point` of
/// a block, with the blocks after it committed in memory only. What web3
/// showed before the crash (blocks, receipts, app hashes) is what the chain
/// holds after CometBFT's replay, and the chain goes on.
async fn killed_while_persisting(point: &str) {
    let mut net = TestNet::start_with(|o| o.patches = "all,async-commit".into()).await;
    let to = Address::repeat_byte(0x77);
    let client = net.client();
    assert_eq!(stream(&client, &net.root, 0, 20, to).await.len(), 20);
    net.wait_blocks(2).await;
    // Restart with the writer told to stop a few blocks ahead.
    let pause = client.block_number().await.unwrap() + 6;
    net.devnet.state.options.abcid_args =
        vec!["--test-persist-pause".into(), format!("{point}@{pause}")];
    net.devnet.restart().await.expect("restart with the pause");
    let (key, web3) = (net.root, net.web3());
    let background = tokio::spawn(async move {
        let c = EthClient::new(&web3, Duration::from_secs(2)).unwrap();
        stream(&c, &key, 20, 2_000, to).await
    });
    let log = net.devnet.state.abcid_log();
    wait_until("the writer stops", Duration::from_secs(60), || {
        let log = log.clone();
        async move { std::fs::read_to_string(&log).is_ok_and(|l| l.contains("persistence paused")) }
    })
    .await;
    // Blocks after the stopped one are committed in memory only, up to the
    // bound (Commit then waits, and the chain with it).
    let client = net.client();
    wait_until(
        "blocks past the stopped write",
        Duration::from_secs(30),
        || {
            let c = &client;
            async move { c.block_number().await.unwrap_or(0) >= pause + 2 }
        },
    )
    .await;
    let height = client.block_number().await.unwrap();
    assert!(
        height <= pause + abcid::store::MAX_UNPERSISTED as u64,
        "{height}"
    );
    let history = app_hashes(&client, height).await;
    let nonce = client.nonce(net.root_address, false).await.unwrap();
    let mut receipts = Vec::new();
    for h in pause..=height {
        let block = block_at(&client, h).await;
        let hashes: Vec<alloy_primitives::B256> =
            serde_json::from_value(block["transactions"].clone()).unwrap();
        receipts.extend(hashes);
    }
    assert!(
        !receipts.is_empty(),
        "transfers reached the unwritten blocks"
    );
    for hash in &receipts {
        assert!(
            client.receipt(*hash).await.unwrap().is_some(),
            "receipt of {hash} in memory"
        );
    }

    net.kill_abcid();
    let accepted = background.await.unwrap();
    net.devnet.state.options.abcid_args.clear();
    net.devnet.restart().await.expect("restart after SIGKILL");
    // The disk held the blocks before the stopped write (and that block
    // itself once its transaction had committed); CometBFT replayed the rest.
    let on_disk = if point == "committed" {
        pause
    } else {
        pause - 1
    };
    assert_eq!(loaded_height(&net), on_disk);
    let client = net.client();
    assert!(client.block_number().await.unwrap() >= height);
    assert_eq!(
        app_hashes(&client, height).await,
        history,
        "history unchanged"
    );
    for hash in &receipts {
        assert!(
            client.receipt(*hash).await.unwrap().is_some(),
            "receipt of {hash} replayed"
        );
    }
    // Both read at one block: a block CometBFT held before the kill (in its
    // WAL or proposed) may still commit after the restart.
    let at = format!("{:#x}", client.block_number().await.unwrap());
    let read = |method: &'static str, address: Address| {
        client.call::<U256>(method, serde_json::json!([address, at]))
    };
    let committed = read("eth_getTransactionCount", net.root_address)
        .await
        .unwrap()
        .to::<u64>();
    assert!(committed >= nonce && committed <= 20 + accepted.len() as u64);
    assert_eq!(
        read("eth_getBalance", to).await.unwrap(),
        U256::from(committed)
    );
    // The chain goes on.
    let committed = client.nonce(net.root_address, false).await.unwrap();
    let next = transfer(&net.root, 9000, committed, to, U256::from(1u64));
    client
        .send_raw(&next)
        .await
        .expect("a transfer after the restart");
    wait_until(
        "the transfer after the restart commits",
        Duration::from_secs(30),
        || {
            let c = &client;
            let me = net.root_address;
            async move { c.nonce(me, false).await.unwrap_or(0) > committed }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_before_a_background_write_loses_nothing_committed() {
    killed_while_persisting("queued").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_inside_a_background_write_loses_nothing_committed() {
    killed_while_persisting("written").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_after_a_background_write_loses_nothing_committed() {
    killed_while_persisting("committed").await;
}

/// A devnet that cannot come up leaves nothing running: here CometBFT
/// refuses its configuration after abcid has started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_start_stops_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = DevnetOptions::private(dir.path(), Ports::free().unwrap());
    opts.set = vec!["mempool.size=-1".to_string()];
    opts.wait = 20;
    let error = Devnet::start(opts)
        .await
        .expect_err("CometBFT refuses the config");
    assert!(format!("{error:#}").contains("CometBFT"), "{error:#}");
    let state = DevnetState::load(dir.path()).unwrap();
    assert_eq!(state.running(), (false, false));
    assert_eq!((state.cometbft_pid, state.abcid_pid), (None, None));
}
