//! The flags the documentation names exist: every `--flag` written after a
//! `feth SUBCOMMAND` (in a code span or a line of a code block) is one of
//! that subcommand's flags in `feth`'s clap command tree, and every flag of
//! an `abcid` command, or a bare flag in abcid's own README, is one that
//! `abcid --help` lists. A renamed or removed flag fails here, not in a
//! reader's terminal.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use feth::cmd::Cli;

/// The documents checked, from the workspace root.
const DOCS: &[&str] = &[
    "README.md",
    "docs/GUIDE.md",
    "docs/MEASUREMENTS.md",
    "docs/ARCHITECTURE.md",
    "abci-patches/README.md",
];

/// The README whose bare flags (a code span that starts with `--`) are abcid's.
const ABCID_README: &str = "abci-patches/README.md";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// The code spans of `markdown` (a span may wrap over a line end) and the
/// lines of its code blocks (a line ending in `\` joined with the next).
fn snippets(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut prose = String::new();
    let mut block: Option<String> = None;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            if block.take().is_none() {
                block = Some(String::new());
            }
            continue;
        }
        match block.as_mut() {
            Some(command) => {
                command.push_str(line.trim_end_matches('\\'));
                command.push(' ');
                if !line.ends_with('\\') {
                    out.push(std::mem::take(command));
                }
            }
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    let spans = prose.split('`').skip(1).step_by(2);
    out.extend(spans.map(|s| s.replace('\n', " ")));
    out
}

/// A flag's name as written (`--rate`, `--rate=5`, `--rate,`): `rate`.
fn flag_name(token: &str) -> Option<&str> {
    let name = token.strip_prefix("--")?;
    let end = name
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.'))
        .unwrap_or(name.len());
    Some(&name[..end]).filter(|n| !n.is_empty())
}

/// Where a command written in a snippet ends: a pipe, a redirection, a
/// sequence or a comment.
fn ends_command(token: &str) -> bool {
    ["|", "||", "&&", ";", "#"].contains(&token)
        || token.starts_with('>')
        || token.starts_with("2>")
}

/// Whether `token` runs the program `name` (`feth`, `"$feth"`,
/// `target/release/feth`).
fn runs(token: &str, name: &str) -> bool {
    let t = token.trim_matches(['(', ')', '"', '$', '{', '}']);
    !t.contains('=') && (t == name || t.ends_with(&format!("/{name}")))
}

/// Whether the token at `i` is where a command begins: the first, or after
/// a separator or `VAR=value` settings (not `-p feth` or `--build-b …/abcid`,
/// which name the program without running it).
fn begins_command(tokens: &[&str], i: usize) -> bool {
    let settings = tokens[..i]
        .iter()
        .rev()
        .take_while(|t| {
            t.split_once('=')
                .is_some_and(|(var, _)| var.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        })
        .count();
    let before = i - settings;
    tokens[i].starts_with('(') || before == 0 || ends_command(tokens[before - 1])
}

/// Whether `token` stands outside a quoted argument (`--build 'cargo build
/// --release'` is one value, not feth's `--release`); `quote` carries the
/// open quote from token to token.
fn outside_quotes(token: &str, quote: &mut Option<char>) -> bool {
    if let Some(q) = *quote {
        if token.ends_with(q) {
            *quote = None;
        }
        return false;
    }
    let opened = ['\'', '"']
        .into_iter()
        .find(|q| token.matches(*q).count() % 2 == 1);
    if let Some(q) = opened {
        *quote = Some(q);
    }
    true
}

/// `feth`'s command tree, with global flags copied to every subcommand.
fn feth_tree() -> clap::Command {
    let mut command = Cli::command();
    command.build();
    command
}

/// Whether `command` takes the long flag `--name`.
fn takes(command: &clap::Command, name: &str) -> bool {
    name == "help"
        || name == "version"
        || command.get_arguments().any(|a| {
            a.get_long() == Some(name) || a.get_all_aliases().is_some_and(|x| x.contains(&name))
        })
}

/// The flags written after each `feth SUBCOMMAND` in `snippet` that the
/// subcommand does not take, each with the subcommand's path
/// (`feth devnet up --nothing`).
fn unknown_feth_flags(snippet: &str) -> Vec<String> {
    let tokens: Vec<&str> = snippet.split_whitespace().collect();
    let mut unknown = Vec::new();
    let starts =
        (0..tokens.len()).filter(|&i| runs(tokens[i], "feth") && begins_command(&tokens, i));
    for start in starts {
        let mut command = feth_tree();
        let mut path = vec!["feth".to_string()];
        let mut rest = tokens[start + 1..].iter().peekable();
        while let Some(sub) = rest
            .peek()
            .and_then(|t| command.find_subcommand(t).cloned())
        {
            path.push(sub.get_name().to_string());
            command = sub;
            rest.next();
        }
        let mut quote = None;
        let written = rest
            .filter(|t| outside_quotes(t, &mut quote))
            .take_while(|t| !ends_command(t));
        for name in written.filter_map(|t| flag_name(t)) {
            if !takes(&command, name) {
                unknown.push(format!("{} --{name}", path.join(" ")));
            }
        }
    }
    unknown
}

/// The long flags `abcid --help` lists.
fn abcid_flags() -> BTreeSet<String> {
    let abcid = feth::devnet::tools::abcid().expect("the abcid binary (cargo build -p abcid)");
    let out = std::process::Command::new(&abcid)
        .arg("--help")
        .output()
        .expect("abcid runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix("-h, ")
                .or(l.strip_prefix("-V, "))
                .unwrap_or(l);
            l.starts_with("--")
                .then(|| flag_name(l))
                .flatten()
                .map(str::to_string)
        })
        .collect()
}

/// The flags after `abcid` in `snippet`, and in abcid's README those of a
/// snippet that is a bare flag, missing from `abcid --help`. A dotted name
/// (`--rpc.gascap`) is geth's, named for comparison: clap's are kebab-case.
fn unknown_abcid_flags(snippet: &str, bare: bool, known: &BTreeSet<String>) -> Vec<String> {
    let tokens: Vec<&str> = snippet.split_whitespace().collect();
    let starts: Vec<usize> = match tokens.first() {
        Some(t) if bare && t.starts_with("--") => vec![0],
        _ => (0..tokens.len())
            .filter(|&i| runs(tokens[i], "abcid") && begins_command(&tokens, i))
            .map(|i| i + 1)
            .collect(),
    };
    let mut unknown = Vec::new();
    for start in starts {
        let written = tokens[start..].iter().take_while(|t| !ends_command(t));
        for name in written.filter_map(|t| flag_name(t)) {
            if !name.contains('.') && !known.contains(name) {
                unknown.push(format!("abcid --{name}"));
            }
        }
    }
    unknown
}

#[test]
fn every_flag_the_docs_name_exists() {
    let abcid = abcid_flags();
    assert!(abcid.contains("patches"), "{abcid:?}");
    let mut unknown = Vec::new();
    let mut checked = 0;
    for doc in DOCS {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        for snippet in snippets(&text) {
            checked += usize::from(snippet.contains("feth ") && snippet.contains("--"));
            let missing = unknown_feth_flags(&snippet)
                .into_iter()
                .chain(unknown_abcid_flags(&snippet, *doc == ABCID_README, &abcid));
            unknown.extend(missing.map(|m| format!("{doc}: {m} (in `{}`)", snippet.trim())));
        }
    }
    assert!(
        checked > 50,
        "only {checked} feth commands with flags found"
    );
    assert!(
        unknown.is_empty(),
        "flags no --help lists:\n{}",
        unknown.join("\n")
    );
}

#[test]
fn a_flag_is_looked_up_in_its_own_subcommand() {
    assert!(unknown_feth_flags("feth devnet up --fresh --timeout-commit 500ms").is_empty());
    assert!(unknown_feth_flags("cargo test -p feth --test it").is_empty());
    assert_eq!(
        unknown_feth_flags("(cd d && FETH_LOG=info \"$feth\" profiler --nothing)"),
        ["feth profiler --nothing"]
    );
    assert_eq!(
        unknown_feth_flags("feth devnet status --fresh # --nothing"),
        ["feth devnet status --fresh"]
    );
    assert_eq!(
        unknown_feth_flags("feth load --keys k.txt --no-such-flag=3 > run.json --json"),
        ["feth load --no-such-flag"]
    );
    assert_eq!(
        unknown_feth_flags("feth bisect --build 'cargo build --release | x' --nothing --json"),
        ["feth bisect --nothing"],
        "a quoted value's flags are its own"
    );
    let known: BTreeSet<String> = ["patches".to_string()].into();
    assert!(unknown_abcid_flags("--rpc.gascap", true, &known).is_empty());
    assert_eq!(
        unknown_abcid_flags("target/release/abcid --patches all --home x", false, &known),
        ["abcid --home"]
    );
    assert!(unknown_abcid_flags("--home", false, &known).is_empty());
    let named = "FETH_ABCID=target/release/abcid feth compare --ladder all";
    assert!(unknown_abcid_flags(named, false, &known).is_empty());
    assert!(unknown_abcid_flags("cargo run -p abcid --example x", false, &known).is_empty());
}
