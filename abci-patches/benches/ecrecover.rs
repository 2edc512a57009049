//! Sender recovery, C libsecp256k1 (`fast-ecrecover` on) against the pure-Rust
//! `libsecp256k1` crate (off): nanoseconds per recovery of each, measured in
//! interleaved A-B-B-A rounds over the same signed EIP-1559 transactions, and
//! their ratio.
//!
//! Run: `cargo bench -p abcid --bench ecrecover`. Prints figures; asserts
//! only that both backends recover the signer.

use std::hint::black_box;
use std::time::{Duration, Instant};

use abcid::tx::{recover_sender, Ecrecover};
use alloy_consensus::{TxEip1559, TxEnvelope};
use alloy_primitives::{Address, TxKind, U256};

mod common;

/// Distinct signed transactions recovered in turn.
const TXS: usize = 64;
/// Recoveries per timed batch.
const BATCH: usize = 256;
/// A-B-B-A rounds.
const ROUNDS: usize = 6;

/// `TXS` transactions, each signed by its own key, with their signers.
fn signed() -> Vec<(TxEnvelope, Address)> {
    (0..TXS)
        .map(|i| {
            let (key, address) = common::key(0x11, i as u64);
            let tx = TxEip1559 {
                chain_id: 9000,
                nonce: i as u64,
                gas_limit: 21_000,
                max_fee_per_gas: 2_000_000_000,
                max_priority_fee_per_gas: 1,
                to: TxKind::Call(Address::repeat_byte(0x11)),
                value: U256::from(1),
                ..Default::default()
            };
            (common::sign(tx, &key), address)
        })
        .collect()
}

/// Time of `BATCH` recoveries with `backend`.
fn batch(txs: &[(TxEnvelope, Address)], backend: Ecrecover) -> Duration {
    let started = Instant::now();
    for (tx, _) in txs.iter().cycle().take(BATCH) {
        black_box(recover_sender(black_box(tx), backend).ok());
    }
    started.elapsed()
}

fn main() {
    let txs = signed();
    for backend in [Ecrecover::C, Ecrecover::PureRust] {
        for (tx, address) in &txs {
            let got = recover_sender(tx, backend).ok();
            assert_eq!(got, Some(*address), "{backend:?} recovers the signer");
        }
    }
    let (mut c, mut rust) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..ROUNDS {
        c += batch(&txs, Ecrecover::C);
        rust += batch(&txs, Ecrecover::PureRust);
        rust += batch(&txs, Ecrecover::PureRust);
        c += batch(&txs, Ecrecover::C);
    }
    let n = (2 * ROUNDS * BATCH) as f64;
    let c_ns = c.as_nanos() as f64 / n;
    let rust_ns = rust.as_nanos() as f64 / n;
    println!(
        "ecrecover, {} recoveries each, A-B-B-A:",
        2 * ROUNDS * BATCH
    );
    println!("  C libsecp256k1 (fast-ecrecover on): {c_ns:>10.0} ns/recovery");
    println!("  pure-Rust libsecp256k1 (off):      {rust_ns:>10.0} ns/recovery");
    println!(
        "  pure-Rust / C:                      {:>10.2}x",
        rust_ns / c_ns
    );
}
