//! CPU time of processes and threads, read from `/proc`: what the node and
//! the agent spend per transaction, and what the whole machine spent (to
//! tell a busy machine from a slow chain).

use std::time::Duration;

use anyhow::{Context, Result};

use crate::process::stat_fields;

/// CPU (user + system) used so far by this process, all threads.
pub fn process_cpu() -> Duration {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU used so far by the calling thread.
pub fn thread_cpu() -> Duration {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn cpu_clock(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe {
        libc::clock_gettime(clock, &mut ts);
    }
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// Resident memory of this process, bytes.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// CPU (user + system) used so far by process `pid`, all threads.
pub fn pid_cpu(pid: u32) -> Result<Duration> {
    stat_file(&format!("/proc/{pid}/stat"))
}

/// CPU used so far by the threads of `pid` whose name starts with `prefix`:
/// nanoseconds on the CPU from `schedstat` where the kernel keeps it, else
/// `stat`'s clock ticks (10 ms each: a thread that works a few ms in a short
/// window would read as idle).
pub fn threads_cpu(pid: u32, prefix: &str) -> Result<Duration> {
    let mut total = Duration::ZERO;
    let tasks = format!("/proc/{pid}/task");
    for task in std::fs::read_dir(&tasks).with_context(|| format!("cannot list {tasks}"))? {
        let task = task?.path();
        let Ok(name) = std::fs::read_to_string(task.join("comm")) else {
            continue; // the thread has just exited
        };
        if !name.starts_with(prefix) {
            continue;
        }
        let on_cpu = std::fs::read_to_string(task.join("schedstat"))
            .ok()
            .and_then(|s| cpu_of_schedstat(&s));
        match on_cpu {
            Some(ns) => total += ns,
            None => {
                if let Ok(stat) = std::fs::read_to_string(task.join("stat")) {
                    total += cpu_of_stat(&stat)?;
                }
            }
        }
    }
    Ok(total)
}

/// The whole machine's CPU time so far, summed over its cores (`/proc/stat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineCpu {
    /// Time the cores ran anything: user (guests included), nice, system,
    /// interrupts.
    pub busy: Duration,
    /// Time the hypervisor gave to others while this machine wanted to run.
    pub steal: Duration,
    /// Cores counted (the `cpuN` lines).
    pub cores: usize,
}

/// The machine's CPU time so far.
pub fn machine_cpu() -> Result<MachineCpu> {
    let path = "/proc/stat";
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    machine_cpu_of(&text, hz).with_context(|| format!("cannot parse {path}"))
}

/// [`MachineCpu`] of a `/proc/stat` text whose times are in `hz` ticks a
/// second.
fn machine_cpu_of(text: &str, hz: u64) -> Result<MachineCpu> {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("cpu"))
        .context("no `cpu` line")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .context("a CPU time is not a number")?;
    // user nice system idle iowait irq softirq steal (guest is in user).
    anyhow::ensure!(ticks.len() >= 8, "the `cpu` line has too few fields");
    let busy = [0, 1, 2, 5, 6].iter().map(|&i| ticks[i]).sum::<u64>();
    let cores = text
        .lines()
        .filter(|l| {
            l.strip_prefix("cpu")
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count();
    let time = |t: u64| Duration::from_nanos(t.saturating_mul(1_000_000_000) / hz.max(1));
    Ok(MachineCpu {
        busy: time(busy),
        steal: time(ticks[7]),
        cores: cores.max(1),
    })
}

/// The time on the CPU of a `/proc/.../schedstat` line (its first field, ns).
fn cpu_of_schedstat(line: &str) -> Option<Duration> {
    line.split_whitespace()
        .next()?
        .parse::<u64>()
        .ok()
        .map(Duration::from_nanos)
}

fn stat_file(path: &str) -> Result<Duration> {
    std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {path}"))
        .and_then(|s| cpu_of_stat(&s).with_context(|| format!("cannot parse {path}")))
}

/// User + system CPU of a `/proc/.../stat` line.
fn cpu_of_stat(stat: &str) -> Result<Duration> {
    let fields = stat_fields(stat).context("no command name")?;
    let ticks = |i: usize| -> Result<u64> {
        fields
            .get(i)
            .context("too few fields")?
            .parse::<u64>()
            .context("a CPU time is not a number")
    };
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Ok(Duration::from_nanos(
        (ticks(11)? + ticks(12)?) * 1_000_000_000 / hz,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_gives_nanoseconds_on_the_cpu() {
        assert_eq!(
            cpu_of_schedstat("868030713 1399152334 2781\n"),
            Some(Duration::from_nanos(868_030_713))
        );
        assert_eq!(cpu_of_schedstat(""), None);
        // This very thread has run: a read of its own schedstat is not zero.
        let me = threads_cpu(std::process::id(), "").unwrap();
        assert!(me > Duration::ZERO);
    }

    #[test]
    fn the_machine_line_gives_busy_and_stolen_time_over_its_cores() {
        let text = "cpu  100 5 40 9000 30 2 3 7 11 0\ncpu0 50 2 20 4500 15 1 2 4 6 0\n\
                    cpu1 50 3 20 4500 15 1 1 3 5 0\nintr 123\nctxt 99\n";
        let m = machine_cpu_of(text, 100).unwrap();
        // user + nice + system + irq + softirq = 150 ticks; idle and iowait are not busy.
        assert_eq!(m.busy, Duration::from_millis(1_500));
        assert_eq!(m.steal, Duration::from_millis(70));
        assert_eq!(m.cores, 2);
        assert!(machine_cpu_of("cpu 1 2 3\n", 100).is_err());
        assert!(machine_cpu_of("intr 5\n", 100).is_err());
        // This machine: its busy time grows while this thread works.
        let before = machine_cpu().unwrap();
        let start = process_cpu();
        let mut x = 0u64;
        while process_cpu() - start < Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let after = machine_cpu().unwrap();
        assert!(
            after.busy >= before.busy + Duration::from_millis(30),
            "{before:?} {after:?}"
        );
        assert!(after.cores >= 1);
    }

    #[test]
    fn stat_lines_give_user_plus_system_time() {
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
        let line = format!(
            "4242 (odd) name)) S 1 4242 4242 0 -1 4194560 100 0 0 0 {} {} 0 0 20 0 3 0 5",
            3 * hz,
            hz / 2
        );
        assert_eq!(cpu_of_stat(&line).unwrap(), Duration::from_millis(3500));
        assert!(cpu_of_stat("4242 S 1").is_err());
    }

    #[test]
    fn process_cpu_grows_with_work_and_matches_proc() {
        let before = process_cpu();
        let mut x = 0u64;
        while process_cpu() - before < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let proc = pid_cpu(std::process::id()).unwrap();
        // /proc counts in clock ticks (10 ms at 100 Hz): it trails a little.
        assert!(
            proc + Duration::from_millis(20) >= before,
            "{proc:?} {before:?}"
        );
        assert!(pid_cpu(u32::MAX).is_err());
    }
}
