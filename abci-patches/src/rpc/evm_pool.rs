//! The threads EVM requests (`eth_call`, `eth_estimateGas`,
//! `eth_createAccessList`) run on: [`RpcConfig::evm_calls`](super::RpcConfig)
//! of their own, each at a lower scheduling priority than the rest of the
//! node (nice +10 on Linux: a tenth of the share of a busy core a thread of
//! the node's own priority gets). Clients that keep every core busy with maximal calls then slow
//! each other down, not consensus: Commit, FinalizeBlock and CheckTx take
//! the cores they need first.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// How much nicer (lower in priority) than the node the EVM threads run.
pub const EVM_NICENESS: i32 = 10;

/// One request's work, sent to a free thread.
type Job = Box<dyn FnOnce() + Send>;

/// A fixed set of low-priority threads taking EVM requests in turn; they end
/// when the pool is dropped.
pub struct EvmPool {
    jobs: Mutex<Sender<Job>>,
}

/// Why a request did not run to its end on the pool.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// The pool's threads are gone (the server is stopping).
    #[error("the EVM threads have stopped")]
    Stopped,
    /// The request panicked; the thread goes on with the next one.
    #[error("the EVM request panicked")]
    Panicked,
}

impl EvmPool {
    /// Starts `threads` threads (at least one), named `web3-evm-N`.
    pub fn spawn(threads: usize) -> std::io::Result<Self> {
        let (jobs, queue) = channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for n in 0..threads.max(1) {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("web3-evm-{n}"))
                .spawn(move || work(&queue))?;
        }
        Ok(Self {
            jobs: Mutex::new(jobs),
        })
    }

    /// Runs `request` on one of the pool's threads and waits for its result.
    pub async fn run<T: Send + 'static>(
        &self,
        request: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, PoolError> {
        let (done, result) = oneshot::channel();
        let job: Job = Box::new(move || {
            let outcome = catch_unwind(AssertUnwindSafe(request)).map_err(|_| PoolError::Panicked);
            // The asker may have gone (its connection closed): nothing to do.
            let _ = done.send(outcome);
        });
        self.jobs
            .lock()
            .map_err(|_| PoolError::Stopped)?
            .send(job)
            .map_err(|_| PoolError::Stopped)?;
        result.await.map_err(|_| PoolError::Stopped)?
    }
}

/// A pool thread: lowers its own priority, then runs jobs until the pool is
/// dropped.
fn work(queue: &Mutex<Receiver<Job>>) {
    lower_priority();
    loop {
        let job = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => return,
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

/// Makes the calling thread [`EVM_NICENESS`] nicer than it is, at most 19
/// (Linux schedules threads, and `setpriority` on a thread id sets that
/// thread's alone). Where that fails the thread runs at the node's
/// priority, as before, and says so.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `gettid` has no preconditions; `getpriority` and
        // `setpriority` read their integer arguments only.
        let rc = unsafe {
            let tid = libc::gettid() as libc::id_t;
            let now = libc::getpriority(libc::PRIO_PROCESS, tid);
            libc::setpriority(libc::PRIO_PROCESS, tid, (now + EVM_NICENESS).min(19))
        };
        if rc != 0 {
            let error = std::io::Error::last_os_error();
            tracing::warn!("web3: cannot lower the EVM threads' priority: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nice value of the thread `tid` of this process, from
    /// `/proc/self/task/TID/stat` (field 19).
    fn nice_of(tid: i32) -> i64 {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        // The command name, in parentheses, may hold spaces: count after it.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[tokio::test]
    async fn requests_run_on_threads_of_lower_priority_and_a_panic_is_an_error() {
        let pool = EvmPool::spawn(2).unwrap();
        let (tid, name) = pool
            .run(|| {
                let name = std::thread::current().name().map(str::to_string);
                (unsafe { libc::gettid() }, name)
            })
            .await
            .unwrap();
        assert_eq!(
            name.as_deref().map(|n| n.starts_with("web3-evm-")),
            Some(true)
        );
        // The test's own thread keeps the process's priority.
        let own = nice_of(unsafe { libc::gettid() });
        assert_eq!(nice_of(tid), (own + i64::from(EVM_NICENESS)).min(19));
        let panicked = pool.run(|| panic!("a bad request")).await;
        assert!(matches!(panicked, Err(PoolError::Panicked)));
        // Both threads still serve.
        let (a, b) = tokio::join!(pool.run(|| 1u32), pool.run(|| 2u32));
        assert_eq!((a.unwrap(), b.unwrap()), (1, 2));
    }
}
