//! Fuzzes the line parser (every format it reads: Tendermint/CometBFT,
//! abcid, Cosmos SDK console and JSON): any bytes, as one line and split
//! into lines, must be classified without panicking, and every event's
//! timestamp must convert (or be refused) without panicking.
#![no_main]

use feth_etl::parse::{Event, Line, Parser};
use feth_comet::time::Clock;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parser = Parser::new();
    let mut utc = Clock::utc();
    let mut check = |line: &[u8]| {
        if let Line::Event(r) = parser.parse(line) {
            if let Some(t) = r.time {
                let _ = utc.unix_nanos(&t);
            }
            if let Event::Abcid { block_time, .. } = r.event {
                let _ = utc.unix_nanos(&block_time);
            }
        }
    };
    check(data);
    for line in data.split(|b| *b == b'\n') {
        check(line);
    }
});
