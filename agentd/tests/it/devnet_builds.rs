//! A devnet of an abcid build kept under another name (`--build-a
//! ./abcid-before`, as a user keeps the build before a change): started,
//! watched and stopped by its own name and PID.

use feth_devnet::process;

use crate::common::TestNet;

/// Before, the devnet waited for a process named `abcid`: a build named
/// otherwise was taken for one that had died, the devnet tried again on new
/// ports with a second abcid on the same state, and the first was left
/// running when feth gave up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_under_another_name_starts_and_is_stopped_by_its_pid() {
    let dir = tempfile::tempdir().unwrap();
    let build = dir.path().join("abcid-before");
    std::fs::copy(feth_devnet::tools::abcid().unwrap(), &build).unwrap();
    let net = TestNet::start_with(|o| o.abcid = Some(build.clone())).await;
    assert_eq!(net.devnet.state.abcid, build);
    assert_eq!(net.devnet.state.running(), (true, true));
    net.wait_blocks(2).await;
    let pid = net.devnet.state.abcid_pid.expect("abcid's pid");
    assert!(process::is_running(pid, "abcid-before"));
    drop(net);
    assert!(!process::is_running(pid, "abcid-before"), "left running");
}
