//! The `Jenkinsfile` compiles with Debian's `groovy` (installed by
//! `scripts/setup.sh --test`): a syntax error in the CI pipeline shows up in
//! `make test`, not on the CI server. Compiled, not run: the pipeline DSL's
//! steps only exist inside Jenkins.

use std::path::Path;
use std::process::{Command, Output};

/// Compiles the Groovy script at `path` without running it.
fn compile(path: &Path) -> Output {
    Command::new("groovy")
        .args(["-e", "new GroovyShell().parse(new File(args[0]))"])
        .arg(path)
        .output()
        .expect(
            "groovy runs (bash scripts/setup.sh --test installs groovy and default-jre-headless)",
        )
}

#[test]
fn the_jenkinsfile_compiles_and_a_broken_copy_does_not() {
    let jenkinsfile = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Jenkinsfile");
    let out = compile(&jenkinsfile);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Jenkinsfile does not compile:\n{stderr}"
    );

    // The same file without its last closing brace must fail, naming the problem.
    let text = std::fs::read_to_string(&jenkinsfile).unwrap();
    let cut = text.rfind('}').expect("the Jenkinsfile ends with a brace");
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("Jenkinsfile");
    std::fs::write(&broken, &text[..cut]).unwrap();
    let out = compile(&broken);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a broken copy compiled:\n{stderr}");
    assert!(
        stderr.contains("startup failed") && stderr.contains("expecting '}'"),
        "{stderr}"
    );
}
