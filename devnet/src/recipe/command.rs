//! Running a recipe's one-shot commands (init, finish, the key export):
//! bounded in time, their output kept for the error when one fails.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// How long one command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// A command with its placeholders expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Expanded {
    /// Where in the recipe it is (`init[2]`).
    pub place: String,
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its standard input.
    pub stdin: Option<String>,
    /// Whether its output may hold a secret.
    pub secret: bool,
}

impl Expanded {
    /// Runs it in `cwd`; returns its standard output. An error names the
    /// command, its exit and (unless secret) the end of its output.
    pub fn run(&self, cwd: &Path) -> Result<String> {
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("{}: cannot run {}", self.place, self.program.display()))?;
        if let Some(mut input) = child.stdin.take() {
            if let Some(text) = &self.stdin {
                // A command that reads nothing closes its end: not an error.
                let _ = input.write_all(text.as_bytes());
            }
        }
        let (out, err) = (child.stdout.take(), child.stderr.take());
        let readers = (read_all(out), read_all(err));
        let status = wait(&mut child, COMMAND_TIMEOUT);
        let (out, err) = (join(readers.0), join(readers.1));
        let status = match status {
            Some(s) => s,
            None => bail!(
                "{}: `{}` ran longer than {} s and was stopped",
                self.place,
                self.line(),
                COMMAND_TIMEOUT.as_secs()
            ),
        };
        if !status.success() {
            let said = match self.secret {
                true => "(its output may hold a secret: not shown)".to_string(),
                false => tail(&format!("{err}\n{out}"), 15),
            };
            bail!(
                "{}: `{}` failed ({status}):\n{said}\nFix the recipe's command or the binary.",
                self.place,
                self.line()
            );
        }
        Ok(out)
    }

    /// The command line as shown in errors: the program's file name and its
    /// arguments, unless secret (its input is never shown).
    fn line(&self) -> String {
        let name = self
            .program
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        if self.secret {
            return format!("{name} …");
        }
        std::iter::once(name.to_string())
            .chain(self.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn read_all<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    })
}

fn join(handle: std::thread::JoinHandle<String>) -> String {
    handle.join().unwrap_or_default()
}

/// Waits for `child` up to `limit`; kills it after.
fn wait(child: &mut std::process::Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// `program` as a path: as given when it has a `/`, else found on `PATH`.
pub(super) fn resolve_program(program: &str) -> Result<PathBuf> {
    if program.contains('/') {
        return Ok(PathBuf::from(program));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .with_context(|| format!("`{program}` is not on PATH; give its path in the recipe"))
}

/// Checks that `path` is an executable file; `what` names it in the error.
pub(super) fn check_executable(path: &Path, what: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path)
        .with_context(|| format!("{what}: {} does not exist", path.display()))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        bail!("{what}: {} is not an executable file", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, secret: bool) -> Expanded {
        Expanded {
            place: "init[0]".into(),
            program: PathBuf::from("/bin/sh"),
            args: vec!["-c".into(), script.into()],
            stdin: Some("words on stdin\n".into()),
            secret,
        }
    }

    #[test]
    fn a_command_gets_its_input_and_returns_its_output() {
        let out = sh("cat; echo done", false).run(Path::new("/")).unwrap();
        assert_eq!(out, "words on stdin\ndone\n");
    }

    #[test]
    fn a_failing_command_is_named_with_its_output_unless_secret() {
        let err = sh("echo oops >&2; exit 3", false)
            .run(Path::new("/"))
            .unwrap_err();
        let err = format!("{err:#}");
        assert!(err.starts_with("init[0]: `sh -c echo oops"), "{err}");
        assert!(
            err.contains("exit status: 3") && err.contains("oops"),
            "{err}"
        );
        let err = sh("echo mnemonic words >&2; exit 1", true)
            .run(Path::new("/"))
            .unwrap_err();
        let err = format!("{err:#}");
        assert!(
            !err.contains("mnemonic words") && err.contains("not shown"),
            "{err}"
        );
        assert!(err.starts_with("init[0]: `sh …` failed"), "{err}");
    }

    #[test]
    fn programs_are_found_on_path_or_refused() {
        assert!(resolve_program("sh").unwrap().is_file());
        let err = resolve_program("no-such-program-here").unwrap_err();
        assert!(err.to_string().contains("not on PATH"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "data").unwrap();
        let err = check_executable(&plain, "--binary").unwrap_err();
        assert!(err.to_string().contains("not an executable file"), "{err}");
        let err = check_executable(Path::new("/no/such"), "--binary").unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
    }
}
