//! A synthetic "node" for the integration tests: a BlockProfiler with its JSON-RPC server
//! on a free 127.0.0.1 port, a check_tx thread and a consensus (deliver_tx) thread doing
//! CPU work in distinctively named functions, and helpers to read what was captured.

use std::hint::black_box;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use feth_profiler_rpc::{
    serve, tag_current_thread, BlockProfiler, ProfilerClient, ProfilerConfig, ProfilerError, Role,
    RpcServer, ServerConfig, ThreadWork, Work,
};
use pprof::protos::Message as _;

/// Distinctive frame of the check_tx thread's work.
pub const CHECK_TX_FN: &str = "feth_synthetic_check_tx_work";
/// Distinctive frame of the consensus thread's work.
pub const DELIVER_TX_FN: &str = "feth_synthetic_deliver_tx_work";
/// Distinctive frame of consensus-thread CPU work between blocks (after Commit, before
/// FinalizeBlock): it belongs to the next block's window.
pub const BETWEEN_BLOCKS_FN: &str = "feth_synthetic_between_blocks_work";
/// Distinctive frame of CPU work after the driver's last block: outside every window once
/// the session has completed.
pub const AFTER_LAST_BLOCK_FN: &str = "feth_synthetic_after_last_block_work";
/// Distinctive frame of admission work on an untagged `web3` thread, marked `check_tx`.
pub const WEB3_ADMISSION_FN: &str = "feth_synthetic_web3_admission_work";
/// Distinctive frame of unmarked work on the `web3` thread: `rpc` by the node's rule.
pub const RPC_READ_FN: &str = "feth_synthetic_rpc_read_work";
/// Distinctive frame of the consensus thread's Commit work, marked `commit`.
pub const COMMIT_FN: &str = "feth_synthetic_commit_work";
/// Sampling frequency used by the tests.
pub const TEST_HZ: i64 = 199;
/// CPU time each role spends per block: ~50 samples per role at 199 Hz.
pub const CPU_PER_ROLE: Duration = Duration::from_millis(250);
/// A token long enough for the server.
pub const TOKEN: &str = "test-token-0123456789abcdef";

/// pprof-rs has one profiler per process: tests of one binary take turns.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Takes this test binary's turn.
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.lock().await
}

fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid clock id and a valid out-pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// One round of integer mixing: a leaf, where most samples land.
#[inline(never)]
fn mix_round(x: u64, i: u64) -> u64 {
    x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i) ^ (x >> 29)
}

/// Many rounds. Calling a function in its loop keeps this function's frame set up while
/// it runs: pprof-rs's frame-pointer walk starts at the interrupted function's frame
/// pointer and never records the interrupted PC, so a sample in `mix_round` (frameless)
/// records `mix`'s caller — the distinctive work function — as its innermost frame.
#[inline(never)]
fn mix(seed: u64) -> u64 {
    let mut x = seed | 1;
    for i in 0..20_000u64 {
        x = mix_round(x, i);
    }
    black_box(x)
}

/// Burns `cpu` of the calling thread's CPU time in [`mix`], salted so that
/// each work function computes something of its own. Always inlined: the
/// work function calling it is `mix`'s caller, the frame the tests look for.
#[inline(always)]
fn burn(cpu: Duration, salt: u64) -> u64 {
    let until = thread_cpu_time() + cpu;
    let mut acc = 0u64;
    while thread_cpu_time() < until {
        acc = mix(acc.wrapping_add(salt));
    }
    acc
}

/// The check_tx thread's CPU work: burns `cpu` of thread CPU time.
#[inline(never)]
pub fn feth_synthetic_check_tx_work(cpu: Duration) -> u64 {
    burn(cpu, 0)
}

/// The consensus thread's CPU work: burns `cpu` of thread CPU time.
#[inline(never)]
pub fn feth_synthetic_deliver_tx_work(cpu: Duration) -> u64 {
    burn(cpu, 7)
}

/// Consensus-thread CPU work between two blocks.
#[inline(never)]
pub fn feth_synthetic_between_blocks_work(cpu: Duration) -> u64 {
    burn(cpu, 13)
}

/// Admission work on the `web3` thread (run marked `check_tx`).
#[inline(never)]
pub fn feth_synthetic_web3_admission_work(cpu: Duration) -> u64 {
    burn(cpu, 19)
}

/// Unmarked work on the `web3` thread.
#[inline(never)]
pub fn feth_synthetic_rpc_read_work(cpu: Duration) -> u64 {
    burn(cpu, 23)
}

/// The consensus thread's Commit work (run marked `commit`).
#[inline(never)]
pub fn feth_synthetic_commit_work(cpu: Duration) -> u64 {
    burn(cpu, 29)
}

/// Consensus-thread CPU work after the last block.
#[inline(never)]
pub fn feth_synthetic_after_last_block_work(cpu: Duration) -> u64 {
    burn(cpu, 17)
}

/// A profiler, its server on 127.0.0.1 and a client of it.
pub struct Node {
    pub profiler: Arc<BlockProfiler>,
    pub server: RpcServer,
    pub client: ProfilerClient,
    pub out_dir: tempfile::TempDir,
    pub chain_id: String,
}

impl Node {
    /// Starts a node serving on a free loopback port.
    pub async fn start(chain_id: &str) -> Node {
        let out_dir = tempfile::tempdir().expect("tempdir");
        let mut config = ProfilerConfig::new(chain_id, out_dir.path());
        config.thread_work = vec![ThreadWork::new("web3", Work::Rpc)];
        let profiler = new_profiler(config).await;
        let addr: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let server = serve(profiler.clone(), ServerConfig { addr, token: None })
            .await
            .expect("serve");
        let client = ProfilerClient::new(&server.url(), None).expect("client");
        Node {
            profiler,
            server,
            client,
            out_dir,
            chain_id: chain_id.to_string(),
        }
    }

    /// The chain's profile directory on the "node".
    pub fn chain_dir(&self) -> PathBuf {
        self.out_dir.path().join(&self.chain_id)
    }

    /// Runs blocks `heights` (check_tx and deliver_tx work inside each) on dedicated
    /// threads, then waits until every captured block is rendered.
    pub async fn run_blocks(&self, heights: Range<u64>) {
        let profiler = self.profiler.clone();
        tokio::task::spawn_blocking(move || {
            drive_blocks(&profiler, heights);
            assert!(
                profiler.wait_for_renders(Duration::from_secs(120)),
                "renders did not finish"
            );
        })
        .await
        .expect("block driver panicked");
    }

    /// Stops the server and drops the profiler.
    pub async fn shutdown(self) {
        let Node {
            profiler, server, ..
        } = self;
        server.stop().await;
        drop(profiler);
    }
}

/// Creates the process's BlockProfiler, waiting for a previous test's to be released.
pub async fn new_profiler(config: ProfilerConfig) -> Arc<BlockProfiler> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match BlockProfiler::new(config.clone()) {
            Ok(profiler) => return profiler,
            Err(ProfilerError::AlreadyInstantiated) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => panic!("creating the profiler: {e}"),
        }
    }
}

/// Drives blocks like an ABCI app on CometBFT 0.38: first the block's intake (the check_tx
/// thread checks incoming transactions, an untagged `web3` thread admits some ahead of
/// CheckTx — marked as admission — and serves a read, while the consensus thread, tagged
/// deliver_tx, does some work of its own between blocks), then begin_block, the consensus
/// thread's FinalizeBlock work and its Commit (marked), end_block. Once the block's profile
/// is rendered the next block starts. After the last block the consensus thread works a
/// little more.
pub fn drive_blocks(profiler: &Arc<BlockProfiler>, heights: Range<u64>) {
    let (check_tx_in, check_tx_done) = worker("check", |cpu| {
        tag_current_thread(Role::CheckTx);
        feth_synthetic_check_tx_work(cpu)
    });
    let (web3_in, web3_done) = worker("web3", |cpu| {
        Work::CheckTx.run(|| feth_synthetic_web3_admission_work(cpu / 4))
            ^ feth_synthetic_rpc_read_work(cpu / 4)
    });
    let profiler = profiler.clone();
    let consensus = thread::spawn(move || {
        tag_current_thread(Role::DeliverTx);
        for height in heights {
            check_tx_in.send(CPU_PER_ROLE).expect("check thread alive");
            web3_in.send(CPU_PER_ROLE).expect("web3 thread alive");
            black_box(feth_synthetic_between_blocks_work(CPU_PER_ROLE / 2));
            black_box(check_tx_done.recv().expect("check thread answers"));
            black_box(web3_done.recv().expect("web3 thread answers"));
            profiler.begin_block(height);
            black_box(feth_synthetic_deliver_tx_work(CPU_PER_ROLE));
            black_box(Work::Commit.run(|| feth_synthetic_commit_work(CPU_PER_ROLE / 4)));
            profiler.end_block(height);
            assert!(
                profiler.wait_for_renders(Duration::from_secs(120)),
                "render stuck"
            );
        }
        black_box(feth_synthetic_after_last_block_work(CPU_PER_ROLE / 2));
    });
    consensus.join().expect("consensus thread panicked");
}

/// A thread named `name` that runs `work` for each CPU budget it is sent and answers with
/// its result; it ends when its sender is dropped.
fn worker(
    name: &str,
    work: impl Fn(Duration) -> u64 + Send + 'static,
) -> (mpsc::Sender<Duration>, mpsc::Receiver<u64>) {
    let (work_tx, work_rx) = mpsc::channel::<Duration>();
    let (done_tx, done_rx) = mpsc::channel::<u64>();
    thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            for cpu in work_rx {
                if done_tx.send(work(cpu)).is_err() {
                    break;
                }
            }
        })
        .expect("spawning a worker thread");
    (work_tx, done_rx)
}

/// `<title>` texts of an SVG, after checking that it is well-formed XML.
pub fn svg_titles(svg: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(svg).expect("SVG is UTF-8");
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc =
        roxmltree::Document::parse_with_options(text, options).expect("SVG is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter_map(|n| n.text().map(str::to_string))
        .collect()
}

/// Whether some title names a frame containing `name`.
pub fn has_frame(titles: &[String], name: &str) -> bool {
    titles.iter().any(|t| t.contains(name))
}

/// Whether some frame is exactly `name` (as a root frame: `name (N samples, P%)`).
pub fn has_exact_frame(titles: &[String], name: &str) -> bool {
    titles.iter().any(|t| t.starts_with(&format!("{name} (")))
}

/// The labels of one protobuf sample.
pub struct SampleLabels {
    /// The sampled thread's name.
    pub thread: String,
    /// The sample's work.
    pub role: String,
    /// The block's height.
    pub height: i64,
}

/// A decoded pprof profile with its string table resolved.
pub struct DecodedProfile {
    pub profile: pprof::protos::Profile,
}

impl DecodedProfile {
    pub fn decode(bytes: &[u8]) -> DecodedProfile {
        DecodedProfile {
            profile: pprof::protos::Profile::decode(bytes).expect("protobuf decodes"),
        }
    }

    pub fn string(&self, index: i64) -> &str {
        &self.profile.string_table[usize::try_from(index).expect("non-negative index")]
    }

    /// The `thread`, `role` and `block_height` labels of every sample; panics if one is missing.
    pub fn sample_labels(&self) -> Vec<SampleLabels> {
        self.profile
            .sample
            .iter()
            .map(|sample| {
                let text = |key: &str| {
                    sample
                        .label
                        .iter()
                        .find(|l| self.string(l.key) == key)
                        .map(|l| self.string(l.str).to_string())
                        .unwrap_or_else(|| panic!("a sample without a {key} label"))
                };
                let height = sample
                    .label
                    .iter()
                    .find(|l| self.string(l.key) == "block_height")
                    .map(|l| l.num)
                    .expect("every sample has a block_height label");
                SampleLabels {
                    thread: text("thread"),
                    role: text("role"),
                    height,
                }
            })
            .collect()
    }

    /// Names of the functions in the profile.
    pub fn function_names(&self) -> Vec<String> {
        self.profile
            .function
            .iter()
            .map(|f| self.string(f.name).to_string())
            .collect()
    }
}

/// Reads a file of a stored profile.
pub fn read(dir: &Path, height: u64, file: &str) -> Vec<u8> {
    let path = dir.join(height.to_string()).join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}
