//! `app-mempool`'s journal: every transaction the pool accepted, on disk,
//! so that a restart, graceful or SIGKILL, loses none of them (geth
//! journals its local transactions the same way).
//!
//! Each admission appends one record (`length`, the first four bytes of
//! the transaction's keccak, the bytes) in one `write`: the kernel keeps
//! it when the process is killed, so nothing is synced per transaction (a
//! power loss can lose the last appends). A torn or corrupt record ends
//! the read; what came before it stands. The file is bounded: when it holds
//! more than twice the pool plus [`ROTATE_SLACK`] records, it is rewritten
//! with what the pool holds (a new file synced, then renamed over the old,
//! so a crash leaves one or the other whole). At start the node reads the
//! journal back and admits each transaction again through CheckTx, against
//! the state it has then: what was included or became invalid meanwhile
//! is refused and gone.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use alloy_primitives::{keccak256, Bytes};

/// Records beyond twice the pool's size before the journal is rewritten.
pub const ROTATE_SLACK: usize = 65_536;

/// The largest record read back: a transaction larger than any pool takes
/// means the file is corrupt from there on.
const MAX_RECORD: u32 = 128 << 20;

/// A journal I/O failure, naming what was done to which file.
#[derive(Debug, thiserror::Error)]
#[error("{action} the pool's journal {}: {source}", path.display())]
pub struct JournalError {
    /// What was being done (`opening`, `reading`, `cutting`, `appending
    /// to`, `rewriting`).
    action: &'static str,
    /// The file.
    path: PathBuf,
    /// The I/O error.
    #[source]
    source: std::io::Error,
}

/// The journal file, open for appending.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    /// Records in the file.
    records: usize,
}

impl Journal {
    /// Opens the journal at `path` (created when absent, mode 0600) and
    /// reads back its transactions in the order they were accepted, up to a
    /// torn or corrupt record (the file is cut there).
    pub fn open(path: &Path) -> Result<(Self, Vec<Bytes>), JournalError> {
        let fail = |action, source| JournalError {
            action,
            path: path.to_path_buf(),
            source,
        };
        let file = open_append(path).map_err(|e| fail("opening", e))?;
        let (txs, good) = read_records(&file).map_err(|e| fail("reading", e))?;
        let len = file.metadata().map_err(|e| fail("reading", e))?.len();
        if good < len {
            tracing::warn!(path = %path.display(), kept = txs.len(), cut_at = good, len, "the pool's journal ends in a torn or corrupt record: cut there");
            file.set_len(good).map_err(|e| fail("cutting", e))?;
        }
        let journal = Self {
            path: path.to_path_buf(),
            file,
            records: txs.len(),
        };
        Ok((journal, txs))
    }

    /// Appends `raw`, one record in one write.
    pub fn append(&mut self, raw: &[u8]) -> Result<(), JournalError> {
        let mut record = Vec::with_capacity(raw.len() + 8);
        push_record(&mut record, raw);
        self.file
            .write_all(&record)
            .map_err(|source| JournalError {
                action: "appending to",
                path: self.path.clone(),
                source,
            })?;
        self.records += 1;
        Ok(())
    }

    /// Whether the file holds so many more records than the pool's `held`
    /// that it is to be rewritten.
    pub fn due(&self, held: usize) -> bool {
        self.records > held.saturating_mul(2).saturating_add(ROTATE_SLACK)
    }

    /// Rewrites the journal with `raws` only: a new file written and synced,
    /// then renamed over the old one.
    pub fn rotate<'a>(&mut self, raws: impl Iterator<Item = &'a [u8]>) -> Result<(), JournalError> {
        let fresh = self.path.with_extension("journal.new");
        let fail = |source| JournalError {
            action: "rewriting",
            path: self.path.clone(),
            source,
        };
        let records = write_fresh(&fresh, raws).map_err(fail)?;
        std::fs::rename(&fresh, &self.path).map_err(fail)?;
        self.file = open_append(&self.path).map_err(fail)?;
        self.records = records;
        Ok(())
    }
}

/// Opens `path` for appending, creating it readable by its owner only.
fn open_append(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
}

/// Writes `raws` as records into a new file at `path`, synced; returns how
/// many.
fn write_fresh<'a>(path: &Path, raws: impl Iterator<Item = &'a [u8]>) -> std::io::Result<usize> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    let mut out = BufWriter::new(file);
    let mut records = 0;
    let mut record = Vec::new();
    for raw in raws {
        record.clear();
        push_record(&mut record, raw);
        out.write_all(&record)?;
        records += 1;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(records)
}

/// Appends `raw`'s record to `out`: its length (u32, little-endian), the
/// first four bytes of its keccak, then the bytes.
fn push_record(out: &mut Vec<u8>, raw: &[u8]) {
    let len = u32::try_from(raw.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&keccak256(raw)[..4]);
    out.extend_from_slice(raw);
}

/// The records of `file` from its start, and the offset after the last
/// whole, intact one.
fn read_records(file: &File) -> std::io::Result<(Vec<Bytes>, u64)> {
    let mut reader = BufReader::new(file);
    let (mut txs, mut good) = (Vec::new(), 0u64);
    loop {
        let mut head = [0u8; 8];
        match reader.read_exact(&mut head) {
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => break,
            other => other?,
        }
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        if len > MAX_RECORD {
            break;
        }
        let mut raw = vec![0u8; len as usize];
        match reader.read_exact(&mut raw) {
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => break,
            other => other?,
        }
        if keccak256(&raw)[..4] != head[4..] {
            break;
        }
        good += 8 + u64::from(len);
        txs.push(Bytes::from(raw));
    }
    Ok((txs, good))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn raw(n: u8, len: usize) -> Vec<u8> {
        vec![n; len]
    }

    #[test]
    fn reads_back_what_was_appended_in_order_and_is_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pool.journal");
        let (mut j, txs) = Journal::open(&path).unwrap();
        assert!(txs.is_empty());
        for n in 1..=3 {
            j.append(&raw(n, 100 * n as usize)).unwrap();
        }
        drop(j);
        let (j, txs) = Journal::open(&path).unwrap();
        let want: Vec<Bytes> = (1..=3)
            .map(|n| Bytes::from(raw(n, 100 * n as usize)))
            .collect();
        assert_eq!(txs, want);
        assert_eq!(j.records, 3);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_torn_or_corrupt_tail_is_cut_and_what_came_before_stands() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pool.journal");
        let (mut j, _) = Journal::open(&path).unwrap();
        j.append(&raw(1, 50)).unwrap();
        j.append(&raw(2, 50)).unwrap();
        drop(j);
        let whole = std::fs::metadata(&path).unwrap().len();
        // A record torn mid-write: its head and part of its bytes.
        let mut torn = Vec::new();
        push_record(&mut torn, &raw(3, 50));
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(&torn[..30]).unwrap();
        drop(file);
        let (mut j, txs) = Journal::open(&path).unwrap();
        assert_eq!(txs.len(), 2);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), whole);
        // Appends after the cut read back.
        j.append(&raw(4, 10)).unwrap();
        drop(j);
        // A flipped byte in the second record ends the read before it.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[58 + 20] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let (_, txs) = Journal::open(&path).unwrap();
        assert_eq!(txs, [Bytes::from(raw(1, 50))]);
    }

    #[test]
    fn a_rotation_keeps_only_what_the_pool_holds_once_due() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pool.journal");
        let (mut j, _) = Journal::open(&path).unwrap();
        for n in 0..10 {
            j.append(&raw(n, 20)).unwrap();
        }
        assert!(!j.due(0), "within the slack");
        j.records = ROTATE_SLACK + 2 * 5 + 1;
        assert!(j.due(5) && !j.due(6));
        let held = [raw(7, 20), raw(9, 20)];
        j.rotate(held.iter().map(Vec::as_slice)).unwrap();
        assert_eq!(j.records, 2);
        j.append(&raw(11, 5)).unwrap();
        drop(j);
        let (_, txs) = Journal::open(&path).unwrap();
        let want: Vec<Bytes> = [raw(7, 20), raw(9, 20), raw(11, 5)]
            .into_iter()
            .map(Bytes::from)
            .collect();
        assert_eq!(txs, want);
        assert!(!path.with_extension("journal.new").exists());
    }
}
