//! Arm 3 blocks over JSON-RPC, run 5 blocks of a two-role workload, and check every
//! output of the 3 captured blocks: SVGs, protobufs, folded stacks, list and fetch, and
//! the windows: each block from the previous Commit's end to its own.

use feth_profiler_rpc::api::ContentEncoding;
use feth_profiler_rpc::{
    EnableParams, FetchParams, HeightSelector, ProfileKind, RoleFilter, SessionState,
};

use crate::common::{
    has_exact_frame, has_frame, read, serial, svg_titles, DecodedProfile, Node,
    AFTER_LAST_BLOCK_FN, BETWEEN_BLOCKS_FN, CHECK_TX_FN, COMMIT_FN, CPU_PER_ROLE, DELIVER_TX_FN,
    RPC_READ_FN, TEST_HZ, WEB3_ADMISSION_FN,
};
use feth_profiler_rpc::Work;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_armed_blocks_give_three_profiles_with_both_roles() {
    let _turn = serial().await;
    let node = Node::start("e2e-chain").await;

    // Blocks before arming are not captured.
    node.run_blocks(1..3).await;
    assert!(node.client.list().await.expect("list").is_empty());

    let session = node
        .client
        .enable(EnableParams {
            blocks: Some(3),
            frequency_hz: Some(TEST_HZ),
        })
        .await
        .expect("enable");
    assert_eq!(session.state, SessionState::Armed);
    assert_eq!(session.blocks_requested, 3);
    assert!(node.client.status().await.expect("status").armed);

    node.run_blocks(3..8).await;

    let status = node.client.status().await.expect("status");
    assert!(!status.armed, "disarms itself after 3 blocks");
    let finished = status.session.expect("session on record");
    assert_eq!(finished.id, session.id);
    assert_eq!(finished.state, SessionState::Completed);
    assert_eq!(finished.blocks_captured, 3);
    assert_eq!(status.failures_total, 0, "{:?}", status.last_error);
    assert_eq!(status.captured_total, 3);
    assert_eq!(status.pending_renders, 0);
    assert_eq!(status.profiles, 3);
    // Armed end_block calls: block 3's (the first window opens) and 4, 5, 6's.
    let cost = &status.consensus_cost;
    assert_eq!(cost.blocks, 4, "{cost:?}");
    assert!(
        cost.total_ns > 0 && cost.max_call_ns <= cost.total_ns,
        "{cost:?}"
    );

    let listed = node.client.list().await.expect("list");
    // Armed during block 3: its window opens at its end, and the session captures 4, 5, 6.
    let heights: Vec<u64> = listed.iter().map(|p| p.height).collect();
    assert_eq!(heights, vec![4, 5, 6]);
    let expected_files: Vec<String> = ProfileKind::ALL
        .iter()
        .flat_map(|kind| RoleFilter::ALL.map(|role| kind.file_name(role)))
        .collect();
    for profile in &listed {
        assert_eq!(profile.session_id, session.id);
        assert_eq!(profile.frequency_hz, TEST_HZ as u32);
        assert!(profile.check_tx_samples > 0, "{profile:?}");
        assert!(profile.deliver_tx_samples > 0, "{profile:?}");
        assert!(profile.samples >= profile.check_tx_samples + profile.deliver_tx_samples);
        // Every sample has one work: the kinds add up to the block's samples, and the
        // marked Commit and the web3 thread's unmarked reads are counted apart.
        let works = &profile.work_samples;
        assert_eq!(works.values().sum::<u64>(), profile.samples, "{profile:?}");
        assert_eq!(works[&Work::CheckTx], profile.check_tx_samples);
        assert_eq!(works[&Work::DeliverTx], profile.deliver_tx_samples);
        assert!(
            works[&Work::Commit] > 0 && works[&Work::Rpc] > 0,
            "{profile:?}"
        );
        // A block holds its own samples only: its work is 3 × CPU_PER_ROLE of CPU time
        // (~149 samples). The session's guard runs on across blocks, so a block that kept
        // the earlier blocks' counts too would hold two or three times that by block 5.
        let own = 3.0 * CPU_PER_ROLE.as_secs_f64() * TEST_HZ as f64;
        assert!((profile.samples as f64) < 1.6 * own, "{profile:?}");
        // Execution (FinalizeBlock to Commit) burns CPU_PER_ROLE of consensus-thread CPU
        // time, so it lasts at least that long, inside the window.
        let execution = profile.execution_ms.expect("begin_block was called");
        assert!(execution >= CPU_PER_ROLE.as_secs_f64() * 1e3, "{profile:?}");
        assert!(profile.duration_ms > execution, "{profile:?}");
        for file in &expected_files {
            assert!(profile.files.contains(file), "{file} missing: {profile:?}");
        }
    }
    assert!(!node.chain_dir().join("3").exists());
    assert!(!node.chain_dir().join("7").exists());

    for profile in &listed {
        check_block_files(&node, profile.height).await;
    }

    let latest = node
        .client
        .fetch(FetchParams {
            height: HeightSelector::Latest,
            kind: ProfileKind::Folded,
            role: RoleFilter::All,
        })
        .await
        .expect("fetch latest");
    assert_eq!(latest.height, 6);

    node.shutdown().await;
}

/// Checks one captured block's files on disk and through `profiler_fetch`.
async fn check_block_files(node: &Node, height: u64) {
    let dir = node.chain_dir();

    // SVGs: well-formed, kinds of work as root frames, the distinctive work frames.
    let all = svg_titles(&read(&dir, height, "all.svg"));
    assert!(has_exact_frame(&all, "check_tx"), "height {height}");
    assert!(has_exact_frame(&all, "deliver_tx"), "height {height}");
    assert!(has_frame(&all, CHECK_TX_FN));
    assert!(has_frame(&all, DELIVER_TX_FN));
    // A block's window opens at the previous Commit's end: the consensus thread's work
    // between blocks is in it; its window closes at its own Commit's end: the work after the
    // session's last block is in none.
    assert!(has_frame(&all, BETWEEN_BLOCKS_FN), "height {height}");
    assert!(!has_frame(&all, AFTER_LAST_BLOCK_FN), "height {height}");
    assert!(has_exact_frame(&all, "commit") && has_exact_frame(&all, "rpc"));
    let check = svg_titles(&read(&dir, height, "check_tx.svg"));
    assert!(has_frame(&check, CHECK_TX_FN) && !has_frame(&check, DELIVER_TX_FN));
    assert!(!has_exact_frame(&check, "deliver_tx"));
    // Admission marked on the untagged web3 thread is check_tx; its reads are not.
    assert!(has_frame(&check, WEB3_ADMISSION_FN) && !has_frame(&check, RPC_READ_FN));
    let deliver = svg_titles(&read(&dir, height, "deliver_tx.svg"));
    assert!(has_frame(&deliver, DELIVER_TX_FN) && !has_frame(&deliver, CHECK_TX_FN));
    // Commit runs on the consensus thread (tagged deliver_tx) but is not execution.
    assert!(!has_frame(&deliver, COMMIT_FN));

    // Protobuf: decodes, every sample labelled with its thread and this block's height.
    let pb = DecodedProfile::decode(&read(&dir, height, "all.pb"));
    let labels = pb.sample_labels();
    assert!(!labels.is_empty());
    assert!(
        labels.iter().all(|l| l.height == height as i64),
        "height {height}"
    );
    assert!(labels.iter().any(|l| l.thread == "check_tx"));
    assert!(labels.iter().any(|l| l.thread == "deliver_tx"));
    // The thread is the second label: the web3 thread's samples are admission or reads,
    // the consensus thread's execution, Commit or other work between blocks.
    let pairs: std::collections::BTreeSet<(&str, &str)> = labels
        .iter()
        .map(|l| (l.role.as_str(), l.thread.as_str()))
        .collect();
    assert!(pairs.contains(&("check_tx", "web3")), "{pairs:?}");
    assert!(pairs.contains(&("rpc", "web3")), "{pairs:?}");
    assert!(pairs.contains(&("commit", "deliver_tx")), "{pairs:?}");
    assert!(pairs.contains(&("deliver_tx", "deliver_tx")), "{pairs:?}");
    let functions = pb.function_names();
    assert!(functions.iter().any(|f| f.contains(CHECK_TX_FN)));
    assert!(functions.iter().any(|f| f.contains(DELIVER_TX_FN)));
    assert!(pb.profile.period > 0 && pb.profile.duration_nanos > 0);
    let check_pb = DecodedProfile::decode(&read(&dir, height, "check_tx.pb"));
    let check_labels = check_pb.sample_labels();
    assert!(check_labels.iter().all(|l| l.role == "check_tx"));
    assert!(check_labels.iter().any(|l| l.thread == "web3"));

    // Folded: role files are the role's stacks of the all file.
    let folded = String::from_utf8(read(&dir, height, "all.folded")).expect("utf-8");
    let check_folded = String::from_utf8(read(&dir, height, "check_tx.folded")).expect("utf-8");
    assert!(check_folded.lines().all(|l| l.starts_with("check_tx;")));
    assert!(check_folded
        .lines()
        .any(|l| l.starts_with("check_tx;web3;") && l.contains(WEB3_ADMISSION_FN)));
    assert!(folded
        .lines()
        .any(|l| l.starts_with("commit;deliver_tx;") && l.contains(COMMIT_FN)));
    assert!(folded
        .lines()
        .any(|l| l.starts_with("rpc;web3;") && l.contains(RPC_READ_FN)));
    assert!(check_folded.lines().all(|l| folded.lines().any(|a| a == l)));
    assert!(check_folded.contains(CHECK_TX_FN));

    // Fetch returns exactly what is on disk, binary kinds in base64.
    for kind in ProfileKind::ALL {
        for role in RoleFilter::ALL {
            let response = node
                .client
                .fetch(FetchParams {
                    height: HeightSelector::Height(height),
                    kind,
                    role,
                })
                .await
                .expect("fetch");
            let expected = read(&dir, height, &kind.file_name(role));
            assert_eq!(response.height, height);
            assert_eq!(response.bytes, expected.len() as u64);
            assert_eq!(response.decode().expect("decodes"), expected);
            let encoding = if kind == ProfileKind::Pb {
                ContentEncoding::Base64
            } else {
                ContentEncoding::Utf8
            };
            assert_eq!(response.encoding, encoding);
        }
    }
}
