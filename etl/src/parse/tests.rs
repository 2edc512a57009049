//! The parser on real lines of each version and on bad input.

use super::*;
use feth_comet::time;

fn ev(p: &mut Parser, l: &str) -> Option<(Event<'static>, Option<String>, Format)> {
    match p.parse(l.as_bytes()) {
        Line::Event(r) => {
            let e = match r.event {
                Event::Version(v) => Event::Version(Box::leak(v.to_string().into_boxed_str())),
                Event::Network(v) => Event::Network(Box::leak(v.to_string().into_boxed_str())),
                Event::CommitDecided { height, txs } => Event::CommitDecided { height, txs },
                Event::Executed {
                    height,
                    valid,
                    invalid,
                    replay,
                } => Event::Executed {
                    height,
                    valid,
                    invalid,
                    replay,
                },
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
                Event::Abcid {
                    height,
                    txs,
                    valid,
                    invalid,
                    block_time,
                } => Event::Abcid {
                    height,
                    txs,
                    valid,
                    invalid,
                    block_time,
                },
            };
            Some((e, r.node.map(str::to_string), r.format))
        }
        _ => None,
    }
}

// Lines below are copied from the fixture runs (tests/fixtures/README.md).
const TM034_EXEC: &str = "I[2026-11-21|20:32:26.794] executed block                               module=state height=3 num_valid_txs=6 num_invalid_txs=1";
const CB038_FIN: &str = "I[2026-11-21|20:31:30.505] finalized block                              module=state height=1 num_txs_res=7 num_val_updates=0 block_app_hash=0E00000000000000";
const CB100_FIN: &str = "I[2026-11-21|20:35:23.591] Finalized block                              module=state height=1 num_txs_res=7 num_val_updates=0 block_app_hash=0E00000000000000 syncing_to_height=1";

#[test]
fn plain_messages_of_each_version() {
    let mut p = Parser::new();
    assert_eq!(
        ev(&mut p, TM034_EXEC).map(|e| e.0),
        Some(Event::Executed {
            height: 3,
            valid: 6,
            invalid: 1,
            replay: false
        })
    );
    assert_eq!(
        ev(&mut p, CB038_FIN).map(|e| e.0),
        Some(Event::Finalized {
            height: 1,
            txs: 7,
            capitalized: false
        })
    );
    assert_eq!(
        ev(&mut p, CB100_FIN).map(|e| e.0),
        Some(Event::Finalized {
            height: 1,
            txs: 7,
            capitalized: true
        })
    );
    // Handshake replay after a restart logs from module=consensus.
    let replay = "I[2026-11-21|20:32:16.357] executed block                               module=consensus height=1 num_valid_txs=7 num_invalid_txs=0";
    assert!(matches!(
        ev(&mut p, replay).map(|e| e.0),
        Some(Event::Executed { replay: true, .. })
    ));
    // 0.38's `executed block` has no counts: nothing new, but well-formed.
    let exec038 = "I[2026-11-21|20:31:30.505] executed block                               module=state height=1 app_hash=0E00000000000000";
    assert_eq!(p.parse(exec038.as_bytes()), Line::Other(Format::Plain));
}

#[test]
fn generalises_beyond_the_fixtures() {
    let mut p = Parser::new();
    let want = Some(Event::Finalized {
        height: 1,
        txs: 7,
        capitalized: false,
    });
    // CRLF, extra and reordered key/values, another module name, quoted values.
    let variants = [
        format!("{CB038_FIN}\r\n"),
        "I[2026-11-21|20:31:30.505] finalized block                              num_txs_res=7 chain=\"my chain\" module=state/exec height=1 extra=\"a \\\"q\\\" b\"".to_string(),
        format!("\x1b[32m{CB038_FIN}\x1b[0m"),
    ];
    for v in &variants {
        assert_eq!(ev(&mut p, v).map(|e| e.0), want, "{v:?}");
    }
    // Docker compose and kubectl prefixes name the node; journald's names nothing.
    let (e, node, _) = ev(&mut p, &format!("validator-3  | {CB038_FIN}")).expect("compose line");
    assert_eq!((Some(e), node.as_deref()), (want, Some("validator-3")));
    let (_, node, _) =
        ev(&mut p, &format!("\x1b[36mnode1 |\x1b[0m {CB038_FIN}")).expect("coloured compose");
    assert_eq!(node.as_deref(), Some("node1"));
    let (_, node, _) =
        ev(&mut p, &format!("[pod/val-0/cometbft] {CB038_FIN}")).expect("kubectl line");
    assert_eq!(node.as_deref(), Some("val-0"));
    let (_, node, _) = ev(
        &mut p,
        &format!("Nov 21 20:31:30 host cometbft[812]: {CB038_FIN}"),
    )
    .expect("journald line");
    assert_eq!(node, None);
}

#[test]
fn bad_lines_are_classified_not_fatal() {
    let mut p = Parser::new();
    assert_eq!(p.parse(b""), Line::Blank);
    assert_eq!(p.parse(b"   \r\n"), Line::Blank);
    assert_eq!(
        p.parse(b"panic: runtime error: index out of range"),
        Line::Foreign
    );
    assert_eq!(p.parse(b"\xff\xfe garbage \x00"), Line::Foreign);
    assert_eq!(
        p.parse(b"I[2026-11-21|20:31"),
        Line::Malformed(Malformed::Truncated)
    );
    let cut = &CB038_FIN[..CB038_FIN.find("num_txs_res").expect("field") + 5];
    assert_eq!(
        p.parse(cut.as_bytes()),
        Line::Malformed(Malformed::MissingField("num_txs_res"))
    );
    let bad = CB038_FIN.replace("height=1", "height=1x");
    assert_eq!(
        p.parse(bad.as_bytes()),
        Line::Malformed(Malformed::BadValue("height"))
    );
    let bad_ts = CB038_FIN.replace("20:31:30.505", "20:31:30,505");
    assert_eq!(
        p.parse(bad_ts.as_bytes()),
        Line::Malformed(Malformed::BadTimestamp)
    );
    // A longer message that starts like ours is not ours.
    let other = "I[2026-11-21|20:31:30.505] finalized block with a longer message    height=1";
    assert_eq!(p.parse(other.as_bytes()), Line::Other(Format::Plain));
    let json_cut =
        r#"{"_msg":"finalized block","block_app_hash":"0E00000000000000","height":1,"lev"#;
    assert_eq!(
        p.parse(json_cut.as_bytes()),
        Line::Malformed(Malformed::Truncated)
    );
    assert_eq!(p.parse(br#"{"some":"other json"}"#), Line::Foreign);
    let overflow = CB038_FIN.replace("height=1", "height=99999999999999999999999");
    assert_eq!(
        p.parse(overflow.as_bytes()),
        Line::Malformed(Malformed::BadValue("height"))
    );
}

#[test]
fn json_lines_any_key_order_and_fraction() {
    let mut p = Parser::new();
    let real = r#"{"_msg":"finalized block","block_app_hash":"0E00000000000000","height":1,"level":"info","module":"state","num_txs_res":7,"num_val_updates":0,"ts":"2026-11-21T20:32:45.883765751Z"}"#;
    let reordered = r#"{ "ts" : "2026-11-21T20:32:45.8Z", "height": "1", "extra": {"a": [1, {"b": "}"}]}, "num_txs_res": 7, "_msg":"finalized block" }"#;
    for l in [real, reordered] {
        let (e, _, f) = ev(&mut p, l).expect("event");
        assert_eq!(f, Format::Json);
        assert_eq!(
            e,
            Event::Finalized {
                height: 1,
                txs: 7,
                capitalized: false
            }
        );
    }
    let started = r#"{"_msg":"Started node","level":"info","module":"main","nodeInfo":{"protocol_version":{"p2p":8,"block":11,"app":1},"id":"f7ad","network":"test-chain-65GWbL","version":"0.38.17","other":{"tx_index":"on"}},"ts":"2026-11-21T20:32:45.508567446Z"}"#;
    assert_eq!(
        ev(&mut p, started).map(|e| e.0),
        Some(Event::Network("test-chain-65GWbL"))
    );
}

#[test]
fn abcid_contract_examples() {
    // The examples of docs/abcid-log-format.md, with a full-length app hash.
    let hash = format!("0x{}", "5f0c".repeat(16));
    let plain = format!(
        "2026-11-21T20:30:00.123456Z  INFO abcid::block: block committed height=123 txs=500 valid=498 invalid=2 finalize_ms=12.345 commit_ms=3.210 block_time=2026-11-21T20:29:59.987654321Z app_hash={hash} recheck_ms=0.412 recheck_dropped=3"
    );
    let json = format!(
        r#"{{"timestamp":"2026-11-21T20:30:00.123456Z","level":"INFO","fields":{{"message":"block committed","height":123,"txs":500,"valid":498,"invalid":2,"finalize_ms":"12.345","commit_ms":"3.210","block_time":"2026-11-21T20:29:59.987654321Z","app_hash":"{hash}","recheck_ms":"0.412","recheck_dropped":3}},"target":"abcid::block"}}"#
    );
    let mut p = Parser::new();
    for (l, fmt) in [(plain, Format::TracingPlain), (json, Format::TracingJson)] {
        let (e, _, f) = ev(&mut p, &l).expect("abcid event");
        assert_eq!(f, fmt);
        let Event::Abcid {
            height,
            txs,
            valid,
            invalid,
            block_time,
        } = e
        else {
            panic!("not an abcid event: {e:?}");
        };
        assert_eq!((height, txs, valid, invalid), (123, 500, 498, 2));
        assert_eq!(
            block_time,
            time::parse_rfc3339(b"2026-11-21T20:29:59.987654321Z").expect("stamp")
        );
    }
    // Another abcid target or message is a well-formed line of no interest.
    let other_json = r#"{"timestamp":"2026-11-21T20:54:31.055630Z","level":"INFO","fields":{"message":"unrelated line"},"target":"abcid::rpc"}"#;
    assert_eq!(
        p.parse(other_json.as_bytes()),
        Line::Other(Format::TracingJson)
    );
    let other = "2026-11-21T20:30:00.123456Z  INFO abcid::rpc: listening addr=127.0.0.1:8545";
    assert_eq!(p.parse(other.as_bytes()), Line::Other(Format::TracingPlain));
    let wrong_sum = "2026-11-21T20:30:00Z  INFO abcid::block: block committed height=1 txs=3 valid=1 invalid=1 block_time=2026-11-21T20:30:00Z";
    assert_eq!(
        p.parse(wrong_sum.as_bytes()),
        Line::Malformed(Malformed::BadValue("txs"))
    );
}
