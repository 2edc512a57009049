//! Which ABCI connection a thread serves, and how a sample finds its role.
//!
//! tendermint-abci spawns one unnamed thread per ABCI connection. The node's
//! `tag_current_thread` gives the calling thread the role's name (`check_tx` or `deliver_tx`) as its pthread
//! name; pprof-rs records that name with every sample, so it becomes the `thread` label of
//! the protobuf and the second frame of the SVG. A sample's *work* ([`crate::work`]) is
//! what splits profiles: work marked where it runs, else the work of its thread's tag.

use serde::{Deserialize, Serialize};

use crate::work::Work;

/// Prefix of the profiler's own thread names (`fethprof-sample`, `fethprof-render`); their
/// samples are left out of block profiles.
pub const PROFILER_THREAD_PREFIX: &str = "fethprof-";

/// The ABCI connection a thread serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The mempool connection: `CheckTx`.
    CheckTx,
    /// The consensus connection: `FinalizeBlock` (the former `DeliverTx`) and `Commit`.
    DeliverTx,
}

impl Role {
    /// Every role, in display order.
    pub const ALL: [Role; 2] = [Role::CheckTx, Role::DeliverTx];

    /// The role's name on the wire, in file names and as the tagged thread's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::CheckTx => "check_tx",
            Role::DeliverTx => "deliver_tx",
        }
    }

    /// The role whose tagged threads carry `thread_name`, if any.
    pub fn from_thread_name(thread_name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == thread_name)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which samples of a block profile to select: all of them, or the samples of one kind of
/// work ([`Work::CheckTx`] or [`Work::DeliverTx`], whichever thread did it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleFilter {
    /// Every thread of the process, tagged or not.
    #[default]
    All,
    /// Admission work, [`Work::CheckTx`].
    CheckTx,
    /// Execution work, [`Work::DeliverTx`].
    DeliverTx,
}

impl RoleFilter {
    /// Every filter: `all` first, then one per role.
    pub const ALL: [RoleFilter; 3] = [RoleFilter::All, RoleFilter::CheckTx, RoleFilter::DeliverTx];

    /// The filter's name on the wire and the stem of its files (`all.svg`, `check_tx.pb`, …).
    pub fn as_str(self) -> &'static str {
        match self.role() {
            None => "all",
            Some(role) => role.as_str(),
        }
    }

    /// The role this filter selects, `None` for [`RoleFilter::All`].
    pub fn role(self) -> Option<Role> {
        match self {
            RoleFilter::All => None,
            RoleFilter::CheckTx => Some(Role::CheckTx),
            RoleFilter::DeliverTx => Some(Role::DeliverTx),
        }
    }

    /// Whether samples of `work` belong to this filter.
    pub fn matches(self, work: Work) -> bool {
        self.role().is_none_or(|role| Work::from(role) == work)
    }

    /// Whether a folded stack rooted at `root` (its work's name) belongs to this filter.
    pub fn matches_root(self, root: &str) -> bool {
        self.role().is_none_or(|role| role.as_str() == root)
    }
}

impl From<Role> for RoleFilter {
    fn from(role: Role) -> Self {
        match role {
            Role::CheckTx => RoleFilter::CheckTx,
            Role::DeliverTx => RoleFilter::DeliverTx,
        }
    }
}

impl std::fmt::Display for RoleFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_match_samples_by_work() {
        assert!(RoleFilter::All.matches_root("other"));
        assert!(RoleFilter::CheckTx.matches_root("check_tx"));
        assert!(!RoleFilter::CheckTx.matches_root("deliver_tx"));
        assert!(RoleFilter::DeliverTx.matches(Work::DeliverTx));
        assert!(!RoleFilter::DeliverTx.matches(Work::Commit));
        assert!(RoleFilter::All.matches(Work::Rpc));
        assert_eq!(Role::from_thread_name("deliver_tx"), Some(Role::DeliverTx));
        assert_eq!(Role::from_thread_name("abcid"), None);
        assert_eq!(RoleFilter::from(Role::CheckTx).as_str(), "check_tx");
    }
}
