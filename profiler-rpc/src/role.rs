//! Which ABCI connection a thread serves, and how a sample finds its role.
//!
//! tendermint-abci spawns one unnamed thread per ABCI connection. [`tag_current_thread`]
//! gives the calling thread the role's name (`check_tx` or `deliver_tx`) as its pthread
//! name; pprof-rs records that name with every sample, so it becomes the root frame of the
//! SVG and the `thread` label of the protobuf, and the renderer splits samples by role
//! from it.

use std::cell::Cell;
use std::ffi::CStr;

use serde::{Deserialize, Serialize};

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

    fn thread_name(self) -> &'static CStr {
        match self {
            Role::CheckTx => c"check_tx",
            Role::DeliverTx => c"deliver_tx",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which samples of a block profile to select: all threads, or the threads of one role.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum RoleFilter {
    /// Every thread of the process, tagged or not.
    #[default]
    #[value(name = "all")]
    All,
    /// Threads tagged [`Role::CheckTx`].
    #[value(name = "check_tx")]
    CheckTx,
    /// Threads tagged [`Role::DeliverTx`].
    #[value(name = "deliver_tx")]
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

    /// Whether samples of a thread named `thread_name` belong to this filter.
    pub fn matches_thread(self, thread_name: &str) -> bool {
        match self.role() {
            None => true,
            Some(role) => role.as_str() == thread_name,
        }
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

thread_local! {
    static TAGGED: Cell<Option<Role>> = const { Cell::new(None) };
}

/// Tags the calling thread as serving `role`: sets its pthread name to the role's name.
///
/// Cheap and idempotent: after the first call on a thread, a repeated call with the same
/// role is one thread-local read, so an ABCI handler can call it on every request. A
/// different role renames the thread again. Call it from `check_tx` (mempool connection)
/// and from `finalize_block` / `commit` (consensus connection).
pub fn tag_current_thread(role: Role) {
    TAGGED.with(|tagged| {
        if tagged.get() == Some(role) {
            return;
        }
        if let Err(errno) = set_current_thread_name(role.thread_name()) {
            tracing::warn!(role = %role, errno, "cannot name ABCI thread; its samples stay untagged");
        }
        tagged.set(Some(role));
    });
}

/// The role the calling thread was last tagged with, if any.
pub fn current_thread_role() -> Option<Role> {
    TAGGED.with(Cell::get)
}

#[cfg(target_os = "linux")]
fn set_current_thread_name(name: &CStr) -> Result<(), i32> {
    // SAFETY: `name` is NUL-terminated and at most 15 bytes long, as Linux requires.
    let rc = unsafe { libc::pthread_setname_np(libc::pthread_self(), name.as_ptr()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(rc)
    }
}

#[cfg(target_os = "macos")]
fn set_current_thread_name(name: &CStr) -> Result<(), i32> {
    // SAFETY: `name` is NUL-terminated; macOS names only the calling thread.
    let rc = unsafe { libc::pthread_setname_np(name.as_ptr()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(rc)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn set_current_thread_name(_name: &CStr) -> Result<(), i32> {
    Err(libc::ENOSYS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    fn current_pthread_name() -> String {
        let mut buf = [0 as libc::c_char; 16];
        // SAFETY: the buffer is 16 bytes, the maximum Linux thread name with its NUL.
        let rc =
            unsafe { libc::pthread_getname_np(libc::pthread_self(), buf.as_mut_ptr(), buf.len()) };
        assert_eq!(rc, 0);
        // SAFETY: pthread_getname_np NUL-terminates on success.
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn tagging_names_the_thread_and_can_change_role() {
        std::thread::spawn(|| {
            assert_eq!(current_thread_role(), None);
            tag_current_thread(Role::CheckTx);
            tag_current_thread(Role::CheckTx);
            assert_eq!(current_pthread_name(), "check_tx");
            assert_eq!(current_thread_role(), Some(Role::CheckTx));
            tag_current_thread(Role::DeliverTx);
            assert_eq!(current_pthread_name(), "deliver_tx");
            assert_eq!(current_thread_role(), Some(Role::DeliverTx));
        })
        .join()
        .expect("tagging thread panicked");
    }

    #[test]
    fn filters_match_threads_by_role_name() {
        assert!(RoleFilter::All.matches_thread("tokio-runtime-worker"));
        assert!(RoleFilter::CheckTx.matches_thread("check_tx"));
        assert!(!RoleFilter::CheckTx.matches_thread("deliver_tx"));
        assert_eq!(Role::from_thread_name("deliver_tx"), Some(Role::DeliverTx));
        assert_eq!(Role::from_thread_name("abcid"), None);
        assert_eq!(RoleFilter::from(Role::CheckTx).as_str(), "check_tx");
    }
}
