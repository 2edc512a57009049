//! What a sample's CPU was spent on — admission, proposal, execution, Commit, RPC reads —
//! whichever thread spent it.
//!
//! A thread's tag ([`crate::role`]) says which ABCI connection it serves; but a node also
//! admits transactions on its RPC workers (sender recovery ahead of CheckTx, an app-side
//! pool), rechecks its pool inside Commit and writes blocks on a thread of its own. A node
//! marks such work by running it inside [`Work::run`]: the marker is a function of its own
//! per kind (`fethprof_work_check_tx`, …) that is never inlined and never
//! tail-calls, so every sample taken inside the work has it on its stack, at the cost of
//! one call and no system call.
//!
//! The renderer gives each sample the work of its **innermost** marker (a recheck marked
//! `check_tx` inside a Commit marked `commit` is admission). A sample with no marker takes
//! its thread's work: a thread tagged `check_tx` or `deliver_tx` gives that work, else the
//! first [`ThreadWork`] rule of the node's configuration whose prefix the thread's name
//! has (abcid: `web3` → `rpc`), else `other`. Flamegraphs are rooted at the work, with the
//! thread as the second frame; protobufs carry both as `role` and `thread` labels.

use serde::{Deserialize, Serialize};

use crate::role::Role;

/// Name prefix of the marker functions; the kind's name follows it. Debug information
/// names a function with its path (`feth_profiler_rpc::work::fethprof_work_commit`) or,
/// where it holds inlined code, without (`fethprof_work_commit<u64, …>`): only the
/// function's own name is matched.
const MARKER_PREFIX: &str = "fethprof_work_";

/// The kind of work a sample was spent on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    /// Admission: CheckTx, recheck, sender recovery ahead of it, an app-side pool's insert.
    CheckTx,
    /// PrepareProposal and ProcessProposal.
    Proposal,
    /// Execution: FinalizeBlock's transactions (the former DeliverTx).
    DeliverTx,
    /// Commit: state and block writes.
    Commit,
    /// RPC reads and the RPC server around them.
    Rpc,
    /// Everything else.
    Other,
}

impl Work {
    /// Every kind, in display order.
    pub const ALL: [Work; 6] = [
        Work::CheckTx,
        Work::Proposal,
        Work::DeliverTx,
        Work::Commit,
        Work::Rpc,
        Work::Other,
    ];

    /// The kind's name: the root frame of its samples and its `role` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Work::CheckTx => "check_tx",
            Work::Proposal => "proposal",
            Work::DeliverTx => "deliver_tx",
            Work::Commit => "commit",
            Work::Rpc => "rpc",
            Work::Other => "other",
        }
    }

    /// The kind named `name`, if any.
    pub fn from_name(name: &str) -> Option<Work> {
        Work::ALL.into_iter().find(|w| w.as_str() == name)
    }

    /// Runs `f` as this kind of work: its samples are counted as this kind wherever it
    /// runs, unless work marked inside it says otherwise.
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        match self {
            Work::CheckTx => fethprof_work_check_tx(f),
            Work::Proposal => fethprof_work_proposal(f),
            Work::DeliverTx => fethprof_work_deliver_tx(f),
            Work::Commit => fethprof_work_commit(f),
            Work::Rpc => fethprof_work_rpc(f),
            Work::Other => fethprof_work_other(f),
        }
    }

    /// The kind a marker frame names, if `frame` (a demangled symbol) is one.
    pub fn of_marker(frame: &str) -> Option<Work> {
        // The function's path, its generic arguments left out (they may name a marker).
        let path = frame.split('<').next().unwrap_or_default();
        path.split("::")
            .find_map(|segment| segment.strip_prefix(MARKER_PREFIX))
            .and_then(Work::from_name)
    }
}

impl From<Role> for Work {
    fn from(role: Role) -> Self {
        match role {
            Role::CheckTx => Work::CheckTx,
            Role::DeliverTx => Work::DeliverTx,
        }
    }
}

impl std::fmt::Display for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A node's rule for the unmarked samples of threads it names: threads whose name starts
/// with `prefix` do `work` (abcid: `web3` → `rpc`, `persist` → `commit`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadWork {
    /// The start of the threads' names.
    pub prefix: String,
    /// What their unmarked samples count as.
    pub work: Work,
}

impl ThreadWork {
    /// A rule for threads named `prefix…`.
    pub fn new(prefix: impl Into<String>, work: Work) -> Self {
        ThreadWork {
            prefix: prefix.into(),
            work,
        }
    }
}

/// The kind named by the innermost marker among `frames` (innermost first), if any.
pub fn innermost_marker(frames: impl IntoIterator<Item = impl AsRef<str>>) -> Option<Work> {
    frames
        .into_iter()
        .find_map(|frame| Work::of_marker(frame.as_ref()))
}

/// The work of one sample: its innermost `marker`, else its thread's tag, else the first
/// rule naming its thread, else [`Work::Other`].
pub fn classify(marker: Option<Work>, thread_name: &str, rules: &[ThreadWork]) -> Work {
    marker
        .or_else(|| Role::from_thread_name(thread_name).map(Work::from))
        .or_else(|| {
            rules
                .iter()
                .find(|r| thread_name.starts_with(&r.prefix))
                .map(|r| r.work)
        })
        .unwrap_or(Work::Other)
}

// The markers: one function per kind, never inlined (its symbol must be on the stack) and
// never a tail call (`black_box` uses the result after `f` returns).

#[inline(never)]
fn fethprof_work_check_tx<R>(f: impl FnOnce() -> R) -> R {
    std::hint::black_box(f())
}

#[inline(never)]
fn fethprof_work_proposal<R>(f: impl FnOnce() -> R) -> R {
    std::hint::black_box(f())
}

#[inline(never)]
fn fethprof_work_deliver_tx<R>(f: impl FnOnce() -> R) -> R {
    std::hint::black_box(f())
}

#[inline(never)]
fn fethprof_work_commit<R>(f: impl FnOnce() -> R) -> R {
    std::hint::black_box(f())
}

#[inline(never)]
fn fethprof_work_rpc<R>(f: impl FnOnce() -> R) -> R {
    std::hint::black_box(f())
}

#[inline(never)]
fn fethprof_work_other<R>(f: impl FnOnce() -> R) -> R {
    std::hint::black_box(f())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_read_from_demangled_names() {
        assert_eq!(
            Work::of_marker("feth_profiler_rpc::work::fethprof_work_check_tx"),
            Some(Work::CheckTx)
        );
        assert_eq!(
            Work::of_marker("feth_profiler_rpc::work::fethprof_work_commit::<abcid::X>"),
            Some(Work::Commit)
        );
        assert_eq!(
            Work::of_marker("fethprof_work_commit<u64, it::common::drive_blocks::{closure#2}>"),
            Some(Work::Commit)
        );
        assert_eq!(
            Work::of_marker("feth_profiler_rpc::work::fethprof_work_rpc::h0123456789abcdef"),
            Some(Work::Rpc)
        );
        assert_eq!(Work::of_marker("abcid::node::Node::check_tx"), None);
        assert_eq!(Work::of_marker("in_commit<u64>"), None);
        assert_eq!(
            Work::of_marker("call_once<fethprof_work_commit<u64>>"),
            None
        );
        assert_eq!(Work::of_marker("fethprof_work_nothing"), None);
    }

    #[test]
    fn the_innermost_marker_wins_then_the_thread() {
        let rules = [
            ThreadWork::new("web3", Work::Rpc),
            ThreadWork::new("persist", Work::Commit),
        ];
        let recheck_in_commit = [
            "abcid::mempool::recheck",
            "fethprof_work_check_tx<bool, {closure#0}>",
            "abcid::node::Node::commit",
            "feth_profiler_rpc::work::fethprof_work_commit",
        ];
        let marker = innermost_marker(recheck_in_commit);
        assert_eq!(marker, Some(Work::CheckTx));
        assert_eq!(classify(marker, "deliver_tx", &rules), Work::CheckTx);
        let commit = innermost_marker(&recheck_in_commit[2..]);
        assert_eq!(classify(commit, "check_tx", &rules), Work::Commit);
        assert_eq!(innermost_marker(["verify", "tokio::run"]), None);
        assert_eq!(classify(None, "web3", &rules), Work::Rpc);
        assert_eq!(classify(Some(Work::CheckTx), "web3", &rules), Work::CheckTx);
        assert_eq!(classify(None, "check_tx", &rules), Work::CheckTx);
        assert_eq!(classify(None, "deliver_tx", &rules), Work::DeliverTx);
        assert_eq!(classify(None, "persist-0", &rules), Work::Commit);
        assert_eq!(classify(None, "tokio-runtime-worker", &rules), Work::Other);
    }

    #[test]
    fn run_returns_what_the_work_returns() {
        for work in Work::ALL {
            assert_eq!(work.run(|| work.as_str().len()), work.as_str().len());
            assert_eq!(Work::from_name(work.as_str()), Some(work));
        }
    }
}
