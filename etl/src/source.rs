//! Log files → lines: plain or gzip (detected by magic bytes, not by name),
//! read in large chunks, and followed as they grow (`--follow`) across
//! rotation by rename (a new file appears at the path) and by truncation
//! (copytruncate).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use flate2::read::MultiGzDecoder;

/// Bytes read per chunk.
const CHUNK: usize = 1 << 20;
/// Lines longer than this are passed on cut into pieces of this size (a
/// node never writes such lines; a corrupt file might have no newlines).
const MAX_LINE: usize = 16 << 20;

/// Errors reading a log.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The file cannot be opened.
    #[error("cannot open log {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Reading failed (not a truncated gzip stream, which is reported, not fatal).
    #[error("cannot read log {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// How a log file is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Plain text.
    None,
    /// gzip (possibly several members, as `cat a.gz b.gz` makes).
    Gzip,
}

/// Receives lines.
pub trait Sink {
    /// A complete line, without its `\n`.
    fn line(&mut self, line: &[u8]);
    /// Called when a followed file has no new data (before waiting).
    fn idle(&mut self) {}
}

impl<F: FnMut(&[u8])> Sink for F {
    fn line(&mut self, line: &[u8]) {
        self(line);
    }
}

/// Counts bytes read from the file (compressed bytes for gzip), for progress.
struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// An open log file.
pub struct LogFile {
    reader: Box<dyn Read + Send>,
    /// Plain or gzip.
    pub compression: Compression,
    /// Size on disk when opened.
    pub size: u64,
}

/// Opens a log, detecting gzip by its magic bytes. `progress` is advanced
/// by the bytes read from disk.
pub fn open(path: &Path, progress: Arc<AtomicU64>) -> Result<LogFile, SourceError> {
    let open_err = |source| SourceError::Open {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(open_err)?;
    let size = file.metadata().map_err(open_err)?.len();
    let mut magic = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        match file.read(&mut magic[got..]).map_err(open_err)? {
            0 => break,
            n => got += n,
        }
    }
    file.seek(SeekFrom::Start(0)).map_err(open_err)?;
    let counting = Counting {
        inner: file,
        count: progress,
    };
    Ok(if got == 2 && magic == [0x1f, 0x8b] {
        LogFile {
            reader: Box::new(MultiGzDecoder::new(io::BufReader::with_capacity(
                CHUNK, counting,
            ))),
            compression: Compression::Gzip,
            size,
        }
    } else {
        LogFile {
            reader: Box::new(counting),
            compression: Compression::None,
            size,
        }
    })
}

/// Splits a byte stream into lines, keeping an unterminated tail between reads.
pub struct Lines {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Dropping the rest of an over-long line.
    skipping: bool,
}

impl Default for Lines {
    fn default() -> Self {
        Self::new()
    }
}

impl Lines {
    /// An empty splitter.
    pub fn new() -> Self {
        Self {
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            skipping: false,
        }
    }

    /// Reads once from `r` and calls `f` with every complete line (without
    /// its `\n`). Returns the bytes read; 0 means end of stream for now.
    pub fn fill(&mut self, r: &mut dyn Read, f: &mut dyn Sink) -> io::Result<usize> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            if self.buf.len() >= MAX_LINE {
                // Pass the piece on (it will count as a bad line) and drop the rest.
                f.line(&self.buf[..self.end]);
                self.end = 0;
                self.skipping = true;
            } else {
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        let n = loop {
            match r.read(&mut self.buf[self.end..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        self.end += n;
        let mut pos = self.start;
        while let Some(i) = memchr::memchr(b'\n', &self.buf[pos..self.end]) {
            if self.skipping {
                self.skipping = false;
            } else {
                f.line(&self.buf[pos..pos + i]);
            }
            pos += i + 1;
        }
        self.start = pos;
        if self.skipping {
            self.start = self.end;
        }
        Ok(n)
    }

    /// The unterminated bytes kept so far.
    pub fn pending(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Forgets the unterminated bytes.
    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
        self.skipping = false;
    }
}

/// How reading a whole file ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReadEnd {
    /// Bytes after the last newline, ignored (a cut last line).
    pub unterminated: bool,
    /// The gzip stream is cut short or corrupt; what came before was read.
    pub gzip_error: Option<String>,
}

/// Reads a whole (static) log, calling `f` per complete line, until its end
/// or until `stop` is set.
pub fn read_all(
    path: &Path,
    progress: Arc<AtomicU64>,
    stop: &AtomicBool,
    f: &mut dyn Sink,
) -> Result<(Compression, ReadEnd), SourceError> {
    let mut file = open(path, progress)?;
    let mut lines = Lines::new();
    let mut end = ReadEnd::default();
    while !stop.load(Ordering::Relaxed) {
        match lines.fill(&mut file.reader, f) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if file.compression == Compression::Gzip => {
                end.gzip_error = Some(e.to_string());
                break;
            }
            Err(source) => {
                return Err(SourceError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
    }
    end.unterminated = !lines.pending().is_empty();
    Ok((file.compression, end))
}

/// What following a file saw.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct FollowEnd {
    /// Times a new file replaced the followed one (rename rotation).
    pub rotations: u64,
    /// Times the file shrank (copytruncate) and was read again from the start.
    pub truncations: u64,
    /// Unterminated bytes dropped at a rotation, truncation or stop.
    pub unterminated: u64,
}

/// Reads `path` and keeps reading what is appended until `stop` is set,
/// across rotation. Gzip files are read once (archives do not grow).
pub fn follow(
    path: &Path,
    progress: Arc<AtomicU64>,
    stop: &AtomicBool,
    poll: Duration,
    f: &mut dyn Sink,
) -> Result<(Compression, FollowEnd), SourceError> {
    let file = open(path, progress.clone())?;
    if file.compression == Compression::Gzip {
        let (c, end) = read_all(path, progress, stop, f)?;
        let out = FollowEnd {
            unterminated: u64::from(end.unterminated),
            ..FollowEnd::default()
        };
        return Ok((c, out));
    }
    let mut followed = Followed {
        path,
        ino: std::fs::metadata(path).map_err(read_error(path))?.ino(),
        progress,
        file,
        pos: 0,
        lines: Lines::new(),
        end: FollowEnd::default(),
    };
    loop {
        if followed.read(f)? > 0 {
            continue;
        }
        if stop.load(Ordering::Relaxed) {
            followed.drop_pending();
            return Ok((Compression::None, followed.end));
        }
        if !followed.switched(f)? {
            f.idle();
            std::thread::sleep(poll);
        }
    }
}

/// Maps a read failure of `path` to [`SourceError::Read`].
fn read_error(path: &Path) -> impl Fn(io::Error) -> SourceError + '_ {
    move |source| SourceError::Read {
        path: path.to_path_buf(),
        source,
    }
}

/// The state of [`follow`]: the file open now, where in it, and what was seen.
struct Followed<'a> {
    path: &'a Path,
    progress: Arc<AtomicU64>,
    file: LogFile,
    /// Inode of the open file.
    ino: u64,
    /// Bytes read from it.
    pos: u64,
    lines: Lines,
    end: FollowEnd,
}

impl Followed<'_> {
    /// Reads what is there, passing complete lines to `f`; bytes read.
    fn read(&mut self, f: &mut dyn Sink) -> Result<usize, SourceError> {
        let n = self
            .lines
            .fill(&mut self.file.reader, f)
            .map_err(read_error(self.path))?;
        self.pos += n as u64;
        Ok(n)
    }

    /// Counts and drops an unterminated last line.
    fn drop_pending(&mut self) {
        self.end.unterminated += u64::from(!self.lines.pending().is_empty());
        self.lines.clear();
    }

    /// Whether the path now names a new file (rotation) or a shorter one
    /// (truncation), in which case reading goes on there.
    fn switched(&mut self, f: &mut dyn Sink) -> Result<bool, SourceError> {
        match std::fs::metadata(self.path) {
            Ok(meta) if meta.ino() != self.ino => self.rotated(meta.ino(), f),
            Ok(meta) if meta.len() < self.pos => {
                self.truncated()?;
                Ok(true)
            }
            // Same file, or moved away with no successor yet: keep waiting.
            _ => Ok(false),
        }
    }

    /// The path is a new file (inode `ino`): finishes the old one, then
    /// switches to the new. False when the new file vanished before it
    /// could be opened (renamed again): retry on the next poll.
    fn rotated(&mut self, ino: u64, f: &mut dyn Sink) -> Result<bool, SourceError> {
        while self
            .lines
            .fill(&mut self.file.reader, f)
            .map_err(read_error(self.path))?
            > 0
        {}
        self.drop_pending();
        match open(self.path, self.progress.clone()) {
            Ok(new) => {
                self.file = new;
                self.ino = ino;
                self.pos = 0;
                self.end.rotations += 1;
                Ok(true)
            }
            Err(SourceError::Open { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// The file shrank (copytruncate): reads it again from the start.
    fn truncated(&mut self) -> Result<(), SourceError> {
        self.drop_pending();
        self.file = open(self.path, self.progress.clone())?;
        self.pos = 0;
        self.end.truncations += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn collect(data: &[u8]) -> (Vec<Vec<u8>>, Vec<u8>) {
        let mut lines = Lines::new();
        let mut out = Vec::new();
        // A reader that returns at most 7 bytes per read, to split lines across reads.
        struct Slow<'a>(&'a [u8]);
        impl Read for Slow<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(buf.len()).min(7);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut r = Slow(data);
        while lines
            .fill(&mut r, &mut |l: &[u8]| out.push(l.to_vec()))
            .expect("in-memory read")
            > 0
        {}
        (out, lines.pending().to_vec())
    }

    #[test]
    fn splits_lines_across_reads_and_keeps_the_tail() {
        let (lines, tail) = collect(b"first line\r\nsecond\n\nthird is cut");
        assert_eq!(
            lines,
            vec![b"first line\r".to_vec(), b"second".to_vec(), Vec::new()]
        );
        assert_eq!(tail, b"third is cut");
    }

    #[test]
    fn gzip_is_detected_by_content_and_a_cut_stream_is_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = (0..5000).map(|i| format!("line {i}\n")).collect::<String>();
        let gz_path = dir.path().join("node.log.1"); // no .gz suffix on purpose
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(text.as_bytes()).expect("compress");
        let gz = enc.finish().expect("compress");
        std::fs::write(&gz_path, &gz).expect("write");
        let mut n = 0;
        let stop = AtomicBool::new(false);
        let (c, end) =
            read_all(&gz_path, Arc::default(), &stop, &mut |_: &[u8]| n += 1).expect("reads");
        assert_eq!((c, n, end), (Compression::Gzip, 5000, ReadEnd::default()));

        std::fs::write(&gz_path, &gz[..gz.len() / 2]).expect("write");
        let mut n = 0;
        let (_, end) = read_all(&gz_path, Arc::default(), &stop, &mut |_: &[u8]| n += 1)
            .expect("a cut archive is not fatal");
        assert!(end.gzip_error.is_some(), "the cut is reported");
        assert!(n > 0 && n < 5000, "what came before the cut is read: {n}");
    }

    #[test]
    fn follow_survives_rename_rotation_and_truncation() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("node.log");
        std::fs::write(&path, "a1\na2\n").expect("write");
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let handle = {
            let (path, stop, seen) = (path.clone(), stop.clone(), seen.clone());
            std::thread::spawn(move || {
                follow(
                    &path,
                    Arc::default(),
                    &stop,
                    Duration::from_millis(10),
                    &mut |l: &[u8]| {
                        seen.lock()
                            .expect("lock")
                            .push(String::from_utf8_lossy(l).into_owned());
                    },
                )
            })
        };
        let wait_for = |n: usize| {
            for _ in 0..500 {
                if seen.lock().expect("lock").len() >= n {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            panic!(
                "timed out waiting for {n} lines: {:?}",
                seen.lock().expect("lock")
            );
        };
        wait_for(2);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        f.write_all(b"a3\na4-par").expect("append");
        f.flush().expect("flush");
        std::thread::sleep(Duration::from_millis(50));
        f.write_all(b"tial\n").expect("append");
        wait_for(4);
        // Rename rotation: the writer appends one more line to the old file
        // before switching; a new file appears at the path.
        std::fs::rename(&path, dir.path().join("node.log.1")).expect("rotate");
        f.write_all(b"a5\n").expect("append");
        std::fs::write(&path, "b1\nb2\n").expect("new file");
        wait_for(7);
        // copytruncate: the file is cut to zero and written again.
        std::fs::write(&path, "c1\n").expect("truncate");
        wait_for(8);
        stop.store(true, Ordering::Relaxed);
        let (_, end) = handle.join().expect("thread").expect("follow ok");
        let seen = seen.lock().expect("lock").clone();
        assert_eq!(
            seen,
            ["a1", "a2", "a3", "a4-partial", "a5", "b1", "b2", "c1"]
        );
        assert_eq!((end.rotations, end.truncations), (1, 1));
    }
}
