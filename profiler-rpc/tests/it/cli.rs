//! The `feth profiler` and `feth flamegraph diff` entry points, parsed from argv exactly
//! as the `feth` binary will, against a live synthetic node.

use clap::{CommandFactory, Parser, Subcommand};
use feth_profiler_rpc::cli::{run_flamegraph, run_profiler, FlamegraphArgs, ProfilerArgs};
use feth_profiler_rpc::ProfileSummary;

use crate::common::{
    has_exact_frame, has_frame, serial, svg_titles, Node, CHECK_TX_FN, DELIVER_TX_FN,
};

/// Mirrors how agentd mounts the commands.
#[derive(Debug, Parser)]
#[command(name = "feth")]
struct Feth {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Profiler(ProfilerArgs),
    Flamegraph(FlamegraphArgs),
}

async fn feth(args: &[&str]) -> anyhow::Result<()> {
    let parsed = Feth::try_parse_from(std::iter::once("feth").chain(args.iter().copied()))?;
    match parsed.command {
        Command::Profiler(args) => run_profiler(args).await,
        Command::Flamegraph(args) => run_flamegraph(args).await,
    }
}

#[test]
fn argument_definitions_are_consistent() {
    Feth::command().debug_assert();
    assert!(
        Feth::try_parse_from(["feth", "profiler", "--blocks", "3"]).is_err(),
        "--blocks needs --enable"
    );
    assert!(Feth::try_parse_from(["feth", "profiler", "status", "--enable"]).is_err());
    assert!(Feth::try_parse_from([
        "feth",
        "profiler",
        "status",
        "--network",
        "http://127.0.0.1:1"
    ])
    .is_ok());
    assert!(Feth::try_parse_from(["feth", "profiler", "--enable", "--blocks", "-1"]).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_arms_waits_fetches_merges_and_diffs() {
    let _turn = serial().await;
    let node = Node::start("cli-chain").await;
    let url = node.server.url();
    let local = tempfile::tempdir().expect("tempdir");
    let out = local.path().join("flamegraphs");
    let out_arg = out.to_str().expect("utf-8 path").to_string();

    feth(&[
        "profiler",
        "--network",
        &url,
        "--enable",
        "--blocks",
        "2",
        "--frequency-hz",
        "199",
        "--json",
    ])
    .await
    .expect("feth profiler --enable");
    assert!(node.client.status().await.expect("status").armed);

    // `feth profiler` started while armed waits for the session, then disarms and fetches.
    let fetch_args = [
        "profiler",
        "--network",
        &url,
        "--out",
        &out_arg,
        "--timeout-secs",
        "120",
        "--json",
    ]
    .map(String::from);
    let fetch = tokio::spawn(async move {
        let args: Vec<&str> = fetch_args.iter().map(String::as_str).collect();
        feth(&args).await
    });
    node.run_blocks(1..4).await;
    fetch.await.expect("fetch task").expect("feth profiler");

    let chain = out.join("cli-chain");
    // Armed during block 1: blocks 2 and 3 are captured.
    for height in [2, 3] {
        let dir = chain.join(height.to_string());
        let meta: ProfileSummary = serde_json::from_slice(
            &std::fs::read(dir.join("meta.json")).expect("meta.json fetched"),
        )
        .expect("meta.json parses");
        assert_eq!(meta.height, height);
        for file in &meta.files {
            let local = std::fs::read(dir.join(file)).expect("file fetched");
            let remote = std::fs::read(node.chain_dir().join(height.to_string()).join(file))
                .expect("node file");
            assert_eq!(local, remote, "{file} of height {height}");
        }
    }
    assert!(
        !chain.join("1").exists(),
        "block 1 was joined halfway: not captured"
    );
    let merged = chain.join("merged-2-3");
    let titles = svg_titles(&std::fs::read(merged.join("all.svg")).expect("merged svg"));
    assert!(has_exact_frame(&titles, "check_tx") && has_exact_frame(&titles, "deliver_tx"));
    let merged_samples: u64 = std::fs::read_to_string(merged.join("all.folded"))
        .expect("merged folded")
        .lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    let listed = node.client.list().await.expect("list");
    assert_eq!(
        merged_samples,
        listed.iter().map(|p| p.samples).sum::<u64>()
    );
    assert!(!node.client.status().await.expect("status").armed);

    feth(&["profiler", "status", "--network", &url])
        .await
        .expect("feth profiler status");

    let diff = local.path().join("diff.svg");
    let before = chain.join("2");
    let after = chain.join("3");
    feth(&[
        "flamegraph",
        "diff",
        before.to_str().expect("utf-8"),
        after.to_str().expect("utf-8"),
        "-o",
        diff.to_str().expect("utf-8"),
        "--role",
        "check_tx",
        "--json",
    ])
    .await
    .expect("feth flamegraph diff");
    let titles = svg_titles(&std::fs::read(&diff).expect("diff svg"));
    assert!(has_frame(&titles, CHECK_TX_FN));
    assert!(
        !has_frame(&titles, DELIVER_TX_FN),
        "--role check_tx keeps check_tx only"
    );

    let missing = local.path().join("nothing-here");
    let error = feth(&[
        "flamegraph",
        "diff",
        missing.to_str().expect("utf-8"),
        after.to_str().expect("utf-8"),
    ])
    .await
    .expect_err("missing BEFORE");
    assert!(format!("{error:#}").contains("BEFORE"), "{error:#}");

    node.shutdown().await;
}
