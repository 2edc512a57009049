//! Finding (and installing) the binaries a devnet runs: the pinned CometBFT,
//! installed with `go install` into a project-local tools folder, and abcid,
//! built by this workspace.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The pinned CometBFT version (the repository's `COMETBFT_VERSION` file).
pub(crate) const COMETBFT_VERSION: &str = include_str!("../../COMETBFT_VERSION");

/// The Go module path of CometBFT's command.
const COMETBFT_MODULE: &str = "github.com/cometbft/cometbft/cmd/cometbft";

/// The pinned version without surrounding white space (`v0.38.17`).
pub fn cometbft_version() -> &'static str {
    COMETBFT_VERSION.trim()
}

/// The tools folder: `$FETH_TOOLS_DIR`, else `tools/` under the workspace
/// root this binary was built from when it exists, else `./tools`.
pub fn tools_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FETH_TOOLS_DIR") {
        return PathBuf::from(dir);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if workspace.join("COMETBFT_VERSION").is_file() {
        return workspace.join("tools");
    }
    PathBuf::from("tools")
}

/// The CometBFT binary to run: `$FETH_COMETBFT` when set, else
/// `<tools>/bin/cometbft`, installed there first when absent.
pub fn cometbft(install: bool) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("FETH_COMETBFT") {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!(
                "FETH_COMETBFT points to {}, which is not a file",
                path.display()
            );
        }
        return Ok(path);
    }
    let bin = tools_dir().join("bin");
    let path = bin.join("cometbft");
    if path.is_file()
        && installed_version(&path).as_deref() == Some(cometbft_version().trim_start_matches('v'))
    {
        return Ok(path);
    }
    if !install {
        bail!(
            "CometBFT {} is not installed at {}; run `feth devnet install` (needs Go)",
            cometbft_version(),
            path.display()
        );
    }
    install_cometbft(&bin)?;
    Ok(path)
}

/// `go install`s the pinned CometBFT into `bin`.
pub(crate) fn install_cometbft(bin: &Path) -> Result<()> {
    std::fs::create_dir_all(bin).with_context(|| format!("cannot create {}", bin.display()))?;
    let bin = bin
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", bin.display()))?;
    let target = format!("{COMETBFT_MODULE}@{}", cometbft_version());
    eprintln!(
        "installing CometBFT {} into {} (go install {target})",
        cometbft_version(),
        bin.display()
    );
    let status = Command::new("go")
        .args(["install", &target])
        .env("GOBIN", &bin)
        .status()
        .context("cannot run `go`: install Go (https://go.dev/dl) or set FETH_COMETBFT to a cometbft binary")?;
    if !status.success() {
        bail!("`go install {target}` failed ({status}); see its output above");
    }
    Ok(())
}

/// The version a CometBFT binary reports (`0.38.17`), if it runs.
pub(crate) fn installed_version(path: &Path) -> Option<String> {
    let out = Command::new(path).arg("version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The abcid binary: `$FETH_ABCID`, else next to this executable (or one
/// folder up, for test binaries in `target/*/deps`), else on `PATH`.
pub fn abcid() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("FETH_ABCID") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().context("cannot locate the running executable")?;
    for dir in exe.ancestors().skip(1).take(2) {
        let candidate = dir.join("abcid");
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("abcid");
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    bail!("cannot find the abcid binary: build it with `cargo build -p abcid` or set FETH_ABCID")
}

/// Whether the abcid binary `abcid` has the option `flag` (`--metrics`):
/// an older build, run by `feth compare --build-a`, may not.
pub fn abcid_has_flag(abcid: &Path, flag: &str) -> bool {
    abcid_help(abcid)
        .split_whitespace()
        .any(|word| word == flag)
}

/// Whether `abcid --abci` takes `unix://PATH` (builds before it did take a
/// TCP address only), given its `--help`.
pub(crate) fn takes_unix_abci(help: &str) -> bool {
    help.contains("unix://PATH")
}

/// What `abcid --help` prints (nothing when it cannot run).
pub(crate) fn abcid_help(abcid: &Path) -> String {
    Command::new(abcid)
        .arg("--help")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default()
}

/// The abcid binary of a build given as a path: the binary itself, or a
/// folder holding it (`DIR/abcid`, or a checkout's `DIR/target/release/abcid`).
pub fn build(path: &Path) -> Result<PathBuf> {
    let candidates = [
        path.to_path_buf(),
        path.join("abcid"),
        path.join("target").join("release").join("abcid"),
    ];
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .with_context(|| {
            format!(
                "no abcid binary at {}: give the binary, a folder holding `abcid`, or a checkout built with `cargo build --release -p abcid`",
                path.display()
            )
        })
}

/// The pinned toxiproxy version (installed by `scripts/setup.sh` too).
pub(crate) const TOXIPROXY_VERSION: &str = "v2.12.0";

/// The Go module path of toxiproxy's server command.
const TOXIPROXY_MODULE: &str = "github.com/Shopify/toxiproxy/v2/cmd/server";

/// The toxiproxy server to run between devnet nodes: `$FETH_TOXIPROXY` when
/// set, else `<tools>/bin/toxiproxy-server` when its stamp file
/// (`.toxiproxy-server.version`: a `go install`ed build reports no version
/// of its own) names the pinned version, installed there first otherwise.
pub fn toxiproxy(install: bool) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("FETH_TOXIPROXY") {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!(
                "FETH_TOXIPROXY points to {}, which is not a file",
                path.display()
            );
        }
        return Ok(path);
    }
    let bin = tools_dir().join("bin");
    let path = bin.join(super::toxiproxy::SERVER_NAME);
    let stamp = bin.join(".toxiproxy-server.version");
    let stamped = std::fs::read_to_string(&stamp).unwrap_or_default();
    if path.is_file() && stamped.trim() == TOXIPROXY_VERSION {
        return Ok(path);
    }
    if !install {
        bail!(
            "toxiproxy {TOXIPROXY_VERSION} is not installed at {}; run `bash scripts/setup.sh` (needs Go)",
            path.display()
        );
    }
    std::fs::create_dir_all(&bin).with_context(|| format!("cannot create {}", bin.display()))?;
    let tmp = tempfile::tempdir().context("cannot create a temporary folder")?;
    let target = format!("{TOXIPROXY_MODULE}@{TOXIPROXY_VERSION}");
    eprintln!(
        "installing toxiproxy into {} (go install {target})",
        bin.display()
    );
    let status = Command::new("go")
        .args(["install", &target])
        .env("GOBIN", tmp.path())
        .status()
        .context("cannot run `go`: install Go (https://go.dev/dl) or set FETH_TOXIPROXY to a toxiproxy-server binary")?;
    if !status.success() {
        bail!("`go install {target}` failed ({status}); see its output above");
    }
    std::fs::copy(tmp.path().join("server"), &path)
        .with_context(|| format!("cannot copy toxiproxy's server to {}", path.display()))?;
    std::fs::write(&stamp, format!("{TOXIPROXY_VERSION}\n"))
        .with_context(|| format!("cannot write {}", stamp.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_installs_the_pinned_toxiproxy() {
        let setup = include_str!("../../scripts/setup.sh");
        assert!(setup.contains(&format!("toxi_version={TOXIPROXY_VERSION}\n")));
    }
}
