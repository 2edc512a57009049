//! Each probed commit built once: checked out in a git worktree of feth's
//! own (never the user's working tree), built with the user's command, its
//! binary copied into a cache by commit with its hash. A commit that does
//! not build is remembered with its log, and skipped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use alloy_primitives::keccak256;
use anyhow::{bail, Context, Result};

use super::commits::{git, Commit};

/// How commits are built.
#[derive(Debug, Clone)]
pub struct BuildConfig {
    /// The repository the commits are in.
    pub repo: PathBuf,
    /// feth's own folder: the worktree and the cache (`builds/<sha>/`).
    pub work: PathBuf,
    /// The build command, run under `bash -c` in the worktree, with
    /// `FETH_BISECT_COMMIT` set to the commit's hash.
    pub command: String,
    /// The binary the command makes, relative to the worktree.
    pub binary: PathBuf,
    /// The longest one build may take.
    pub timeout: Duration,
}

/// A commit's build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Built {
    /// The binary, in the cache.
    Binary {
        /// Its path in the cache.
        path: PathBuf,
        /// Its keccak-256, hex.
        hash: String,
        /// Whether it came from the cache rather than a build now.
        cached: bool,
    },
    /// It did not build.
    Failed {
        /// Why, in a line.
        why: String,
        /// The build's log, kept.
        log: PathBuf,
    },
}

/// Builds commits into the cache.
#[derive(Debug)]
pub struct Builder {
    cfg: BuildConfig,
    worktree: PathBuf,
}

impl Builder {
    /// The builder, with its worktree made on first use.
    pub fn new(cfg: BuildConfig) -> Result<Self> {
        if cfg.binary.is_absolute() {
            bail!(
                "--binary-path {} must be relative to the repository (where the build leaves it, e.g. target/release/abcid)",
                cfg.binary.display()
            );
        }
        std::fs::create_dir_all(cfg.work.join("builds"))
            .with_context(|| format!("cannot create {}", cfg.work.display()))?;
        let work = std::path::absolute(&cfg.work)
            .with_context(|| format!("cannot make {} absolute", cfg.work.display()))?;
        let worktree = work.join("worktree");
        if !worktree.join(".git").exists() {
            let path = worktree.to_string_lossy().into_owned();
            git(
                &cfg.repo,
                &["worktree", "add", "--detach", "--force", &path],
            )
            .context("cannot make feth's worktree of the repository")?;
        }
        Ok(Self { cfg, worktree })
    }

    /// `commit`'s build: from the cache when built before (its hash
    /// checked), else built now.
    pub async fn build(&self, commit: &Commit) -> Result<Built> {
        let dir = self.cfg.work.join("builds").join(&commit.sha);
        let name = self
            .cfg
            .binary
            .file_name()
            .context("--binary-path names no file")?;
        let cached = dir.join(name);
        let log = dir.join("build.log");
        if let Some(built) = cached_build(&dir, &cached, &log)? {
            return Ok(built);
        }
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let wt = &self.worktree;
        git(wt, &["checkout", "--detach", "--force", &commit.sha])?;
        git(wt, &["clean", "-fdq"])?;
        let made = wt.join(&self.cfg.binary);
        // An ignored binary left by the previous commit's build is no build of this one.
        if made.exists() {
            std::fs::remove_file(&made)
                .with_context(|| format!("cannot remove the last build's {}", made.display()))?;
        }
        if let Err(e) = self.run_command(commit, &log).await {
            let why = format!("{e:#}");
            std::fs::write(dir.join("failed"), &why)?;
            return Ok(Built::Failed { why, log });
        }
        if !made.is_file() {
            let why = format!("the build made no {}", self.cfg.binary.display());
            std::fs::write(dir.join("failed"), &why)?;
            return Ok(Built::Failed { why, log });
        }
        std::fs::copy(&made, &cached)
            .with_context(|| format!("cannot copy {} into the cache", made.display()))?;
        let hash = hash_of(&cached)?;
        std::fs::write(dir.join("hash"), &hash)?;
        Ok(Built::Binary {
            path: cached,
            hash,
            cached: false,
        })
    }

    /// Runs the build command in its own process group, output into `log`,
    /// ended (the group, by its PID) past the timeout.
    async fn run_command(&self, commit: &Commit, log: &Path) -> Result<()> {
        let out = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let mut child = tokio::process::Command::new("bash")
            .arg("-c")
            .arg(&self.cfg.command)
            .current_dir(&self.worktree)
            .env("FETH_BISECT_COMMIT", &commit.sha)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .context("cannot start the build command under bash")?;
        let pid = child.id();
        match tokio::time::timeout(self.cfg.timeout, child.wait()).await {
            Ok(status) => {
                let status = status?;
                if !status.success() {
                    bail!("the build command exited with {status}");
                }
                Ok(())
            }
            Err(_) => {
                if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                    // SAFETY: kill(2) on the process group this build was started in.
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                }
                let _ = child.wait().await;
                bail!("the build took over {:?} and was ended", self.cfg.timeout)
            }
        }
    }
}

/// A build made before: the binary when its hash still matches, the
/// failure when it failed.
fn cached_build(dir: &Path, binary: &Path, log: &Path) -> Result<Option<Built>> {
    if let Ok(why) = std::fs::read_to_string(dir.join("failed")) {
        return Ok(Some(Built::Failed {
            why,
            log: log.to_path_buf(),
        }));
    }
    let Ok(recorded) = std::fs::read_to_string(dir.join("hash")) else {
        return Ok(None);
    };
    if binary.is_file() && hash_of(binary)? == recorded.trim() {
        return Ok(Some(Built::Binary {
            path: binary.to_path_buf(),
            hash: recorded.trim().to_string(),
            cached: true,
        }));
    }
    Ok(None)
}

fn hash_of(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(keccak256(&bytes).to_string())
}
