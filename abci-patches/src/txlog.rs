//! One info line per transaction, in CheckTx and FinalizeBlock, target
//! `abcid::tx`: what the node logs without the `quiet-logs` patch. Why one
//! would: per-transaction lines are what one reads when debugging a first
//! node. With the patch only the per-block line ([`crate::blocklog`]) is
//! written. The etl reads only `abcid::block` and ignores these.

use alloy_primitives::keccak256;

use crate::exec::TxOutcome;
use crate::mempool::Verdict;

/// Target of the per-transaction lines.
pub const TARGET: &str = "abcid::tx";

/// Logs CheckTx's verdict on `raw`: hash, sender, nonce and code when
/// admitted; hash, code and reason when refused.
pub fn check_tx(raw: &[u8], verdict: &Verdict) {
    match verdict {
        Ok(tx) => tracing::info!(
            target: TARGET,
            hash = %tx.hash,
            sender = %tx.spend.sender,
            nonce = tx.spend.nonce,
            code = 0,
            "tx checked"
        ),
        Err(error) => tracing::info!(
            target: TARGET,
            hash = %keccak256(raw),
            code = error.code(),
            reason = %error,
            "tx checked"
        ),
    }
}

/// Logs the result of one transaction of the block at `height`: hash,
/// sender, gas used and status when executed; hash, code and reason when not.
pub fn finalize_block(height: u64, outcome: &TxOutcome) {
    match outcome {
        TxOutcome::Executed {
            hash,
            sender,
            gas_used,
            success,
        } => tracing::info!(
            target: TARGET,
            height,
            hash = %hash,
            sender = %sender,
            gas_used,
            status = u8::from(*success),
            code = 0,
            "tx finalized"
        ),
        TxOutcome::Rejected { hash, error } => tracing::info!(
            target: TARGET,
            height,
            hash = %hash,
            code = error.code(),
            reason = %error,
            "tx finalized"
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use alloy_primitives::{Address, B256, U256};

    use super::*;
    use crate::error::TxError;
    use crate::exec::Spend;
    use crate::mempool::Admitted;

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// What `f` logs, as abcid's plain format writes it.
    fn logged(f: impl FnOnce()) -> String {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let bytes = buffer.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    fn admitted() -> Admitted {
        Admitted {
            hash: B256::repeat_byte(0xab),
            spend: Spend {
                sender: Address::repeat_byte(0x5e),
                nonce: 42,
                max_cost: U256::from(21_000),
            },
            gas_limit: 21_000,
            queued: false,
            tip: 1,
            fee_cap: 2,
            replaces: None,
        }
    }

    #[test]
    fn check_tx_lines_say_who_and_what() {
        let line = logged(|| check_tx(b"raw", &Ok(admitted())));
        assert!(line.contains(" INFO abcid::tx: tx checked "), "{line}");
        assert!(line.contains(&format!("hash={}", B256::repeat_byte(0xab))));
        assert!(line.contains(&format!("sender={}", Address::repeat_byte(0x5e))));
        assert!(line.contains("nonce=42 code=0"), "{line}");

        let line = logged(|| check_tx(b"raw", &Err(TxError::BadSignature)));
        assert!(
            line.contains(&format!("hash={}", keccak256(b"raw"))),
            "{line}"
        );
        assert!(line.contains("code=3 reason=invalid sender"), "{line}");
        assert!(
            !line.contains("abcid::block"),
            "the etl must not take it for a block"
        );
    }

    #[test]
    fn finalize_block_lines_give_gas_and_status_or_the_reason() {
        let executed = TxOutcome::Executed {
            hash: B256::repeat_byte(1),
            sender: Address::repeat_byte(2),
            gas_used: 21_000,
            success: false,
        };
        let line = logged(|| finalize_block(7, &executed));
        assert!(line.contains("abcid::tx: tx finalized height=7"), "{line}");
        assert!(line.contains("gas_used=21000 status=0 code=0"), "{line}");

        let rejected = TxOutcome::Rejected {
            hash: B256::repeat_byte(1),
            error: TxError::NonceTooLow {
                expected: 2,
                got: 1,
            },
        };
        let line = logged(|| finalize_block(7, &rejected));
        assert!(line.contains("code=4 reason=nonce too low"), "{line}");
        assert_eq!(line.lines().count(), 1);
    }
}
