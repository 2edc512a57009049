//! Downloading a session's block profiles from a node into a local directory laid out
//! like the node's (`<chain-dir>/<height>/<role>.<kind>` and `meta.json`).
//!
//! The caller drives the download file by file ([`plan_download`], then
//! [`download_file`] for each planned file, then [`write_metadata`]), so that it can show
//! progress. Profiles already complete locally are skipped.

use std::fs;
use std::path::{Path, PathBuf};

use crate::api::{FetchParams, HeightSelector, ProfileKind, ProfileSummary, META_FILE};
use crate::client::{ClientError, ProfilerClient};
use crate::error::ProfilerError;
use crate::role::RoleFilter;

/// Why a download, a merge or a read of local profiles failed.
#[derive(Debug, thiserror::Error)]
pub enum LocalFilesError {
    /// Reading or writing a local file or directory failed.
    #[error("{action} {}", path.display())]
    Io {
        /// What was being done (`creating`, `reading`, `writing`).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A fetched binary file was not valid base64.
    #[error("decoding {file} of height {height}")]
    Decode {
        /// The file name.
        file: String,
        /// The block height.
        height: u64,
        /// The decoding error.
        #[source]
        source: base64::DecodeError,
    },
    /// The node refused or failed a call.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Folded stacks did not parse, or a flamegraph did not render.
    #[error(transparent)]
    Profile(#[from] ProfilerError),
    /// A profile's metadata did not serialise.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl LocalFilesError {
    /// An I/O failure while `action`-ing `path`.
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        LocalFilesError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// One file of one block profile to download.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedFile {
    /// Block height.
    pub height: u64,
    /// Output format.
    pub kind: ProfileKind,
    /// Threads selected.
    pub role: RoleFilter,
}

/// What [`plan_download`] found to do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DownloadPlan {
    /// The files to fetch, block by block.
    pub files: Vec<PlannedFile>,
    /// Profiles already complete locally (same `meta.json`, every file present).
    pub already_present: usize,
}

/// Lists the files of `profiles` missing under `chain_dir`. Only names this crate
/// produces are planned, so a node cannot steer where files are written.
pub fn plan_download(chain_dir: &Path, profiles: &[ProfileSummary]) -> DownloadPlan {
    let mut plan = DownloadPlan::default();
    for profile in profiles {
        if is_complete_locally(&chain_dir.join(profile.height.to_string()), profile) {
            plan.already_present += 1;
            continue;
        }
        for kind in ProfileKind::ALL {
            for role in RoleFilter::ALL {
                if profile.files.contains(&kind.file_name(role)) {
                    plan.files.push(PlannedFile {
                        height: profile.height,
                        kind,
                        role,
                    });
                }
            }
        }
    }
    plan
}

/// Fetches one planned file into `<chain_dir>/<height>/`, creating the directory.
pub async fn download_file(
    client: &ProfilerClient,
    chain_dir: &Path,
    file: PlannedFile,
) -> Result<(), LocalFilesError> {
    let dir = chain_dir.join(file.height.to_string());
    fs::create_dir_all(&dir).map_err(|e| LocalFilesError::io("creating", &dir, e))?;
    let response = client
        .fetch(FetchParams {
            height: HeightSelector::Height(file.height),
            kind: file.kind,
            role: file.role,
        })
        .await?;
    let bytes = response
        .decode()
        .map_err(|source| LocalFilesError::Decode {
            file: response.file.clone(),
            height: file.height,
            source,
        })?;
    let path = dir.join(file.kind.file_name(file.role));
    fs::write(&path, bytes).map_err(|e| LocalFilesError::io("writing", &path, e))
}

/// Writes each profile's `meta.json` (last: a profile whose metadata matches is complete).
pub fn write_metadata(
    chain_dir: &Path,
    profiles: &[ProfileSummary],
) -> Result<(), LocalFilesError> {
    for profile in profiles {
        let dir = chain_dir.join(profile.height.to_string());
        fs::create_dir_all(&dir).map_err(|e| LocalFilesError::io("creating", &dir, e))?;
        let path = dir.join(META_FILE);
        fs::write(&path, serde_json::to_vec_pretty(profile)?)
            .map_err(|e| LocalFilesError::io("writing", &path, e))?;
    }
    Ok(())
}

/// Whether `dir` holds `profile` already: the same metadata and every one of its files.
fn is_complete_locally(dir: &Path, profile: &ProfileSummary) -> bool {
    let same_meta = fs::read(dir.join(META_FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<ProfileSummary>(&bytes).ok())
        .is_some_and(|local| &local == profile);
    same_meta && profile.files.iter().all(|f| dir.join(f).is_file())
}
