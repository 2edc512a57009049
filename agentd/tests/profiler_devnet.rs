//! profiler-rpc embedded in abcid, on the real devnet under load: armed over
//! RPC for three blocks, it captures each block's deliver_tx (FinalizeBlock
//! and Commit) samples as well-formed SVGs holding abcid's frames and pprof
//! protobufs carrying the block height.
//!
//! check_tx samples are not asserted per block here: on CometBFT 0.38 the
//! FinalizeBlock→Commit window overlaps CheckTx only briefly (the mempool is
//! locked around Commit), so at 1000 Hz a block may hold none. Role
//! attribution is tested deterministically in profiler-rpc's own tests.

mod common;

use std::time::Duration;

use common::{funded, TestNet};
use feth::load::engine::EngineConfig;
use feth::load::pick::RateSchedule;
use feth::load::{self, LoadSettings};
use feth_profiler_rpc::api::{EnableParams, FetchParams, HeightSelector, ProfileKind};
use feth_profiler_rpc::{ProfilerClient, RoleFilter};
use pprof::protos::Message;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_armed_blocks_under_load_are_captured_in_every_format() {
    let net = TestNet::start().await;
    let (keys, _dir) = funded(&net, 200, 5).await;

    let mut engine = EngineConfig::transfers(RateSchedule::Fixed(1000.0), 200);
    engine.duration = Some(Duration::from_secs(15));
    engine.max_parallelism = 64;
    let mut settings = LoadSettings::new(&net.web3(), engine);
    settings.wait = Duration::from_secs(30);
    let load = tokio::spawn(load::run(settings, keys));
    tokio::time::sleep(Duration::from_secs(3)).await;

    let client = ProfilerClient::new(&net.devnet.state.profiler_url(), None).unwrap();
    client
        .enable(EnableParams {
            blocks: Some(3),
            frequency_hz: Some(997),
        })
        .await
        .unwrap();
    // A second session is refused while the first is armed.
    assert!(client
        .enable(EnableParams {
            blocks: Some(1),
            frequency_hz: None
        })
        .await
        .is_err());
    let status = client.wait_idle(Duration::from_secs(60)).await.unwrap();
    assert!(!status.armed);

    let profiles = client.list().await.unwrap();
    assert_eq!(profiles.len(), 3, "{profiles:?}");
    for p in &profiles {
        assert!(
            p.deliver_tx_samples > 0,
            "block {} has no deliver_tx samples: {p:?}",
            p.height
        );
    }
    let heights: Vec<u64> = profiles.iter().map(|p| p.height).collect();
    assert_eq!(heights[1], heights[0] + 1);
    assert_eq!(heights[2], heights[1] + 1);

    // Merged over the three blocks, each role's SVG holds abcid's own frames.
    let mut deliver_svg = String::new();
    for &height in &heights {
        for (role, out) in [
            (RoleFilter::All, &mut String::new()),
            (RoleFilter::DeliverTx, &mut deliver_svg),
        ] {
            let svg = client
                .fetch(FetchParams {
                    height: HeightSelector::Height(height),
                    kind: ProfileKind::Svg,
                    role,
                })
                .await
                .unwrap()
                .decode()
                .unwrap();
            let text = String::from_utf8(svg).unwrap();
            let options = roxmltree::ParsingOptions {
                allow_dtd: true,
                ..Default::default()
            };
            roxmltree::Document::parse_with_options(&text, options).expect("well-formed SVG");
            out.push_str(&text);
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
    assert!(
        deliver_svg.contains("abcid::app::AbciApp"),
        "deliver_tx flamegraphs hold abcid's ABCI handlers"
    );

    let report = load.await.unwrap().unwrap();
    assert!(report.totals.included > 0, "the node kept producing blocks");
}
