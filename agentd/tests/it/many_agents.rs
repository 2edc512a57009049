//! Many agents on one chain: two `feth load` processes with `--shard 0/2`
//! and `--shard 1/2` of one keys file, against two different nodes' web3
//! endpoints (a validator and a full node), beginning together at one
//! `--start-at`; `feth merge` combines their reports with the committed
//! figures read from the chain.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use alloy_primitives::{B256, U256};
use feth::accounts::KeySet;
use feth::devnet::network::Network;
use feth::eth::EthClient;
use feth::load::merge::MergedReport;
use feth::load::LoadReport;
use feth::shard::{KeyRange, Shard};
use feth_comet::rpc::Rpc;

fn feth(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_feth"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("feth starts")
}

fn finished(child: std::process::Child, what: &str) -> Output {
    let out = child.wait_with_output().expect("feth runs");
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

fn read_report(path: &std::path::Path) -> LoadReport {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report written")).expect("report")
}

/// The senders' committed nonces on the chain: how many of their
/// transactions it holds (they start at nonce 0).
async fn committed(client: &EthClient, keys: &KeySet, range: KeyRange) -> u64 {
    let mut sum = 0;
    for a in &keys.addresses[range.first..range.first + range.count] {
        sum += client.nonce(*a, false).await.unwrap();
    }
    sum
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sharded_agents_on_two_nodes_start_together_and_merge_to_the_chain_figures() {
    let dir = tempfile::tempdir().unwrap();
    let net = Network::start_private(dir.path(), 1, 1, |_| {})
        .await
        .expect("network starts");
    let root = feth::keys::read_key_file(&net.state.root_key()).unwrap();
    let web3 = |n: &str| net.state.node(n).unwrap().state.web3_url();
    let (v0, f0) = (web3("v0"), web3("f0"));
    let client = EthClient::new(&v0, Duration::from_secs(5)).unwrap();
    let keys_file = dir.path().join("keys.txt");
    let (keys, _) = feth::fund::fund_seeded(
        &client,
        &root,
        B256::repeat_byte(0x5a),
        20,
        U256::from(10u64).pow(U256::from(18u64)),
        &keys_file,
    )
    .await
    .unwrap();

    let start_at = feth::load::start_at::format(SystemTime::now() + Duration::from_secs(6));
    // The agreed time as the agents read it: the text has millisecond
    // precision, so it can be up to 1 ms before the instant it was made of
    // (a run once began "-0.000 s" after that instant).
    let start = feth::load::start_at::parse(&start_at, SystemTime::now()).unwrap();
    let out = |i: usize| dir.path().join(format!("shard{i}.json"));
    let (a_out, b_out) = (out(0), out(1));
    let agent = |shard: &str, node: &str, out: &std::path::Path| {
        feth(&[
            "load",
            "--network",
            node,
            "--keys",
            keys_file.to_str().unwrap(),
            "--shard",
            shard,
            "--start-at",
            &start_at,
            "--rate",
            "60",
            "--duration",
            "5",
            "--wait",
            "30",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let a = agent("0/2", &v0, &a_out);
    let b = agent("1/2", &f0, &b_out);
    finished(a, "agent 0/2");
    finished(b, "agent 1/2");
    let (ra, rb) = (read_report(&a_out), read_report(&b_out));

    let start_unix = start
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    for (r, shard, node, first) in [(&ra, 0, &v0, 0), (&rb, 1, &f0, 10)] {
        let c = &r.config;
        assert_eq!(
            c.shard.map(|s| s.shard),
            Some(Shard {
                index: shard,
                count: 2
            })
        );
        assert_eq!(c.keys, Some(KeyRange { first, count: 10 }));
        assert_eq!(&c.endpoints, &vec![node.clone()]);
        // Both began at the agreed time (prepared before it, not after).
        let late = r.environment.started_unix - start_unix;
        assert!(
            (0.0..1.0).contains(&late),
            "shard {shard} began {late:.3} s after --start-at"
        );
        // No nonce collisions: nothing refused, nothing resynchronised.
        let t = &r.totals;
        assert!(t.included >= 100, "shard {shard}: {t:?}");
        assert_eq!(
            (t.rejected, t.unresolved, r.resyncs),
            (0, 0, 0),
            "shard {shard}: {t:?}"
        );
        assert_eq!(t.included, t.signed, "shard {shard}: {t:?}");
        assert_eq!(
            committed(&client, &keys, c.keys.unwrap()).await,
            t.included,
            "shard {shard}: its senders' chain nonces are its included count"
        );
    }

    let merged = finished(
        feth(&[
            "merge",
            a_out.to_str().unwrap(),
            b_out.to_str().unwrap(),
            "--network",
            &v0,
            "--window-blocks",
            "5",
            "--json",
        ]),
        "feth merge",
    );
    let m: MergedReport = serde_json::from_slice(&merged.stdout).expect("one JSON document");
    assert_eq!(m.agents, 2);
    assert_eq!(
        m.shards,
        vec![
            Some(Shard { index: 0, count: 2 }),
            Some(Shard { index: 1, count: 2 })
        ]
    );
    assert!(m.missing_shards.is_empty());
    let included = ra.totals.included + rb.totals.included;
    assert_eq!(m.totals.included, included);
    assert_eq!(
        m.per_agent.iter().map(|a| a.included).collect::<Vec<_>>(),
        [ra.totals.included, rb.totals.included]
    );
    let first = ra.chain.first_block.min(rb.chain.first_block);
    let last = ra.chain.last_block.max(rb.chain.last_block);
    assert_eq!((m.chain.first_block, m.chain.last_block), (first, last));

    // The chain's own view of that window, read here from CometBFT.
    let rpc = Rpc::new(&net.state.node("v0").unwrap().state.rpc_url(), 10, 4).unwrap();
    let w = feth::blocks::comet_window(&rpc, first - 1, last, true)
        .await
        .unwrap();
    assert_eq!(
        w.txs, included,
        "every transaction in the window is an agent's"
    );
    assert_eq!(w.valid, Some(included));
    assert_eq!(m.chain.all_txs, w.txs);
    let tps = w.txs as f64 / w.seconds();
    assert!(
        (m.chain.committed_tps - tps).abs() < 1e-9 * tps,
        "{} vs {tps}",
        m.chain.committed_tps
    );
    assert!((m.block_time_ms - w.seconds() * 1000.0 / (last - first + 1) as f64).abs() < 1e-6);
    assert_eq!(m.windows.iter().map(|w| w.ours).sum::<u64>(), included);
    assert_eq!(m.windows.first().map(|w| w.from), Some(first));
    assert_eq!(m.windows.last().map(|w| w.to), Some(last));

    // The same shard twice is refused, naming the overlap.
    let twice = Command::new(env!("CARGO_BIN_EXE_feth"))
        .args([
            "merge",
            a_out.to_str().unwrap(),
            a_out.to_str().unwrap(),
            "--network",
            &v0,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&twice.stderr);
    assert!(
        !twice.status.success() && err.contains("shards overlap"),
        "{err}"
    );
}
