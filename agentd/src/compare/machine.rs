//! Was the machine busy while the windows were measured? Every window
//! records the share of the machine that went to processes other than the
//! node's and the agent's, and to steal ([`MachineShare`]). A comparison
//! one of whose windows lost more than a set share is not evidence about
//! the chain: its verdicts are all inconclusive and its gate says so.

use serde::{Deserialize, Serialize};

use super::step::StepRun;
use crate::saturate::evm::larger_count;
use crate::saturate::{MachineShare, StepMeasure};

/// The share of the machine a window may lose to others before the
/// comparison is inconclusive (`--max-busy`).
pub const DEFAULT_MAX_LOST: f64 = 0.10;

/// The machine's load over a comparison's windows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineLoad {
    /// A window that lost more than this share (0–1) of the machine is busy.
    pub max_lost: f64,
    /// Windows measured.
    pub windows: usize,
    /// Windows whose loss could not be measured (the node's processes not
    /// known, or `/proc/stat` unreadable).
    pub unmeasured: usize,
    /// The busy windows, each named (`all#2 round 3 saturation: 48 %`).
    pub busy: Vec<String>,
    /// The largest share any window lost to other processes and steal.
    pub worst_lost: Option<f64>,
    /// The largest steal share of any window.
    pub worst_steal: Option<f64>,
}

impl MachineLoad {
    /// The load over `runs`' windows (saturation and fixed rate).
    pub fn of(runs: &[StepRun], max_lost: f64) -> Self {
        let mut load = Self {
            max_lost,
            ..Self::default()
        };
        for run in runs {
            load.add(run, "saturation", &run.measure);
            if let Some(fixed) = &run.fixed {
                load.add(run, "fixed rate", &fixed.measure);
            }
        }
        load
    }

    fn add(&mut self, run: &StepRun, window: &str, m: &StepMeasure) {
        self.windows += 1;
        let steal = m.machine.map(|s| s.steal);
        self.worst_steal = larger_count(self.worst_steal, steal);
        let Some(lost) = m.machine.as_ref().and_then(MachineShare::lost) else {
            self.unmeasured += 1;
            return;
        };
        self.worst_lost = larger_count(self.worst_lost, Some(lost));
        if lost > self.max_lost {
            self.busy.push(format!(
                "{} round {} {window}: {:.0} %",
                run.step,
                run.round + 1,
                lost * 100.0
            ));
        }
    }

    /// Whether any window lost more than allowed.
    pub fn is_busy(&self) -> bool {
        !self.busy.is_empty()
    }

    /// The load in one line a person can act on.
    pub fn describe(&self) -> String {
        let limit = self.max_lost * 100.0;
        let worst = self.worst_lost.map_or(0.0, |w| w * 100.0);
        let steal = self.worst_steal.map_or(0.0, |w| w * 100.0);
        let mut line = if self.is_busy() {
            format!(
                "BUSY MACHINE: {} of {} windows lost more than {limit:.0} % of the machine to other processes or steal ({}); their figures may be the machine's, not the chain's, so every verdict is inconclusive: measure again on a quiet machine",
                self.busy.len(),
                self.windows,
                self.busy.join(", ")
            )
        } else if self.unmeasured == self.windows {
            "machine: not checked for other load: the node's processes are not known (give --node-pid when the node runs on this machine)".to_string()
        } else {
            format!(
                "machine: quiet: other processes and steal took at most {worst:.1} % of it in a window (limit {limit:.0} %, --max-busy); steal at most {steal:.1} %"
            )
        };
        if self.unmeasured > 0 && self.unmeasured < self.windows {
            line.push_str(&format!(
                "; {} of {} windows not checked (the node's processes not known)",
                self.unmeasured, self.windows
            ));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::MachineLoad;
    use crate::compare::testing::run;
    use crate::saturate::MachineShare;

    #[test]
    fn a_window_over_the_limit_is_named_and_the_rest_are_quiet() {
        let quiet = run("all", 0, 1000.0);
        let mut hogged = run("all", 1, 1000.0);
        hogged.measure.machine = Some(MachineShare {
            outside: Some(0.45),
            steal: 0.03,
        });
        let load = MachineLoad::of(&[quiet.clone(), hogged], 0.10);
        assert_eq!(load.windows, 4);
        assert_eq!(load.busy, ["all round 2 saturation: 48 %"]);
        assert!((load.worst_lost.unwrap() - 0.48).abs() < 1e-9);
        assert!(load.describe().starts_with("BUSY MACHINE: 1 of 4 windows"));
        // Steal alone counts as lost too.
        let mut stolen = run("all", 0, 1000.0);
        stolen.measure.machine = Some(MachineShare {
            outside: Some(0.0),
            steal: 0.2,
        });
        assert!(MachineLoad::of(&[stolen], 0.10).is_busy());
        let calm = MachineLoad::of(&[quiet], 0.10);
        assert!(!calm.is_busy());
        assert!(
            calm.describe().starts_with("machine: quiet"),
            "{}",
            calm.describe()
        );
    }

    #[test]
    fn windows_whose_node_is_unknown_are_said_unchecked_never_quiet() {
        let mut unknown = run("node", 0, 1000.0);
        for m in [
            &mut unknown.measure,
            &mut unknown.fixed.as_mut().unwrap().measure,
        ] {
            m.machine = Some(MachineShare {
                outside: None,
                steal: 0.0,
            });
        }
        let load = MachineLoad::of(&[unknown], 0.10);
        assert_eq!((load.unmeasured, load.is_busy()), (2, false));
        assert!(
            load.describe().contains("give --node-pid"),
            "{}",
            load.describe()
        );
    }
}
