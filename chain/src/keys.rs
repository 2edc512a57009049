//! Private keys: derivation of addresses and key files written with mode 0600.
//! Key material is never logged or printed.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use alloy_primitives::{keccak256, Address};
use anyhow::{bail, Context, Result};
use secp256k1::{SecretKey, SECP256K1};

/// The Ethereum address of `key`.
pub fn address_of(key: &SecretKey) -> Address {
    let public = key.public_key(SECP256K1).serialize_uncompressed();
    Address::from_slice(&keccak256(&public[1..])[12..])
}

/// Parses a hex private key (`0x` optional, surrounding white space ignored).
pub fn parse_key(text: &str) -> Result<SecretKey> {
    let text = text.trim();
    let hex_part = text.strip_prefix("0x").unwrap_or(text);
    let bytes: [u8; 32] = hex::decode(hex_part)
        .ok()
        .and_then(|b| b.try_into().ok())
        .context("not a 32-byte hex private key")?;
    SecretKey::from_byte_array(bytes).context("not a valid secp256k1 private key")
}

/// A fresh random private key.
pub fn random_key() -> SecretKey {
    use rand::RngCore;
    let mut rng = rand::thread_rng();
    loop {
        let mut bytes = [0u8; 32];
        rng.fill_bytes(&mut bytes);
        // Fails only for zero or values ≥ the group order (probability ~2^-128).
        if let Ok(key) = SecretKey::from_byte_array(bytes) {
            return key;
        }
    }
}

/// The hex form of `key`, for key files only.
pub fn key_hex(key: &SecretKey) -> String {
    format!("0x{}", hex::encode(key.secret_bytes()))
}

/// Reads a key file holding one hex private key.
pub fn read_key_file(path: &Path) -> Result<SecretKey> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read key file {}", path.display()))?;
    parse_key(&text).with_context(|| format!("key file {}", path.display()))
}

/// Writes `contents` to `path` atomically with mode 0600: a temporary file in
/// the same folder, created exclusively (never through a file or link
/// already there) and fsynced, then renamed over `path` and the folder
/// fsynced, so a crash never leaves half a key file and no other user ever
/// sees the contents.
pub fn write_secret_file(path: &Path, contents: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("key"),
        std::process::id()
    ));
    // A leftover of a crashed run of the same PID; a link planted there is
    // removed, not followed.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("cannot remove {}", tmp.display()))
        }
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    let written = file.write_all(contents).and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", tmp.display()));
    }
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync {}", dir.display()))?;
    Ok(())
}

/// Refuses a key file that others can read.
pub fn check_private(path: &Path) -> Result<()> {
    let mode = std::fs::metadata(path)
        .with_context(|| format!("cannot stat {}", path.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        bail!(
            "key file {} is readable by others (mode {:o}); run `chmod 600 {}`",
            path.display(),
            mode & 0o777,
            path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_planted_at_the_temporary_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("root.key");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        let tmp = dir
            .path()
            .join(format!(".root.key.tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        write_secret_file(&path, b"0xsecret").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "0xsecret");
        assert!(!tmp.exists() && std::fs::symlink_metadata(&tmp).is_err());
        // Written again over the first: replaced whole, still private.
        write_secret_file(&path, b"0xother").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "0xother");
        check_private(&path).unwrap();
    }

    #[test]
    fn key_file_round_trip_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("root.key");
        let key = SecretKey::from_byte_array([1u8; 32]).unwrap();
        write_secret_file(&path, key_hex(&key).as_bytes()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        check_private(&path).unwrap();
        assert_eq!(read_key_file(&path).unwrap(), key);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(check_private(&path).is_err());
    }

    #[test]
    fn known_address() {
        // The well-known first Hardhat/Anvil development key.
        let key = parse_key("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
            .unwrap();
        assert_eq!(
            address_of(&key),
            "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
                .parse::<Address>()
                .unwrap()
        );
        assert!(parse_key("0x1234").is_err());
    }
}
