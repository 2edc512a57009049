//! Shared helpers: funded test keys, a transaction signer (libsecp256k1 +
//! alloy-consensus, as `feth`'s signer) and a node in a temporary directory
//! driven through its ABCI [`Application`] methods.

use std::net::TcpListener;
use std::sync::Arc;

use abcid::app::AbciApp;
use abcid::node::{Node, NodeConfig};
use abcid::nonce_queue::QueueConfig;
use abcid::patches::Patches;
use abcid::rpc::Web3;
use abcid::state::AccountRecord;
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
pub use feth_chain::sign::{Fee, TxRequest};
use jsonrpsee::RpcModule;
use secp256k1::SecretKey;
use serde_json::{json, Value};
use tempfile::TempDir;
use tendermint_abci::Application;
use tendermint_proto::google::protobuf::Timestamp;
use tendermint_proto::v0_38::abci::{
    response_process_proposal::ProposalStatus, CheckTxType, ExecTxResult, RequestCheckTx,
    RequestFinalizeBlock, RequestInfo, RequestInitChain, RequestPrepareProposal,
    RequestProcessProposal, ResponseCheckTx, ResponseFinalizeBlock, ResponseInfo,
};

/// The test chain's EIP-155 id.
pub const CHAIN_ID: u64 = 9000;
/// 1 gwei, the genesis base fee (burnt).
pub const GWEI: u128 = 1_000_000_000;
/// Genesis balance of the funded test keys: 1000 ether.
pub const FUNDED: u128 = 1_000_000_000_000_000_000_000;
/// Gas of a plain transfer.
pub const TRANSFER_GAS: u64 = 21_000;

/// Receives the priority fees.
pub fn fee_recipient() -> Address {
    Address::repeat_byte(0xfe)
}

/// A test key and its address.
#[derive(Clone)]
pub struct Key {
    pub secret: SecretKey,
    pub address: Address,
}

/// Test key number `n` (1..=255); keys 1 to 3 are funded by [`TestNode::new`].
pub fn key(n: u8) -> Key {
    let secret = SecretKey::from_byte_array([n; 32]).expect("a valid test key");
    Key {
        secret,
        address: feth_chain::keys::address_of(&secret),
    }
}

/// A transaction to sign: feth's own request, with the tests' constructors
/// ([`TestTx`]) and its signer (`feth_chain::sign`, as the load engine's).
pub type Tx = TxRequest;

/// The tests' transactions, built on [`Tx`].
pub trait TestTx: Sized {
    /// An EIP-1559 transfer paying 3 gwei at most with a 1 gwei tip, so an
    /// effective price of 2 gwei at the 1 gwei base fee.
    fn transfer(nonce: u64, to: Address, value: u128) -> Self;
    /// A transfer of `value` to `to` paying a tip of `tip` and a fee cap of
    /// `tip` + 2 gwei.
    fn tipping(nonce: u64, to: Address, value: u128, tip: u128) -> Self;
    /// Deploys `init` code.
    fn deploy(nonce: u64, init: Bytes) -> Self;
    /// Calls `to` with `input`.
    fn call(nonce: u64, to: Address, input: Bytes) -> Self;
    /// The most this transaction can cost: `value + gas_limit × max_fee`.
    fn max_cost(&self) -> U256;
    /// The EIP-2718 encoding signed by `key`.
    fn sign(&self, key: &Key) -> Bytes;
}

impl TestTx for Tx {
    fn transfer(nonce: u64, to: Address, value: u128) -> Self {
        Self {
            chain_id: CHAIN_ID,
            nonce,
            to: Some(to),
            value: U256::from(value),
            gas_limit: TRANSFER_GAS,
            fee: Fee::Eip1559 {
                max_fee: 3 * GWEI,
                tip: GWEI,
            },
            input: Bytes::new(),
        }
    }

    fn tipping(nonce: u64, to: Address, value: u128, tip: u128) -> Self {
        Self {
            fee: Fee::Eip1559 {
                max_fee: tip + 2 * GWEI,
                tip,
            },
            ..Self::transfer(nonce, to, value)
        }
    }

    fn deploy(nonce: u64, init: Bytes) -> Self {
        Self {
            to: None,
            gas_limit: 300_000,
            input: init,
            ..Self::transfer(nonce, Address::ZERO, 0)
        }
    }

    fn call(nonce: u64, to: Address, input: Bytes) -> Self {
        Self {
            gas_limit: 100_000,
            input,
            ..Self::transfer(nonce, to, 0)
        }
    }

    fn max_cost(&self) -> U256 {
        let price = match self.fee {
            Fee::Legacy { gas_price } => gas_price,
            Fee::Eip1559 { max_fee, .. } => max_fee,
        };
        U256::from(self.gas_limit) * U256::from(price) + self.value
    }

    fn sign(&self, key: &Key) -> Bytes {
        feth_chain::sign::sign(&key.secret, self).raw
    }
}

/// A test contract (hand-written bytecode). Called with a 32-byte word it
/// stores the word in slot 0, logs it (`LOG1`, topic = caller) and returns
/// the previous value of slot 0; called without calldata it reverts with the
/// word `0xdead`.
pub const STORE_RUNTIME: &str =
    "3615602057600035600054602052806000556000523360206000a160206020f35b61dead60005260206000fd";

/// Init code that deploys [`STORE_RUNTIME`].
pub fn store_init() -> Bytes {
    let runtime = hex::decode(STORE_RUNTIME).expect("valid hex");
    assert_eq!(runtime.len(), 0x2c, "the init code copies 0x2c bytes");
    let mut init = hex::decode("602c600c600039602c6000f3").expect("valid hex");
    init.extend_from_slice(&runtime);
    init.into()
}

/// A 32-byte big-endian word.
pub fn word(value: u64) -> Bytes {
    U256::from(value).to_be_bytes::<32>().to_vec().into()
}

/// Keys 1, 2 and 3 holding [`FUNDED`] each: [`TestNode::new`]'s genesis.
pub fn funded_keys() -> Vec<(Address, U256)> {
    (1..=3)
        .map(|n| (key(n).address, U256::from(FUNDED)))
        .collect()
}

/// The test chain's header time at `height`.
pub fn header_time(height: u64) -> Timestamp {
    Timestamp {
        seconds: 1_800_000_000 + height as i64,
        nanos: 5,
    }
}

/// The CometBFT block hash the tests give to `height`.
pub fn block_hash(height: u64) -> B256 {
    keccak256(height.to_be_bytes())
}

/// A node in a temporary directory, driven through [`AbciApp`].
pub struct TestNode {
    pub dir: TempDir,
    pub node: Arc<Node>,
    pub app: AbciApp,
    pub patches: Patches,
}

impl TestNode {
    /// A node after InitChain with keys 1, 2 and 3 holding [`FUNDED`] each.
    pub fn new() -> Self {
        Self::with_alloc(&funded_keys())
    }

    /// A node after InitChain with the given allocation.
    pub fn with_alloc(alloc: &[(Address, U256)]) -> Self {
        Self::with_patches(alloc, Patches::ALL)
    }

    /// A node running `patches` after InitChain with the given allocation.
    pub fn with_patches(alloc: &[(Address, U256)], patches: Patches) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let node = Self::open_with(dir, patches);
        node.init_chain(&app_state(alloc));
        node
    }

    /// A node with every patch over `dir`, without InitChain.
    pub fn open(dir: TempDir) -> Self {
        Self::open_with(dir, Patches::ALL)
    }

    /// A node running `patches` over `dir`, without InitChain.
    pub fn open_with(dir: TempDir, patches: Patches) -> Self {
        Self::open_queued(dir, patches, QueueConfig::default())
    }

    /// A node running `patches`, its nonce queue within `queue`, over `dir`,
    /// without InitChain.
    pub fn open_queued(dir: TempDir, patches: Patches, queue: QueueConfig) -> Self {
        Self::open_config(
            dir,
            NodeConfig {
                queue,
                ..NodeConfig::new(patches)
            },
        )
    }

    /// A node configured by `config` after InitChain with `alloc`.
    pub fn with_config(alloc: &[(Address, U256)], config: NodeConfig) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let node = Self::open_config(dir, config);
        node.init_chain(&app_state(alloc));
        node
    }

    /// A node configured by `config` over `dir`, without InitChain.
    pub fn open_config(dir: TempDir, config: NodeConfig) -> Self {
        let node = Arc::new(Node::open_with(dir.path(), config).expect("the node opens"));
        let app = AbciApp::new(node.clone(), None);
        Self {
            dir,
            node,
            app,
            patches: config.patches,
        }
    }

    /// PrepareProposal of what CometBFT's mempool offers, `txs`, with room
    /// for 1 MiB.
    pub fn prepare(&self, txs: &[Bytes]) -> Vec<Bytes> {
        let response = self.app.prepare_proposal(RequestPrepareProposal {
            txs: txs.iter().map(|t| t.0.clone()).collect(),
            max_tx_bytes: 1 << 20,
            height: self.next_height() as i64,
            ..Default::default()
        });
        response.txs.into_iter().map(Bytes).collect()
    }

    /// ABCI PrepareProposal of the next height, as CometBFT with its mempool
    /// off (`mempool.type = "nop"`) asks: no transactions offered.
    pub fn propose(&self, max_tx_bytes: i64) -> Vec<Bytes> {
        let response = self.app.prepare_proposal(RequestPrepareProposal {
            max_tx_bytes,
            height: self.next_height() as i64,
            time: Some(header_time(self.next_height())),
            ..Default::default()
        });
        response.txs.into_iter().map(Bytes).collect()
    }

    /// Closes the node and opens it again from the same directory.
    pub fn reopen(self) -> Self {
        let patches = self.patches;
        self.reopen_with(patches)
    }

    /// Closes the node and opens it again from the same directory, running `patches`.
    pub fn reopen_with(self, patches: Patches) -> Self {
        let Self { dir, node, app, .. } = self;
        drop(app);
        drop(node);
        Self::open_with(dir, patches)
    }

    /// ABCI InitChain with `app_state` as the genesis' `app_state`.
    pub fn init_chain(&self, app_state: &str) -> Bytes {
        let response = self.app.init_chain(RequestInitChain {
            time: Some(Timestamp {
                seconds: 1_800_000_000,
                nanos: 0,
            }),
            chain_id: "feth-test".to_string(),
            app_state_bytes: app_state.as_bytes().to_vec().into(),
            initial_height: 1,
            ..Default::default()
        });
        Bytes(response.app_hash)
    }

    /// ABCI Info.
    pub fn info(&self) -> ResponseInfo {
        self.app.info(RequestInfo::default())
    }

    /// The next height to finalize.
    pub fn next_height(&self) -> u64 {
        self.node.head().expect("initialised").number + 1
    }

    /// ABCI ProcessProposal of `txs` at `height` as the block `hash`;
    /// whether it was accepted.
    pub fn process(&self, height: u64, hash: B256, txs: &[Bytes]) -> bool {
        let response = self.app.process_proposal(RequestProcessProposal {
            txs: txs.iter().map(|t| t.0.clone()).collect(),
            hash: hash.to_vec().into(),
            height: height as i64,
            time: Some(header_time(height)),
            ..Default::default()
        });
        response.status == ProposalStatus::Accept as i32
    }

    /// ABCI FinalizeBlock of `txs` at `height`.
    pub fn finalize(&self, height: u64, txs: &[Bytes]) -> ResponseFinalizeBlock {
        self.app.finalize_block(RequestFinalizeBlock {
            txs: txs.iter().map(|t| t.0.clone()).collect(),
            hash: block_hash(height).to_vec().into(),
            height: height as i64,
            time: Some(header_time(height)),
            ..Default::default()
        })
    }

    /// ProcessProposal (its verdict ignored, as a decided block may be one
    /// this node refused), FinalizeBlock, then Commit of the next block, as
    /// CometBFT calls them.
    pub fn block(&self, txs: &[Bytes]) -> ResponseFinalizeBlock {
        let height = self.next_height();
        self.process(height, block_hash(height), txs);
        let response = self.finalize(height, txs);
        self.app.commit();
        response
    }

    /// ABCI CheckTx.
    pub fn check(&self, raw: &Bytes, kind: CheckTxType) -> ResponseCheckTx {
        self.app.check_tx(RequestCheckTx {
            tx: raw.0.clone(),
            r#type: kind as i32,
        })
    }

    /// The committed account of `address` (default when absent).
    pub fn account(&self, address: Address) -> AccountRecord {
        self.node
            .account(&address, false)
            .expect("state readable")
            .unwrap_or_default()
    }

    /// The committed balance of `address`.
    pub fn balance(&self, address: Address) -> U256 {
        self.account(address).balance
    }

    /// The committed nonce of `address`.
    pub fn nonce(&self, address: Address) -> u64 {
        self.account(address).nonce
    }
}

/// The genesis `app_state` of the test chain with `alloc`.
pub fn app_state(alloc: &[(Address, U256)]) -> String {
    let alloc: serde_json::Map<String, serde_json::Value> = alloc
        .iter()
        .map(|(address, balance)| {
            (
                address.to_string(),
                serde_json::json!({ "balance": format!("{balance:#x}") }),
            )
        })
        .collect();
    serde_json::json!({
        "chain_id": CHAIN_ID,
        "fee_recipient": fee_recipient().to_string(),
        "alloc": alloc,
    })
    .to_string()
}

/// The value of the `key` attribute of a result's `ethereum_tx` event.
pub fn attribute(result: &ExecTxResult, key: &str) -> Option<String> {
    let event = result.events.iter().find(|e| e.r#type == "ethereum_tx")?;
    event
        .attributes
        .iter()
        .find(|a| a.key == key)
        .map(|a| a.value.clone())
}

/// The Ethereum hash of a raw transaction.
pub fn tx_hash(raw: &Bytes) -> B256 {
    keccak256(raw)
}

/// A CometBFT RPC URL on 127.0.0.1 where nothing listens.
pub fn closed_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("bound").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// A JSON-RPC call over HTTP to `url`: its result, or its error.
pub async fn call_http(url: &str, method: &str, params: Value) -> Result<Value, Value> {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let reply: Value = reqwest::Client::new()
        .post(url)
        .json(&request)
        .send()
        .await
        .expect("the node answers")
        .json()
        .await
        .expect("JSON");
    match reply.get("error") {
        Some(error) => Err(error.clone()),
        None => Ok(reply["result"].clone()),
    }
}

/// Calls `method` with `params`; `Err` holds the JSON-RPC error object.
pub async fn call(rpc: &RpcModule<Web3>, method: &str, params: Value) -> Result<Value, Value> {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (response, _) = rpc
        .raw_json_request(&request.to_string(), 1)
        .await
        .expect("a well-formed request");
    let response: Value = serde_json::from_str(response.get()).expect("JSON");
    match response.get("error") {
        Some(error) => Err(error.clone()),
        None => Ok(response["result"].clone()),
    }
}
