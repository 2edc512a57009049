//! Which software and format wrote a log, told from its lines: the
//! `Version info` line when the log has one, else the shape of the block
//! messages (0.34/0.37 `executed block … num_valid_txs`, 0.38 `finalized
//! block`, 1.0 `Finalized block`, abcid `block committed`).

use std::collections::BTreeMap;

use crate::parse::{Event, Format, Record};

/// Message dialects, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum Dialect {
    /// `executed block … num_valid_txs= num_invalid_txs=`.
    #[serde(rename = "tendermint-0.34/cometbft-0.37")]
    V034,
    /// `finalized block … num_txs_res=`.
    #[serde(rename = "cometbft-0.38")]
    V038,
    /// `Finalized block` (capitalised messages).
    #[serde(rename = "cometbft-1.x")]
    V1,
    /// abcid's `block committed`.
    #[serde(rename = "abcid")]
    Abcid,
}

impl Dialect {
    fn label(self) -> &'static str {
        match self {
            Self::V034 => "Tendermint 0.34 / CometBFT 0.37",
            Self::V038 => "CometBFT 0.38",
            Self::V1 => "CometBFT 1.x",
            Self::Abcid => "abcid",
        }
    }
}

/// Accumulates what a log's lines say about their origin.
#[derive(Debug, Clone, Default)]
pub struct Detector {
    version: Option<String>,
    /// Lines written by the Cosmos SDK logger.
    sdk: bool,
    dialects: BTreeMap<Dialect, u64>,
    formats: BTreeMap<&'static str, u64>,
}

/// The verdict on one log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Detected {
    /// e.g. `CometBFT 0.38.17` or `CometBFT 0.38`.
    pub software: String,
    /// How `software` was told: `Version info line` or `message shapes`.
    pub how: &'static str,
    /// Line formats with their line counts, e.g. `plain`.
    pub formats: BTreeMap<&'static str, u64>,
    /// Block-message dialects with their line counts.
    pub dialects: BTreeMap<Dialect, u64>,
}

impl Detected {
    /// The most common format name (`plain`, `json`, …), for node metadata.
    pub fn main_format(&self) -> Option<&'static str> {
        self.formats
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(f, _)| *f)
    }
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::Plain => "plain",
        Format::Json => "json",
        Format::TracingPlain => "abcid-plain",
        Format::TracingJson => "abcid-json",
        Format::SdkConsole => "sdk-console",
        Format::SdkJson => "sdk-json",
    }
}

impl Detector {
    /// Takes a line of known format (events and well-formed other lines).
    pub fn format(&mut self, f: Format) {
        self.sdk |= matches!(f, Format::SdkConsole | Format::SdkJson);
        *self.formats.entry(format_name(f)).or_default() += 1;
    }

    /// Takes an event line.
    pub fn record(&mut self, r: &Record<'_>) {
        self.format(r.format);
        let d = match r.event {
            Event::Executed { .. } => Dialect::V034,
            Event::Finalized {
                capitalized: false, ..
            } => Dialect::V038,
            Event::Finalized {
                capitalized: true, ..
            } => Dialect::V1,
            Event::Abcid { .. } => Dialect::Abcid,
            Event::Version(v) => {
                self.version = Some(v.to_string());
                return;
            }
            _ => return,
        };
        *self.dialects.entry(d).or_default() += 1;
    }

    /// The verdict.
    pub fn detected(&self) -> Detected {
        let (software, how) = match (
            &self.version,
            self.dialects.keys().rfind(|d| **d != Dialect::Abcid),
        ) {
            (Some(v), _) => {
                let name = if v.starts_with("0.34") || v.starts_with("0.33") {
                    "Tendermint"
                } else {
                    "CometBFT"
                };
                (format!("{name} {v}"), "Version info line")
            }
            (None, Some(d)) => (d.label().to_string(), "message shapes"),
            (None, None) if self.dialects.contains_key(&Dialect::Abcid) => {
                ("abcid".to_string(), "message shapes")
            }
            (None, None) => (
                "unknown (no block messages)".to_string(),
                "nothing to tell from",
            ),
        };
        let software = if self.sdk {
            format!("Cosmos SDK app on {software}")
        } else {
            software
        };
        Detected {
            software,
            how,
            formats: self.formats.clone(),
            dialects: self.dialects.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{Line, Parser};

    fn detect(path: &str) -> Detected {
        let text = std::fs::read(format!(
            "{}/tests/fixtures/{path}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("fixture");
        let mut p = Parser::new();
        let mut d = Detector::default();
        for line in text.split(|c| *c == b'\n') {
            match p.parse(line) {
                Line::Event(r) => d.record(&r),
                Line::Other(f) => d.format(f),
                _ => {}
            }
        }
        d.detected()
    }

    #[test]
    fn tells_each_fixture_apart() {
        let cases = [
            (
                "tendermint-v0.34.24.plain.log",
                "Tendermint 0.34.24",
                "plain",
                Dialect::V034,
            ),
            (
                "tendermint-v0.34.24.json.log",
                "Tendermint 0.34.24",
                "json",
                Dialect::V034,
            ),
            // v0.37.18's binary reports 0.37.16 (its version constant lags the tag).
            (
                "cometbft-v0.37.18.plain.log",
                "CometBFT 0.37.16",
                "plain",
                Dialect::V034,
            ),
            (
                "cometbft-v0.37.18.json.log",
                "CometBFT 0.37.16",
                "json",
                Dialect::V034,
            ),
            (
                "cometbft-v0.38.17.plain.log",
                "CometBFT 0.38.17",
                "plain",
                Dialect::V038,
            ),
            (
                "cometbft-v0.38.17.json.log",
                "CometBFT 0.38.17",
                "json",
                Dialect::V038,
            ),
            (
                "cometbft-v1.0.1.plain.log",
                "CometBFT 1.0.1",
                "plain",
                Dialect::V1,
            ),
            (
                "cometbft-v1.0.1.json.log",
                "CometBFT 1.0.1",
                "json",
                Dialect::V1,
            ),
        ];
        for (file, software, format, dialect) in cases {
            let d = detect(file);
            assert_eq!(d.software, software, "{file}");
            assert_eq!(
                d.formats.keys().copied().collect::<Vec<_>>(),
                vec![format],
                "{file}"
            );
            assert_eq!(
                d.dialects.keys().copied().collect::<Vec<_>>(),
                vec![dialect],
                "{file}"
            );
        }
    }

    #[test]
    fn without_a_version_line_the_shapes_decide() {
        let mut p = Parser::new();
        let mut d = Detector::default();
        let line = b"I[2026-11-21|20:35:23.591] Finalized block                              module=state height=1 num_txs_res=7 num_val_updates=0 block_app_hash=0E00000000000000 syncing_to_height=1";
        if let Line::Event(r) = p.parse(line) {
            d.record(&r);
        }
        let got = d.detected();
        assert_eq!(
            (got.software.as_str(), got.how),
            ("CometBFT 1.x", "message shapes")
        );
    }
}
