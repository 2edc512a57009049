//! tendermint-abci's key-value store example app with `profiler-rpc`
//! embedded: what a Rust ABCI app of one's own adds to be profiled per
//! block, check_tx and deliver_tx told apart (`recipes/kvstore-rs.toml`
//! runs it beside the pinned CometBFT).
//!
//! The app's calls are marked with the work they do ([`Work::run`]), and
//! its store's driver thread, which does the writes FinalizeBlock asks
//! for, is named so that a rule counts it as execution ([`ThreadWork`]).
//!
//! `kvstore_profiled ABCI_ADDR PROFILER_ADDR OUT_DIR`: ABCI on
//! `ABCI_ADDR` (CometBFT's `proxy_app`), the profiler's JSON-RPC on
//! `PROFILER_ADDR` (loopback), profiles under `OUT_DIR/kvstore-rs/`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use feth_profiler_rpc::{
    serve, tag_current_thread, BlockProfiler, ProfilerConfig, Role, ServerConfig, ThreadWork, Work,
};
use tendermint_abci::{Application, KeyValueStoreApp, ServerBuilder};
use tendermint_proto::v0_38::abci::{
    ExecTxResult, RequestCheckTx, RequestFinalizeBlock, RequestInfo, RequestPrepareProposal,
    RequestProcessProposal, RequestQuery, ResponseCheckTx, ResponseCommit, ResponseFinalizeBlock,
    ResponseInfo, ResponsePrepareProposal, ResponseProcessProposal, ResponseQuery,
};

/// The name of the thread that holds the store (tendermint-abci's driver).
const DRIVER_THREAD: &str = "kvstore-driver";

/// The app, its calls marked for the block profiler.
#[derive(Clone)]
struct Profiled {
    app: KeyValueStoreApp,
    profiler: Arc<BlockProfiler>,
    height: Arc<AtomicU64>,
}

impl Application for Profiled {
    fn info(&self, request: RequestInfo) -> ResponseInfo {
        self.app.info(request)
    }

    fn query(&self, request: RequestQuery) -> ResponseQuery {
        self.app.query(request)
    }

    fn check_tx(&self, request: RequestCheckTx) -> ResponseCheckTx {
        tag_current_thread(Role::CheckTx);
        Work::CheckTx.run(|| self.app.check_tx(request))
    }

    fn prepare_proposal(&self, request: RequestPrepareProposal) -> ResponsePrepareProposal {
        Work::Proposal.run(|| self.app.prepare_proposal(request))
    }

    fn process_proposal(&self, request: RequestProcessProposal) -> ResponseProcessProposal {
        Work::Proposal.run(|| self.app.process_proposal(request))
    }

    fn finalize_block(&self, request: RequestFinalizeBlock) -> ResponseFinalizeBlock {
        tag_current_thread(Role::DeliverTx);
        let height = u64::try_from(request.height).unwrap_or_default();
        self.height.store(height, Ordering::Release);
        self.profiler.begin_block(height);
        let txs = request.txs.len();
        let mut done = Work::DeliverTx.run(|| self.app.finalize_block(request));
        // tendermint-abci 0.41's example answers with no transaction
        // results, and CometBFT 0.38 halts on a block whose results do not
        // match its transactions: one (code 0) per transaction.
        if done.tx_results.len() != txs {
            done.tx_results = vec![ExecTxResult::default(); txs];
        }
        done
    }

    fn commit(&self) -> ResponseCommit {
        let done = Work::Commit.run(|| self.app.commit());
        self.profiler.end_block(self.height.load(Ordering::Acquire));
        done
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [abci, profiler_addr, out] = args.as_slice() else {
        return Err("usage: kvstore_profiled ABCI_ADDR PROFILER_ADDR OUT_DIR".into());
    };
    let mut config = ProfilerConfig::new("kvstore-rs", out);
    // Under load the driver thread mostly stores FinalizeBlock's writes.
    config.thread_work = vec![ThreadWork::new(DRIVER_THREAD, Work::DeliverTx)];
    let profiler = BlockProfiler::new(config)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let config = ServerConfig {
        addr: profiler_addr.parse()?,
        token: None,
    };
    let _server = runtime.block_on(serve(profiler.clone(), config))?;
    let (app, driver) = KeyValueStoreApp::new();
    std::thread::Builder::new()
        .name(DRIVER_THREAD.to_string())
        .spawn(move || {
            if let Err(e) = driver.run() {
                eprintln!("the kvstore driver stopped: {e}");
            }
        })?;
    let app = Profiled {
        app,
        profiler,
        height: Arc::new(AtomicU64::new(0)),
    };
    let server = ServerBuilder::new(1 << 20).bind(abci, app)?;
    // The profiler's server runs on the runtime while the ABCI server,
    // which blocks, runs on this thread.
    std::thread::spawn(move || runtime.block_on(std::future::pending::<()>()));
    server.listen()?;
    Ok(())
}
