//! `feth bisect`'s builds on a git repository the test makes: each commit
//! built once in feth's own worktree and cached by commit with its hash; a
//! commit that does not build remembered with its log; the user's working
//! tree never touched.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use feth::bisect::build::{BuildConfig, Builder, Built};
use feth::bisect::commits;

/// A git repository in `dir` with a fixed identity.
pub fn init_repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.email", "test@feth.invalid"]);
    git(dir, &["config", "user.name", "feth test"]);
}

/// Commits everything with `subject`; returns the commit's hash.
pub fn commit(dir: &Path, subject: &str) -> String {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", subject]);
    git(dir, &["rev-parse", "HEAD"])
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The build: fails where `broken` exists, else writes the commit and the
/// version into `out/node`, and counts itself in `builds.log` beside the work
/// folder.
const BUILD: &str = "mkdir -p out; if [ -e broken ]; then echo no such symbol >&2; exit 1; fi; \
    echo \"$FETH_BISECT_COMMIT $(cat v)\" > out/node; echo built >> \"$COUNT\"";

fn built(b: Built) -> (String, String, bool) {
    match b {
        Built::Binary { path, hash, cached } => {
            (std::fs::read_to_string(path).unwrap(), hash, cached)
        }
        Built::Failed { why, .. } => panic!("failed: {why}"),
    }
}

#[tokio::test]
async fn builds_are_cached_by_commit_and_a_failed_one_keeps_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    init_repo(&repo);
    std::fs::write(repo.join("v"), "1").unwrap();
    std::fs::write(repo.join(".gitignore"), "out/\n").unwrap();
    let c0 = commit(&repo, "one");
    std::fs::write(repo.join("broken"), "").unwrap();
    commit(&repo, "broken");
    std::fs::remove_file(repo.join("broken")).unwrap();
    std::fs::write(repo.join("v"), "2").unwrap();
    let c2 = commit(&repo, "two");
    // The user's uncommitted work stays as it is.
    std::fs::write(repo.join("v"), "work in progress").unwrap();

    let listed = commits::between(&repo, &c0, "main", true).unwrap();
    let subjects: Vec<&str> = listed.iter().map(|c| c.subject.as_str()).collect();
    assert_eq!(subjects, ["one", "broken", "two"]);
    assert_eq!(listed[2].sha, c2);
    let refused = commits::between(&repo, &c2, &c0, true).unwrap_err();
    assert!(refused.to_string().contains("not an ancestor"), "{refused}");

    let count = dir.path().join("builds.log");
    let builder = Builder::new(BuildConfig {
        repo: repo.clone(),
        work: dir.path().join("work"),
        command: format!("COUNT={} && {BUILD}", count.display()),
        binary: "out/node".into(),
        timeout: Duration::from_secs(60),
    })
    .unwrap();
    let (text, hash, cached) = built(builder.build(&listed[2]).await.unwrap());
    assert_eq!(text.trim(), format!("{c2} 2"));
    assert!(!cached);
    let (_, again, cached) = built(builder.build(&listed[2]).await.unwrap());
    assert!(cached, "a second build of a commit comes from the cache");
    assert_eq!(again, hash);
    let (text, ..) = built(builder.build(&listed[0]).await.unwrap());
    assert_eq!(text.trim(), format!("{c0} 1"));

    for _ in 0..2 {
        match builder.build(&listed[1]).await.unwrap() {
            Built::Failed { why, log } => {
                assert!(why.contains("exited"), "{why}");
                let log = std::fs::read_to_string(log).unwrap();
                assert!(log.contains("no such symbol"), "{log}");
            }
            other => panic!("{other:?}"),
        }
    }
    let builds = std::fs::read_to_string(&count).unwrap();
    assert_eq!(
        builds.lines().count(),
        2,
        "two builds ran; the second look at each commit came from the cache"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("v")).unwrap(),
        "work in progress"
    );
}
