//! The client side's download, merge and diff of a session, against a live synthetic node:
//! what `feth profiler` (fetch) and `feth flamegraph diff` are built on.

use feth_profiler_rpc::diff::{diff_flamegraph, load_profile_set, DiffOptions};
use feth_profiler_rpc::download::{download_file, plan_download, write_metadata};
use feth_profiler_rpc::merge::merge_session;
use feth_profiler_rpc::{EnableParams, ProfileSummary, RoleFilter};

use crate::common::{
    has_exact_frame, has_frame, serial, svg_titles, Node, CHECK_TX_FN, DELIVER_TX_FN, TEST_HZ,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_downloads_merges_and_diffs() {
    let _turn = serial().await;
    let node = Node::start("cli-chain").await;
    let local = tempfile::tempdir().expect("tempdir");
    let chain = local.path().join("flamegraphs").join("cli-chain");

    node.client
        .enable(EnableParams {
            blocks: Some(2),
            frequency_hz: Some(TEST_HZ),
        })
        .await
        .expect("enable");
    // Armed before block 1: its window opens at block 1's end, blocks 2 and 3 are captured.
    node.run_blocks(1..4).await;
    let profiles = node.client.list().await.expect("list");
    assert_eq!(
        profiles.iter().map(|p| p.height).collect::<Vec<_>>(),
        vec![2, 3]
    );

    let plan = plan_download(&chain, &profiles);
    assert_eq!(plan.already_present, 0);
    let planned: usize = profiles.iter().map(|p| p.files.len()).sum();
    assert_eq!(plan.files.len(), planned, "every file of every block");
    for file in &plan.files {
        download_file(&node.client, &chain, *file)
            .await
            .expect("download");
    }
    write_metadata(&chain, &profiles).expect("metadata");
    check_downloaded(&node, &chain);
    assert!(
        !chain.join("1").exists(),
        "block 1 was not captured: nothing downloaded"
    );
    let again = plan_download(&chain, &profiles);
    assert_eq!((again.files.len(), again.already_present), (0, 2));

    let session: Vec<&ProfileSummary> = profiles.iter().collect();
    let merged = merge_session(&chain, &session)
        .expect("merge")
        .expect("two blocks with samples");
    assert_eq!(merged, chain.join("merged-2-3"));
    let titles = svg_titles(&std::fs::read(merged.join("all.svg")).expect("merged svg"));
    assert!(has_exact_frame(&titles, "check_tx") && has_exact_frame(&titles, "deliver_tx"));
    let merged_samples: u64 = std::fs::read_to_string(merged.join("all.folded"))
        .expect("merged folded")
        .lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    assert_eq!(
        merged_samples,
        profiles.iter().map(|p| p.samples).sum::<u64>()
    );
    assert_eq!(
        merge_session(&chain, &session[..1]).expect("one block"),
        None
    );

    let before = load_profile_set(&chain.join("2"), RoleFilter::CheckTx).expect("BEFORE");
    let after = load_profile_set(&chain.join("3"), RoleFilter::CheckTx).expect("AFTER");
    let options = DiffOptions {
        normalize: true,
        title: "2 -> 3".into(),
        top: 10,
    };
    let diff = diff_flamegraph(&before.stacks, &after.stacks, &options).expect("diff");
    let titles = svg_titles(&diff.svg);
    assert!(has_frame(&titles, CHECK_TX_FN));
    assert!(!has_frame(&titles, DELIVER_TX_FN), "check_tx only");

    node.shutdown().await;
}

/// Every downloaded file and `meta.json` is the node's.
fn check_downloaded(node: &Node, chain: &std::path::Path) {
    for height in [2u64, 3] {
        let dir = chain.join(height.to_string());
        let meta: ProfileSummary = serde_json::from_slice(
            &std::fs::read(dir.join("meta.json")).expect("meta.json written"),
        )
        .expect("meta.json parses");
        assert_eq!(meta.height, height);
        for file in &meta.files {
            let local = std::fs::read(dir.join(file)).expect("file downloaded");
            let remote = std::fs::read(node.chain_dir().join(height.to_string()).join(file))
                .expect("node file");
            assert_eq!(local, remote, "{file} of height {height}");
        }
    }
}
