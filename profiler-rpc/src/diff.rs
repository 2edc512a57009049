//! Differential flamegraphs of two sets of block profiles: red frames grew, blue frames
//! shrank, widths are the AFTER profile — the picture next to a before/after TPS figure.
//!
//! A set is a folded file, one block's directory, a merged directory, or any directory
//! holding block directories (`<chain-id>/<height>/meta.json`); a set's blocks are merged
//! before comparing, and by default BEFORE is scaled to AFTER's sample count so that
//! sets of different lengths compare by share of CPU.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use inferno::{differential, flamegraph};
use serde::Serialize;

use crate::api::{ProfileKind, META_FILE};
use crate::error::ProfilerError;
use crate::folded::FoldedStacks;
use crate::role::RoleFilter;
use crate::svg::svg_from_lines;

/// How deep [`find_blocks`] looks for block directories.
const MAX_DEPTH: usize = 4;

/// A set of block profiles merged into one.
#[derive(Clone, Debug, Default)]
pub struct ProfileSet {
    /// The merged stacks (of the selected role).
    pub stacks: FoldedStacks,
    /// The folded files read.
    pub sources: Vec<PathBuf>,
}

/// Loads and merges the folded stacks of every profile under `path` (see the module
/// docs), keeping the stacks of `role`.
pub fn load_profile_set(path: &Path, role: RoleFilter) -> Result<ProfileSet, ProfilerError> {
    let mut set = ProfileSet::default();
    let all_folded = ProfileKind::Folded.file_name(RoleFilter::All);
    if path.is_file() {
        add_file(&mut set, path, role)?;
    } else if path.join(META_FILE).is_file() || path.join(&all_folded).is_file() {
        add_profile_dir(&mut set, path, role)?;
    } else {
        for dir in find_blocks(path)? {
            add_profile_dir(&mut set, &dir, role)?;
        }
    }
    if set.sources.is_empty() {
        return Err(ProfilerError::Render {
            what: format!("profile set {}", path.display()),
            reason: format!(
                "no folded profiles found (expected a .folded file or <chain-id>/<height>/{all_folded})"
            ),
        });
    }
    Ok(set)
}

/// Block directories (`<height>/meta.json`): `root` itself when it is one,
/// else those under it, at most five levels down, hidden folders (a
/// profile being written, `.tmp-<height>/`) left out, in path order.
pub fn find_blocks(root: &Path) -> Result<Vec<PathBuf>, ProfilerError> {
    let mut found = Vec::new();
    match root.join(META_FILE).is_file() {
        true => found.push(root.to_path_buf()),
        false => walk(root, 0, &mut found)?,
    }
    Ok(found)
}

fn walk(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) -> Result<(), ProfilerError> {
    let entries = fs::read_dir(dir).map_err(|e| ProfilerError::io("listing", dir, e))?;
    let mut children: BTreeSet<PathBuf> = BTreeSet::new();
    for entry in entries.flatten() {
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        // `file_type` does not follow symlinks, so links cannot loop.
        if !hidden && entry.file_type().is_ok_and(|t| t.is_dir()) {
            children.insert(entry.path());
        }
    }
    for child in children {
        if child.join(META_FILE).is_file() {
            found.push(child);
        } else if depth < MAX_DEPTH {
            walk(&child, depth + 1, found)?;
        }
    }
    Ok(())
}

/// One block (or merged) directory: its `all.folded`, filtered by role. A block without
/// samples has no folded file and adds nothing.
fn add_profile_dir(
    set: &mut ProfileSet,
    dir: &Path,
    role: RoleFilter,
) -> Result<(), ProfilerError> {
    let file = dir.join(ProfileKind::Folded.file_name(RoleFilter::All));
    if file.is_file() {
        add_file(set, &file, role)?;
    }
    Ok(())
}

fn add_file(set: &mut ProfileSet, file: &Path, role: RoleFilter) -> Result<(), ProfilerError> {
    let text = fs::read_to_string(file).map_err(|e| ProfilerError::io("reading", file, e))?;
    let stacks = FoldedStacks::parse(&text).map_err(|e| ProfilerError::Render {
        what: file.display().to_string(),
        reason: e.to_string(),
    })?;
    set.stacks.merge(&stacks.filter(role));
    set.sources.push(file.to_path_buf());
    Ok(())
}

/// Options of [`diff_flamegraph`].
#[derive(Clone, Debug)]
pub struct DiffOptions {
    /// Scale BEFORE to AFTER's total sample count (compare shares, not absolute counts).
    pub normalize: bool,
    /// Title of the SVG.
    pub title: String,
    /// How many frames [`DiffResult::top_changes`] lists.
    pub top: usize,
}

/// A frame whose share of self samples changed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FrameChange {
    /// The frame (function).
    pub frame: String,
    /// Percent of BEFORE's samples with this frame innermost.
    pub before_pct: f64,
    /// Percent of AFTER's samples with this frame innermost.
    pub after_pct: f64,
    /// `after_pct - before_pct`, in percentage points.
    pub delta_pp: f64,
}

/// A rendered differential flamegraph and its headline numbers.
#[derive(Clone, Debug)]
pub struct DiffResult {
    /// The SVG.
    pub svg: Vec<u8>,
    /// Samples in BEFORE.
    pub before_samples: u64,
    /// Samples in AFTER.
    pub after_samples: u64,
    /// Frames whose share of self samples moved most, largest move first.
    pub top_changes: Vec<FrameChange>,
}

/// Renders the differential flamegraph of `before` → `after`.
pub fn diff_flamegraph(
    before: &FoldedStacks,
    after: &FoldedStacks,
    options: &DiffOptions,
) -> Result<DiffResult, ProfilerError> {
    for (name, set) in [("BEFORE", before), ("AFTER", after)] {
        if set.is_empty() {
            return Err(ProfilerError::Render {
                what: "differential flamegraph".into(),
                reason: format!("{name} has no samples"),
            });
        }
    }
    let mut pairs = Vec::new();
    differential::from_readers(
        differential::Options {
            normalize: options.normalize,
            strip_hex: false,
        },
        before.to_text().as_bytes(),
        after.to_text().as_bytes(),
        &mut pairs,
    )
    .map_err(|e| ProfilerError::Render {
        what: "differential stacks".into(),
        reason: e.to_string(),
    })?;
    let pairs = String::from_utf8(pairs).map_err(|e| ProfilerError::Render {
        what: "differential stacks".into(),
        reason: e.to_string(),
    })?;

    let mut flame = flamegraph::Options::default();
    flame.title = options.title.clone();
    flame.subtitle = Some(format!(
        "before {} samples, after {} samples{}; red grew, blue shrank; widths are AFTER",
        before.total(),
        after.total(),
        if options.normalize {
            " (BEFORE scaled to AFTER)"
        } else {
            ""
        },
    ));
    flame.count_name = "samples".into();
    let svg = svg_from_lines(pairs.lines(), &mut flame)?;

    Ok(DiffResult {
        svg,
        before_samples: before.total(),
        after_samples: after.total(),
        top_changes: top_changes(before, after, options.top),
    })
}

fn top_changes(before: &FoldedStacks, after: &FoldedStacks, top: usize) -> Vec<FrameChange> {
    let share = |count: u64, total: u64| 100.0 * count as f64 / total.max(1) as f64;
    let (b, a) = (before.self_counts(), after.self_counts());
    let frames: BTreeSet<&str> = b.keys().chain(a.keys()).copied().collect();
    let mut changes: Vec<FrameChange> = frames
        .into_iter()
        .map(|frame| {
            let before_pct = share(b.get(frame).copied().unwrap_or(0), before.total());
            let after_pct = share(a.get(frame).copied().unwrap_or(0), after.total());
            FrameChange {
                frame: frame.to_string(),
                before_pct,
                after_pct,
                delta_pp: after_pct - before_pct,
            }
        })
        .filter(|c| c.delta_pp != 0.0)
        .collect();
    changes.sort_by(|x, y| y.delta_pp.abs().total_cmp(&x.delta_pp.abs()));
    changes.truncate(top);
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(fill, title)` of every frame rectangle in an inferno SVG.
    fn frames(svg: &[u8]) -> Vec<(String, String)> {
        let text = std::str::from_utf8(svg).expect("utf-8 svg");
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        };
        let doc = roxmltree::Document::parse_with_options(text, options).expect("well-formed svg");
        doc.descendants()
            .filter(|n| n.has_tag_name("g"))
            .filter_map(|g| {
                let title = g
                    .children()
                    .find(|c| c.has_tag_name("title"))?
                    .text()?
                    .to_string();
                let fill = g
                    .children()
                    .find(|c| c.has_tag_name("rect"))?
                    .attribute("fill")?
                    .to_string();
                Some((fill, title))
            })
            .collect()
    }

    fn rgb(fill: &str) -> (u8, u8, u8) {
        let inner = fill
            .trim_start_matches("rgb(")
            .trim_end_matches(')')
            .split(',')
            .map(|c| c.trim().parse::<u8>().expect("channel"))
            .collect::<Vec<_>>();
        (inner[0], inner[1], inner[2])
    }

    fn fill_of<'a>(frames: &'a [(String, String)], name: &str) -> &'a str {
        &frames
            .iter()
            .find(|(_, title)| title.starts_with(&format!("{name} (")))
            .unwrap_or_else(|| panic!("no frame {name}"))
            .0
    }

    #[test]
    fn grown_frames_are_red_and_shrunk_frames_blue() {
        let before = FoldedStacks::parse("t;main;grows 10\nt;main;shrinks 30\nt;main;same 20")
            .expect("valid");
        let after = FoldedStacks::parse("t;main;grows 30\nt;main;shrinks 10\nt;main;same 20")
            .expect("valid");
        let options = DiffOptions {
            normalize: true,
            title: "test".into(),
            top: 2,
        };
        let result = diff_flamegraph(&before, &after, &options).expect("diff");
        let frames = frames(&result.svg);
        let (r, g, b) = rgb(fill_of(&frames, "grows"));
        assert!(r == 255 && g < 255 && b < 255, "grows: {r},{g},{b}");
        let (r, g, b) = rgb(fill_of(&frames, "shrinks"));
        assert!(b == 255 && r < 255 && g < 255, "shrinks: {r},{g},{b}");
        assert_eq!(rgb(fill_of(&frames, "same")), (250, 250, 250));

        let names: Vec<&str> = result
            .top_changes
            .iter()
            .map(|c| c.frame.as_str())
            .collect();
        assert_eq!(names.len(), 2);
        assert!(names.contains(&"grows") && names.contains(&"shrinks"));
        let grows = result
            .top_changes
            .iter()
            .find(|c| c.frame == "grows")
            .expect("grows listed");
        assert!((grows.delta_pp - (50.0 - 50.0 / 3.0)).abs() < 1e-9);
    }

    #[test]
    fn normalisation_compares_shares_not_counts() {
        // Same shape, twice the samples: normalised, nothing changes colour.
        let before = FoldedStacks::parse("t;a 10\nt;b 30").expect("valid");
        let after = FoldedStacks::parse("t;a 20\nt;b 60").expect("valid");
        let normalised = DiffOptions {
            normalize: true,
            title: "n".into(),
            top: 5,
        };
        let result = diff_flamegraph(&before, &after, &normalised).expect("diff");
        let frames = frames(&result.svg);
        assert_eq!(rgb(fill_of(&frames, "a")), (250, 250, 250));
        assert!(result.top_changes.is_empty());
        let raw = DiffOptions {
            normalize: false,
            ..normalised
        };
        let result = diff_flamegraph(&before, &after, &raw).expect("diff");
        assert_eq!(rgb(fill_of(&frames_of(&result), "a")).0, 255);
    }

    fn frames_of(result: &DiffResult) -> Vec<(String, String)> {
        frames(&result.svg)
    }

    #[test]
    fn empty_sets_are_refused() {
        let some = FoldedStacks::parse("t;a 1").expect("valid");
        let options = DiffOptions {
            normalize: true,
            title: "x".into(),
            top: 1,
        };
        assert!(diff_flamegraph(&FoldedStacks::new(), &some, &options).is_err());
        assert!(diff_flamegraph(&some, &FoldedStacks::new(), &options).is_err());
    }

    #[test]
    fn sets_merge_block_directories_and_skip_merged_outputs() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let chain = tmp.path().join("chain-1");
        for (height, text) in [
            (10, "check_tx;a 2\ndeliver_tx;b 3\n"),
            (11, "check_tx;a 5\n"),
        ] {
            let dir = chain.join(height.to_string());
            fs::create_dir_all(&dir).expect("mkdir");
            fs::write(dir.join("all.folded"), text).expect("write");
            fs::write(dir.join(META_FILE), "{}").expect("write");
        }
        // A merged directory (no meta.json) must not be counted twice when walking.
        let merged = chain.join("merged-10-11");
        fs::create_dir_all(&merged).expect("mkdir");
        fs::write(merged.join("all.folded"), "check_tx;a 7\ndeliver_tx;b 3\n").expect("write");

        let all = load_profile_set(tmp.path(), RoleFilter::All).expect("set");
        assert_eq!(all.sources.len(), 2);
        assert_eq!(all.stacks.total(), 10);
        let check = load_profile_set(&chain, RoleFilter::CheckTx).expect("set");
        assert_eq!(check.stacks.total(), 7);
        let merged_only = load_profile_set(&merged, RoleFilter::DeliverTx).expect("set");
        assert_eq!(merged_only.stacks.total(), 3);
        let one_file =
            load_profile_set(&chain.join("11").join("all.folded"), RoleFilter::All).expect("set");
        assert_eq!(one_file.stacks.total(), 5);
        assert!(load_profile_set(&tmp.path().join("nothing"), RoleFilter::All).is_err());
    }
}
