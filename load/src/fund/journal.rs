//! The journal of a funding run: the exact signed transactions, written
//! before any is sent, so that an interrupted run is settled (the same bytes
//! resent, never new ones) before anything else is decided.

use std::path::{Path, PathBuf};

use alloy_primitives::Address;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::send::{send_in_order, wait_nonce, Payment};
use super::FundPlan;
use feth_chain::eth::EthClient;

/// The journal of a funding run in progress.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Journal {
    /// The paying account.
    pub root: Address,
    /// The payments, by increasing nonce.
    pub payments: Vec<Payment>,
}

/// The journal path for a keys file.
pub fn journal_path(keys_file: &Path) -> PathBuf {
    let mut name = keys_file.file_name().unwrap_or_default().to_os_string();
    name.push(".funding.json");
    keys_file.with_file_name(name)
}

/// Writes `journal` to `path` atomically (a temporary file, fsynced, then
/// renamed; mode 0600): a crash leaves the previous journal or the new one,
/// never half of one, so a resumed run never misses a signed payment.
pub(super) fn write(journal: &Journal, path: &Path) -> Result<()> {
    let bytes = serde_json::to_vec(journal)?;
    feth_chain::keys::write_secret_file(path, &bytes)
        .with_context(|| format!("cannot write the funding journal {}", path.display()))
}

/// Deletes the journal at `path` once its payments are settled.
pub(super) fn remove(path: &Path) -> Result<()> {
    std::fs::remove_file(path).with_context(|| format!("cannot delete {}", path.display()))
}

/// Settles the journal of an interrupted run, if there is one, and deletes
/// it; returns how many accounts its open payments (those the chain did not
/// have yet) were for.
pub(super) async fn resume(
    client: &EthClient,
    root: Address,
    plan: &FundPlan,
    path: &Path,
) -> Result<usize> {
    if !path.exists() {
        return Ok(0);
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let journal: Journal = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a funding journal", path.display()))?;
    if journal.root != root {
        bail!(
            "{} was written for root {}, not {root}; use the same root key or delete the journal",
            path.display(),
            journal.root
        );
    }
    let open = settle(client, &journal, plan).await?;
    remove(path)?;
    Ok(open)
}

/// Sends the journal's payments whose nonce is not used yet, in order, and
/// waits until the chain has them all; returns how many accounts those
/// open payments were for.
pub(super) async fn settle(
    client: &EthClient,
    journal: &Journal,
    plan: &FundPlan,
) -> Result<usize> {
    let (Some(first), Some(last)) = (journal.payments.first(), journal.payments.last()) else {
        return Ok(0);
    };
    let latest = client.nonce(journal.root, false).await?;
    let open: Vec<Payment> = journal
        .payments
        .iter()
        .filter(|p| p.nonce >= latest)
        .cloned()
        .collect();
    send_in_order(client, &open, plan.wait, plan.progress).await?;
    wait_nonce(
        client,
        journal.root,
        last.nonce,
        plan.wait,
        plan.progress,
        journal.payments.len() as u64,
        first.nonce,
    )
    .await?;
    Ok(open.iter().map(Payment::accounts).sum())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use alloy_primitives::{Bytes, B256, U256};

    use super::*;

    fn journal(payments: u64) -> Journal {
        Journal {
            root: Address::repeat_byte(1),
            payments: (0..payments)
                .map(|nonce| Payment {
                    to: Address::repeat_byte(2),
                    value: U256::from(nonce),
                    nonce,
                    raw: Bytes::from(vec![0xaa; 8]),
                    hash: B256::repeat_byte(nonce as u8),
                    pays: Vec::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn the_journal_is_replaced_whole_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = journal_path(&dir.path().join("keys.txt"));
        write(&journal(3), &path).unwrap();
        write(&journal(1), &path).unwrap();
        let read: Journal = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(read.payments.len(), 1);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
    }
}
