//! The orchestrator files in `deploy/` run the agents this feth expects: the
//! Kubernetes Job template, rendered for shard I of N, runs `--shard I/N`
//! with shard I's own keys Secret and nothing else; the compose file runs
//! one `--shard i/N` per agent, each mounting its own shard file; with every
//! variable filled in, each agent's command line parses as `feth`'s, the
//! shards cover every key exactly once, every report has its own file, and
//! the merge reads them all. The shard files `feth keys split` writes are
//! what those agents load. No cluster is started: the files are read as text
//! (no YAML parser in the dependencies), the arithmetic checked with feth's
//! own types.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use clap::Parser;
use feth::cmd::Cli;
use feth::shard::Shard;

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

fn unquote(v: &str) -> String {
    v.trim().trim_matches('"').to_string()
}

/// The values of every `key: value` line.
fn scalars(text: &str, key: &str) -> Vec<String> {
    let prefix = format!("{key}:");
    text.lines()
        .filter_map(|l| l.trim().strip_prefix(&prefix))
        .map(unquote)
        .collect()
}

fn scalar(text: &str, key: &str) -> String {
    let v = scalars(text, key);
    assert_eq!(v.len(), 1, "one {key} line");
    v[0].clone()
}

/// The block list under the first `key:` line (`- item` lines below it).
fn block_list(text: &str, key: &str) -> Vec<String> {
    let mut lines = text.lines().skip_while(|l| l.trim() != format!("{key}:"));
    lines.next().unwrap_or_else(|| panic!("no {key}: list"));
    lines
        .map_while(|l| l.trim().strip_prefix("- "))
        .map(unquote)
        .collect()
}

/// `$(NAME)` replaced by `vars[NAME]`; a reference to an undefined name fails.
fn expand(arg: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = arg.to_string();
    while let Some(at) = out.find("$(") {
        let end = at + out[at..].find(')').expect("closed $(…)");
        let name = &out[at + 2..end];
        let value = vars
            .get(name)
            .unwrap_or_else(|| panic!("$({name}) is not defined"));
        out.replace_range(at..=end, value);
    }
    out
}

/// Parses `args` as feth's command line; returns the shard and `--out` file.
fn agent(args: &[String]) -> (Shard, String) {
    Cli::try_parse_from(std::iter::once("feth".to_string()).chain(args.iter().cloned()))
        .unwrap_or_else(|e| panic!("{args:?} is not a feth command line: {e}"));
    let after = |flag: &str| {
        let i = args
            .iter()
            .position(|a| a == flag)
            .unwrap_or_else(|| panic!("no {flag}"));
        args[i + 1].clone()
    };
    (after("--shard").parse().unwrap(), after("--out"))
}

/// Shards `0..n` of one `n`, each once, cover every key of a file exactly once.
fn cover_every_key_once(shards: &[Shard], n: usize) {
    let indices: BTreeSet<usize> = shards.iter().map(|s| s.index).collect();
    assert_eq!(indices, (0..n).collect(), "{shards:?}");
    assert!(shards.iter().all(|s| s.count == n), "{shards:?}");
    for keys in [n, 1000, 1_000_003] {
        let mut covered = 0;
        let mut next = 0;
        let mut ranges: Vec<_> = shards.iter().map(|s| s.range(keys).unwrap()).collect();
        ranges.sort_by_key(|r| r.start);
        for r in ranges {
            assert_eq!(r.start, next, "{keys} keys: a gap or an overlap at {next}");
            covered += r.len();
            next = r.end;
        }
        assert_eq!(covered, keys);
    }
}

/// The Job template rendered for shard `index` of `count`.
fn render(template: &str, index: usize, count: usize) -> String {
    template
        .replace("@SHARD@", &index.to_string())
        .replace("@SHARDS@", &count.to_string())
}

#[test]
fn the_kubernetes_jobs_give_each_pod_its_shard_and_only_its_keys() {
    let template = read("deploy/k8s/feth-load-job.yaml");
    let n = 4;
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    for key in [
        "FETH_START_AT",
        "FETH_RATE",
        "FETH_DURATION",
        "FETH_NETWORK",
    ] {
        vars.insert(key.into(), scalar(&template, key));
    }
    let (mut shards, mut outs, mut names) = (Vec::new(), BTreeSet::new(), BTreeSet::new());
    for i in 0..n {
        let job = render(&template, i, n);
        assert!(!job.contains('@'), "every placeholder filled: {job}");
        let name = scalars(&job, "name")
            .into_iter()
            .find(|v| v.starts_with("feth-load-"))
            .expect("the Job's name");
        assert!(names.insert(name), "each shard's Job has its own name");
        assert_eq!(
            scalar(&job, "secretName"),
            format!("feth-keys-{i}"),
            "shard {i} mounts its own keys Secret, and only it"
        );
        let mode = scalar(&job, "defaultMode");
        assert!(
            ["0400", "0600"].contains(&mode.as_str()),
            "the keys Secret is private: {mode}"
        );
        let args: Vec<String> = block_list(&job, "args")
            .iter()
            .map(|a| expand(a, &vars))
            .collect();
        let (shard, out) = agent(&args);
        assert_eq!(shard, Shard { index: i, count: n });
        assert!(outs.insert(out), "each pod writes its own report");
        shards.push(shard);
    }
    cover_every_key_once(&shards, n);

    // The merge job reads every pod's report: its glob is their pattern.
    let merge = read("deploy/k8s/feth-merge-job.yaml");
    let args = block_list(&template, "args");
    let out_at = args.iter().position(|a| a == "--out").unwrap();
    let glob = args[out_at + 1].replace("@SHARD@", "*");
    let line = block_list(&merge, "args").join(" ");
    assert!(
        line.contains(&format!("feth merge {glob} ")),
        "{line} reads {glob}"
    );
}

/// `feth keys split` writes shard files that hold their shard's keys and
/// nothing else (no other key, no seed), mode 0600; an agent loads one as
/// its shard, and refuses one that is another shard's.
#[tokio::test]
async fn split_keys_files_hold_one_shard_each_and_agents_load_them_as_it() {
    use std::os::unix::fs::PermissionsExt;

    use feth::accounts::{KeySet, KeySource};
    use feth::cmd::args::load_shard;

    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("feth-keys.txt");
    let seed = alloy_primitives::B256::repeat_byte(0x5e);
    let mut keys = KeySet::new(KeySource::Seed(seed));
    keys.extend_to(10);
    keys.save(&whole).unwrap();
    let out = dir.path().join("shards");
    let split = |out: &Path| {
        let args = ["feth", "keys", "split", "--shards", "3", "--keys"];
        let args = args.iter().map(|a| a.to_string()).chain([
            whole.display().to_string(),
            "--out-dir".into(),
            out.display().to_string(),
        ]);
        Cli::try_parse_from(args).unwrap().run()
    };
    split(&out).await.expect("split");
    let mut loaded = Vec::new();
    for i in 0..3 {
        let file = out.join(format!("shard-{i}.txt"));
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", file.display());
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains(&hex::encode(seed)),
            "no seed in a shard file"
        );
        let shard = Shard { index: i, count: 3 };
        let (set, record) = load_shard(&file, Some(shard), None).unwrap();
        let range = shard.range(10).unwrap();
        assert_eq!(set.addresses, keys.addresses[range.clone()], "shard {i}");
        assert_eq!(set.offset, range.start, "keys keep their index in the file");
        assert_eq!(record.map(|r| (r.shard, r.keys_in_file)), Some((shard, 10)));
        // Without --shard, the file is still its shard.
        assert_eq!(load_shard(&file, None, None).unwrap().1, record);
        loaded.extend(set.addresses);
    }
    assert_eq!(loaded, keys.addresses, "the shards hold every key once");
    let wrong = load_shard(
        &out.join("shard-0.txt"),
        Some(Shard { index: 1, count: 3 }),
        None,
    );
    let wrong = wrong.expect_err("another shard's file").to_string();
    assert!(
        wrong.contains("holds shard 0/3") && wrong.contains("not --shard 1/3"),
        "{wrong}"
    );
    // Nothing is overwritten: a second split into the same folder is refused.
    let again = split(&out)
        .await
        .expect_err("the shard files exist")
        .to_string();
    assert!(again.contains("shard-0.txt exists"), "{again}");
}

/// The lines of the container (or init container) named `name`: from its
/// `- name:` line to the next entry at the same indentation or less.
fn container<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let mut lines = text
        .lines()
        .skip_while(|l| l.trim() != format!("- name: {name}"));
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("no container {name}"));
    let indent = first.len() - first.trim_start().len();
    std::iter::once(first)
        .chain(lines.take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > indent))
        .collect()
}

/// Every job runs as a non-root user, with no service-account token, a
/// read-only root filesystem and resource limits in each container; the
/// agent never mounts the keys Secret (the init container hands it a 0600
/// copy in memory).
#[test]
fn the_kubernetes_pods_run_locked_down() {
    let load = read("deploy/k8s/feth-load-job.yaml");
    let merge = read("deploy/k8s/feth-merge-job.yaml");
    for (job, containers) in [(&load, &["feth", "copy-keys"][..]), (&merge, &["feth"][..])] {
        assert_eq!(scalar(job, "automountServiceAccountToken"), "false");
        assert_eq!(scalar(job, "runAsNonRoot"), "true");
        let user: u32 = scalar(job, "runAsUser").parse().unwrap();
        assert_ne!(user, 0, "not root");
        for name in containers {
            let c = container(job, name).join("\n");
            assert_eq!(scalar(&c, "readOnlyRootFilesystem"), "true", "{name}");
            assert_eq!(scalar(&c, "allowPrivilegeEscalation"), "false", "{name}");
            let limits = c
                .split("limits:")
                .nth(1)
                .unwrap_or_else(|| panic!("{name}: no limits"));
            assert_eq!(scalars(limits, "cpu").len(), 1, "{name}: a CPU limit");
            assert_eq!(scalars(limits, "memory").len(), 1, "{name}: a memory limit");
        }
    }
    let secret_volume = load
        .split("secret:")
        .next()
        .and_then(|before| before.lines().map(str::trim).rfind(|l| !l.is_empty()))
        .and_then(|l| l.strip_prefix("- name: "))
        .expect("the volume holding the Secret")
        .to_string();
    let agent = container(&load, "feth").join("\n");
    assert!(
        !agent.contains(&format!("name: {secret_volume}")),
        "the agent does not mount the Secret"
    );
    assert!(container(&load, "copy-keys")
        .iter()
        .any(|l| l.trim() == format!("- name: {secret_volume}")));
    let copy = container(&load, "copy-keys").join("\n");
    assert!(copy.contains(r#""-m", "0600""#), "a private copy: {copy}");
    let keys_volume = load.split("- name: keys\n          emptyDir:").nth(1);
    assert!(
        keys_volume.is_some_and(|v| v.contains("medium: Memory")),
        "the copy lives in memory"
    );
}

#[test]
fn the_compose_file_runs_one_agent_per_shard() {
    let compose = read("deploy/compose/docker-compose.yml");
    let mut shards = Vec::new();
    let mut outs = Vec::new();
    let mut merge = None;
    for line in compose.lines().map(str::trim) {
        let Some(list) = line.strip_prefix("command: [") else {
            continue;
        };
        let args: Vec<String> = list
            .trim_end_matches(']')
            .split(", ")
            .map(|a| {
                unquote(a).replace(
                    "${FETH_START_AT:?set FETH_START_AT}",
                    "2026-11-25T16:00:00Z",
                )
            })
            .collect();
        if args[0] == "merge" {
            merge = Some(args);
            continue;
        }
        let (shard, out) = agent(&args);
        shards.push(shard);
        outs.push(out);
    }
    let n = shards.len();
    assert!(n >= 2, "several agents");
    cover_every_key_once(&shards, n);
    // Each agent mounts its own shard file; no service mounts the whole file.
    for shard in &shards {
        let mount = format!(
            "- ./feth-keys.shards/shard-{}.txt:/keys/feth-keys.txt:ro",
            shard.index
        );
        assert_eq!(compose.matches(&mount).count(), 1, "{mount}");
    }
    assert!(
        !compose.contains("- ./feth-keys.txt:"),
        "the whole keys file is mounted"
    );
    let merge = merge.expect("a merge service");
    Cli::try_parse_from(std::iter::once("feth".to_string()).chain(merge.iter().cloned())).unwrap();
    let read: BTreeSet<&String> = merge
        .iter()
        .filter(|a| a.starts_with("/results/shard-"))
        .collect();
    assert_eq!(
        read,
        outs.iter().collect(),
        "the merge reads every agent's report"
    );
}

/// No key file or funding journal enters an image's build context.
#[test]
fn the_docker_build_context_leaves_out_keys_and_journals() {
    let ignore = read(".dockerignore");
    let patterns: BTreeSet<&str> = ignore
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    for pattern in [
        "**/*.key",
        "**/*keys*.txt",
        "**/*keys.shards/",
        "**/*.funding.json",
        "**/*.refill.json",
    ] {
        assert!(
            patterns.contains(pattern),
            "{pattern} missing: {patterns:?}"
        );
    }
}
