//! Wire types of the `profiler_*` JSON-RPC methods, shared by server and client.
//!
//! | method | params | result |
//! |---|---|---|
//! | `profiler_enable` | [`EnableParams`] | [`SessionStatus`] |
//! | `profiler_disable` | none | [`DisableOutcome`] |
//! | `profiler_status` | none | [`Status`] |
//! | `profiler_list` | none | `[`[`ProfileSummary`]`]` |
//! | `profiler_fetch` | [`FetchParams`] | [`FetchResponse`] |
//!
//! Params may be given by name (an object; unknown names are rejected) or by position.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::config::Retention;
#[cfg(feature = "node")]
use crate::config::{DEFAULT_BLOCKS, DEFAULT_FREQUENCY_HZ, MAX_FREQUENCY_HZ, MIN_FREQUENCY_HZ};
#[cfg(feature = "node")]
use crate::error::ProfilerError;
use crate::role::RoleFilter;
use crate::work::Work;

/// JSON-RPC error codes of the `profiler_*` methods.
pub mod codes {
    /// Malformed or out-of-range params (the JSON-RPC standard code).
    pub const INVALID_PARAMS: i32 = -32602;
    /// Internal failure (I/O); details in the message.
    pub const INTERNAL: i32 = -32603;
    /// `profiler_enable` while another session is armed or warming up.
    pub const SESSION_ACTIVE: i32 = -32010;
    /// No profile for that height, or no file for that role.
    pub const NOT_FOUND: i32 = -32011;
    /// The profiler cannot capture (its thread stopped, or the warm-up failed).
    pub const UNAVAILABLE: i32 = -32012;
}

/// Params of `profiler_enable`: arm the profiler from the next block on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnableParams {
    /// Consecutive blocks to capture (default 1, at most the retention count and 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<i64>,
    /// Sampling frequency in Hz, 1–1000 (default 99).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_hz: Option<i64>,
}

/// [`EnableParams`] after validation.
#[cfg(feature = "node")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EnableRequest {
    pub blocks: u32,
    pub frequency_hz: u32,
}

#[cfg(feature = "node")]
impl EnableParams {
    /// Validates the params; `max_blocks` is the session cap of this profiler.
    pub(crate) fn validate(&self, max_blocks: u32) -> Result<EnableRequest, ProfilerError> {
        let blocks = in_range(
            "blocks",
            self.blocks.unwrap_or(i64::from(DEFAULT_BLOCKS)),
            1,
            max_blocks,
        )?;
        let frequency_hz = in_range(
            "frequency_hz",
            self.frequency_hz.unwrap_or(i64::from(DEFAULT_FREQUENCY_HZ)),
            MIN_FREQUENCY_HZ,
            MAX_FREQUENCY_HZ,
        )?;
        Ok(EnableRequest {
            blocks,
            frequency_hz,
        })
    }
}

#[cfg(feature = "node")]
fn in_range(param: &'static str, value: i64, min: u32, max: u32) -> Result<u32, ProfilerError> {
    match u32::try_from(value) {
        Ok(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(ProfilerError::InvalidParam {
            param,
            reason: format!("{value} is outside {min}..={max}"),
        }),
    }
}

/// Lifecycle of a profiling session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Capturing: the block after the next `end_block` (or the current block) is profiled.
    Armed,
    /// All requested blocks were captured.
    Completed,
    /// Stopped early by `profiler_disable`.
    Disabled,
    /// Stopped because the sampling thread is gone; see [`Status::last_error`].
    Failed,
}

/// A profiling session as reported by `profiler_enable`, `profiler_status` and
/// `profiler_disable`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionStatus {
    /// Session id: the arming time in Unix milliseconds (strictly increasing).
    pub id: u64,
    /// Where the session is in its lifecycle.
    pub state: SessionState,
    /// Sampling frequency.
    pub frequency_hz: u32,
    /// Blocks requested.
    pub blocks_requested: u32,
    /// Blocks whose capture started (their window opened at an `end_block` while armed).
    pub blocks_started: u32,
    /// Blocks whose capture completed (`end_block` seen) and went to rendering.
    pub blocks_captured: u32,
    /// Blocks abandoned (disabled mid-block).
    pub blocks_discarded: u32,
    /// Height being captured right now: the block after the last `end_block`.
    pub in_progress_height: Option<u64>,
}

/// Result of `profiler_disable`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DisableOutcome {
    /// Whether a session was armed (false: disabling was a no-op).
    pub was_armed: bool,
    /// The latest session after disabling, if there ever was one.
    pub session: Option<SessionStatus>,
    /// Height whose capture was in progress and was thrown away.
    pub discarded_height: Option<u64>,
}

/// A failure while capturing, rendering or writing, as kept by `profiler_status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorReport {
    /// Block height concerned, if any.
    pub height: Option<u64>,
    /// Stage that failed: `start`, `capture`, `render`, `write` or `sampler`.
    pub stage: String,
    /// The error, with its context.
    pub message: String,
    /// When it happened (Unix milliseconds).
    pub unix_ms: u64,
}

/// Result of `profiler_status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// Chain id of the stored profiles.
    pub chain_id: String,
    /// Directory of this chain's profiles on the node.
    pub out_dir: PathBuf,
    /// Whether a session is armed.
    pub armed: bool,
    /// Whether an `enable` is warming the profiler up right now.
    pub warming_up: bool,
    /// The current or latest session.
    pub session: Option<SessionStatus>,
    /// Captured blocks still being symbolised, rendered or written.
    pub pending_renders: u64,
    /// Profiles on disk.
    pub profiles: u64,
    /// Bytes of the profiles on disk, `meta.json` included.
    pub profiles_bytes: u64,
    /// The retention cap in force.
    pub retention: Retention,
    /// Blocks captured and written since the node started.
    pub captured_total: u64,
    /// Failures since the node started.
    pub failures_total: u64,
    /// The most recent failure.
    pub last_error: Option<ErrorReport>,
    /// What the armed hooks cost the consensus thread since the node started.
    #[serde(default)]
    pub consensus_cost: ConsensusCost,
}

impl Status {
    /// No session armed and no captured block still rendering: a session's end.
    pub fn is_idle(&self) -> bool {
        !self.armed && self.pending_renders == 0
    }
}

/// Time the consensus thread spent in armed `begin_block` and `end_block` calls (disarmed
/// calls are a single atomic load and are not counted).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsensusCost {
    /// Armed `end_block` calls: blocks whose window closed or opened.
    pub blocks: u64,
    /// Total wall time of the armed calls, both hooks, in nanoseconds (preemption by the
    /// scheduler included).
    pub total_ns: u64,
    /// The longest single call, wall time, in nanoseconds.
    pub max_call_ns: u64,
}

impl ConsensusCost {
    /// Mean wall time per armed block (`begin_block` + `end_block`), in microseconds.
    pub fn mean_block_us(&self) -> f64 {
        self.total_ns as f64 / 1e3 / self.blocks.max(1) as f64
    }

    /// What accrued between `earlier` and this reading (the maxima are this reading's).
    pub fn since(&self, earlier: &ConsensusCost) -> ConsensusCost {
        ConsensusCost {
            blocks: self.blocks.saturating_sub(earlier.blocks),
            total_ns: self.total_ns.saturating_sub(earlier.total_ns),
            max_call_ns: self.max_call_ns,
        }
    }
}

/// One captured block, as listed by `profiler_list` and stored in its `meta.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileSummary {
    /// Chain id.
    pub chain_id: String,
    /// Block height.
    pub height: u64,
    /// Id of the session that captured it.
    pub session_id: u64,
    /// When the block's capture ended (Unix milliseconds).
    pub captured_unix_ms: u64,
    /// Sampling frequency.
    pub frequency_hz: u32,
    /// How long the profiler ran for this block, in ms: the block's window, from the
    /// previous block's `end_block` to its own.
    pub duration_ms: f64,
    /// How long after the previous block's `end_block` this block's window opened, in ms:
    /// for a session's first block, the time to start the profiler (samples in that gap
    /// are lost); for the next ones, the time to collect the previous block (on the
    /// profiler's own thread: well under a millisecond with a spare core, up to a
    /// scheduler slice under full load), whose samples count for the previous block.
    pub start_delay_ms: f64,
    /// How long after `end_block` the profiler stopped, in ms.
    pub end_delay_ms: f64,
    /// Time from `begin_block` (FinalizeBlock starts) to `end_block` (Commit ends), in ms:
    /// the block's execution, the tail of its window. Absent when `begin_block` was not
    /// called for the block.
    #[serde(default)]
    pub execution_ms: Option<f64>,
    /// Samples of all threads (the profiler's own threads excluded).
    pub samples: u64,
    /// Samples of admission work (`check_tx`), whichever thread did it.
    pub check_tx_samples: u64,
    /// Samples of execution work (`deliver_tx`), whichever thread did it.
    pub deliver_tx_samples: u64,
    /// Samples of the profiler's own threads, left out of the profile.
    pub profiler_samples: u64,
    /// Samples by work, every kind (see [`crate::work`]); empty in profiles written
    /// before work was told apart.
    #[serde(default)]
    pub work_samples: BTreeMap<Work, u64>,
    /// Files in the block's directory, `meta.json` aside.
    pub files: Vec<String>,
    /// Bytes of those files.
    pub bytes: u64,
}

/// A block height, or the most recently captured block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeightSelector {
    /// The most recently captured block.
    Latest,
    /// That block height.
    Height(u64),
}

impl std::fmt::Display for HeightSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeightSelector::Latest => f.write_str("latest"),
            HeightSelector::Height(h) => write!(f, "{h}"),
        }
    }
}

impl Serialize for HeightSelector {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            HeightSelector::Latest => serializer.serialize_str("latest"),
            HeightSelector::Height(h) => serializer.serialize_u64(*h),
        }
    }
}

impl<'de> Deserialize<'de> for HeightSelector {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        const EXPECTED: &str = "a block height (non-negative integer) or \"latest\"";
        impl serde::de::Visitor<'_> for Visitor {
            type Value = HeightSelector;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(EXPECTED)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(HeightSelector::Height(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
                u64::try_from(v)
                    .map(HeightSelector::Height)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &EXPECTED))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                if v == "latest" {
                    Ok(HeightSelector::Latest)
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Str(v), &EXPECTED))
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// Name of the per-block metadata file (a [`ProfileSummary`] as JSON), next to the files
/// named by [`ProfileKind::file_name`] in a block's directory, on the node and once
/// downloaded.
pub const META_FILE: &str = "meta.json";

/// Output format of a stored profile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileKind {
    /// SVG flamegraph (inferno).
    #[default]
    Svg,
    /// pprof protobuf (`go tool pprof`, speedscope).
    Pb,
    /// Folded stacks (`frame;frame;frame count` lines), input of merges and diffs.
    Folded,
}

impl ProfileKind {
    /// Every kind.
    pub const ALL: [ProfileKind; 3] = [ProfileKind::Svg, ProfileKind::Pb, ProfileKind::Folded];

    /// File extension, which is also the wire name.
    pub fn extension(self) -> &'static str {
        match self {
            ProfileKind::Svg => "svg",
            ProfileKind::Pb => "pb",
            ProfileKind::Folded => "folded",
        }
    }

    /// Name of the file holding this kind for `role`: `<role>.<extension>`.
    pub fn file_name(self, role: RoleFilter) -> String {
        format!("{}.{}", role.as_str(), self.extension())
    }

    /// Whether the content is binary (sent base64-encoded).
    pub fn is_binary(self) -> bool {
        matches!(self, ProfileKind::Pb)
    }
}

/// Params of `profiler_fetch`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FetchParams {
    /// Block height or `"latest"`.
    pub height: HeightSelector,
    /// Output format (default `svg`).
    #[serde(default)]
    pub kind: ProfileKind,
    /// Threads to show (default `all`).
    #[serde(default)]
    pub role: RoleFilter,
}

/// How [`FetchResponse::content`] is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentEncoding {
    /// UTF-8 text as is (SVG, folded).
    Utf8,
    /// Standard base64 with padding (protobuf).
    Base64,
}

/// Result of `profiler_fetch`: one file of one captured block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchResponse {
    /// Block height (resolved when `"latest"` was asked).
    pub height: u64,
    /// Output format.
    pub kind: ProfileKind,
    /// Role filter.
    pub role: RoleFilter,
    /// File name in the block's directory.
    pub file: String,
    /// Encoding of `content`.
    pub encoding: ContentEncoding,
    /// The file's content.
    pub content: String,
    /// Size of the decoded content.
    pub bytes: u64,
}

impl FetchResponse {
    /// Builds a response from a file's bytes, encoding binary kinds in base64.
    #[cfg(feature = "node")]
    pub(crate) fn new(
        height: u64,
        kind: ProfileKind,
        role: RoleFilter,
        file: String,
        bytes: Vec<u8>,
    ) -> Result<Self, ProfilerError> {
        let size = bytes.len() as u64;
        let (encoding, content) = if kind.is_binary() {
            (
                ContentEncoding::Base64,
                base64::engine::general_purpose::STANDARD.encode(&bytes),
            )
        } else {
            let text = String::from_utf8(bytes).map_err(|e| ProfilerError::Render {
                what: file.clone(),
                reason: format!("stored file is not UTF-8: {e}"),
            })?;
            (ContentEncoding::Utf8, text)
        };
        Ok(FetchResponse {
            height,
            kind,
            role,
            file,
            encoding,
            content,
            bytes: size,
        })
    }

    /// The file's bytes, decoded.
    pub fn decode(&self) -> Result<Vec<u8>, base64::DecodeError> {
        match self.encoding {
            ContentEncoding::Utf8 => Ok(self.content.as_bytes().to_vec()),
            ContentEncoding::Base64 => {
                base64::engine::general_purpose::STANDARD.decode(&self.content)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "node")]
    #[test]
    fn enable_params_default_and_bounds() {
        let ok = EnableParams::default()
            .validate(200)
            .expect("defaults are valid");
        assert_eq!(
            ok,
            EnableRequest {
                blocks: 1,
                frequency_hz: 99
            }
        );
        let cases = [
            (Some(-1), None, "blocks"),
            (Some(0), None, "blocks"),
            (Some(201), None, "blocks"),
            (Some(i64::MAX), None, "blocks"),
            (None, Some(0), "frequency_hz"),
            (None, Some(1001), "frequency_hz"),
            (None, Some(-99), "frequency_hz"),
        ];
        for (blocks, frequency_hz, param) in cases {
            let err = EnableParams {
                blocks,
                frequency_hz,
            }
            .validate(200)
            .expect_err("out of range");
            assert!(
                matches!(err, ProfilerError::InvalidParam { param: p, .. } if p == param),
                "{err}"
            );
        }
        let max = EnableParams {
            blocks: Some(200),
            frequency_hz: Some(1000),
        };
        assert!(max.validate(200).is_ok());
    }

    #[test]
    fn enable_params_reject_unknown_names_and_accept_positions() {
        assert!(serde_json::from_str::<EnableParams>(r#"{"block": 3}"#).is_err());
        let positional: EnableParams = serde_json::from_str("[3, 250]").expect("positional");
        assert_eq!(positional.blocks, Some(3));
        assert_eq!(positional.frequency_hz, Some(250));
    }

    #[test]
    fn height_selector_accepts_heights_and_latest_only() {
        let parse = |s: &str| serde_json::from_str::<HeightSelector>(s);
        assert_eq!(parse("12").expect("number"), HeightSelector::Height(12));
        assert_eq!(parse("\"latest\"").expect("latest"), HeightSelector::Latest);
        for bad in ["-1", "\"../../etc/passwd\"", "\"12\"", "1.5", "null", "{}"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            serde_json::to_string(&HeightSelector::Latest).expect("serialize"),
            "\"latest\""
        );
    }

    #[test]
    fn fetch_params_reject_path_like_kinds_and_roles() {
        let parse = |s: &str| serde_json::from_str::<FetchParams>(s);
        let ok = parse(r#"{"height": 5}"#).expect("defaults");
        assert_eq!((ok.kind, ok.role), (ProfileKind::Svg, RoleFilter::All));
        assert!(parse(r#"{"height": 5, "kind": "../svg"}"#).is_err());
        assert!(parse(r#"{"height": 5, "role": "check_tx/../../x"}"#).is_err());
        assert!(parse(r#"{"height": 5, "path": "/etc/passwd"}"#).is_err());
    }

    #[cfg(feature = "node")]
    #[test]
    fn binary_content_round_trips_through_base64() {
        let bytes = vec![0u8, 159, 146, 150, 255];
        let response = FetchResponse::new(
            7,
            ProfileKind::Pb,
            RoleFilter::All,
            "all.pb".into(),
            bytes.clone(),
        )
        .expect("encode");
        assert_eq!(response.encoding, ContentEncoding::Base64);
        assert_eq!(response.decode().expect("decode"), bytes);
        assert_eq!(response.bytes, 5);
    }
}
