//! The search over a model: a chain that commits up to its capacity and an
//! agent that sends up to its own ceiling (the one fake probe of the crate).

use std::future::Future;

use super::*;

/// A chain of capacity `chain_tps` loaded by an agent that sends at most
/// `agent_tps`, with steady blocks of 500 ms and idle request slots.
struct Model {
    chain_tps: f64,
    agent_tps: f64,
    offered: Vec<f64>,
}

impl Model {
    fn new(chain_tps: f64, agent_tps: f64) -> Self {
        Self {
            chain_tps,
            agent_tps,
            offered: Vec::new(),
        }
    }

    fn measure(&self, rate: f64, secs: f64) -> StepMeasure {
        let sent = rate.min(self.agent_tps);
        let committed = sent.min(self.chain_tps);
        // An agent short of CPU falls further behind its schedule as it goes.
        let lag = if rate > self.agent_tps {
            1000.0 * secs * (1.0 - self.agent_tps / rate)
        } else {
            3.0
        };
        StepMeasure {
            offered_tps: rate,
            sent_tps: sent,
            committed_tps: committed,
            clock: Clock::CometbftHeaders,
            first_height: 10,
            last_height: 30,
            block_time_p50_ms: 500.0,
            block_time_p95_ms: 520.0,
            mempool_start: Some(0),
            mempool_end: Some(((sent - committed) * secs) as u64),
            schedule_lag_p50_ms: lag / 2.0,
            schedule_lag_p99_ms: lag,
            agent_lag_p99_ms: lag,
            agent_cpu_us_per_tx: 20.0,
            slots_busy: 0.05,
            backoffs: 0,
            node_cpu_us_per_tx: None,
            valid: (committed * secs) as u64,
            invalid: Some(0),
            gas_per_sec: Some(committed * 21_000.0),
            reads: None,
            machine: None,
            backlog: None,
        }
    }
}

impl Probe for Model {
    fn step(
        &mut self,
        rate: f64,
        seconds: f64,
    ) -> impl Future<Output = Result<StepMeasure>> + Send {
        self.offered.push(rate);
        let m = self.measure(rate, seconds);
        async move { Ok(m) }
    }
}

fn config() -> SearchConfig {
    SearchConfig::default()
}

fn search(model: &mut Model, c: &SearchConfig) -> SearchReport {
    let mut events = Vec::new();
    let report = futures::executor::block_on(find_knee(model, c, |e| {
        events.push(match e {
            SearchEvent::Starting { index, rate_tps } => (index, rate_tps, None),
            SearchEvent::Finished {
                index,
                measure,
                verdict,
            } => (index, measure.offered_tps, Some(verdict.clone())),
        })
    }))
    .expect("the model never fails");
    // Each step is announced, then reported with the verdict the report keeps.
    assert_eq!(events.len(), 2 * report.steps.len());
    for (i, pair) in events.chunks(2).enumerate() {
        assert_eq!((pair[0].0, pair[0].2.as_ref()), (i, None));
        assert_eq!(pair[1].2.as_ref(), Some(&report.steps[i].1));
        assert_eq!(pair[0].1, report.steps[i].0.offered_tps);
    }
    report
}

/// The rates a search offered, in order.
fn offered(r: &SearchReport) -> Vec<f64> {
    r.steps.iter().map(|s| s.0.offered_tps).collect()
}

#[test]
fn the_knee_lies_within_the_resolution_of_the_model_chain() {
    let c = config();
    for capacity in [700.0, 1_800.0, 2_500.0, 9_000.0, 31_000.0] {
        let mut model = Model::new(capacity, 1e9);
        let r = search(&mut model, &c);
        // Committing 95 % of a rate is keeping up with it.
        let threshold = capacity / (1.0 - c.tolerance);
        let Outcome::KneeFound {
            knee_tps,
            committed_tps,
            behind_tps,
        } = r.outcome
        else {
            panic!("no knee at capacity {capacity}: {:?}", r.outcome);
        };
        assert!(
            knee_tps <= threshold && threshold < behind_tps,
            "{capacity}: {r:?}"
        );
        assert!(behind_tps / knee_tps <= 1.0 + c.resolution, "{r:?}");
        assert_eq!(committed_tps, knee_tps.min(capacity));
        for (m, v) in &r.steps {
            assert_eq!(
                m.offered_tps <= threshold,
                *v == Verdict::KeepsUp,
                "{m:?} {v:?}"
            );
        }
        // Doubling from 200 reaches the capacity in log2(capacity / 200) + 1
        // steps; bisecting a factor of 2 down to 1.1 takes 3 more.
        let bound = (threshold / c.start_tps).log2().ceil() as usize + 1 + 3;
        assert!(r.steps.len() <= bound, "{} steps: {r:?}", r.steps.len());
        assert_eq!(model.offered.len(), r.steps.len());
        assert_eq!(r.clock, Clock::CometbftHeaders);
    }
}

#[test]
fn an_agent_slower_than_the_chain_is_reported_not_taken_for_a_knee() {
    // Below the chain in the growth phase, and between the last rate kept up
    // and the chain's own limit.
    for (chain, agent, at) in [(5_000.0, 1_500.0, 1_600.0), (3_000.0, 2_800.0, 3_200.0)] {
        let r = search(&mut Model::new(chain, agent), &config());
        let Outcome::AgentLimited { at_tps, why } = &r.outcome else {
            panic!("{chain}/{agent}: {:?}", r.outcome);
        };
        assert_eq!(*at_tps, at);
        assert!(why.contains("the agent, not the chain"), "{why}");
        let (last, verdict) = r.steps.last().unwrap();
        assert!(
            matches!(verdict, Verdict::AgentBehind { .. }),
            "{verdict:?}"
        );
        assert!(last.schedule_lag_p99_ms > 500.0);
    }
}

#[test]
fn a_chain_behind_at_the_start_is_searched_downward() {
    // Halved once to a rate kept up, then bisected as from above.
    let r = search(&mut Model::new(100.0, 1e9), &config());
    let rates = offered(&r);
    assert_eq!(rates, [200.0, 100.0, 141.0, 119.0, 109.0]);
    assert_eq!(
        r.outcome,
        Outcome::KneeFound {
            knee_tps: 100.0,
            committed_tps: 100.0,
            behind_tps: 109.0
        }
    );
    // A chain far slower than the start: halvings, rounded down.
    let r = search(&mut Model::new(30.0, 1e9), &config());
    let rates = offered(&r);
    assert_eq!(rates[..4], [200.0, 100.0, 50.0, 25.0]);
    let Outcome::KneeFound { knee_tps, .. } = r.outcome else {
        panic!("{:?}", r.outcome);
    };
    assert!((25.0..=31.6).contains(&knee_tps), "{r:?}");
}

#[test]
fn a_chain_that_commits_nothing_is_halved_down_to_the_lowest_rate() {
    let r = search(&mut Model::new(0.0, 1e9), &config());
    let rates = offered(&r);
    assert_eq!(rates, [200.0, 100.0, 50.0, 25.0, 12.0, 6.0, 3.0, 1.0]);
    assert_eq!(
        r.outcome,
        Outcome::NoRateKeptUp {
            lowest_tps: Some(LOWEST_TPS)
        }
    );
    // Bounded by the steps allowed.
    let c = SearchConfig {
        max_steps: 3,
        ..config()
    };
    let r = search(&mut Model::new(0.0, 1e9), &c);
    assert_eq!(
        r.outcome,
        Outcome::NoRateKeptUp {
            lowest_tps: Some(50.0)
        }
    );
    // A report written before the lowest rate was kept still reads.
    let old: Outcome = serde_json::from_str(r#"{"outcome":"no_rate_kept_up"}"#).unwrap();
    assert_eq!(old, Outcome::NoRateKeptUp { lowest_tps: None });
}

#[test]
fn a_chain_keeping_up_at_the_max_says_so() {
    let c = SearchConfig {
        max_tps: 3_000.0,
        ..config()
    };
    let r = search(&mut Model::new(1e9, 1e9), &c);
    let rates = offered(&r);
    assert_eq!(rates, [200.0, 400.0, 800.0, 1_600.0, 3_000.0]);
    assert_eq!(
        r.outcome,
        Outcome::MaxReached {
            max_tps: 3_000.0,
            committed_tps: 3_000.0
        }
    );
}

#[test]
fn the_search_stops_after_max_steps() {
    let c = SearchConfig {
        max_steps: 4,
        ..config()
    };
    let r = search(&mut Model::new(1e9, 1e9), &c);
    assert_eq!(r.steps.len(), 4);
    assert_eq!(
        r.outcome,
        Outcome::StepsExhausted {
            kept_up_tps: 1_600.0,
            committed_tps: 1_600.0
        }
    );
    // Stopped mid-bisection: a knee, at a coarser resolution.
    let c = SearchConfig {
        max_steps: 6,
        ..config()
    };
    let r = search(&mut Model::new(2_000.0, 1e9), &c);
    assert_eq!(r.steps.len(), 6);
    let Outcome::KneeFound {
        knee_tps,
        behind_tps,
        ..
    } = r.outcome
    else {
        panic!("{:?}", r.outcome);
    };
    assert!(knee_tps <= 2_000.0 / 0.95 && 2_000.0 / 0.95 < behind_tps);
    assert!(behind_tps / knee_tps > 1.1, "{knee_tps} {behind_tps}");
}

fn steady(rate: f64) -> StepMeasure {
    Model::new(1e9, 1e9).measure(rate, 10.0)
}

#[test]
fn the_node_holding_the_agent_back_is_the_chain_falling_behind() {
    let c = config();
    assert_eq!(judge(&steady(1_000.0), &c), Verdict::KeepsUp);
    // Every request slot waiting on the node, or senders waiting for the
    // answer to their previous transaction: the node sets the pace.
    let slow_node = StepMeasure {
        schedule_lag_p99_ms: 2_000.0,
        agent_lag_p99_ms: 2_000.0,
        sent_tps: 800.0,
        committed_tps: 800.0,
        slots_busy: 0.97,
        ..steady(1_000.0)
    };
    let v = judge(&slow_node, &c);
    assert!(
        matches!(&v, Verdict::ChainBehind { why } if why.contains("every request slot waited")),
        "{v:?}"
    );
    let waiting_senders = StepMeasure {
        slots_busy: 0.2,
        agent_lag_p99_ms: 40.0,
        ..slow_node.clone()
    };
    let v = judge(&waiting_senders, &c);
    assert!(
        matches!(&v, Verdict::ChainBehind { why } if why.contains("previous transaction")),
        "{v:?}"
    );
    // Lagging with slots and senders free: the agent's own doing.
    let idle_agent = StepMeasure {
        slots_busy: 0.2,
        ..slow_node.clone()
    };
    assert!(matches!(
        judge(&idle_agent, &c),
        Verdict::AgentBehind { .. }
    ));
    let full_mempool = StepMeasure {
        backoffs: 12,
        ..idle_agent
    };
    let v = judge(&full_mempool, &c);
    assert!(
        matches!(&v, Verdict::ChainBehind { why } if why.contains("mempool full")),
        "{v:?}"
    );
}

#[test]
fn a_growing_mempool_or_unsteady_blocks_are_the_chain_falling_behind() {
    let c = config();
    // 5 % of 1,000 tx/s over 10 s, plus one 520 ms block of arrivals.
    let grown = |end| StepMeasure {
        mempool_end: Some(end),
        ..steady(1_000.0)
    };
    assert_eq!(judge(&grown(1_020), &c), Verdict::KeepsUp);
    assert!(matches!(
        judge(&grown(1_021), &c),
        Verdict::ChainBehind { .. }
    ));
    // Without a mempool reading, the backlog is what was sent less what was committed.
    let unseen = StepMeasure {
        mempool_start: None,
        mempool_end: None,
        committed_tps: 880.0,
        ..steady(1_000.0)
    };
    let v = judge(&unseen, &c);
    assert!(
        matches!(&v, Verdict::ChainBehind { why } if why.contains("1200 more transactions were sent than committed")),
        "{v:?}"
    );
    let unsteady = StepMeasure {
        block_time_p95_ms: 1_100.0,
        ..steady(1_000.0)
    };
    assert!(matches!(judge(&unsteady, &c), Verdict::ChainBehind { .. }));
    // Whole-second web3 timestamps cannot time 500 ms blocks.
    let web3 = StepMeasure {
        clock: Clock::Web3Timestamps,
        ..unsteady
    };
    assert_eq!(judge(&web3, &c), Verdict::KeepsUp);
    let short = StepMeasure {
        committed_tps: 940.0,
        sent_tps: 960.0,
        ..steady(1_000.0)
    };
    assert!(matches!(judge(&short, &c), Verdict::ChainBehind { .. }));
}

#[test]
fn reports_read_back_as_written_and_bad_configs_are_refused() {
    let r = search(&mut Model::new(1_800.0, 1e9), &config());
    let json = serde_json::to_string(&r).unwrap();
    assert_eq!(serde_json::from_str::<SearchReport>(&json).unwrap(), r);
    assert!(json.contains(r#""outcome":"knee_found""#), "{json}");
    for bad in [
        SearchConfig {
            start_tps: 0.0,
            ..config()
        },
        SearchConfig {
            max_tps: 100.0,
            ..config()
        },
        SearchConfig {
            tolerance: 1.0,
            ..config()
        },
        SearchConfig {
            max_steps: 0,
            ..config()
        },
    ] {
        let e = futures::executor::block_on(find_knee(&mut Model::new(1.0, 1.0), &bad, |_| {}));
        assert!(e.is_err(), "{bad:?}");
    }
}
