//! A failure while writing a block's profile is caught, reported by profiler_status, and
//! later blocks still work.

use feth_profiler_rpc::EnableParams;

use crate::common::{serial, Node, TEST_HZ};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_write_is_reported_and_later_blocks_still_work() {
    let _turn = serial().await;
    let node = Node::start("failing-chain").await;
    let arm = |blocks| EnableParams {
        blocks: Some(blocks),
        frequency_hz: Some(TEST_HZ),
    };

    // A regular file where the chain's directory should be: writing must fail (even as
    // root, unlike a permission change).
    let chain_dir = node.chain_dir();
    std::fs::remove_dir_all(&chain_dir).expect("remove chain dir");
    std::fs::write(&chain_dir, b"in the way").expect("block the chain dir");

    // Armed during block 10: block 11 is captured.
    node.client.enable(arm(1)).await.expect("enable");
    node.run_blocks(10..12).await;

    let status = node.client.status().await.expect("status");
    assert_eq!(status.failures_total, 1);
    assert_eq!(status.captured_total, 0);
    let error = status.last_error.expect("failure reported");
    assert_eq!(error.height, Some(11));
    assert_eq!(error.stage, "write");
    assert!(
        error.message.contains("failing-chain"),
        "message names the path: {}",
        error.message
    );
    assert!(!status.armed, "the session still completes");
    assert!(node.client.list().await.expect("list").is_empty());

    // The node goes on; once the directory can be written again, so does the profiler.
    std::fs::remove_file(&chain_dir).expect("unblock");
    node.client.enable(arm(2)).await.expect("enable again");
    node.run_blocks(12..15).await;

    let status = node.client.status().await.expect("status");
    assert_eq!(status.failures_total, 1, "{:?}", status.last_error);
    assert_eq!(status.captured_total, 2);
    let heights: Vec<u64> = node
        .client
        .list()
        .await
        .expect("list")
        .iter()
        .map(|p| p.height)
        .collect();
    assert_eq!(heights, vec![13, 14]);
    assert!(chain_dir.join("14").join("all.svg").is_file());

    node.shutdown().await;
}
