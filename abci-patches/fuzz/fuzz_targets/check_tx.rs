//! Fuzzes transaction decoding and checking: any bytes, judged every way a
//! hostile peer's transaction is judged (stateless rules, both sender
//! recovery backends, ProcessProposal's rules, the nonce and funds rule),
//! must not panic and must be judged alike (`abcid::tx_fuzz::judge`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| abcid::tx_fuzz::judge(data));
