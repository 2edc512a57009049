//! Errors of the profiler library (the RPC server and client have their own).

use std::path::PathBuf;

/// What can go wrong when configuring, arming, rendering, storing or fetching profiles.
#[derive(Debug, thiserror::Error)]
pub enum ProfilerError {
    /// A caller-supplied parameter is out of range or malformed.
    #[error("invalid parameter `{param}`: {reason}")]
    InvalidParam {
        /// The parameter's wire name.
        param: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The [`crate::ProfilerConfig`] is unusable.
    #[error("invalid profiler configuration: {0}")]
    InvalidConfig(String),
    /// `enable` while a session is armed or warming up: one session at a time.
    #[error(
        "a profiling session is already {state} (session {session_id}); \
         wait for it to finish or call profiler_disable"
    )]
    SessionActive {
        /// Id of the session in the way (0 while the first one warms up).
        session_id: u64,
        /// `armed` or `warming up`.
        state: &'static str,
    },
    /// A second [`crate::BlockProfiler`] in one process: pprof-rs has one global profiler.
    #[error("a BlockProfiler already exists in this process (pprof-rs has one global profiler)")]
    AlreadyInstantiated,
    /// No profile is stored for the requested height.
    #[error("no captured profile at height {height}; {available}")]
    UnknownHeight {
        /// The requested height.
        height: u64,
        /// Which heights are available.
        available: String,
    },
    /// `latest` was requested and nothing has been captured yet.
    #[error("no profile captured yet; arm the profiler with profiler_enable")]
    NoProfiles,
    /// The block has no samples for the requested role, hence no such file.
    #[error("profile at height {height} has no {file}: no samples for role {role}")]
    MissingFile {
        /// The block height.
        height: u64,
        /// The requested role filter.
        role: String,
        /// The file name that would hold it.
        file: String,
    },
    /// The first profiler build, run before arming, failed.
    #[error("profiler warm-up failed: {0}")]
    Warmup(String),
    /// The profiler's sampling thread has exited.
    #[error("the profiler's sampling thread has stopped")]
    SamplerGone,
    /// Reading or writing profile files failed.
    #[error("{context} {}: {source}", path.display())]
    Io {
        /// What was being done.
        context: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A profile alone is larger than the whole disk quota.
    #[error("profile of {bytes} bytes exceeds the disk quota of {max_bytes} bytes")]
    OverQuota {
        /// Size of the refused profile.
        bytes: u64,
        /// The quota ([`crate::Retention::max_bytes`]).
        max_bytes: u64,
    },
    /// Building a flamegraph, protobuf or folded file failed.
    #[error("rendering {what} failed: {reason}")]
    Render {
        /// Which output.
        what: String,
        /// Why.
        reason: String,
    },
}

#[cfg(any(feature = "node", feature = "client"))]
impl ProfilerError {
    pub(crate) fn io(
        context: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        ProfilerError::Io {
            context,
            path: path.into(),
            source,
        }
    }
}
