//! abcid's logs, receipts, filters and subscriptions, on a real
//! devnet: the `Transfer` events of an ERC-20 load found by every way a
//! client looks for them, `newHeads` under load, alloy's calls, and geth's
//! errors for bad log queries.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use crate::common::{funded, wait_until, TestNet};
use alloy_consensus::Transaction as _;
use alloy_eips::eip2718::Decodable2718;
use alloy_network::TransactionBuilder;
use alloy_primitives::{keccak256, Address, Bloom, B256, U256};
use alloy_provider::{Provider, ProviderBuilder, WsConnect};
use alloy_rpc_types_eth::{
    BlockId, BlockNumberOrTag, Filter, Header, Log, TransactionReceipt, TransactionRequest,
};
use feth_chain::accounts::KeySet;
use feth_chain::eth::{EthClient, RpcError};
use feth_load::deploy::Signer;
use feth_load::erc20;
use feth_load::pick::RateSchedule;
use feth_load::plan::{LoadPlan, Recipients, WorkloadKind};
use feth_load::LoadSettings;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

/// Tokens the ERC-20 workload hands every holder.
const PER_HOLDER: u64 = 1_000_000_000;
/// Longest wait for a subscription to catch up with the chain.
const CATCH_UP: Duration = Duration::from_secs(30);

fn transfer_topic() -> B256 {
    keccak256("Transfer(address,address,uint256)")
}

fn word(a: Address) -> B256 {
    a.into_word()
}

fn http(net: &TestNet) -> impl Provider {
    ProviderBuilder::new().connect_http(net.web3().parse().unwrap())
}

/// A WebSocket provider on the web3 port, whose subscriptions buffer far more
/// than any test sends (a lagging local buffer would fail the test, below).
async fn ws(net: &TestNet) -> impl Provider {
    let url = net.web3().replacen("http://", "ws://", 1);
    let p = ProviderBuilder::new()
        .connect_ws(WsConnect::new(url))
        .await
        .unwrap();
    p.client()
        .expect_pubsub_frontend()
        .set_channel_size(100_000);
    p
}

/// Everything a subscription delivers, collected by a task of its own (a
/// local buffer that lagged would drop items: the comparisons then fail).
struct Collected<T> {
    items: std::sync::Arc<std::sync::Mutex<Vec<T>>>,
    task: JoinHandle<()>,
}

impl<T: Clone + Send + 'static> Collected<T> {
    fn start(stream: impl futures::Stream<Item = T> + Send + 'static) -> Self {
        let mut stream = Box::pin(stream);
        let items = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let task = {
            let items = items.clone();
            tokio::spawn(async move {
                while let Some(item) = stream.next().await {
                    items.lock().unwrap().push(item);
                }
            })
        };
        Self { items, task }
    }

    fn snapshot(&self) -> Vec<T> {
        self.items.lock().unwrap().clone()
    }

    /// Waits until `done` holds for the items, failing if the server closed
    /// the subscription first.
    async fn wait_for(&self, what: &str, done: impl Fn(&[T]) -> bool) -> Vec<T> {
        wait_until(what, CATCH_UP, || {
            let finished = self.task.is_finished();
            let ok = done(&self.snapshot());
            assert!(ok || !finished, "the subscription closed before {what}");
            async move { ok }
        })
        .await;
        self.snapshot()
    }
}

/// The fields of a log that every way of reading it must agree on.
type LogKey = (u64, B256, B256, u64, u64, Address, Vec<B256>, Vec<u8>);

fn key(log: &Log) -> LogKey {
    (
        log.block_number.expect("blockNumber"),
        log.block_hash.expect("blockHash"),
        log.transaction_hash.expect("transactionHash"),
        log.transaction_index.expect("transactionIndex"),
        log.log_index.expect("logIndex"),
        log.address(),
        log.topics().to_vec(),
        log.data().data.to_vec(),
    )
}

fn keys_of(logs: &[Log]) -> Vec<LogKey> {
    logs.iter().map(key).collect()
}

/// A decoded `Transfer(from, to, value)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Transfer {
    from: Address,
    to: Address,
    value: U256,
}

fn transfer_of(log: &Log) -> Transfer {
    let t = log.topics();
    assert_eq!(t.len(), 3, "{log:?}");
    assert_eq!(t[0], transfer_topic());
    Transfer {
        from: Address::from_word(t[1]),
        to: Address::from_word(t[2]),
        value: U256::from_be_slice(&log.data().data),
    }
}

/// The load's transfers in the run's blocks `first..=last`, by hash, decoded
/// from their signed bytes (`transfer(to, 1)` calls on the token), each
/// checked against what the agent sends: sender `a` with nonce `k` pays
/// account `(a + 1 + k mod (n − 1)) mod n` one token (`Recipients::Existing`).
/// (The agent keeps a transaction's bytes only while it is in flight.)
async fn sent_transfers(
    p: &impl Provider,
    (first, last): (u64, u64),
    keys: &KeySet,
    token: Address,
) -> HashMap<B256, Transfer> {
    let n = keys.len();
    let mut sent = HashMap::new();
    for h in first..=last {
        let block = p
            .get_block_by_number(BlockNumberOrTag::Number(h))
            .full()
            .await
            .unwrap()
            .unwrap();
        for tx in block.transactions.txns() {
            let env = tx.inner.inner();
            let raw = alloy_eips::eip2718::Encodable2718::encoded_2718(env);
            let decoded = alloy_consensus::TxEnvelope::decode_2718(&mut raw.as_slice()).unwrap();
            let from = tx.inner.signer();
            let Some(a) = keys.addresses.iter().position(|k| *k == from) else {
                continue;
            };
            assert_eq!(decoded.to(), Some(token));
            let input = decoded.input();
            assert_eq!(input.len(), 68);
            let transfer = Transfer {
                from,
                to: Address::from_slice(&input[16..36]),
                value: U256::from_be_slice(&input[36..68]),
            };
            let k = decoded.nonce() as usize;
            let expected = keys.addresses[(a + 1 + k % (n - 1)) % n];
            assert_eq!((transfer.to, transfer.value), (expected, U256::from(1u64)));
            sent.insert(*decoded.tx_hash(), transfer);
        }
    }
    sent
}

/// Every block's receipts over `1..=head`, checked against the block: log
/// indices run 0, 1, … across the block, every log names its transaction,
/// index and block, and the receipts' and the header's blooms are those of
/// the logs. Returns the receipts by height.
async fn receipts_checked(p: &impl Provider, head: u64) -> BTreeMap<u64, Vec<TransactionReceipt>> {
    let mut all = BTreeMap::new();
    for n in 1..=head {
        let block = p
            .get_block_by_number(BlockNumberOrTag::Number(n))
            .await
            .unwrap()
            .unwrap();
        let receipts = p
            .get_block_receipts(BlockId::number(n))
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("no receipts for block {n}"));
        let hashes: Vec<B256> = block.transactions.hashes().collect();
        let in_receipts: Vec<B256> = receipts.iter().map(|r| r.transaction_hash).collect();
        assert_eq!(in_receipts, hashes, "block {n}: receipts in block order");
        let mut block_bloom = Bloom::default();
        let mut next_index = 0u64;
        for (i, r) in receipts.iter().enumerate() {
            assert_eq!(r.transaction_index, Some(i as u64), "block {n}");
            assert_eq!(r.block_hash, Some(block.header.hash), "block {n}");
            assert_eq!(r.block_number, Some(n));
            let mut bloom = Bloom::default();
            for log in r.inner.logs() {
                assert_eq!(log.log_index, Some(next_index), "block {n}: {log:?}");
                assert_eq!(log.transaction_index, Some(i as u64));
                assert_eq!(log.transaction_hash, Some(r.transaction_hash));
                assert_eq!(log.block_hash, Some(block.header.hash));
                assert_eq!(log.block_number, Some(n));
                assert!(!log.removed);
                bloom.accrue_log(&log.inner);
                next_index += 1;
            }
            assert_eq!(*r.inner.logs_bloom(), bloom, "block {n}, tx {i}");
            block_bloom |= bloom;
        }
        assert_eq!(
            block.header.logs_bloom, block_bloom,
            "block {n}'s logsBloom"
        );
        all.insert(n, receipts);
    }
    all
}

/// The token's `Transfer` logs of the receipts, in chain order.
fn token_logs(receipts: &BTreeMap<u64, Vec<TransactionReceipt>>, token: Address) -> Vec<Log> {
    receipts
        .values()
        .flatten()
        .flat_map(|r| r.inner.logs())
        .filter(|l| l.address() == token && l.topics().first() == Some(&transfer_topic()))
        .cloned()
        .collect()
}

fn whole_chain(head: u64) -> Filter {
    Filter::new().from_block(0u64).to_block(head)
}

/// The ERC-20 workload's `Transfer` events are found, each once and nothing
/// else, by `eth_getLogs` (address, topic0, an OR-list on the sender, a null
/// wildcard before the recipient, one block by hash), by
/// `eth_getBlockReceipts` and by a `logs` subscription opened before the
/// load; and `newHeads` delivers every height of the run once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn erc20_transfer_events_are_found_by_logs_receipts_and_subscriptions() {
    let net = TestNet::start().await;
    let (keys, _dir) = funded(&net, 24, 31).await;
    // The first sender deploys the token with its first transaction.
    let token = keys.addresses[0].create(0);
    let p = http(&net);
    let w = ws(&net).await;
    let heads = Collected::<Header>::start(w.subscribe_blocks().await.unwrap().into_stream());
    let logs_sub = Collected::<Log>::start(
        w.subscribe_logs(&Filter::new().address(token))
            .await
            .unwrap()
            .into_stream(),
    );
    let first_head = p.get_block_number().await.unwrap();

    let mut plan = LoadPlan::transfers(RateSchedule::Closed, keys.len());
    plan.per_account = Some(15);
    plan.writes = WorkloadKind::Erc20.into();
    plan.recipients = Recipients::Existing;
    let mut settings = LoadSettings::new(&net.web3(), plan);
    settings.timeout = Duration::from_secs(5);
    let running = feth_load::start(settings, keys.clone()).await.unwrap();
    let report = running.finish().await.unwrap();
    let t = &report.totals;
    assert_eq!(
        (t.included, t.rejected, t.unresolved),
        (24 * 15, 0, 0),
        "{t:?}"
    );
    let window = (report.chain.first_block, report.chain.last_block);
    let sent = sent_transfers(&p, window, &keys, token).await;
    assert_eq!(sent.len(), 24 * 15);

    let head = p.get_block_number().await.unwrap();
    let receipts = receipts_checked(&p, head).await;
    let from_receipts = token_logs(&receipts, token);

    // Every load transfer once, as sent; the rest is the setup: the mint to
    // the deployer and its hand-out to every other sender.
    let mut seen = HashSet::new();
    let mut setup = Vec::new();
    for log in &from_receipts {
        let hash = log.transaction_hash.unwrap();
        assert!(seen.insert(hash), "one Transfer per transaction: {hash}");
        match sent.get(&hash) {
            Some(expected) => assert_eq!(transfer_of(log), *expected, "{hash}"),
            None => setup.push(transfer_of(log)),
        }
    }
    assert_eq!(seen.len() - setup.len(), sent.len(), "every sent transfer");
    let deployer = keys.addresses[0];
    let mut expected_setup = vec![Transfer {
        from: Address::ZERO,
        to: deployer,
        value: U256::from(PER_HOLDER) * U256::from(24u64),
    }];
    expected_setup.extend(keys.addresses[1..].iter().map(|h| Transfer {
        from: deployer,
        to: *h,
        value: U256::from(PER_HOLDER),
    }));
    setup.sort();
    expected_setup.sort();
    assert_eq!(setup, expected_setup);

    // eth_getLogs: address and topic0 over the whole chain.
    let all = p
        .get_logs(
            &whole_chain(head)
                .address(token)
                .event_signature(transfer_topic()),
        )
        .await
        .unwrap();
    assert_eq!(keys_of(&all), keys_of(&from_receipts));
    // An address list holding the token and an address with no logs.
    let listed = p
        .get_logs(&whole_chain(head).address(vec![Address::repeat_byte(0xee), token]))
        .await
        .unwrap();
    assert_eq!(keys_of(&listed), keys_of(&from_receipts));
    // An OR-list in topic1: two senders' transfers.
    let (s1, s2) = (keys.addresses[3], keys.addresses[7]);
    let by_senders = p
        .get_logs(
            &whole_chain(head)
                .address(token)
                .event_signature(transfer_topic())
                .topic1(vec![word(s1), word(s2)]),
        )
        .await
        .unwrap();
    let expected: Vec<LogKey> = from_receipts
        .iter()
        .filter(|l| [s1, s2].contains(&transfer_of(l).from))
        .map(key)
        .collect();
    assert!(
        expected.len() >= 30,
        "both senders sent 15: {}",
        expected.len()
    );
    assert_eq!(keys_of(&by_senders), expected);
    // Null wildcards before the recipient, in raw JSON.
    let recipient = keys.addresses[5];
    let to_recipient: Vec<Log> = net
        .client()
        .call(
            "eth_getLogs",
            json!([{
                "fromBlock": "0x0",
                "toBlock": format!("0x{head:x}"),
                "address": token,
                "topics": [null, null, word(recipient)],
            }]),
        )
        .await
        .unwrap();
    let expected: Vec<LogKey> = from_receipts
        .iter()
        .filter(|l| transfer_of(l).to == recipient)
        .map(key)
        .collect();
    assert!(expected.len() > 1, "{}", expected.len());
    assert_eq!(keys_of(&to_recipient), expected);
    // One block by hash: the fullest block of the load.
    let (&fullest, block_receipts) = receipts.iter().max_by_key(|(_, r)| r.len()).unwrap();
    let block_hash = block_receipts[0].block_hash.unwrap();
    let in_block = p
        .get_logs(&Filter::new().at_block_hash(block_hash))
        .await
        .unwrap();
    let expected: Vec<LogKey> = block_receipts
        .iter()
        .flat_map(|r| r.inner.logs())
        .map(key)
        .collect();
    assert!(expected.len() > 1, "block {fullest}");
    assert_eq!(keys_of(&in_block), expected);

    // The logs subscription, opened before the token existed, saw the same.
    let delivered = logs_sub
        .wait_for("the logs subscription has every Transfer", |l| {
            l.len() >= from_receipts.len()
        })
        .await;
    assert_eq!(keys_of(&delivered), keys_of(&from_receipts));

    // newHeads: every height from the subscription's start to the head, once,
    // in order, each the block served over HTTP.
    let headers = heads
        .wait_for("newHeads reaches the head", |h| {
            h.last().is_some_and(|h| h.number >= head)
        })
        .await;
    let numbers: Vec<u64> = headers.iter().map(|h| h.number).collect();
    assert!(numbers[0] <= first_head + 1, "{numbers:?}");
    assert!(
        numbers.windows(2).all(|w| w[1] == w[0] + 1),
        "consecutive heights: {numbers:?}"
    );
    for (i, h) in headers.iter().enumerate() {
        let block = p
            .get_block_by_number(BlockNumberOrTag::Number(h.number))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(h.hash, block.header.hash, "height {}", h.number);
        assert_eq!(h.inner, block.header.inner, "height {}", h.number);
        if i > 0 {
            assert_eq!(h.parent_hash, headers[i - 1].hash);
        }
    }
}

/// What a standard client library calls, decoded by alloy: logs, block
/// receipts, polled filters, subscriptions, transactions by index, access
/// lists, uncles, the blob base fee, the pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standard_client_reads_logs_filters_and_subscriptions() {
    let net = TestNet::start().await;
    let (keys, _dir) = funded(&net, 3, 32).await;
    let client = net.client();
    let fee = feth_chain::fees::detect(&client).await.unwrap();
    let signer = Signer {
        keys: &keys,
        chain_id: 9000,
        fee,
    };
    let token = erc20::prepare(&client, &signer, U256::from(1000u64))
        .await
        .unwrap()
        .address;
    let (alice, bob) = (keys.addresses[1], keys.addresses[2]);
    let p = http(&net);
    let w = ws(&net).await;
    let transfers = Filter::new()
        .address(token)
        .event_signature(transfer_topic());

    // Filters and subscriptions installed before the transfers.
    let start = p.get_block_number().await.unwrap();
    // From the next block on: geth's eth_getFilterLogs reads a filter
    // without fromBlock over the latest block only.
    let log_filter = p
        .new_filter(&transfers.clone().from_block(start + 1))
        .await
        .unwrap();
    let block_filter = p.new_block_filter().await.unwrap();
    let pending_filter = p.new_pending_transactions_filter(false).await.unwrap();
    let mut watched = p.watch_blocks().await.unwrap().into_stream();
    let heads = Collected::<Header>::start(w.subscribe_blocks().await.unwrap().into_stream());
    let logs_sub =
        Collected::<Log>::start(w.subscribe_logs(&transfers).await.unwrap().into_stream());
    let pending_sub = Collected::<B256>::start(
        w.subscribe_pending_transactions()
            .await
            .unwrap()
            .into_stream(),
    );

    // Alice sends Bob 1, 2 and 3 tokens.
    let a = net.wallet(&keys.keys[1]);
    let mut receipts = Vec::new();
    for v in 1..=3u64 {
        let tx = TransactionRequest::default()
            .with_to(token)
            .with_input(erc20::transfer_call(bob, U256::from(v)));
        let r = a
            .send_transaction(tx)
            .await
            .unwrap()
            .get_receipt()
            .await
            .unwrap();
        assert!(r.status());
        receipts.push(r);
    }
    let logs_of = |rs: &[TransactionReceipt]| -> Vec<Log> {
        rs.iter().flat_map(|r| r.inner.logs()).cloned().collect()
    };
    let ours = logs_of(&receipts);
    assert_eq!(ours.len(), 3);
    for (v, log) in (1..=3u64).zip(&ours) {
        let t = transfer_of(log);
        assert_eq!((t.from, t.to, t.value), (alice, bob, U256::from(v)));
    }
    let last = receipts[2].block_number.unwrap();

    // eth_getLogs and eth_getBlockReceipts.
    let got = p
        .get_logs(&transfers.clone().from_block(start + 1).to_block(last))
        .await
        .unwrap();
    assert_eq!(keys_of(&got), keys_of(&ours));
    for r in &receipts {
        let block = p
            .get_block_receipts(BlockId::number(r.block_number.unwrap()))
            .await
            .unwrap()
            .unwrap();
        let same = block
            .iter()
            .find(|b| b.transaction_hash == r.transaction_hash)
            .expect("the block's receipts hold the transaction");
        assert_eq!(keys_of(same.inner.logs()), keys_of(r.inner.logs()));
        assert_eq!((same.from, same.to), (alice, Some(token)));
        assert_eq!(same.gas_used, r.gas_used);
    }
    let unknown = p
        .get_block_receipts(BlockId::hash(B256::repeat_byte(0x77)))
        .await
        .unwrap();
    assert!(unknown.is_none());

    // Polled filters: the changes once, then nothing new.
    let changes: Vec<Log> = p.get_filter_changes(log_filter).await.unwrap();
    assert_eq!(keys_of(&changes), keys_of(&ours));
    let again: Vec<Log> = p.get_filter_changes(log_filter).await.unwrap();
    assert!(again.is_empty(), "{again:?}");
    let filter_logs = p.get_filter_logs(log_filter).await.unwrap();
    assert_eq!(keys_of(&filter_logs), keys_of(&ours));
    let new_blocks: Vec<B256> = p.get_filter_changes(block_filter).await.unwrap();
    for r in &receipts {
        assert!(
            new_blocks.contains(&r.block_hash.unwrap()),
            "{new_blocks:?}"
        );
    }
    for h in &new_blocks {
        let b = p
            .get_block_by_hash(*h)
            .await
            .unwrap()
            .expect("a real block");
        assert!(
            b.header.number > start,
            "installed at {start}: {}",
            b.header.number
        );
    }
    let pending: Vec<B256> = p.get_filter_changes(pending_filter).await.unwrap();
    for r in &receipts {
        assert!(pending.contains(&r.transaction_hash), "{pending:?}");
    }
    assert!(p.uninstall_filter(log_filter).await.unwrap());
    assert!(!p.uninstall_filter(log_filter).await.unwrap());
    let gone = p.get_filter_changes::<Log>(log_filter).await.unwrap_err();
    assert!(gone.to_string().contains("filter not found"), "{gone}");
    // alloy's block watcher (a polled eth_newBlockFilter) yields real blocks.
    let batch = tokio::time::timeout(CATCH_UP, async {
        loop {
            let hashes = watched.next().await.expect("the watcher runs");
            if !hashes.is_empty() {
                return hashes;
            }
        }
    })
    .await
    .expect("watch_blocks yields a block");
    for h in batch {
        assert!(p.get_block_by_hash(h).await.unwrap().is_some());
    }

    // Subscriptions: heads up to the last transfer, the three logs, the
    // three transactions as they entered the pool.
    let headers = heads
        .wait_for("newHeads reaches the last transfer", |h| {
            h.last().is_some_and(|h| h.number >= last)
        })
        .await;
    let at_last = headers.iter().find(|h| h.number == last).unwrap();
    assert_eq!(Some(at_last.hash), receipts[2].block_hash);
    let sub_logs = logs_sub
        .wait_for("the logs subscription has the transfers", |l| l.len() >= 3)
        .await;
    assert_eq!(keys_of(&sub_logs), keys_of(&ours));
    let hashes: Vec<B256> = receipts.iter().map(|r| r.transaction_hash).collect();
    pending_sub
        .wait_for("newPendingTransactions has the transfers", |p| {
            hashes.iter().all(|h| p.contains(h))
        })
        .await;

    // Transactions by block and index, counts by hash, uncles.
    let r = &receipts[1];
    let (number, hash, index) = (
        r.block_number.unwrap(),
        r.block_hash.unwrap(),
        r.transaction_index.unwrap() as usize,
    );
    let by_number = p
        .get_transaction_by_block_number_and_index(BlockNumberOrTag::Number(number), index)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(*by_number.inner.tx_hash(), r.transaction_hash);
    assert_eq!(by_number.inner.signer(), alice);
    assert_eq!(by_number.block_number, Some(number));
    let by_hash = p
        .get_transaction_by_block_hash_and_index(hash, index)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(*by_hash.inner.tx_hash(), r.transaction_hash);
    let past_end = p
        .get_transaction_by_block_hash_and_index(hash, 10_000)
        .await
        .unwrap();
    assert!(past_end.is_none());
    let block = p.get_block_by_hash(hash).await.unwrap().unwrap();
    let count = p
        .get_block_transaction_count_by_hash(hash)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(count, block.transactions.len() as u64);
    assert!(count >= 1);
    assert_eq!(p.get_uncle_count(BlockId::hash(hash)).await.unwrap(), 0);
    assert_eq!(p.get_uncle_count(BlockId::number(number)).await.unwrap(), 0);
    assert!(p.get_uncle(BlockId::hash(hash), 0).await.unwrap().is_none());

    // Blob base fee: no blob ever, so EIP-4844's minimum, 1 wei.
    assert_eq!(p.get_blob_base_fee().await.unwrap(), 1);

    // An access list of Alice's transfer: the token's balance slots of both
    // (balanceOf is the contract's slot 1).
    let slot = |owner: Address| {
        let mut preimage = [0u8; 64];
        preimage[..32].copy_from_slice(word(owner).as_slice());
        preimage[63] = 1;
        keccak256(preimage)
    };
    let request = TransactionRequest::default()
        .with_from(alice)
        .with_to(token)
        .with_input(erc20::transfer_call(bob, U256::from(1u64)));
    let acl = p.create_access_list(&request).await.unwrap();
    assert!(acl.error.is_none(), "{acl:?}");
    let entry = acl
        .access_list
        .0
        .iter()
        .find(|i| i.address == token)
        .unwrap_or_else(|| panic!("the token is in the list: {acl:?}"));
    for owner in [alice, bob] {
        assert!(entry.storage_keys.contains(&slot(owner)), "{acl:?}");
    }
    assert!(acl.gas_used.to::<u64>() > 21_000, "{acl:?}");

    // No proofs, said clearly.
    let proof = p.get_proof(token, vec![]).await.unwrap_err();
    assert!(proof.to_string().contains("not supported"), "{proof}");

    // The pool empties once everything is committed: CometBFT drops a
    // block's transactions from its mempool just after the block's Commit,
    // so a receipt can be served a moment before.
    wait_until("the mempool is empty", Duration::from_secs(10), || async {
        let status: Value = p.raw_request("txpool_status".into(), ()).await.unwrap();
        (&status["pending"], &status["queued"]) == (&json!("0x0"), &json!("0x0"))
    })
    .await;
    let content: Value = p.raw_request("txpool_content".into(), ()).await.unwrap();
    assert_eq!(content, json!({ "pending": {}, "queued": {} }));
}

fn rpc_error(result: Result<Value, RpcError>) -> (i64, String) {
    match result {
        Err(RpcError::Rpc { code, message }) => (code, message),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// Bad log queries get geth's codes and messages (the lead's in-process
/// tests cover the rest); abcid runs with a 5-block range limit and two
/// subscriptions per connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_log_queries_get_geths_codes_and_messages() {
    let net = TestNet::start_with(|o| {
        o.abcid_args = ["--rpc-max-log-blocks", "5", "--rpc-max-subscriptions", "2"]
            .map(String::from)
            .to_vec();
    })
    .await;
    // A third subscription on one connection is refused; the first two live.
    let w = ws(&net).await;
    let first = w.subscribe_blocks().await.expect("first subscription");
    let _second = w.subscribe_blocks().await.expect("second subscription");
    let third = w.subscribe_blocks().await;
    let Err(refusal) = third else {
        panic!("a third subscription was accepted");
    };
    let refusal = format!("{refusal:?}");
    assert!(
        refusal.contains("too many subscriptions on this connection (2)")
            && refusal.contains("--rpc-max-subscriptions"),
        "{refusal}"
    );
    let mut heads = first.into_stream();
    let head = tokio::time::timeout(
        Duration::from_secs(30),
        futures::StreamExt::next(&mut heads),
    )
    .await
    .expect("a head within 30 s");
    assert!(head.is_some(), "the first subscription still delivers");
    let c: EthClient = net.client();
    wait_until(
        "the chain has 8 blocks",
        Duration::from_secs(30),
        || async { c.block_number().await.unwrap_or(0) >= 8 },
    )
    .await;
    let logs = |filter: Value| c.call::<Value>("eth_getLogs", json!([filter]));

    let reversed = rpc_error(logs(json!({ "fromBlock": "0x5", "toBlock": "0x2" })).await);
    assert_eq!(reversed, (-32000, "invalid block range params".to_string()));
    let wide = rpc_error(logs(json!({ "fromBlock": "0x1", "toBlock": "0x8" })).await);
    assert_eq!(wide, (-32000, "exceed maximum block range: 5".to_string()));
    let hash = rpc_error(logs(json!({ "blockHash": B256::repeat_byte(0x5a) })).await);
    assert_eq!(hash, (-32000, "unknown block".to_string()));
    let (code, message) = rpc_error(logs(json!({ "topics": ["0x1234"] })).await);
    assert_eq!(code, -32602, "{message}");
    assert!(message.starts_with("invalid argument 0: "), "{message}");
    let both =
        rpc_error(logs(json!({ "blockHash": B256::repeat_byte(1), "fromBlock": "0x1" })).await);
    assert_eq!(
        both,
        (
            -32602,
            "invalid argument 0: cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other"
                .to_string()
        )
    );
    let filter = rpc_error(
        c.call::<Value>("eth_getFilterChanges", json!(["0xdeadbeef"]))
            .await,
    );
    assert_eq!(filter, (-32000, "filter not found".to_string()));
}
