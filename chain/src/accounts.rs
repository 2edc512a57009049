//! The keys file of `feth fund` and `feth load`: many accounts, derived from
//! a seed (reproducible runs) or random, written with mode 0600.
//!
//! Format (text, one key per line, so a million accounts stream in and out):
//! ```text
//! # feth keys v1 seed=<64 hex digits>|random
//! 0x<private key>
//! …
//! ```
//!
//! A shard file (`feth keys split`) holds only shard `I/N` of a keys file of
//! `K` keys, for an agent that must not hold the others' keys. Its header
//! says which shard, and carries no seed (the seed derives every key):
//! ```text
//! # feth keys v1 shard=I/N of=K
//! ```

use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use alloy_primitives::{keccak256, Address, B256};
use anyhow::{bail, Context, Result};
use secp256k1::SecretKey;

use crate::keys;
use crate::shard::{Shard, ShardOf};

const HEADER: &str = "# feth keys v1";

/// Where new keys come from. Its `Debug` never shows the seed (it derives
/// every key): `Seed(<redacted>)`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// `key_i = keccak256(seed ‖ i)` (retried with a counter when invalid).
    Seed(B256),
    /// Fresh randomness.
    Random,
    /// Not known: a shard file carries no seed. Such a set does not grow.
    Withheld,
}

impl std::fmt::Debug for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Seed(_) => f.write_str("Seed(<redacted>)"),
            Self::Random => f.write_str("Random"),
            Self::Withheld => f.write_str("Withheld"),
        }
    }
}

/// A set of accounts.
#[derive(Debug, Clone)]
pub struct KeySet {
    /// Where the keys came from (and where new ones come from).
    pub source: KeySource,
    /// Private keys.
    pub keys: Vec<SecretKey>,
    /// Their addresses.
    pub addresses: Vec<Address>,
    /// Index in the keys file of the first key (non-zero for a shard, see
    /// [`KeySet::slice`]): key `i` of the set is key `offset + i` of the file.
    pub offset: usize,
    /// The shard of a keys file this set was read as (a shard file), if so.
    pub cut: Option<ShardOf>,
}

/// The `i`-th key derived from `seed`.
pub fn derive(seed: B256, index: u64) -> SecretKey {
    let mut attempt = 0u64;
    loop {
        let mut buf = [0u8; 48];
        buf[..32].copy_from_slice(seed.as_slice());
        buf[32..40].copy_from_slice(&index.to_be_bytes());
        buf[40..].copy_from_slice(&attempt.to_be_bytes());
        if let Ok(key) = SecretKey::from_byte_array(keccak256(buf).0) {
            return key;
        }
        attempt += 1;
    }
}

impl KeySet {
    /// An empty set drawing keys from `source`.
    pub fn new(source: KeySource) -> Self {
        Self {
            source,
            keys: Vec::new(),
            addresses: Vec::new(),
            offset: 0,
            cut: None,
        }
    }

    /// Number of accounts.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Grows the set to `count` accounts (never shrinks it; a set whose
    /// seed is withheld does not grow).
    pub fn extend_to(&mut self, count: usize) {
        while self.keys.len() < count {
            let key = match self.source {
                KeySource::Seed(seed) => derive(seed, (self.offset + self.keys.len()) as u64),
                KeySource::Random => keys::random_key(),
                KeySource::Withheld => return,
            };
            self.addresses.push(keys::address_of(&key));
            self.keys.push(key);
        }
    }

    /// Reads a keys file, refusing one that others can read.
    pub fn load(path: &Path) -> Result<Self> {
        keys::check_private(path)?;
        let file = std::fs::File::open(path)
            .with_context(|| format!("cannot open keys file {}", path.display()))?;
        let mut lines = BufReader::new(file).lines();
        let header = lines
            .next()
            .transpose()
            .with_context(|| format!("cannot read {}", path.display()))?
            .unwrap_or_default();
        let Some(rest) = header.strip_prefix(HEADER) else {
            bail!(
                "{} is not a feth keys file (first line must start with {HEADER:?})",
                path.display()
            );
        };
        let (source, cut) = parse_header(rest.trim())
            .with_context(|| format!("{}: a bad header {header:?}", path.display()))?;
        let mut set = Self::new(source);
        for (n, line) in lines.enumerate() {
            let line = line.with_context(|| format!("cannot read {}", path.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            let key = keys::parse_key(&line)
                .with_context(|| format!("{} line {}: not a private key", path.display(), n + 2))?;
            set.addresses.push(keys::address_of(&key));
            set.keys.push(key);
        }
        if let Some(cut) = cut {
            set.shard_file(cut)
                .with_context(|| format!("{} is a damaged shard file", path.display()))?;
        }
        Ok(set)
    }

    /// Marks a set read from a shard file as shard `cut` of its keys file,
    /// checking it holds exactly that shard's number of keys.
    fn shard_file(&mut self, cut: ShardOf) -> Result<()> {
        let range = cut.shard.range(cut.keys_in_file)?;
        if range.len() != self.len() {
            bail!(
                "shard {} of {} keys is {} keys, the file holds {}",
                cut.shard,
                cut.keys_in_file,
                range.len(),
                self.len()
            );
        }
        self.offset = range.start;
        self.cut = Some(cut);
        Ok(())
    }

    /// The keys `range` of the set (indices within it), keeping track of
    /// where they sit in the file; a range past the end is cut to the set.
    pub fn slice(mut self, range: std::ops::Range<usize>) -> Self {
        let end = range.end.min(self.keys.len());
        let start = range.start.min(end);
        self.keys.truncate(end);
        self.addresses.truncate(end);
        self.keys.drain(..start);
        self.addresses.drain(..start);
        self.offset += start;
        self
    }

    /// Writes the keys file atomically with mode 0600.
    pub fn save(&self, path: &Path) -> Result<()> {
        if self.offset != 0 || self.cut.is_some() {
            bail!(
                "a shard of a keys file (from its key {}) cannot be saved as a keys file",
                self.offset
            );
        }
        let seed = match self.source {
            KeySource::Seed(s) => s.to_string(),
            KeySource::Random => "random".to_string(),
            KeySource::Withheld => bail!("a keys file needs its seed, and this set has none"),
        };
        write_keys(path, &format!("{HEADER} seed={seed}"), &self.keys)
    }

    /// Writes shard `shard` of this (whole) keys file to `path` as a shard
    /// file, mode 0600, without the seed.
    pub fn save_shard(&self, shard: Shard, path: &Path) -> Result<()> {
        if self.offset != 0 || self.cut.is_some() {
            bail!("only a whole keys file can be split, not a shard of one");
        }
        let range = shard.range(self.len())?;
        let header = format!("{HEADER} shard={shard} of={}", self.len());
        write_keys(path, &header, &self.keys[range])
    }
}

/// `header`, then one key a line, written atomically with mode 0600.
fn write_keys(path: &Path, header: &str, keys: &[SecretKey]) -> Result<()> {
    let mut out = Vec::with_capacity(keys.len() * 67 + 100);
    writeln!(out, "{header}")?;
    for key in keys {
        writeln!(out, "{}", keys::key_hex(key))?;
    }
    keys::write_secret_file(path, &out)
}

/// The key source, and the shard for a shard file, of a header's text after
/// `# feth keys v1`.
fn parse_header(rest: &str) -> Result<(KeySource, Option<ShardOf>)> {
    if let Some(hex_seed) = rest.strip_prefix("seed=") {
        let source = match hex_seed {
            "random" => KeySource::Random,
            hex_seed => KeySource::Seed(hex_seed.parse().context("a bad seed")?),
        };
        return Ok((source, None));
    }
    let Some((shard, of)) = rest
        .strip_prefix("shard=")
        .and_then(|r| r.split_once(" of="))
    else {
        bail!("neither seed=… nor shard=I/N of=K");
    };
    let shard: Shard = shard.parse()?;
    let keys_in_file = of.parse().context("of=K: K must be a whole number")?;
    let cut = ShardOf {
        shard,
        keys_in_file,
    };
    Ok((KeySource::Withheld, Some(cut)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_source_never_prints_its_seed() {
        let seed = B256::repeat_byte(0xab);
        let shown = format!("{:?}", KeySource::Seed(seed));
        assert_eq!(shown, "Seed(<redacted>)");
        let set = format!("{:?}", KeySet::new(KeySource::Seed(seed)));
        assert!(!set.contains("abab"), "{set}");
        assert_eq!(format!("{:?}", KeySource::Random), "Random");
    }

    #[test]
    fn seeded_sets_are_reproducible_and_round_trip() {
        let seed = B256::repeat_byte(4);
        let mut a = KeySet::new(KeySource::Seed(seed));
        a.extend_to(5);
        let mut b = KeySet::new(KeySource::Seed(seed));
        b.extend_to(3);
        b.extend_to(5);
        assert_eq!(a.addresses, b.addresses);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys");
        a.save(&path).unwrap();
        let mut c = KeySet::load(&path).unwrap();
        assert_eq!(c.addresses, a.addresses);
        c.extend_to(7);
        let mut d = KeySet::new(KeySource::Seed(seed));
        d.extend_to(7);
        assert_eq!(c.addresses, d.addresses);
        std::fs::write(&path, "garbage").unwrap();
        assert!(KeySet::load(&path).is_err());
    }

    #[test]
    fn a_shard_file_is_its_shard_and_can_be_neither_saved_nor_split_again() {
        let mut whole = KeySet::new(KeySource::Seed(B256::repeat_byte(6)));
        whole.extend_to(7);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shard");
        let shard = Shard { index: 2, count: 3 };
        whole.save_shard(shard, &path).unwrap();
        let mut part = KeySet::load(&path).unwrap();
        assert_eq!(part.source, KeySource::Withheld);
        assert_eq!(
            (part.offset, part.addresses.clone()),
            (4, whole.addresses[4..].to_vec())
        );
        part.extend_to(9);
        assert_eq!(part.len(), 3, "no seed: a shard file does not grow");
        let again = dir.path().join("again");
        assert!(part.save(&again).is_err());
        assert!(part
            .save_shard(Shard { index: 0, count: 1 }, &again)
            .is_err());
        assert!(!again.exists());
        // A shard file whose keys do not make its shard is refused.
        let text = std::fs::read_to_string(&path).unwrap();
        let cut: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
        keys::write_secret_file(&path, cut.as_bytes()).unwrap();
        let err = format!("{:#}", KeySet::load(&path).unwrap_err());
        assert!(
            err.contains("shard 2/3 of 7 keys is 3 keys, the file holds 1"),
            "{err}"
        );
    }
}
