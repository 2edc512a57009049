//! The etl on real logs of the devnet (CometBFT 0.38 + abcid's per-block
//! line) under load, into a real Redis: per-height transaction and valid
//! counts agree with the chain as web3 reports it, and ingesting twice
//! changes nothing.

use std::time::Duration;

use crate::common::{funded, TestNet};
use feth::load::pick::RateSchedule;
use feth::load::plan::LoadPlan;
use feth::load::{self, LoadSettings};
use feth_etl::ingest::IngestConfig;
use feth_etl::local_redis::LocalRedis;
use feth_etl::stats::StatsQuery;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abcid_and_cometbft_logs_agree_with_the_chain() {
    let net = TestNet::start().await;
    let redis = LocalRedis::start().expect("redis-server starts");
    let (keys, _dir) = funded(&net, 20, 6).await;
    let mut plan = LoadPlan::transfers(RateSchedule::Fixed(300.0), 20);
    plan.duration = Some(Duration::from_secs(5));
    plan.max_parallelism = 16;
    let mut settings = LoadSettings::new(&net.web3(), plan);
    settings.wait = Duration::from_secs(30);
    let report = load::run(settings, keys).await.unwrap();
    assert!(report.totals.included > 0);
    net.wait_blocks(2).await;

    let ingest = IngestConfig {
        tendermint: vec![net.devnet.state.cometbft_log()],
        abcid: vec![net.devnet.state.abcid_log()],
        redis: Some(redis.url.clone()),
        chain_id: Some("feth-devnet-9000".to_string()),
        node: Some("node0".to_string()),
        progress: false,
        ..Default::default()
    };
    feth_etl::ingest::run(&ingest, std::future::pending())
        .await
        .unwrap();
    let stats_args = StatsQuery {
        redis: redis.url.clone(),
        chain_id: "feth-devnet-9000".to_string(),
        ..Default::default()
    };
    let stats = feth_etl::stats::query(&stats_args).await.unwrap();
    assert!(stats.blocks > 5, "{} blocks", stats.blocks);
    assert_eq!(stats.invalid, 0);

    let client = net.client();
    let mut checked = 0;
    let mut with_txs = 0;
    for row in &stats.per_block {
        let Some(block) = client.block(row.height).await.unwrap() else {
            continue;
        };
        let txs = block.transactions.len() as u64;
        assert_eq!(row.txs, Some(txs), "height {}", row.height);
        assert_eq!(
            row.valid,
            Some(txs),
            "height {}: abcid's valid count",
            row.height
        );
        assert_eq!(row.invalid, Some(0), "height {}", row.height);
        checked += 1;
        with_txs += u64::from(txs > 0);
    }
    assert!(
        checked as u64 >= stats.blocks - 1,
        "almost every ingested height was checked"
    );
    assert!(with_txs >= 3, "the load shows in several blocks");
    assert_eq!(
        stats.valid,
        stats.per_block.iter().filter_map(|r| r.valid).sum::<u64>()
    );

    // Idempotent: the same logs again change no figure.
    feth_etl::ingest::run(&ingest, std::future::pending())
        .await
        .unwrap();
    let again = feth_etl::stats::query(&stats_args).await.unwrap();
    assert_eq!(
        (again.blocks, again.txs, again.valid, again.invalid),
        (stats.blocks, stats.txs, stats.valid, stats.invalid)
    );
}
