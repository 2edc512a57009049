//! The parser on real logs of every supported version (tests/fixtures/,
//! made by etl/scripts/make-fixtures.sh; see tests/fixtures/README.md),
//! checked against plain substring counts of the same files, and on the
//! same lines dressed as other deployments write them.

use std::collections::BTreeMap;

use feth_etl::parse::{Event, Line, Parser};

const FIXTURES: [(&str, bool); 8] = [
    // (file, has valid/invalid counts in `executed block`)
    ("tendermint-v0.34.24.plain.log", true),
    ("tendermint-v0.34.24.json.log", true),
    ("cometbft-v0.37.18.plain.log", true),
    ("cometbft-v0.37.18.json.log", true),
    ("cometbft-v0.38.17.plain.log", false),
    ("cometbft-v0.38.17.json.log", false),
    ("cometbft-v1.0.1.plain.log", false),
    ("cometbft-v1.0.1.json.log", false),
];

fn read(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture")
}

/// Owned copy of what a line says, for comparisons.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Got {
    Commit(u64, u64),
    Exec(u64, u64, u64, bool),
    Fin(u64, u64),
    State(u64, Option<u64>),
    Version(String),
    Network(String),
    Other,
    Malformed,
    Foreign,
    Blank,
    Abcid,
}

fn got(p: &mut Parser, line: &[u8]) -> (Got, Option<String>) {
    match p.parse(line) {
        Line::Event(r) => {
            let g = match r.event {
                Event::CommitDecided { height, txs } => Got::Commit(height, txs),
                Event::Executed {
                    height,
                    valid,
                    invalid,
                    replay,
                } => Got::Exec(height, valid, invalid, replay),
                Event::Finalized { height, txs, .. } => Got::Fin(height, txs),
                Event::StateCommitted { height, txs } => Got::State(height, txs),
                Event::Version(v) => Got::Version(v.into()),
                Event::Network(n) => Got::Network(n.into()),
                Event::Abcid { .. } => Got::Abcid,
            };
            (g, r.node.map(str::to_string))
        }
        Line::Other(_) => (Got::Other, None),
        Line::Malformed(_) => (Got::Malformed, None),
        Line::Foreign => (Got::Foreign, None),
        Line::Blank => (Got::Blank, None),
    }
}

fn count(text: &str, f: impl Fn(&str) -> bool) -> usize {
    text.lines().filter(|l| f(l)).count()
}

#[test]
fn every_fixture_parses_and_agrees_with_substring_counts() {
    for (name, counts) in FIXTURES {
        let text = read(name);
        let mut p = Parser::new();
        let all: Vec<Got> = text.lines().map(|l| got(&mut p, l.as_bytes()).0).collect();
        let n = |f: fn(&Got) -> bool| all.iter().filter(|g| f(g)).count();

        // Every line is the node's, except the 1.0 database's own WAL notes.
        let not_node_lines = count(&text, |l| {
            !(l.starts_with("I[")
                || l.starts_with("E[")
                || l.starts_with("D[")
                || l.starts_with('{'))
        });
        assert_eq!(n(|g| *g == Got::Foreign), not_node_lines, "{name}");
        assert_eq!(n(|g| *g == Got::Malformed), 0, "{name}");

        let lower = text.to_lowercase();
        let c = |needle: &str| count(&lower, |l| l.contains(needle));
        assert_eq!(
            n(|g| matches!(g, Got::Commit(..))),
            c("finalizing commit of block"),
            "{name}"
        );
        assert_eq!(
            n(|g| matches!(g, Got::Fin(..))),
            c("finalized block"),
            "{name}"
        );
        assert_eq!(
            n(|g| matches!(g, Got::State(..))),
            c("committed state"),
            "{name}"
        );
        let exec_with_counts = count(&text, |l| {
            l.to_lowercase().contains("executed block") && l.contains("num_valid_txs")
        });
        assert_eq!(
            n(|g| matches!(g, Got::Exec(..))),
            exec_with_counts,
            "{name}"
        );
        assert_eq!(exec_with_counts > 0, counts, "{name}");
        let replays = count(&text, |l| {
            l.contains("executed block")
                && l.contains("num_valid_txs")
                && (l.contains("module=consensus") || l.contains("\"module\":\"consensus\""))
        });
        assert_eq!(
            n(|g| matches!(g, Got::Exec(_, _, _, true))),
            replays,
            "{name}"
        );

        // One chain id, as the `Started node` line has it.
        let networks: Vec<&Got> = all
            .iter()
            .filter(|g| matches!(g, Got::Network(_)))
            .collect();
        assert_eq!(networks.len(), c("started node"), "{name}");
        let at = text
            .find("Network:")
            .map(|p| p + 8)
            .or_else(|| text.find("\"network\":\"").map(|p| p + 11))
            .expect("network in text");
        let raw = &text[at..];
        let raw: String = raw
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        assert!(
            networks.iter().all(|g| **g == Got::Network(raw.clone())),
            "{name}: {networks:?} vs {raw}"
        );

        // Per height, every message agrees on the tx count; consensus
        // committed heights 1..=N in order, each once.
        let mut txs: BTreeMap<u64, u64> = BTreeMap::new();
        let mut check = |h: u64, t: u64| {
            let prev = *txs.entry(h).or_insert(t);
            assert_eq!(prev, t, "{name}: tx counts disagree at height {h}");
        };
        let mut commits = Vec::new();
        for g in &all {
            match g {
                Got::Commit(h, t) => {
                    commits.push(*h);
                    check(*h, *t);
                }
                Got::Exec(h, v, i, _) => check(*h, v + i),
                Got::Fin(h, t) | Got::State(h, Some(t)) => check(*h, *t),
                _ => {}
            }
        }
        assert_eq!(
            commits,
            (1..=commits.len() as u64).collect::<Vec<_>>(),
            "{name}"
        );
        assert!(
            txs.values().sum::<u64>() >= 25,
            "{name}: the fixture run's txs are in blocks"
        );
        if counts {
            let invalid: u64 = all
                .iter()
                .filter_map(|g| {
                    if let Got::Exec(_, _, i, false) = g {
                        Some(*i)
                    } else {
                        None
                    }
                })
                .sum();
            assert!(
                invalid > 0,
                "{name}: the malformed validator txs were counted invalid"
            );
        }
    }
}

#[test]
fn fixture_lines_dressed_as_other_deployments_say_the_same() {
    for (name, _) in FIXTURES {
        let text = read(name);
        let mut p = Parser::new();
        for line in text.lines() {
            let (want, _) = got(&mut p, line.as_bytes());
            if matches!(want, Got::Foreign | Got::Blank) {
                continue;
            }
            let crlf = format!("{line}\r\n");
            let colour = format!("\x1b[1;32m{line}\x1b[0m");
            let compose = format!("\x1b[33mval-1  |\x1b[0m {line}");
            let kubectl = format!("[pod/val-1/cometbft] {line}");
            for (variant, node) in [
                (&crlf, None),
                (&colour, None),
                (&compose, Some("val-1")),
                (&kubectl, Some("val-1")),
            ] {
                let (g, n) = got(&mut p, variant.as_bytes());
                assert_eq!(g, want, "{name}: {variant:?}");
                if matches!(g, Got::Other) {
                    continue;
                }
                assert_eq!(n.as_deref(), node, "{name}: {variant:?}");
            }
            // A line cut anywhere never panics and never invents a later height.
            for cut in (0..line.len()).step_by(7) {
                if !line.is_char_boundary(cut) {
                    continue;
                }
                let (g, _) = got(&mut p, &line.as_bytes()[..cut]);
                if let (
                    Got::Commit(h, _) | Got::Fin(h, _) | Got::State(h, _) | Got::Exec(h, ..),
                    Got::Commit(w, _) | Got::Fin(w, _) | Got::State(w, _) | Got::Exec(w, ..),
                ) = (&g, &want)
                {
                    assert!(h <= w, "{name}: cut line gave height {h} > {w}");
                }
            }
        }
    }
}
