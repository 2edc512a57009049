//! On-disk layout, retention and disk quota of block profiles.
//!
//! ```text
//! <out_dir>/<chain-id>/<height>/meta.json      ProfileSummary
//!                              /all.svg         all threads
//!                              /check_tx.svg    one per role with samples
//!                              /deliver_tx.svg
//!                              /all.pb …        pprof protobuf, same split
//!                              /all.folded …    folded stacks, same split
//! <out_dir>/<chain-id>/.tmp-<height>/           a profile being written (renamed when done)
//! ```
//!
//! Before a profile is written, the oldest captures are deleted until the new one fits
//! both [`Retention`] limits; a profile larger than the whole byte quota is refused.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::api::{ProfileSummary, META_FILE};
use crate::config::Retention;
use crate::error::ProfilerError;
use crate::lock::lock;

const TMP_PREFIX: &str = ".tmp-";

/// A stored profile as the index knows it.
#[derive(Clone, Debug)]
pub(crate) struct Indexed {
    pub summary: ProfileSummary,
    /// Bytes on disk, `meta.json` included (what the quota counts).
    pub disk_bytes: u64,
}

/// One file of a profile, rendered in memory and not yet written.
pub(crate) struct StoredFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// The profiles of one chain under `<out_dir>/<chain-id>/`.
pub(crate) struct Store {
    dir: PathBuf,
    retention: Retention,
}

impl Store {
    /// Opens (creating it if needed) the chain's directory, deletes half-written profiles
    /// and indexes the complete ones.
    pub fn open(
        out_dir: &Path,
        chain_id: &str,
        retention: Retention,
    ) -> Result<(Store, BTreeMap<u64, Indexed>), ProfilerError> {
        let dir = out_dir.join(chain_id);
        fs::create_dir_all(&dir)
            .map_err(|e| ProfilerError::io("creating profile directory", &dir, e))?;
        let entries =
            fs::read_dir(&dir).map_err(|e| ProfilerError::io("listing profiles in", &dir, e))?;
        let mut index = BTreeMap::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name.starts_with(TMP_PREFIX) {
                if let Err(e) = fs::remove_dir_all(&path) {
                    tracing::warn!(path = %path.display(), error = %e, "cannot delete half-written profile");
                }
                continue;
            }
            let Ok(height) = name.parse::<u64>() else {
                continue;
            };
            if height.to_string() != name || !path.is_dir() {
                continue;
            }
            match load_indexed(&path, height) {
                Ok(indexed) => {
                    index.insert(height, indexed);
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "skipping unreadable profile")
                }
            }
        }
        Ok((Store { dir, retention }, index))
    }

    /// The chain's profile directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The retention cap in force.
    pub fn retention(&self) -> Retention {
        self.retention
    }

    /// Writes a profile (replacing one at the same height), evicting the oldest profiles
    /// first so that both retention limits hold, and updates `index`.
    pub fn save(
        &self,
        summary: ProfileSummary,
        files: Vec<StoredFile>,
        index: &Mutex<BTreeMap<u64, Indexed>>,
    ) -> Result<(), ProfilerError> {
        let height = summary.height;
        let meta = serde_json::to_vec_pretty(&summary).map_err(|e| ProfilerError::Render {
            what: META_FILE.into(),
            reason: e.to_string(),
        })?;
        let disk_bytes =
            meta.len() as u64 + files.iter().map(|f| f.bytes.len() as u64).sum::<u64>();
        let evict = {
            let index = lock(index);
            plan_eviction(
                index
                    .values()
                    .map(|i| (i.summary.height, i.summary.captured_unix_ms, i.disk_bytes)),
                height,
                disk_bytes,
                self.retention,
            )?
        };

        fs::create_dir_all(&self.dir)
            .map_err(|e| ProfilerError::io("creating profile directory", &self.dir, e))?;
        for old in evict.iter().filter(|h| **h != height) {
            let path = self.dir.join(old.to_string());
            remove_dir_if_present(&path)
                .map_err(|e| ProfilerError::io("evicting old profile", &path, e))?;
            lock(index).remove(old);
            tracing::debug!(height = old, "evicted block profile (retention)");
        }

        let tmp = self.dir.join(format!("{TMP_PREFIX}{height}"));
        let written = write_dir(&tmp, &files, &meta);
        if let Err(e) = written {
            // Best effort: a leftover is also deleted at the next start.
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
        let target = self.dir.join(height.to_string());
        remove_dir_if_present(&target)
            .map_err(|e| ProfilerError::io("replacing profile", &target, e))?;
        lock(index).remove(&height);
        fs::rename(&tmp, &target)
            .map_err(|e| ProfilerError::io("moving profile into place at", &target, e))?;
        lock(index).insert(
            height,
            Indexed {
                summary,
                disk_bytes,
            },
        );
        Ok(())
    }

    /// Reads one file of the profile at `height`. `file` is built from enums, never from
    /// caller text, so it cannot name anything outside the profile's directory.
    pub fn read(&self, height: u64, file: &str) -> Result<Vec<u8>, ProfilerError> {
        let path = self.dir.join(height.to_string()).join(file);
        fs::read(&path).map_err(|e| ProfilerError::io("reading profile file", &path, e))
    }
}

fn write_dir(dir: &Path, files: &[StoredFile], meta: &[u8]) -> Result<(), ProfilerError> {
    remove_dir_if_present(dir).map_err(|e| ProfilerError::io("clearing", dir, e))?;
    fs::create_dir(dir).map_err(|e| ProfilerError::io("creating profile directory", dir, e))?;
    for file in files {
        let path = dir.join(&file.name);
        fs::write(&path, &file.bytes).map_err(|e| ProfilerError::io("writing", &path, e))?;
    }
    let path = dir.join(META_FILE);
    fs::write(&path, meta).map_err(|e| ProfilerError::io("writing", &path, e))
}

fn remove_dir_if_present(path: &Path) -> std::io::Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn load_indexed(dir: &Path, height: u64) -> Result<Indexed, ProfilerError> {
    let meta_path = dir.join(META_FILE);
    let meta = fs::read(&meta_path).map_err(|e| ProfilerError::io("reading", &meta_path, e))?;
    let summary: ProfileSummary =
        serde_json::from_slice(&meta).map_err(|e| ProfilerError::Render {
            what: meta_path.display().to_string(),
            reason: e.to_string(),
        })?;
    if summary.height != height {
        return Err(ProfilerError::InvalidConfig(format!(
            "{} says height {}",
            meta_path.display(),
            summary.height
        )));
    }
    let entries = fs::read_dir(dir).map_err(|e| ProfilerError::io("listing", dir, e))?;
    let disk_bytes = entries
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    Ok(Indexed {
        summary,
        disk_bytes,
    })
}

/// Heights to delete, oldest capture first, so that a new profile of `new_bytes` at
/// `new_height` fits `retention`. A stored profile at `new_height` is always listed (it is
/// replaced). Entries are `(height, captured_unix_ms, disk_bytes)`.
fn plan_eviction(
    entries: impl Iterator<Item = (u64, u64, u64)>,
    new_height: u64,
    new_bytes: u64,
    retention: Retention,
) -> Result<Vec<u64>, ProfilerError> {
    if new_bytes > retention.max_bytes {
        return Err(ProfilerError::OverQuota {
            bytes: new_bytes,
            max_bytes: retention.max_bytes,
        });
    }
    let mut evict = Vec::new();
    let mut kept: Vec<(u64, u64, u64)> = Vec::new();
    for entry in entries {
        if entry.0 == new_height {
            evict.push(entry.0);
        } else {
            kept.push(entry);
        }
    }
    kept.sort_by_key(|&(height, captured, _)| (captured, height));
    let mut count = kept.len();
    let mut bytes: u64 = kept.iter().map(|e| e.2).sum();
    for (height, _, size) in kept {
        if count < retention.max_profiles && bytes.saturating_add(new_bytes) <= retention.max_bytes
        {
            break;
        }
        evict.push(height);
        count -= 1;
        bytes -= size;
    }
    Ok(evict)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(height: u64, captured_unix_ms: u64) -> ProfileSummary {
        ProfileSummary {
            chain_id: "test-chain".into(),
            height,
            session_id: 1,
            captured_unix_ms,
            frequency_hz: 99,
            duration_ms: 12.5,
            start_delay_ms: 0.1,
            end_delay_ms: 0.2,
            execution_ms: Some(4.0),
            samples: 3,
            check_tx_samples: 1,
            deliver_tx_samples: 2,
            work_samples: Default::default(),
            profiler_samples: 0,
            files: vec!["all.folded".into()],
            bytes: 100,
        }
    }

    fn file(size: usize) -> Vec<StoredFile> {
        vec![StoredFile {
            name: "all.folded".into(),
            bytes: vec![b'x'; size],
        }]
    }

    #[test]
    fn eviction_respects_count_then_bytes_oldest_first() {
        let r = Retention {
            max_profiles: 3,
            max_bytes: 1000,
        };
        let entries = [(10, 100, 100), (11, 200, 100), (12, 300, 100)];
        assert_eq!(
            plan_eviction(entries.into_iter(), 13, 100, r).expect("fits"),
            vec![10]
        );
        // Oldest by capture time, not by height (a chain restarted from genesis).
        let entries = [(50, 100, 100), (1, 200, 100), (2, 300, 100)];
        assert_eq!(
            plan_eviction(entries.into_iter(), 3, 100, r).expect("fits"),
            vec![50]
        );
        let entries = [(10, 100, 400), (11, 200, 400)];
        assert_eq!(
            plan_eviction(entries.into_iter(), 12, 300, r).expect("fits"),
            vec![10]
        );
        assert!(plan_eviction(entries.into_iter(), 12, 1001, r).is_err());
        // Same height is replaced, not counted twice.
        let entries = [(10, 100, 100), (11, 200, 100), (12, 300, 100)];
        assert_eq!(
            plan_eviction(entries.into_iter(), 12, 100, r).expect("fits"),
            vec![12]
        );
    }

    #[test]
    fn save_enforces_retention_and_reopen_restores_index() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let retention = Retention {
            max_profiles: 2,
            max_bytes: 10_000,
        };
        let (store, index) = Store::open(tmp.path(), "test-chain", retention).expect("open");
        assert!(index.is_empty());
        let index = Mutex::new(index);
        for (height, at) in [(5, 1), (6, 2), (7, 3)] {
            store
                .save(summary(height, at), file(100), &index)
                .expect("save");
        }
        let heights: Vec<u64> = lock(&index).keys().copied().collect();
        assert_eq!(heights, vec![6, 7]);
        assert!(!store.dir().join("5").exists());
        assert_eq!(store.read(7, "all.folded").expect("read").len(), 100);

        std::fs::create_dir(store.dir().join(".tmp-8")).expect("leftover");
        let (_, reopened) = Store::open(tmp.path(), "test-chain", retention).expect("reopen");
        assert_eq!(reopened.keys().copied().collect::<Vec<_>>(), vec![6, 7]);
        assert!(!store.dir().join(".tmp-8").exists());
        let disk = reopened.get(&7).expect("indexed").disk_bytes;
        assert_eq!(disk, lock(&index).get(&7).expect("indexed").disk_bytes);
    }

    #[test]
    fn byte_quota_evicts_and_refuses_oversized_profiles() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let retention = Retention {
            max_profiles: 100,
            max_bytes: 2_000,
        };
        let (store, index) = Store::open(tmp.path(), "c", retention).expect("open");
        let index = Mutex::new(index);
        for (height, at) in [(1, 1), (2, 2), (3, 3)] {
            store
                .save(summary(height, at), file(700), &index)
                .expect("save");
        }
        let total: u64 = lock(&index).values().map(|i| i.disk_bytes).sum();
        assert!(total <= 2_000, "{total}");
        assert!(!lock(&index).contains_key(&1));
        let err = store
            .save(summary(4, 4), file(5_000), &index)
            .expect_err("over quota");
        assert!(matches!(err, ProfilerError::OverQuota { .. }), "{err}");
        assert!(!store.dir().join("4").exists());
    }

    #[test]
    fn save_recreates_a_deleted_chain_directory_and_fails_when_blocked() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (store, index) = Store::open(tmp.path(), "c", Retention::default()).expect("open");
        let index = Mutex::new(index);
        std::fs::remove_dir_all(store.dir()).expect("rm");
        store
            .save(summary(1, 1), file(10), &index)
            .expect("recreated");
        std::fs::remove_dir_all(store.dir()).expect("rm");
        std::fs::write(store.dir(), b"not a directory").expect("block");
        assert!(store.save(summary(2, 2), file(10), &index).is_err());
    }
}
