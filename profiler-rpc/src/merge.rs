//! Merging a session's downloaded blocks into one flamegraph per role, under
//! `<chain-dir>/merged-<first>-<last>/`.

use std::fs;
use std::path::{Path, PathBuf};

use crate::api::{ProfileKind, ProfileSummary};
use crate::download::LocalFilesError;
use crate::folded::FoldedStacks;
use crate::role::RoleFilter;

/// Merges the blocks of `profiles` that have samples, read from `<chain_dir>/<height>/`,
/// into an SVG and a folded file per role with samples. Returns the merged directory, or
/// `None` when fewer than two blocks have samples (nothing to merge).
pub fn merge_session(
    chain_dir: &Path,
    profiles: &[&ProfileSummary],
) -> Result<Option<PathBuf>, LocalFilesError> {
    let with_samples: Vec<&ProfileSummary> =
        profiles.iter().copied().filter(|p| p.samples > 0).collect();
    let (Some(first), Some(last)) = (
        with_samples.iter().map(|p| p.height).min(),
        with_samples.iter().map(|p| p.height).max(),
    ) else {
        return Ok(None);
    };
    if with_samples.len() < 2 {
        return Ok(None);
    }
    let merged = read_merged(chain_dir, &with_samples)?;
    let dir = chain_dir.join(format!("merged-{first}-{last}"));
    fs::create_dir_all(&dir).map_err(|e| LocalFilesError::io("creating", &dir, e))?;
    let chain_id = with_samples[0].chain_id.as_str();
    for role in RoleFilter::ALL {
        let stacks = merged.filter(role);
        if stacks.is_empty() {
            continue;
        }
        let title = format!(
            "{chain_id} blocks {first}-{last} merged ({} blocks): {role}",
            with_samples.len()
        );
        let subtitle = format!("{} samples; root frame = thread", stacks.total());
        write_role(&dir, role, &stacks, &title, &subtitle)?;
    }
    Ok(Some(dir))
}

/// The all-threads folded stacks of every block, merged.
fn read_merged(
    chain_dir: &Path,
    profiles: &[&ProfileSummary],
) -> Result<FoldedStacks, LocalFilesError> {
    let mut merged = FoldedStacks::new();
    for profile in profiles {
        let path = chain_dir
            .join(profile.height.to_string())
            .join(ProfileKind::Folded.file_name(RoleFilter::All));
        let text =
            fs::read_to_string(&path).map_err(|e| LocalFilesError::io("reading", &path, e))?;
        merged.merge(&FoldedStacks::parse(&text)?);
    }
    Ok(merged)
}

/// Writes one role's merged SVG and folded stacks into `dir`.
fn write_role(
    dir: &Path,
    role: RoleFilter,
    stacks: &FoldedStacks,
    title: &str,
    subtitle: &str,
) -> Result<(), LocalFilesError> {
    let svg = stacks.to_svg(title, Some(subtitle))?;
    for (kind, bytes) in [
        (ProfileKind::Svg, svg),
        (ProfileKind::Folded, stacks.to_text().into_bytes()),
    ] {
        let path = dir.join(kind.file_name(role));
        fs::write(&path, bytes).map_err(|e| LocalFilesError::io("writing", &path, e))?;
    }
    Ok(())
}
