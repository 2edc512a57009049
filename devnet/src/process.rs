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
    matches && stat(pid).is_some_and(|(state, _)| !exited(state))
}

/// The start time of `pid` (clock ticks after boot, field 22 of
/// `/proc/<pid>/stat`): recorded right after spawning, it tells the process
/// started from any later one given the same PID.
pub fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|(_, start)| start)
}

/// Whether `pid` still is the process spawned at `started`: alive with that
/// start time (the same process even after it exec'd another binary, as a
/// wrapper script does), or, with no start time recorded, alive running a
/// binary named `name`.
pub(crate) fn is_ours(pid: u32, started: Option<u64>, name: &str) -> bool {
    match started {
        Some(t) => stat(pid).is_some_and(|(state, start)| !exited(state) && start == t),
        None => is_running(pid, name),
    }
}

/// State letter and start time (clock ticks after boot) of `pid`, from
/// `/proc/<pid>/stat`.
fn stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields = stat_fields(&text)?;
    let state = fields.first()?.chars().next()?;
    let start_time = fields.get(19)?.parse().ok()?;
    Some((state, start_time))
}

/// The fields of a `/proc/<pid>[/task/<tid>]/stat` line after the command name, which may
/// hold spaces and parentheses: 0 is the state, 11 and 12 the user and system CPU time
/// (clock ticks), 19 the start time. `None` when the line has no command name.
pub fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    Some(stat.rsplit_once(')')?.1.split_whitespace().collect())
}

/// Zombie or dead: the process has released everything it held.
fn exited(state: char) -> bool {
    matches!(state, 'Z' | 'X' | 'x')
}

/// Whether the process that started at `start_time` as `pid` has fully
/// exited. Its `/proc/<pid>/exe` goes away early in exit, before its files
/// (and their locks) are closed, and its main thread turns zombie while other
/// threads may still be closing the shared files: only a vanished entry, or
/// a zombie with no thread left but itself, means every file is closed.
fn has_exited(pid: u32, start_time: u64) -> bool {
    reap(pid);
    match stat(pid) {
        Some((state, start)) if start == start_time => exited(state) && threads(pid) <= 1,
        _ => true,
    }
}

/// Threads still listed under `/proc/<pid>/task`.
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |dir| dir.count())
}

/// Sends `signal` to `pid`.
pub fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
    reap(pid);
}

/// Sends `signal` to the process group `pid` leads ([`spawn_logged`] starts
/// each process as the leader of its own group), so that whatever it started
/// stops with it; to `pid` alone when it leads no group.
fn signal_group(pid: u32, signal: i32) {
    // SAFETY: getpgid(2) and kill(2) have no memory-safety preconditions.
    unsafe {
        let pid = pid as libc::pid_t;
        if libc::getpgid(pid) == pid {
            libc::kill(-pid, signal);
        } else {
            libc::kill(pid, signal);
        }
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

/// Stops `pid` (if it still runs `name`): SIGTERM, then SIGKILL after `grace`,
/// and waits until it has fully exited (its files closed, so a successor can
/// take its locks). Returns whether a process was stopped.
pub fn stop(pid: u32, name: &str, grace: Duration) -> bool {
    stop_spawned(pid, None, name, grace)
}

/// Stops the process group of `pid` if `pid` still is the process spawned
/// at `started` ([`start_time`], when recorded) running `name`: SIGTERM,
/// then SIGKILL after `grace`, and waits until `pid` has fully exited.
/// Returns whether a process was stopped.
pub(crate) fn stop_spawned(pid: u32, started: Option<u64>, name: &str, grace: Duration) -> bool {
    let Some(start_time) = ours(pid, started, name) else {
        return false;
    };
    signal_group(pid, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if has_exited(pid, start_time) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    signal_group(pid, libc::SIGKILL);
    wait_exited(pid, start_time);
    true
}

/// SIGKILLs `pid` (if it still runs `name`), with no SIGTERM first, and
/// waits until it has fully exited. Returns whether a process was killed.
pub fn kill(pid: u32, name: &str) -> bool {
    kill_spawned(pid, None, name)
}

/// SIGKILLs the process group of `pid` if `pid` still is the process
/// spawned at `started` running `name`, and waits until `pid` has fully
/// exited. Returns whether a process was killed.
pub(crate) fn kill_spawned(pid: u32, started: Option<u64>, name: &str) -> bool {
    let Some(start_time) = ours(pid, started, name) else {
        return false;
    };
    signal_group(pid, libc::SIGKILL);
    wait_exited(pid, start_time);
    true
}

/// The start time of `pid` when it is the process spawned at `started`
/// (or, with none recorded, running `name`); `None` (logged when the start
/// time differs) when it is not, e.g. its PID was reused.
fn ours(pid: u32, started: Option<u64>, name: &str) -> Option<u64> {
    let (state, start_time) = stat(pid)?;
    if exited(state) || (started.is_none() && !is_running(pid, name)) {
        return None;
    }
    if started.is_some_and(|t| t != start_time) {
        tracing::warn!(
            pid,
            name,
            "PID {pid} started after the {name} recorded under it: not signalled"
        );
        return None;
    }
    Some(start_time)
}

/// Waits up to 5 s until `pid`, started at `start_time`, has fully exited.
fn wait_exited(pid: u32, start_time: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline && !has_exited(pid, start_time) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last `lines` lines of a log file, for error messages.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `sleep 30` started like a devnet process; the folder holds its log.
    fn sleeper() -> (tempfile::TempDir, u32) {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let pid = spawn_logged(cmd, &dir.path().join("sleep.log")).unwrap();
        (dir, pid)
    }

    #[test]
    fn stop_returns_once_the_process_has_fully_exited() {
        let (_dir, pid) = sleeper();
        assert!(is_running(pid, "sleep"));
        let (state, start_time) = stat(pid).unwrap();
        assert!(!exited(state));
        assert!(!has_exited(pid, start_time));

        assert!(stop(pid, "sleep", Duration::from_secs(5)));
        // Reaped: no zombie, no entry, nothing left holding files.
        assert!(has_exited(pid, start_time));
        assert!(stat(pid).is_none());
        assert!(!is_running(pid, "sleep"));
        assert!(
            !stop(pid, "sleep", Duration::from_secs(1)),
            "nothing left to stop"
        );
    }

    #[test]
    fn a_wrapper_that_execs_its_binary_is_still_the_process_spawned() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("bash");
        cmd.args(["-c", "exec sleep 30"]);
        let pid = spawn_logged(cmd, &dir.path().join("wrapper.log")).unwrap();
        let started = start_time(pid);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !is_running(pid, "sleep") {
            assert!(Instant::now() < deadline, "bash never exec'd sleep");
            std::thread::sleep(Duration::from_millis(10));
        }
        // Spawned as the wrapper (named here as a node binary), now `sleep`:
        // the same process by its PID and start time.
        assert!(is_ours(pid, started, "abcid"));
        assert!(!is_ours(pid, started.map(|t| t + 1), "abcid"));
        assert!(
            !is_ours(pid, None, "abcid"),
            "by name alone it is not abcid"
        );
        assert!(stop_spawned(pid, started, "abcid", Duration::from_secs(5)));
        assert!(!is_ours(pid, started, "abcid"));
    }

    /// The name of the binary `pid` runs.
    fn exe_name(pid: u32) -> String {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        exe.file_name().unwrap().to_string_lossy().into_owned()
    }

    #[test]
    fn the_whole_group_stops_and_only_the_recorded_start() {
        let dir = tempfile::tempdir().unwrap();
        let child_pid = dir.path().join("child.pid");
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!(
            "sleep 30 & echo $! > {}; wait",
            child_pid.display()
        ));
        let pid = spawn_logged(cmd, &dir.path().join("sh.log")).unwrap();
        let started = start_time(pid);
        assert!(started.is_some());
        let deadline = Instant::now() + Duration::from_secs(10);
        let child: u32 = loop {
            if let Some(p) = std::fs::read_to_string(&child_pid)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                break p;
            }
            assert!(Instant::now() < deadline, "the shell wrote no child PID");
            std::thread::sleep(Duration::from_millis(20));
        };
        let name = exe_name(pid);
        // Another start time under the same PID: a reused PID, left alone.
        let other = started.map(|t| t + 1);
        assert!(!is_ours(pid, other, &name));
        assert!(!stop_spawned(pid, other, &name, Duration::ZERO));
        assert!(is_ours(pid, started, &name));
        assert!(stop_spawned(pid, started, &name, Duration::from_secs(5)));
        // The shell's child, in its group, was signalled too.
        let deadline = Instant::now() + Duration::from_secs(10);
        while stat(child).is_some_and(|(state, _)| !exited(state)) {
            assert!(Instant::now() < deadline, "the group's sleep still runs");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_different_binary_is_never_stopped() {
        let (_dir, pid) = sleeper();
        assert!(!stop(pid, "abcid", Duration::ZERO));
        assert!(is_running(pid, "sleep"));
        assert!(stop(pid, "sleep", Duration::from_secs(5)));
    }
}
