//! Refills during a run (`feth load --refill-key`), on a real devnet:
//! senders funded for a few transactions each keep sending at the offered
//! rate for a run that costs several times what they hold, because the root
//! tops them up as they run low; nothing is refused and the chain's nonces
//! agree with the agent's count.

use std::time::Duration;

use alloy_primitives::{B256, U256};
use feth::eth::EthClient;
use feth::fund;
use feth::load::pick::RateSchedule;
use feth::load::plan::LoadPlan;
use feth::load::refill::RefillConfig;
use feth::load::{self, LoadSettings};

use crate::common::TestNet;

const SENDERS: usize = 10;
const RATE: f64 = 100.0;
const SECONDS: u64 = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn low_senders_are_topped_up_mid_run_and_nothing_is_refused() {
    let net = TestNet::start().await;
    let client = net.client();
    let fee = feth::fees::detect(&client).await.unwrap();
    // The most one 1-wei transfer can cost.
    let cost = feth::fees::max_cost(fee, fund::TRANSFER_GAS) + U256::from(1u64);
    let dir = tempfile::tempdir().unwrap();
    let keys_file = dir.path().join("keys.txt");
    let (keys, _) = fund::fund_seeded(
        &client,
        &net.root,
        B256::repeat_byte(41),
        SENDERS,
        cost * U256::from(50u64),
        &keys_file,
    )
    .await
    .unwrap();
    let per_sender = RATE as u64 * SECONDS / SENDERS as u64;
    assert!(
        per_sender > 50 * 3,
        "the run must cost several times the funds"
    );

    let mut plan = LoadPlan::transfers(RateSchedule::Fixed(RATE), SENDERS);
    plan.duration = Some(Duration::from_secs(SECONDS));
    let mut settings = LoadSettings::new(&net.web3(), plan);
    settings.timeout = Duration::from_secs(5);
    // Each sender spends 10 tx/s; a top-up is asked for with 4 s of funds
    // left, room for a refill round (read, pay, wait for its block) on a slow
    // machine. A sender that runs dry anyway backs off until topped up:
    // it is late, never refused.
    settings.refill = Some(RefillConfig {
        root: net.root,
        amount: cost * U256::from(80u64),
        below: cost * U256::from(40u64),
        interval: Duration::from_millis(500),
        journal: dir.path().join("keys.txt.refill.json"),
    });
    let report = load::run(settings, keys.clone()).await.unwrap();

    let t = &report.totals;
    assert!(t.signed >= RATE as u64 * (SECONDS - 1), "{t:?}");
    assert_eq!((t.rejected, t.unresolved), (0, 0), "{t:?}");
    assert_eq!(t.included, t.signed, "{t:?}");
    assert_eq!(t.included, committed_nonces(&client, &keys.addresses).await);
    let refill = report.refill.expect("a refill report");
    assert!(
        refill.topped_up >= SENDERS as u64,
        "every sender needed a top-up: {refill:?}"
    );
    assert_eq!(refill.failed_rounds, 0, "{refill:?}");
    // How long senders waited on their schedule (refills included) is the
    // machine's figure, printed only: what a refill round takes depends on
    // how fast the chain commits its block.
    eprintln!(
        "schedule lag {:?}, {} back-offs, refill {:.1} s in {} rounds",
        report.schedule_lag_ms, report.backoffs, refill.seconds, refill.rounds
    );
    // The journal is settled and gone.
    assert!(!dir.path().join("keys.txt.refill.json").exists());
}

async fn committed_nonces(client: &EthClient, addresses: &[alloy_primitives::Address]) -> u64 {
    let mut sum = 0;
    for a in addresses {
        sum += client.nonce(*a, false).await.unwrap();
    }
    sum
}
