//! The commits a bisection searches, read from git: the good endpoint, then
//! every commit after it up to the bad one (first-parent by default, as a
//! merge-heavy history is bisected by the merges it took).

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::Serialize;

/// One commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Commit {
    /// Its full hash.
    pub sha: String,
    /// Its subject line.
    pub subject: String,
}

impl Commit {
    /// The first 10 characters of the hash.
    pub fn short(&self) -> &str {
        &self.sha[..self.sha.len().min(10)]
    }
}

/// The good commit, then the commits after it up to the bad one, oldest
/// first; `first_parent` follows merges' first parents only. Refuses a
/// good revision that is not an ancestor of the bad one.
pub fn between(repo: &Path, good: &str, bad: &str, first_parent: bool) -> Result<Vec<Commit>> {
    let good_sha = resolve(repo, good)?;
    let bad_sha = resolve(repo, bad)?;
    let ancestor = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["merge-base", "--is-ancestor", &good_sha, &bad_sha])
        .status()
        .context("cannot run git")?;
    if !ancestor.success() {
        bail!("--good {good} is not an ancestor of --bad {bad}: give the older, faster revision as --good");
    }
    let mut args = vec!["log", "--reverse", "--format=%H%x09%s"];
    if first_parent {
        args.push("--first-parent");
    }
    let range = format!("{good_sha}..{bad_sha}");
    args.push(&range);
    let listed = git(repo, &args)?;
    let mut commits = vec![Commit {
        sha: good_sha.clone(),
        subject: git(repo, &["log", "-1", "--format=%s", &good_sha])?,
    }];
    commits.extend(listed.lines().filter_map(|line| {
        let (sha, subject) = line.split_once('\t')?;
        Some(Commit {
            sha: sha.to_string(),
            subject: subject.to_string(),
        })
    }));
    if commits.len() < 2 {
        bail!("--good {good} and --bad {bad} are the same commit: nothing to bisect");
    }
    Ok(commits)
}

/// A revision's full hash.
fn resolve(repo: &Path, rev: &str) -> Result<String> {
    if rev.starts_with('-') {
        bail!("revision {rev:?} starts with '-': give a commit, tag or branch");
    }
    git(
        repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .with_context(|| format!("{rev} is no commit of {}", repo.display()))
}

/// `git -C repo ARGS`'s standard output, trimmed; its error on failure.
pub fn git(repo: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .context("cannot run git")?;
    if !out.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
