//! Starting detached processes and stopping exactly the ones we started.

use std::fs::OpenOptions;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// Starts `cmd` in its own process group with stdout and stderr appended to
/// `log`; returns its PID.
pub fn spawn_logged(mut cmd: Command, log: &Path) -> Result<u32> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("cannot open log file {}", log.display()))?;
    let err = file
        .try_clone()
        .context("cannot duplicate log file handle")?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    Ok(child.id())
}

/// Whether `pid` is alive and runs a binary whose name is `name`
/// (guards against PID reuse).
pub fn is_running(pid: u32, name: &str) -> bool {
    let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
        return false;
    };
    let matches = exe
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.trim_end_matches(" (deleted)") == name);
    matches && !is_zombie(pid)
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

/// Sends `signal` to `pid`.
pub fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
    reap(pid);
}

/// Collects the exit status of `pid` if it is our child, so it does not
/// linger as a zombie.
fn reap(pid: u32) {
    let mut status = 0;
    // SAFETY: waitpid with WNOHANG on a PID; no memory is shared.
    unsafe {
        libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG);
    }
}

/// Stops `pid` (if it still runs `name`): SIGTERM, then SIGKILL after `grace`.
/// Returns whether a process was stopped.
pub fn stop(pid: u32, name: &str, grace: Duration) -> bool {
    if !is_running(pid, name) {
        return false;
    }
    signal(pid, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        reap(pid);
        if !is_running(pid, name) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(pid, libc::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline && is_running(pid, name) {
        reap(pid);
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The last `lines` lines of a log file, for error messages.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
