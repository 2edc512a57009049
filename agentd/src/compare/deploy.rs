//! Redeploy-and-retest on one live node: before each of a step's runs, the
//! user's deploy command puts that step's build on the node (switches the
//! binary or the config, restarts the service), and the run waits until
//! the node is back ([`super::ready`]). The rounds alternate the steps
//! (ABBA), so each round is a pair on the same node, as with devnets.
//!
//! The command runs under `bash -c` with `FETH_STEP` (the step's name),
//! `FETH_ROUND` (`setup`, `pilot`, or the round from 1) and
//! `FETH_PIDS_FILE` (a file it may write the node's PIDs to, one per line
//! or space-separated: the node's CPU per transaction is measured over
//! them until the next deploy). Its output goes to a log of its own, whose
//! end a failure quotes. A command that fails, outlives the deploy timeout
//! or leaves a node that does not come back ends the run with an error
//! naming the step and the round.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::ready::{self, Readiness};

/// Lines of a failed deploy's log quoted in its error.
const QUOTED_LINES: usize = 20;

/// A step's deploy command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deploy {
    /// The step it deploys.
    pub step: String,
    /// The shell command (`bash -c`).
    pub command: String,
}

impl Deploy {
    /// `STEP=CMD`, as `--deploy` takes it.
    pub fn parse(spec: &str) -> Result<Self> {
        match spec.split_once('=') {
            Some((step, command)) if !step.trim().is_empty() && !command.trim().is_empty() => {
                Ok(Self {
                    step: step.trim().to_string(),
                    command: command.to_string(),
                })
            }
            _ => bail!("--deploy takes STEP=CMD (`b=./deploy.sh candidate`), got `{spec}`"),
        }
    }
}

/// When a deploy runs: which of a step's runs it comes before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before the step's knee search.
    Setup,
    /// Before its pilot window.
    Pilot,
    /// Before its run in this round (from 0).
    Round(usize),
}

impl Phase {
    /// `FETH_ROUND`'s value: `setup`, `pilot`, or the round from 1.
    fn env(self) -> String {
        match self {
            Self::Setup => "setup".to_string(),
            Self::Pilot => "pilot".to_string(),
            Self::Round(r) => (r + 1).to_string(),
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Setup => f.write_str("set-up"),
            Self::Pilot => f.write_str("pilot"),
            Self::Round(r) => write!(f, "round {}", r + 1),
        }
    }
}

/// Runs one step's deploys and waits for its node.
#[derive(Debug, Clone)]
pub struct Deployer {
    /// The step's command.
    pub deploy: Deploy,
    /// The most a deploy and the node's return may take together.
    pub timeout: Duration,
    /// The node to wait for.
    pub node: Readiness,
    /// Where the deploys' logs and PID files go.
    pub logs: PathBuf,
}

/// What a deploy left: the node's PIDs when the command wrote them, and how
/// long it took until the node was back.
#[derive(Debug, Clone, PartialEq)]
pub struct Deployed {
    /// The PIDs from `FETH_PIDS_FILE`; empty when it wrote none.
    pub pids: Vec<u32>,
    /// Seconds from the command's start to the node's readiness.
    pub seconds: f64,
}

impl Deployer {
    /// Runs the deploy before `phase`, then waits until the node is ready.
    pub async fn deploy(&self, phase: Phase) -> Result<Deployed> {
        let started = Instant::now();
        let deadline = started + self.timeout;
        let step = &self.deploy.step;
        self.run_command(phase, deadline)
            .await
            .with_context(|| format!("deploying step {step} before its {phase}"))?;
        ready::wait(&self.node, deadline).await.with_context(|| {
            format!(
                "step {step}'s node after its deploy before its {phase}: not ready within \
                 --deploy-timeout {:.0} s",
                self.timeout.as_secs_f64()
            )
        })?;
        let pids = read_pids(&self.pids_file(phase))?;
        Ok(Deployed {
            pids,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    fn stem(&self, phase: Phase) -> String {
        format!(
            "{}-{}",
            super::session::file_name(&self.deploy.step),
            phase.env()
        )
    }

    fn pids_file(&self, phase: Phase) -> PathBuf {
        self.logs.join(format!("{}.pids", self.stem(phase)))
    }

    /// The command, to its end or the deadline (then killed: it is ours).
    async fn run_command(&self, phase: Phase, deadline: Instant) -> Result<()> {
        std::fs::create_dir_all(&self.logs)
            .with_context(|| format!("cannot create {}", self.logs.display()))?;
        let log = self.logs.join(format!("{}.log", self.stem(phase)));
        let out = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let err = out.try_clone()?;
        let pids = self.pids_file(phase);
        let _ = std::fs::remove_file(&pids);
        let mut child = tokio::process::Command::new("bash")
            .arg("-c")
            .arg(&self.deploy.command)
            .env("FETH_STEP", &self.deploy.step)
            .env("FETH_ROUND", phase.env())
            .env("FETH_PIDS_FILE", &pids)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .context("cannot run bash for the deploy command")?;
        let status = tokio::time::timeout_at(deadline.into(), child.wait()).await;
        let quoted = || quote(&log);
        match status {
            Err(_) => {
                let _ = child.kill().await;
                bail!(
                    "`{}` did not finish within --deploy-timeout {:.0} s (killed); its output:\n{}",
                    self.deploy.command,
                    self.timeout.as_secs_f64(),
                    quoted()
                )
            }
            Ok(Err(e)) => bail!("cannot wait for `{}`: {e}", self.deploy.command),
            Ok(Ok(s)) if !s.success() => {
                bail!(
                    "`{}` failed ({s}); its output:\n{}",
                    self.deploy.command,
                    quoted()
                )
            }
            Ok(Ok(_)) => Ok(()),
        }
    }
}

/// The end of a deploy's log, with where the rest is.
fn quote(log: &Path) -> String {
    let tail = crate::devnet::process::tail(log, QUOTED_LINES);
    format!("{tail}\n(all of it in {})", log.display())
}

/// The PIDs a deploy wrote; none when it wrote no file.
fn read_pids(path: &Path) -> Result<Vec<u32>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    text.split_whitespace()
        .map(|w| {
            w.parse::<u32>().with_context(|| {
                format!(
                    "{}: `{w}` is not a PID; FETH_PIDS_FILE takes the node's PIDs, one per line",
                    path.display()
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployer(command: &str, logs: &Path, timeout: Duration) -> Deployer {
        Deployer {
            deploy: Deploy {
                step: "b".into(),
                command: command.into(),
            },
            timeout,
            // Nothing listens on port 9 of loopback: a node that never returns.
            node: Readiness::new("http://127.0.0.1:9", "http://127.0.0.1:9").unwrap(),
            logs: logs.to_path_buf(),
        }
    }

    #[test]
    fn a_deploy_is_step_equals_command() {
        let d = Deploy::parse("b=./deploy.sh --build=new").unwrap();
        assert_eq!(d.step, "b");
        assert_eq!(d.command, "./deploy.sh --build=new");
        for bad in ["b", "=cmd", "b=", " = x"] {
            let e = Deploy::parse(bad).unwrap_err().to_string();
            assert!(e.contains("STEP=CMD") && e.contains(bad), "{e}");
        }
    }

    #[tokio::test]
    async fn a_failed_command_is_named_with_its_step_round_and_output() {
        let dir = tempfile::tempdir().unwrap();
        let d = deployer(
            "echo \"deploying $FETH_STEP for $FETH_ROUND\"; echo broken >&2; exit 3",
            dir.path(),
            Duration::from_secs(30),
        );
        let e = format!("{:#}", d.deploy(Phase::Round(2)).await.unwrap_err());
        assert!(e.contains("deploying step b before its round 3"), "{e}");
        assert!(e.contains("exit status: 3"), "{e}");
        assert!(
            e.contains("deploying b for 3") && e.contains("broken"),
            "{e}"
        );
        assert!(dir.path().join("b-3.log").is_file());
    }

    #[tokio::test]
    async fn a_command_past_the_timeout_is_killed_and_said_so() {
        let dir = tempfile::tempdir().unwrap();
        let d = deployer(
            "echo started; exec sleep 60",
            dir.path(),
            Duration::from_millis(500),
        );
        let t = Instant::now();
        let e = format!("{:#}", d.deploy(Phase::Setup).await.unwrap_err());
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert!(e.contains("before its set-up"), "{e}");
        assert!(e.contains("did not finish within --deploy-timeout"), "{e}");
        assert!(e.contains("started"), "{e}");
    }

    #[tokio::test]
    async fn a_node_that_never_returns_ends_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let d = deployer("true", dir.path(), Duration::from_secs(1));
        let e = format!("{:#}", d.deploy(Phase::Pilot).await.unwrap_err());
        assert!(
            e.contains("step b's node after its deploy before its pilot"),
            "{e}"
        );
        assert!(e.contains("web3"), "{e}");
    }

    #[test]
    fn pids_are_read_from_the_file_the_deploy_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p");
        assert!(read_pids(&f).unwrap().is_empty());
        std::fs::write(&f, "4242\n4243 ").unwrap();
        assert_eq!(read_pids(&f).unwrap(), [4242, 4243]);
        std::fs::write(&f, "4242 abcid").unwrap();
        let e = read_pids(&f).unwrap_err().to_string();
        assert!(e.contains("`abcid` is not a PID"), "{e}");
    }
}
