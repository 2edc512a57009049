//! Fuzzes the web3 request parameters: any bytes, as the parameters of any
//! method that reads them, on a node with one committed block, get a
//! well-formed answer and never a panic or an internal error
//! (`abcid::rpc::fuzz::one_request`; `cargo test` runs the same body from a
//! seeded generator, `abci-patches/tests/it/rpc_fuzz.rs`).
#![no_main]

use std::sync::{Arc, OnceLock};

use abcid::node::Node;
use abcid::patches::Patches;
use abcid::rpc::{RpcConfig, Web3};
use jsonrpsee::RpcModule;
use libfuzzer_sys::fuzz_target;

struct Target {
    _dir: tempfile::TempDir,
    module: RpcModule<Web3>,
    runtime: tokio::runtime::Runtime,
}

fn target() -> &'static Target {
    static TARGET: OnceLock<Target> = OnceLock::new();
    TARGET.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let node = Arc::new(Node::open(dir.path(), Patches::ALL).expect("the node opens"));
        let genesis = r#"{"chain_id":9000,"alloc":{"0x1111111111111111111111111111111111111111":{"balance":"0x10000"}}}"#;
        node.enter()
            .and_then(|node| node.init_chain(genesis.as_bytes(), 1, 0))
            .expect("InitChain");
        let config = RpcConfig {
            gas_cap: 1_000_000,
            evm_timeout: std::time::Duration::from_secs(1),
            ..RpcConfig::default()
        };
        let module = abcid::rpc::module(node, "http://127.0.0.1:9", config).expect("module");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        Target {
            _dir: dir,
            module,
            runtime,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let t = target();
    if let Err(e) = t.runtime.block_on(abcid::rpc::fuzz::one_request(&t.module, data)) {
        panic!("{e}");
    }
});
