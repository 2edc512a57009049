//! The search for a chain's knee: the highest open-loop rate it keeps up
//! with, over any [`Probe`].
//!
//! Strategy: offer `start_tps`, then double the rate (up to `max_tps`) while
//! the chain keeps up; if the start rate is already behind, halve it
//! (rounded down, not under [`LOWEST_TPS`]) until a rate is kept up. Once
//! a rate kept up and one behind are known, bisect geometrically between
//! them until their ratio is at most `1 + resolution`. `max_steps` bounds
//! the whole search.
//!
//! Every step gets a [`Verdict`] ([`judge`]), in this order:
//!
//! 1. **Chain behind**, on evidence the agent cannot cause: its backlog (the
//!    mempool; where the node does not say, what was sent less what was
//!    committed) grew over the window by more than
//!    `tolerance × offered × step_secs` plus one p95 block interval of
//!    arrivals (a reading falls anywhere in the block cycle, and what is sent
//!    at the window's end lands in the next block); its blocks were unsteady
//!    (p95 interval over twice the median and 250 ms above it: a growing
//!    backlog makes blocks big and slow; judged on CometBFT header times
//!    only, as whole-second web3 timestamps cannot time sub-second blocks);
//!    or it turned submissions away as busy (mempool full).
//! 2. The agent did not keep to the schedule: it sent under
//!    `(1 − tolerance)` of the offered rate, or its schedule lag p99 was over
//!    `lag_limit_ms`. With every request slot waiting on the node for at
//!    least `busy_slots` of the window, the node set that pace: **chain
//!    behind**. With slots free, the agent's own part of the lag (the time a
//!    due transaction whose sender was free took to reach the wire) tells:
//!    its p99 over `agent_lag_limit_ms` means the agent itself was short of
//!    CPU, **agent behind**, and the step says nothing about the chain;
//!    under it, the lag was spent waiting for the node to answer each
//!    sender's previous transaction: **chain behind** (a sender has one
//!    transaction in flight, so more senders go further when the node's
//!    answers are slow).
//! 3. **Chain behind** when it committed under `(1 − tolerance)` of the
//!    offered rate; else it **keeps up**.
//!
//! A step judged agent-behind ends the search: no knee is claimed above a
//! rate the agent could not offer ([`Outcome::AgentLimited`]).

use std::ops::ControlFlow;

use anyhow::{ensure, Context, Result};
use serde::{Deserialize, Serialize};

use super::probe::{Clock, Probe, StepMeasure};

/// A p95 block interval over this many times the median is unsteady…
const UNSTEADY_SPREAD: f64 = 2.0;
/// …when it is also this many ms above it (sub-second jitter is not a backlog).
const UNSTEADY_FLOOR_MS: f64 = 250.0;

/// The lowest rate the search halves down to, tx/s: a chain that cannot
/// keep up with it is not committing.
pub const LOWEST_TPS: f64 = 1.0;

/// How to search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchConfig {
    /// First rate offered, tx/s.
    pub start_tps: f64,
    /// Highest rate offered, tx/s.
    pub max_tps: f64,
    /// Measured seconds per step (the probe warms up before).
    pub step_secs: f64,
    /// Shortfall allowed (0.05: a rate is kept up with 95 % of it committed).
    pub tolerance: f64,
    /// Most steps in all.
    pub max_steps: usize,
    /// Bisection stops once (first rate behind) / (last rate kept up) is at
    /// most `1 + resolution`.
    pub resolution: f64,
    /// Schedule lag p99 above which the agent did not keep to its schedule, ms.
    pub lag_limit_ms: f64,
    /// p99 of the agent's own part of the lag above which the agent, not the
    /// node, made it miss its schedule, ms.
    pub agent_lag_limit_ms: f64,
    /// Share of the window (0–1) with every request slot waiting on the node
    /// from which a shortfall of the agent is the node's doing.
    pub busy_slots: f64,
}

impl Default for SearchConfig {
    /// 200 tx/s up to 50,000, 10 s steps, 5 % tolerance, 20 steps, 10 %
    /// resolution, 500 ms lag limit (a lag under one block interval changes
    /// no block), 100 ms for the agent's own part (putting a transaction on
    /// the wire takes it a few ms), slots busy 90 % of the window.
    fn default() -> Self {
        Self {
            start_tps: 200.0,
            max_tps: 50_000.0,
            step_secs: 10.0,
            tolerance: 0.05,
            max_steps: 20,
            resolution: 0.1,
            lag_limit_ms: 500.0,
            agent_lag_limit_ms: 100.0,
            busy_slots: 0.9,
        }
    }
}

impl SearchConfig {
    /// Checks that the search can run.
    pub fn validate(&self) -> Result<()> {
        let positive = |v: f64| v > 0.0 && v.is_finite();
        ensure!(
            positive(self.start_tps),
            "the start rate must be positive, got {}",
            self.start_tps
        );
        ensure!(
            positive(self.max_tps) && self.max_tps >= self.start_tps,
            "the highest rate ({}) must be at least the start rate ({})",
            self.max_tps,
            self.start_tps
        );
        ensure!(
            positive(self.step_secs),
            "a step must last a positive number of seconds, got {}",
            self.step_secs
        );
        ensure!(
            self.tolerance > 0.0 && self.tolerance < 1.0,
            "the tolerance must be between 0 and 1 (e.g. 0.05), got {}",
            self.tolerance
        );
        ensure!(self.max_steps >= 1, "allow at least one step");
        ensure!(
            positive(self.resolution),
            "the resolution must be positive (e.g. 0.1), got {}",
            self.resolution
        );
        ensure!(
            positive(self.lag_limit_ms),
            "the lag limit must be a positive number of ms, got {}",
            self.lag_limit_ms
        );
        ensure!(
            positive(self.agent_lag_limit_ms),
            "the agent's own lag limit must be a positive number of ms, got {}",
            self.agent_lag_limit_ms
        );
        ensure!(
            self.busy_slots > 0.0 && self.busy_slots <= 1.0,
            "the busy-slots share must be in (0, 1], got {}",
            self.busy_slots
        );
        Ok(())
    }
}

/// What one step says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// The chain committed what was offered.
    KeepsUp,
    /// The chain fell behind.
    ChainBehind {
        /// The evidence.
        why: String,
    },
    /// The agent could not offer the rate: the step says nothing of the chain.
    AgentBehind {
        /// The evidence.
        why: String,
    },
}

/// How the search ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The chain kept up at `knee_tps` and fell behind at `behind_tps`.
    KneeFound {
        /// Highest rate kept up, tx/s.
        knee_tps: f64,
        /// What the chain committed at that rate, tx/s.
        committed_tps: f64,
        /// Lowest rate it fell behind at, tx/s.
        behind_tps: f64,
    },
    /// The agent could not offer `at_tps`: no knee is claimed.
    AgentLimited {
        /// The rate the agent fell short of, tx/s.
        at_tps: f64,
        /// The evidence.
        why: String,
    },
    /// The chain fell behind at every rate offered, the start rate and
    /// every halving of it the steps allowed.
    NoRateKeptUp {
        /// The lowest rate offered, tx/s (absent in older files).
        #[serde(default)]
        lowest_tps: Option<f64>,
    },
    /// The chain kept up at the highest rate allowed: raise it.
    MaxReached {
        /// The highest rate, tx/s.
        max_tps: f64,
        /// What the chain committed at it, tx/s.
        committed_tps: f64,
    },
    /// The steps ran out before any rate fell behind: allow more steps.
    StepsExhausted {
        /// Highest rate kept up, tx/s.
        kept_up_tps: f64,
        /// What the chain committed at it, tx/s.
        committed_tps: f64,
    },
}

/// A whole search: every step with its verdict, and the outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchReport {
    /// How the search ran.
    pub config: SearchConfig,
    /// Every step, in the order run.
    pub steps: Vec<(StepMeasure, Verdict)>,
    /// How it ended.
    pub outcome: Outcome,
    /// The clock committed rates were computed with.
    pub clock: Clock,
    /// RPC reads sent again after a transient transport error over the
    /// search (a reset connection no longer ends it; absent in older files).
    #[serde(default)]
    pub rpc_retries: u64,
}

/// What the search reports as it goes.
#[derive(Debug, Clone, Copy)]
pub enum SearchEvent<'a> {
    /// Step `index` (from 0) is about to offer `rate_tps`.
    Starting {
        /// Step number, from 0.
        index: usize,
        /// Rate about to be offered, tx/s.
        rate_tps: f64,
    },
    /// Step `index` has been measured and judged.
    Finished {
        /// Step number, from 0.
        index: usize,
        /// What it measured.
        measure: &'a StepMeasure,
        /// Its verdict.
        verdict: &'a Verdict,
    },
}

/// Judges one step by the rules of the module docs.
pub fn judge(m: &StepMeasure, c: &SearchConfig) -> Verdict {
    if let Some(why) = chain_evidence(m, c) {
        return Verdict::ChainBehind { why };
    }
    if let Some(short) = off_schedule(m, c) {
        return whose_lag(m, c, &short);
    }
    let floor = (1.0 - c.tolerance) * m.offered_tps;
    if m.committed_tps < floor {
        return Verdict::ChainBehind {
            why: format!(
                "committed {:.1} tx/s, under {floor:.1} (offered {:.1} less {:.0} %)",
                m.committed_tps,
                m.offered_tps,
                c.tolerance * 100.0
            ),
        };
    }
    Verdict::KeepsUp
}

/// Evidence that the chain fell behind whatever the agent did.
fn chain_evidence(m: &StepMeasure, c: &SearchConfig) -> Option<String> {
    let allowed =
        c.tolerance * m.offered_tps * c.step_secs + m.offered_tps * m.block_time_p95_ms / 1000.0;
    let (grown, what) = match (m.mempool_start, m.mempool_end) {
        (Some(start), Some(end)) => (
            end as f64 - start as f64,
            format!("the mempool grew from {start} to {end} transactions"),
        ),
        _ => {
            let grown = (m.sent_tps - m.committed_tps) * c.step_secs;
            (
                grown,
                format!("{grown:.0} more transactions were sent than committed"),
            )
        }
    };
    if grown > allowed {
        return Some(format!("{what}, more than the {allowed:.0} allowed"));
    }
    let (p50, p95) = (m.block_time_p50_ms, m.block_time_p95_ms);
    if m.clock == Clock::CometbftHeaders
        && p95 > UNSTEADY_SPREAD * p50
        && p95 - p50 > UNSTEADY_FLOOR_MS
    {
        return Some(format!(
            "blocks are not steady: interval p95 {p95:.0} ms, over twice the median {p50:.0} ms"
        ));
    }
    (m.backoffs > 0).then(|| {
        format!(
            "the node turned {} submissions away as busy (mempool full)",
            m.backoffs
        )
    })
}

/// Whether the agent missing its schedule (`short`) was the node's doing.
fn whose_lag(m: &StepMeasure, c: &SearchConfig, short: &str) -> Verdict {
    let (busy, own) = (m.slots_busy * 100.0, m.agent_lag_p99_ms);
    if m.slots_busy >= c.busy_slots {
        Verdict::ChainBehind {
            why: format!(
                "{short}: every request slot waited on the node {busy:.0} % of the window"
            ),
        }
    } else if own > c.agent_lag_limit_ms {
        Verdict::AgentBehind {
            why: format!(
                "{short}; the agent's own lag p99 {own:.0} ms is over {:.0} ms, with every request slot busy only {busy:.0} % of the window and no back-off: the agent, not the chain, fell short",
                c.agent_lag_limit_ms
            ),
        }
    } else {
        Verdict::ChainBehind {
            why: format!(
                "{short}: senders waited for the node to answer their previous transaction (the agent's own lag p99 only {own:.0} ms; more senders go further if those answers are slow)"
            ),
        }
    }
}

/// How the agent missed the schedule, if it did.
fn off_schedule(m: &StepMeasure, c: &SearchConfig) -> Option<String> {
    if m.sent_tps < (1.0 - c.tolerance) * m.offered_tps {
        return Some(format!(
            "sent {:.1} of the {:.1} tx/s offered",
            m.sent_tps, m.offered_tps
        ));
    }
    (m.schedule_lag_p99_ms > c.lag_limit_ms).then(|| {
        format!(
            "schedule lag p99 {:.0} ms, over the {:.0} ms limit",
            m.schedule_lag_p99_ms, c.lag_limit_ms
        )
    })
}

/// The rates known so far: the highest kept up (with what it committed) and
/// the lowest behind.
#[derive(Debug, Default)]
struct Bracket {
    kept_up: Option<(f64, f64)>,
    behind: Option<f64>,
}

impl Bracket {
    /// Records a step at `rate`; returns the next rate, or how the search ends.
    fn after(
        &mut self,
        rate: f64,
        step: &(StepMeasure, Verdict),
        c: &SearchConfig,
    ) -> ControlFlow<Outcome, f64> {
        match &step.1 {
            Verdict::AgentBehind { why } => {
                return ControlFlow::Break(Outcome::AgentLimited {
                    at_tps: rate,
                    why: why.clone(),
                })
            }
            Verdict::KeepsUp => self.kept_up = Some((rate, step.0.committed_tps)),
            Verdict::ChainBehind { .. } => self.behind = Some(rate),
        }
        match (self.kept_up, self.behind) {
            (None, _) => {
                let next = (rate / 2.0).floor();
                if next >= LOWEST_TPS {
                    ControlFlow::Continue(next)
                } else {
                    ControlFlow::Break(self.ended())
                }
            }
            (Some((lo, committed)), None) if lo >= c.max_tps => {
                ControlFlow::Break(Outcome::MaxReached {
                    max_tps: lo,
                    committed_tps: committed,
                })
            }
            (Some((lo, _)), None) => ControlFlow::Continue((lo * 2.0).min(c.max_tps)),
            (Some((lo, _)), Some(hi)) => {
                let mid = (lo * hi).sqrt().round();
                if hi / lo <= 1.0 + c.resolution || mid <= lo || mid >= hi {
                    ControlFlow::Break(self.ended())
                } else {
                    ControlFlow::Continue(mid)
                }
            }
        }
    }

    /// The outcome when the search stops here.
    fn ended(&self) -> Outcome {
        match (self.kept_up, self.behind) {
            (Some((lo, committed)), Some(hi)) => Outcome::KneeFound {
                knee_tps: lo,
                committed_tps: committed,
                behind_tps: hi,
            },
            (Some((lo, committed)), None) => Outcome::StepsExhausted {
                kept_up_tps: lo,
                committed_tps: committed,
            },
            (None, lowest) => Outcome::NoRateKeptUp { lowest_tps: lowest },
        }
    }
}

/// Searches for the knee of the chain behind `probe` (see the module docs),
/// telling `progress` about every step.
pub async fn find_knee<P: Probe>(
    probe: &mut P,
    config: &SearchConfig,
    mut progress: impl FnMut(SearchEvent<'_>),
) -> Result<SearchReport> {
    config.validate()?;
    let mut bracket = Bracket::default();
    let mut steps: Vec<(StepMeasure, Verdict)> = Vec::new();
    let mut rate = config.start_tps;
    let outcome = loop {
        if steps.len() == config.max_steps {
            break bracket.ended();
        }
        let index = steps.len();
        progress(SearchEvent::Starting {
            index,
            rate_tps: rate,
        });
        let measure = probe
            .step(rate, config.step_secs)
            .await
            .with_context(|| format!("step {} at {rate:.0} tx/s", index + 1))?;
        let verdict = judge(&measure, config);
        progress(SearchEvent::Finished {
            index,
            measure: &measure,
            verdict: &verdict,
        });
        steps.push((measure, verdict));
        match bracket.after(rate, &steps[index], config) {
            ControlFlow::Continue(next) => rate = next,
            ControlFlow::Break(outcome) => break outcome,
        }
    };
    let clock = steps
        .first()
        .map(|s| s.0.clock)
        .context("no step was run")?;
    ensure!(
        steps.iter().all(|s| s.0.clock == clock),
        "the probe changed clocks between steps"
    );
    Ok(SearchReport {
        config: config.clone(),
        steps,
        outcome,
        clock,
        rpc_retries: probe.rpc_retries(),
    })
}

#[cfg(test)]
mod tests;
