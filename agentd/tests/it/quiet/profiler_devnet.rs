//! profiler-rpc embedded in abcid, on the real devnet under load: armed by
//! `feth profiler --enable` for three blocks, it captures each block's window
//! (from the previous Commit's end to its own) with samples of both roles —
//! CheckTx on the mempool connection, FinalizeBlock and Commit on the consensus
//! connection — as well-formed SVGs holding abcid's frames of each, and pprof
//! protobufs carrying the block height. `feth profiler` waits for the session,
//! downloads exactly what the node serves and merges it; `feth profiler status`
//! and `feth flamegraph diff` run on the result.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use clap::Parser;

use crate::common::{funded, wait_until, TestNet};
use feth::cmd::Cli;
use feth::load::pick::RateSchedule;
use feth::load::plan::LoadPlan;
use feth::load::{self, LoadSettings};
use feth_profiler_rpc::api::{EnableParams, FetchParams, HeightSelector, ProfileKind};
use feth_profiler_rpc::{ProfilerClient, RoleFilter};
use pprof::protos::Message;

/// Runs `feth ARGS…` as the binary does.
async fn feth(args: &[&str]) -> anyhow::Result<()> {
    Cli::try_parse_from(std::iter::once("feth").chain(args.iter().copied()))?
        .run()
        .await
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_armed_blocks_under_load_are_captured_in_every_format() {
    // The "before" node (`--patches none`): its FinalizeBlock recovers every
    // sender with the pure-Rust library, milliseconds of CPU per block, so
    // every armed block holds samples of both roles. The tuned node can
    // finish a block's FinalizeBlock and Commit within one sampling period.
    let net = TestNet::start_with(|o| o.patches = "none".to_string()).await;
    let (keys, _dir) = funded(&net, 200, 5).await;

    let mut plan = LoadPlan::transfers(RateSchedule::Fixed(1000.0), 200);
    plan.duration = Some(Duration::from_secs(15));
    plan.max_parallelism = 64;
    let mut settings = LoadSettings::new(&net.web3(), plan);
    settings.wait = Duration::from_secs(30);
    let load = tokio::spawn(load::run(settings, keys));
    // Arm once the load fills blocks (1,000 tx/s at 300 ms blocks is about
    // 300 per block), not on the first few transactions.
    let client = net.client();
    wait_until(
        "a block holds at least 100 of the load's transactions",
        Duration::from_secs(30),
        || {
            let c = &client;
            async move {
                let block: serde_json::Value = c
                    .call("eth_getBlockByNumber", serde_json::json!(["latest", false]))
                    .await
                    .unwrap_or_default();
                block["transactions"]
                    .as_array()
                    .is_some_and(|t| t.len() >= 100)
            }
        },
    )
    .await;

    let url = net.devnet.state.profiler_url();
    let client = ProfilerClient::new(&url, None).unwrap();
    let local = tempfile::tempdir().unwrap();
    let out = local.path().join("flamegraphs");
    feth(&[
        "profiler",
        "--profiler",
        &url,
        "--enable",
        "--blocks",
        "3",
        "--frequency-hz",
        "997",
        "--json",
    ])
    .await
    .expect("feth profiler --enable");
    // A second session is refused while the first is armed.
    assert!(client
        .enable(EnableParams {
            blocks: Some(1),
            frequency_hz: None
        })
        .await
        .is_err());
    // `feth profiler` started while armed waits for the session, disarms and downloads.
    feth(&[
        "profiler",
        "--profiler",
        &url,
        "--out",
        utf8(&out),
        "--timeout-secs",
        "90",
        "--json",
    ])
    .await
    .expect("feth profiler (fetch)");
    let status = client.wait_idle(Duration::from_secs(60)).await.unwrap();
    let profiles = client.list().await.unwrap();
    // CometBFT's own CPU under the same load, from its Go pprof endpoint,
    // found through the devnet's folder.
    let comet_out = local.path().join("comet");
    let devnet_dir = net.devnet.state.options.dir.clone();
    feth(&[
        "profiler",
        "cometbft",
        "--dir",
        utf8(&devnet_dir),
        "--seconds",
        "2",
        "--out",
        utf8(&comet_out),
        "--json",
    ])
    .await
    .expect("feth profiler cometbft");
    check_comet_capture(&comet_out);
    let missing = local.path().join("no-devnet");
    let err = feth(&["profiler", "cometbft", "--dir", utf8(&missing)])
        .await
        .unwrap_err();
    assert!(format!("{err:#}").contains("pass --pprof URL"), "{err:#}");
    assert!(!status.armed);
    // The whole node: armed, profiled in both processes and fetched in one go.
    let node_out = local.path().join("node");
    feth(&[
        "profiler",
        "--profiler",
        &url,
        "--enable",
        "--blocks",
        "2",
        "--frequency-hz",
        "997",
        "--cometbft",
        "--dir",
        utf8(&devnet_dir),
        "--out",
        utf8(&node_out),
        "--timeout-secs",
        "90",
        "--json",
    ])
    .await
    .expect("feth profiler --enable --cometbft");
    check_whole_node(&node_out.join(&status.chain_id));

    assert_eq!(profiles.len(), 3, "{profiles:?}");
    for p in &profiles {
        assert!(
            p.check_tx_samples > 0 && p.deliver_tx_samples > 0,
            "block {} lacks samples of a role: {p:?}",
            p.height
        );
        let execution = p.execution_ms.expect("abcid calls begin_block");
        assert!(execution > 0.0 && execution < p.duration_ms, "{p:?}");
    }
    let heights: Vec<u64> = profiles.iter().map(|p| p.height).collect();
    assert_eq!(heights[1], heights[0] + 1);
    assert_eq!(heights[2], heights[1] + 1);
    let chain = out.join(&status.chain_id);

    // Over the three blocks, each role's SVG and folded stacks hold abcid's own frames.
    let mut texts: HashMap<(RoleFilter, ProfileKind), String> = HashMap::new();
    for &height in &heights {
        for role in [RoleFilter::All, RoleFilter::CheckTx, RoleFilter::DeliverTx] {
            for kind in [ProfileKind::Svg, ProfileKind::Folded] {
                let bytes = client
                    .fetch(FetchParams {
                        height: HeightSelector::Height(height),
                        kind,
                        role,
                    })
                    .await
                    .unwrap()
                    .decode()
                    .unwrap();
                let downloaded =
                    std::fs::read(chain.join(height.to_string()).join(kind.file_name(role)))
                        .expect("downloaded by feth profiler");
                assert_eq!(downloaded, bytes, "{role} {kind:?} of block {height}");
                let text = String::from_utf8(bytes).unwrap();
                if kind == ProfileKind::Svg {
                    let options = roxmltree::ParsingOptions {
                        allow_dtd: true,
                        ..Default::default()
                    };
                    roxmltree::Document::parse_with_options(&text, options)
                        .expect("well-formed SVG");
                }
                texts.entry((role, kind)).or_default().push_str(&text);
            }
        }
        let pb = client
            .fetch(FetchParams {
                height: HeightSelector::Height(height),
                kind: ProfileKind::Pb,
                role: RoleFilter::All,
            })
            .await
            .unwrap()
            .decode()
            .unwrap();
        let profile = pprof::protos::Profile::decode(pb.as_slice()).expect("protobuf decodes");
        let string = |i: i64| profile.string_table[i as usize].as_str();
        for sample in &profile.sample {
            let h = sample
                .label
                .iter()
                .find(|l| string(l.key) == "block_height")
                .map(|l| l.num);
            assert_eq!(h, Some(height as i64));
            assert!(sample.label.iter().any(|l| string(l.key) == "thread"));
        }
    }
    // abcid's frames: CheckTx recovers the sender; FinalizeBlock executes the block.
    let svg = |role| &texts[&(role, ProfileKind::Svg)];
    assert!(svg(RoleFilter::CheckTx).contains("recover_sender"));
    assert!(svg(RoleFilter::DeliverTx).contains("execute_block"));
    assert!(svg(RoleFilter::All).contains("recover_sender"));
    assert!(svg(RoleFilter::All).contains("execute_block"));
    // Told apart: the CheckTx handler (a `check_tx` frame below the `check_tx` root) only
    // in check_tx stacks, block execution only in deliver_tx stacks.
    let stacks = |role| texts[&(role, ProfileKind::Folded)].lines();
    let handles_check_tx = |line: &str| line.split(';').skip(1).any(|f| f == "check_tx");
    assert!(stacks(RoleFilter::CheckTx).any(handles_check_tx));
    assert!(!stacks(RoleFilter::CheckTx).any(|l| l.contains("execute_block")));
    assert!(stacks(RoleFilter::DeliverTx).any(|l| l.contains("execute_block")));
    assert!(!stacks(RoleFilter::DeliverTx).any(handles_check_tx));

    check_merge_status_and_diff(&url, &chain, &heights, local.path()).await;

    let report = load.await.unwrap().expect("the load run");
    assert!(report.totals.included > 0, "the node kept producing blocks");
}

/// The merged flamegraph `feth profiler` drew of the session, `feth profiler status`, and
/// `feth flamegraph diff` between the session's first and last blocks.
async fn check_merge_status_and_diff(url: &str, chain: &Path, heights: &[u64], local: &Path) {
    let merged = chain.join(format!("merged-{}-{}", heights[0], heights[2]));
    let svg = std::fs::read_to_string(merged.join("deliver_tx.svg")).expect("merged SVG");
    assert!(svg.contains("execute_block"));
    feth(&["profiler", "status", "--network", url])
        .await
        .expect("feth profiler status (old --network spelling)");

    let diff = local.join("diff.svg");
    let before = chain.join(heights[0].to_string());
    let after = chain.join(heights[2].to_string());
    feth(&[
        "flamegraph",
        "diff",
        utf8(&before),
        utf8(&after),
        "-o",
        utf8(&diff),
        "--role",
        "deliver_tx",
        "--json",
    ])
    .await
    .expect("feth flamegraph diff");
    let svg = std::fs::read_to_string(&diff).expect("diff SVG");
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&svg, options).expect("well-formed SVG");
    let titles: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter_map(|n| n.text())
        .collect();
    let rooted = |root: &str| titles.iter().any(|t| t.starts_with(&format!("{root} (")));
    assert!(rooted("deliver_tx"), "{titles:?}");
    assert!(!rooted("check_tx"), "--role deliver_tx leaves check_tx out");
    // The diff draws the later block's stacks: every frame of its heaviest
    // stack has a box. (Which functions a single block's samples hit depends
    // on the patches and the load: with the sender cache a block's execution
    // can take under one sampling period, so no function name is assumed.)
    let folded = std::fs::read_to_string(after.join("deliver_tx.folded")).expect("folded");
    let heaviest = folded
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .max_by_key(|(_, n)| n.parse::<u64>().unwrap_or(0))
        .map(|(stack, _)| stack)
        .expect("the later block has deliver_tx samples");
    for frame in heaviest.split(';') {
        assert!(
            titles.iter().any(|t| t.starts_with(frame)),
            "{frame} is not drawn: {titles:?}"
        );
    }
}

/// The whole node's profile of the one session in `chain`: both processes'
/// real frames, weighed in CPU time, CometBFT's windows around the
/// session's blocks.
fn check_whole_node(chain: &Path) {
    let mut heights: Vec<u64> = std::fs::read_dir(chain)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str()?.parse().ok())
        .collect();
    heights.sort();
    assert_eq!(heights.len(), 2, "{heights:?}");
    let dir = chain.join(format!("node-{}-{}", heights[0], heights[1]));
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("node.json")).unwrap()).unwrap();
    let processes = meta["processes"].as_array().unwrap();
    let names: Vec<&str> = processes
        .iter()
        .map(|p| p["process"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["abcid", "cometbft"]);
    for p in processes {
        assert!(p["cores"].as_f64().unwrap() > 0.0, "{meta}");
    }
    // CometBFT's windows began before the session's first block ended and
    // ended after its last block.
    let (before, after) = (
        meta["cometbft_heights"][0].as_u64().unwrap(),
        meta["cometbft_heights"][1].as_u64().unwrap(),
    );
    assert!(
        before <= heights[0] && after >= heights[1],
        "{meta} {heights:?}"
    );
    let folded = std::fs::read_to_string(dir.join("node.folded")).unwrap();
    let stacks = feth_profiler_rpc::folded::FoldedStacks::parse(&folded).unwrap();
    let rooted = |root: &str, frame: &str| {
        stacks
            .iter()
            .any(|(s, _)| s.starts_with(root) && s.contains(frame))
    };
    assert!(rooted("abcid;", "abcid::"), "no abcid frame in\n{folded}");
    assert!(
        rooted("cometbft;", "github.com/cometbft/cometbft/"),
        "no CometBFT frame in\n{folded}"
    );
    let svg = std::fs::read_to_string(dir.join("node.svg")).unwrap();
    assert!(svg.contains("the whole node") && svg.contains("µs of CPU"));
    assert!(dir.join("cometbft-0.pb.gz").is_file());
}

/// The one capture under `out` (`<chain>/cometbft-<first>-<last>/`):
/// CometBFT's real Go frames under a `cometbft` root, the blocks it covers,
/// and the raw profile folding to the same stacks.
fn check_comet_capture(out: &Path) {
    let chains: Vec<_> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(chains.len(), 1, "{chains:?}");
    let captures: Vec<_> = std::fs::read_dir(&chains[0])
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(captures.len(), 1, "{captures:?}");
    let dir = &captures[0];
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("capture.json")).unwrap()).unwrap();
    let (first, last) = (
        meta["heights"][0].as_u64().unwrap(),
        meta["heights"][1].as_u64().unwrap(),
    );
    assert!(last > first, "no block in 2 s of 300 ms blocks: {meta}");
    let name = dir.file_name().unwrap().to_str().unwrap();
    assert_eq!(name, format!("cometbft-{first}-{last}"));
    assert!(meta["seconds"].as_f64().unwrap() >= 1.9, "{meta}");
    let folded = std::fs::read_to_string(dir.join("cometbft.folded")).unwrap();
    let stacks = feth_profiler_rpc::folded::FoldedStacks::parse(&folded).unwrap();
    assert!(stacks.total() > 0 && stacks.total() == meta["samples"].as_u64().unwrap());
    assert!(stacks
        .iter()
        .all(|(stack, _)| stack.starts_with("cometbft;")));
    assert!(
        stacks
            .iter()
            .any(|(stack, _)| stack.contains("github.com/cometbft/cometbft/")),
        "no CometBFT frame in\n{folded}"
    );
    let raw = std::fs::read(dir.join("profile.pb.gz")).unwrap();
    let refolded = feth_profiler_rpc::gopprof::fold(&raw, "cometbft").unwrap();
    assert_eq!(refolded.stacks, stacks);
    let svg = std::fs::read_to_string(dir.join("flamegraph.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("cometbft CPU"));
}
