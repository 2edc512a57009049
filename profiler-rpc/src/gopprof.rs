//! A Go process's CPU profile (`/debug/pprof/profile` of CometBFT, or of a
//! Cosmos SDK node, which serves the same endpoint at `rpc.pprof_laddr`) as
//! [`FoldedStacks`], so the consensus engine's CPU is drawn with the same
//! tools as abcid's block profiles.
//!
//! Go writes the [profile.proto] format, gzip-compressed. Only the fields a
//! flamegraph needs are decoded: samples, locations (with their inlined
//! lines), functions and the string table. A sample's stack is leaf first;
//! within a location the first line is the innermost inlined call. The
//! folded stack is rooted at a label naming the process (`cometbft`), so
//! two processes' stacks can share one flamegraph.
//!
//! [profile.proto]: https://github.com/google/pprof/blob/main/proto/profile.proto

use std::collections::HashMap;
use std::io::Read;

use prost::Message;

use crate::error::ProfilerError;
use crate::folded::FoldedStacks;

/// The largest profile decompressed: a CPU profile of a busy node over a
/// minute is a few MiB; anything far bigger is not one.
pub const MAX_PROFILE_BYTES: u64 = 256 << 20;

/// Go's CPU sampling rate, when a profile does not state its period.
const DEFAULT_HZ: f64 = 100.0;

#[derive(Clone, PartialEq, Message)]
struct Profile {
    #[prost(message, repeated, tag = "1")]
    sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    sample: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    string_table: Vec<String>,
    #[prost(int64, tag = "10")]
    duration_nanos: i64,
    #[prost(int64, tag = "12")]
    period: i64,
}

#[derive(Clone, PartialEq, Message)]
struct ValueType {
    #[prost(int64, tag = "1")]
    r#type: i64,
    #[prost(int64, tag = "2")]
    unit: i64,
}

#[derive(Clone, PartialEq, Message)]
struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    value: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
struct Location {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(uint64, tag = "3")]
    address: u64,
    #[prost(message, repeated, tag = "4")]
    line: Vec<Line>,
}

#[derive(Clone, PartialEq, Message)]
struct Line {
    #[prost(uint64, tag = "1")]
    function_id: u64,
}

#[derive(Clone, PartialEq, Message)]
struct Function {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(int64, tag = "2")]
    name: i64,
}

/// A decoded Go CPU profile: its stacks and what they cover.
#[derive(Clone, Debug, PartialEq)]
pub struct GoProfile {
    /// Samples per stack, each stack rooted at the process label.
    pub stacks: FoldedStacks,
    /// Seconds the profile covers (`duration_nanos`).
    pub seconds: f64,
    /// Samples per second of one busy thread (from `period`, in ns of
    /// CPU per sample; Go's default is 100).
    pub sample_hz: f64,
}

impl GoProfile {
    /// CPU cores busy on average over the profile (samples / rate /
    /// seconds); 0 for a profile of no duration.
    pub fn cores(&self) -> f64 {
        match self.seconds > 0.0 {
            true => self.stacks.total() as f64 / self.sample_hz / self.seconds,
            false => 0.0,
        }
    }
}

/// Decodes a Go CPU profile (`gzip`-compressed or not) and folds its
/// samples, counted in samples (Go samples at 100 Hz), under the root
/// frame `label`.
pub fn fold(bytes: &[u8], label: &str) -> Result<GoProfile, ProfilerError> {
    fold_values(bytes, label, None)
}

/// Decodes any Go profile (`allocs`, `heap`, `mutex`, `block`, …) and
/// folds its values of type `value` (`alloc_space`, `delay`, …) under the
/// root frame `label`; a profile without that type is refused, naming the
/// types it has.
pub fn fold_value(bytes: &[u8], label: &str, value: &str) -> Result<GoProfile, ProfilerError> {
    fold_values(bytes, label, Some(value))
}

fn fold_values(bytes: &[u8], label: &str, value: Option<&str>) -> Result<GoProfile, ProfilerError> {
    let raw = decompress(bytes)?;
    let profile =
        Profile::decode(raw.as_slice()).map_err(|e| bad(format!("not a profile.proto: {e}")))?;
    let text = |i: i64| -> &str {
        usize::try_from(i)
            .ok()
            .and_then(|i| profile.string_table.get(i))
            .map_or("?", String::as_str)
    };
    let named = |name: &str| {
        profile
            .sample_type
            .iter()
            .position(|t| text(t.r#type) == name)
    };
    let column = match value {
        None => named("samples").unwrap_or(0),
        Some(name) => named(name).ok_or_else(|| {
            let types: Vec<&str> = profile.sample_type.iter().map(|t| text(t.r#type)).collect();
            bad(format!(
                "it has no `{name}` values (its types: {})",
                types.join(", ")
            ))
        })?,
    };
    let functions: HashMap<u64, &str> = profile
        .function
        .iter()
        .map(|f| (f.id, text(f.name)))
        .collect();
    let locations: HashMap<u64, &Location> = profile.location.iter().map(|l| (l.id, l)).collect();
    let mut stacks = FoldedStacks::new();
    for sample in &profile.sample {
        let count = sample.value.get(column).copied().unwrap_or(0);
        let Ok(count) = u64::try_from(count) else {
            return Err(bad(format!("a sample counts {count}")));
        };
        if count == 0 {
            continue;
        }
        let mut frames: Vec<String> = Vec::new();
        for id in &sample.location_id {
            let location = locations.get(id).ok_or_else(|| {
                bad(format!(
                    "a sample names location {id}, which is not in the profile"
                ))
            })?;
            // A location Go could not symbolise has no lines: its address
            // stands for it, as `go tool pprof` shows it.
            if location.line.is_empty() {
                frames.push(format!("0x{:x}", location.address));
            }
            for line in &location.line {
                let name = functions.get(&line.function_id).copied().unwrap_or("?");
                frames.push(name.to_string());
            }
        }
        if frames.is_empty() {
            frames.push("[unknown]".to_string());
        }
        let mut stack = String::from(label);
        for frame in frames.iter().rev() {
            stack.push(';');
            // `;` separates frames and a trailing ` N` is the count.
            stack.push_str(&frame.replace([';', ' '], "_"));
        }
        stacks.add(stack, count);
    }
    Ok(GoProfile {
        stacks,
        seconds: profile.duration_nanos.max(0) as f64 / 1e9,
        sample_hz: match profile.period {
            p if p > 0 => 1e9 / p as f64,
            _ => DEFAULT_HZ,
        },
    })
}

/// The profile's bytes, gunzipped when they start with gzip's magic.
fn decompress(bytes: &[u8]) -> Result<Vec<u8>, ProfilerError> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(bytes.to_vec());
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(MAX_PROFILE_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|e| bad(format!("not gzip: {e}")))?;
    if out.len() as u64 > MAX_PROFILE_BYTES {
        return Err(bad(format!(
            "larger than {MAX_PROFILE_BYTES} bytes once decompressed"
        )));
    }
    Ok(out)
}

fn bad(reason: String) -> ProfilerError {
    ProfilerError::Render {
        what: "a Go profile".into(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// A profile as Go writes one: `samples/count` and `cpu/nanoseconds`
    /// columns; location 2 holds an inlined call (two lines).
    fn profile() -> Profile {
        let strings = [
            "",
            "samples",
            "count",
            "cpu",
            "nanoseconds",
            "main.main",
            "runtime.goexit",
            "time.Now",
            "main.tick",
        ];
        let f = |id: u64, name: i64| Function { id, name };
        let loc = |id: u64, fns: &[u64]| Location {
            id,
            address: 0x4000 + id,
            line: fns
                .iter()
                .map(|&function_id| Line { function_id })
                .collect(),
        };
        Profile {
            sample_type: vec![
                ValueType { r#type: 1, unit: 2 },
                ValueType { r#type: 3, unit: 4 },
            ],
            sample: vec![
                // leaf first: time.Now inlined into main.tick, called by main.main
                Sample {
                    location_id: vec![2, 1, 3],
                    value: vec![3, 30_000_000],
                },
                Sample {
                    location_id: vec![1, 3],
                    value: vec![2, 20_000_000],
                },
                Sample {
                    location_id: vec![1, 3],
                    value: vec![0, 0],
                },
                // a location without symbols, and a sample without a stack
                Sample {
                    location_id: vec![4, 3],
                    value: vec![1, 10_000_000],
                },
                Sample {
                    location_id: vec![],
                    value: vec![1, 10_000_000],
                },
            ],
            location: vec![loc(1, &[5]), loc(2, &[7, 8]), loc(3, &[6]), loc(4, &[])],
            function: vec![f(5, 5), f(6, 6), f(7, 7), f(8, 8)],
            string_table: strings.iter().map(|s| s.to_string()).collect(),
            duration_nanos: 2_000_000_000,
            period: 4_000_000,
        }
    }

    #[test]
    fn samples_fold_root_first_with_inlined_calls_in_order() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&profile().encode_to_vec()).unwrap();
        let folded = fold(&gz.finish().unwrap(), "cometbft").unwrap();
        assert_eq!(
            folded.stacks.to_text(),
            "cometbft;[unknown] 1\n\
             cometbft;runtime.goexit;0x4004 1\n\
             cometbft;runtime.goexit;main.main 2\n\
             cometbft;runtime.goexit;main.main;main.tick;time.Now 3\n"
        );
        assert_eq!(folded.seconds, 2.0);
        assert_eq!(folded.sample_hz, 250.0, "from a period of 4 ms");
        assert_eq!(folded.cores(), 7.0 / 250.0 / 2.0);
        let mut unstated = profile();
        unstated.period = 0;
        assert_eq!(
            fold(&unstated.encode_to_vec(), "x").unwrap().sample_hz,
            100.0
        );
        // Uncompressed bytes decode too.
        assert_eq!(
            fold(&profile().encode_to_vec(), "x")
                .unwrap()
                .stacks
                .total(),
            7
        );
    }

    #[test]
    fn a_named_value_column_is_folded_and_a_missing_one_named() {
        let cpu = fold_value(&profile().encode_to_vec(), "x", "cpu").unwrap();
        assert_eq!(cpu.stacks.total(), 70_000_000, "the nanoseconds column");
        let e = fold_value(&profile().encode_to_vec(), "x", "alloc_space")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no `alloc_space`") && e.contains("samples, cpu"),
            "{e}"
        );
    }

    #[test]
    fn what_is_not_a_go_profile_is_refused_with_the_reason() {
        let err = |bytes: &[u8]| fold(bytes, "x").unwrap_err().to_string();
        assert!(err(&[0x1f, 0x8b, 1, 2]).contains("not gzip"));
        assert!(err(b"\xff\xff\xff").contains("not a profile.proto"));
        let mut dangling = profile();
        dangling.sample[0].location_id.push(99);
        let e = err(&dangling.encode_to_vec());
        assert!(e.contains("location 99"), "{e}");
        let mut negative = profile();
        negative.sample[0].value[0] = -1;
        assert!(err(&negative.encode_to_vec()).contains("counts -1"));
    }
}
