//! The Cosmos SDK (zerolog) shapes on synthetic lines written to the
//! logger's spec (console with and without colour codes, other stamps, no
//! stamp, prefixes; JSON), and on lines that only look like them. The real
//! captures are checked in `tests/it/cosmos_sdk.rs`.

use super::*;
use feth_comet::time::Civil;

/// What a line gave: its event (or `None`), its time, format and node, or
/// the non-event line kind.
fn read(l: &str) -> Result<(Event<'static>, Option<Civil>, Format, Option<String>), String> {
    let mut p = Parser::new();
    match p.parse(l.as_bytes()) {
        Line::Event(r) => {
            let e = match r.event {
                Event::Version(v) => Event::Version(Box::leak(v.to_string().into_boxed_str())),
                Event::Network(v) => Event::Network(Box::leak(v.to_string().into_boxed_str())),
                Event::CommitDecided { height, txs } => Event::CommitDecided { height, txs },
                Event::Finalized {
                    height,
                    txs,
                    capitalized,
                } => Event::Finalized {
                    height,
                    txs,
                    capitalized,
                },
                Event::StateCommitted { height, txs } => Event::StateCommitted { height, txs },
                other => return Err(format!("unexpected event {other:?}")),
            };
            Ok((e, r.time, r.format, r.node.map(str::to_string)))
        }
        other => Err(format!("{other:?}")),
    }
}

const COLOURED: &str = "\x1b[90m4:53AM\x1b[0m \x1b[32mINF\x1b[0m finalizing commit of block \x1b[36mhash=\x1b[0m6A1F \x1b[36mheight=\x1b[0m40 \x1b[36mmodule=\x1b[0mconsensus \x1b[36mnum_txs=\x1b[0m3 \x1b[36mroot=\x1b[0m0E00";

#[test]
fn console_with_and_without_colour_has_no_date() {
    let plain = "4:53AM INF finalizing commit of block hash=6A1F height=40 module=consensus num_txs=3 root=0E00";
    for l in [COLOURED, plain] {
        let (e, t, f, n) = read(l).expect(l);
        assert_eq!(e, Event::CommitDecided { height: 40, txs: 3 }, "{l:?}");
        assert_eq!((t, f, n), (None, Format::SdkConsole, None), "{l:?}");
    }
}

#[test]
fn console_messages_of_each_kind() {
    let cases = [
        (
            "11:02PM INF finalized block block_app_hash=AB height=7 module=state num_txs_res=2 num_val_updates=0",
            Event::Finalized { height: 7, txs: 2, capitalized: false },
        ),
        (
            "11:02PM INF Finalized block height=7 module=state num_txs_res=2",
            Event::Finalized { height: 7, txs: 2, capitalized: true },
        ),
        (
            "11:02PM INF committed state app_hash=AB height=7 module=state",
            Event::StateCommitted { height: 7, txs: None },
        ),
        (
            "11:02PM INF Version info abci=2.0.0 block=11 commit_hash= module=server p2p=8 tendermint_version=0.38.19",
            Event::Version("0.38.19"),
        ),
        // Timestamps turned off: the line starts with its level.
        (
            "INF finalized block height=9 num_txs_res=0",
            Event::Finalized { height: 9, txs: 0, capitalized: false },
        ),
    ];
    for (l, want) in cases {
        assert_eq!(read(l).map(|r| r.0), Ok(want), "{l}");
    }
}

#[test]
fn console_stamps_with_a_date_are_read() {
    let (e, t, _, _) = read(
        "2026-11-26T04:53:10.25+01:00 INF finalized block height=7 module=state num_txs_res=1",
    )
    .expect("event");
    assert_eq!(
        e,
        Event::Finalized {
            height: 7,
            txs: 1,
            capitalized: false
        }
    );
    let t = t.expect("dated");
    assert_eq!(
        (t.year, t.month, t.day, t.hour, t.minute, t.second, t.nanos, t.offset),
        (2026, 11, 26, 4, 53, 10, 250_000_000, Some(3600))
    );
    // Time-of-day layouts other than Kitchen are undated too.
    let (_, t, _, _) = read("15:04:05 INF committed state height=3 module=state").expect("event");
    assert_eq!(t, None);
}

#[test]
fn console_lines_that_only_look_like_ours() {
    for (l, want) in [
        // Longer messages that start like ours.
        (
            "4:53AM INF committed state sync snapshot height=3",
            "Other(SdkConsole)",
        ),
        (
            "4:53AM INF finalized blocks height=3 num_txs_res=1",
            "Other(SdkConsole)",
        ),
        // 0.38's `executed block` carries nothing new.
        (
            "4:53AM INF executed block app_hash=AB height=3 module=state",
            "Other(SdkConsole)",
        ),
        (
            "4:53AM INF finalized block module=state num_txs_res=1",
            "Malformed(MissingField(\"height\"))",
        ),
        (
            "4:53AM INF finalized block height=x7 num_txs_res=1",
            "Malformed(BadValue(\"height\"))",
        ),
        (
            "2026-13-26T04:53:10Z INF finalized block height=7 num_txs_res=1",
            "Malformed(BadTimestamp)",
        ),
        // No level, or no time-like text before it.
        (
            "12 monkeys INF finalized block height=7 num_txs_res=1",
            "Foreign",
        ),
        (
            "4:53AM INFO finalized block height=7 num_txs_res=1",
            "Foreign",
        ),
        (
            "2026/11/21 20:35:22.123 [JOB 1] WAL file 000002.log",
            "Foreign",
        ),
        // A Go stack trace line (a real app's panic): no JSON record inside.
        (
            "github.com/cosmos/evm/server.startInProcess(_, {{0x0, 0x0}, {0x4ee0750, 0x171c}, ...}, ...)",
            "Foreign",
        ),
        (
            "some text INF finalized block height=7 num_txs_res=1",
            "Foreign",
        ),
    ] {
        assert_eq!(read(l).map(|r| r.0), Err(want.to_string()), "{l}");
    }
}

#[test]
fn console_lines_behind_prefixes() {
    let l = "node0  | 4:53AM INF finalized block height=7 module=state num_txs_res=2";
    assert_eq!(read(l).map(|r| r.3), Ok(Some("node0".to_string())));
    let l = format!("[pod/val1/app] {COLOURED}");
    assert_eq!(
        read(&l).map(|r| (r.0, r.3)),
        Ok((
            Event::CommitDecided { height: 40, txs: 3 },
            Some("val1".into())
        ))
    );
    // journald: the prefix names nothing.
    let l = "Nov 26 04:53:00 host simd[812]: 4:53AM INF committed state height=8 module=state";
    assert_eq!(
        read(l).map(|r| (r.0, r.3)),
        Ok((
            Event::StateCommitted {
                height: 8,
                txs: None
            },
            None
        ))
    );
}

#[test]
fn json_records() {
    let l = r#"{"level":"info","module":"consensus","height":40,"hash":"6A1F","num_txs":3,"root":"0E00","time":"2026-11-26T04:53:10Z","message":"finalizing commit of block"}"#;
    let (e, t, f, _) = read(l).expect("event");
    assert_eq!(
        (e, f),
        (Event::CommitDecided { height: 40, txs: 3 }, Format::SdkJson)
    );
    let t = t.expect("dated");
    assert_eq!((t.hour, t.minute, t.second, t.offset), (4, 53, 10, Some(0)));
    let l = r#"{"level":"info","module":"state","height":"41","num_txs_res":0,"message":"finalized block"}"#;
    assert_eq!(
        read(l).map(|r| (r.0, r.1)),
        Ok((
            Event::Finalized {
                height: 41,
                txs: 0,
                capitalized: false
            },
            None
        ))
    );
    for (l, want) in [
        (
            r#"{"level":"info","module":"server","time":"2026-11-26T04:53:10Z","message":"starting ABCI with CometBFT"}"#,
            "Other(SdkJson)",
        ),
        (
            r#"{"level":"info","module":"state","height":41,"num_txs_res":0,"time":"2026-11-26T04:53:10Z","message":"finalized block""#,
            "Malformed(Truncated)",
        ),
        (
            r#"{"level":"info","module":"state","height":41,"num_txs_res":0,"time":"yesterday","message":"finalized block"}"#,
            "Malformed(BadTimestamp)",
        ),
        (
            r#"{"level":"info","module":"state","num_txs_res":0,"time":"2026-11-26T04:53:10Z","message":"finalized block"}"#,
            "Malformed(MissingField(\"height\"))",
        ),
    ] {
        assert_eq!(read(l).map(|r| r.0), Err(want.to_string()), "{l}");
    }
}

#[test]
fn detector_names_the_sdk() {
    let mut p = Parser::new();
    let mut d = crate::detect::Detector::default();
    for l in [
        "4:53AM INF Version info abci=2.0.0 module=server tendermint_version=0.38.19",
        "4:53AM INF finalized block height=7 module=state num_txs_res=2",
    ] {
        if let Line::Event(r) = p.parse(l.as_bytes()) {
            d.record(&r);
        }
    }
    let got = d.detected();
    assert_eq!(got.software, "Cosmos SDK app on CometBFT 0.38.19");
    assert_eq!(got.main_format(), Some("sdk-console"));
}

/// Lines of `simd` on CometBFT 1.0.1 (tests/fixtures/cosmos-sdk-cometbft-v1.0.1.*):
/// 1.0's capitalized messages through the SDK logger, console and JSON.
#[test]
fn cometbft_1_0_lines_through_the_sdk_logger() {
    let cases = [
        (
            "11:29PM INF Finalizing commit of block hash=9559353951552D6F6ED3FC1A77332CB39566AF08F4C4BA29A3524BF78EF6B77D height=34 module=consensus num_txs=5 root=6C81C4C0083A2AADE5AD3A47C1FB50355FD1D18EAF3306B9E1A803FA26166082",
            Event::CommitDecided { height: 34, txs: 5 },
        ),
        (
            "\x1b[90m11:29PM\x1b[0m \x1b[32mINF\x1b[0m \x1b[1mCommitted state\x1b[0m \x1b[36mblock_app_hash=\x1b[0mE3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855 \x1b[36mheight=\x1b[0m1 \x1b[36mmodule=\x1b[0mstate",
            Event::StateCommitted { height: 1, txs: None },
        ),
        (
            r#"{"level":"info","module":"server","module":"state","height":75,"num_txs_res":5,"num_val_updates":0,"block_app_hash":"B5CD210913D9BE01CE2BAFB64C13B7439EC734C1330F55A3A74278952E40B427","syncing_to_height":75,"time":"2026-11-27T23:30:27Z","message":"Finalized block"}"#,
            Event::Finalized { height: 75, txs: 5, capitalized: true },
        ),
        (
            r#"{"level":"info","module":"server","tendermint_version":"1.0.1","abci":"2.1.0","block":11,"p2p":9,"commit_hash":"","time":"2026-11-27T23:30:08Z","message":"Version info"}"#,
            Event::Version("1.0.1"),
        ),
    ];
    for (l, want) in cases {
        assert_eq!(read(l).map(|r| r.0), Ok(want), "{l}");
    }
}
