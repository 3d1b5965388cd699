//! The command line's own behaviour, through the binary: a closed pipe ends a printing command
//! quietly, `run` without FILE runs the built-in quickstart, and a file of the wrong kind or
//! one only a cluster can run is refused before anything starts (exit 2), in --dry-run too.

mod local_common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use local_common::{exe, text};

fn benchmatrix(dir: &Path, args: &[&str]) -> Output {
    Command::new(exe())
        .current_dir(dir)
        .args(args)
        .output()
        .expect("start benchmatrix")
}

fn repo(path: &str) -> String {
    format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"))
}

/// Its reader gone before it prints (the read end closed at once), a printing command must
/// not panic: exit 141 as SIGPIPE would give, no message. It was exit 101 with "failed
/// printing to stdout: Broken pipe".
#[test]
fn a_printing_command_ends_quietly_when_its_pipe_closes() {
    let dir = tempfile::tempdir().unwrap();
    let base = repo("operator/tests/fixtures/compare/base.yaml");
    let regression = repo("operator/tests/fixtures/compare/new-regression.yaml");
    for args in [
        vec!["crd"],
        vec!["dashboard"],
        vec!["compare", base.as_str(), regression.as_str()],
        vec!["run", "--dry-run"],
    ] {
        let mut child = Command::new(exe())
            .current_dir(dir.path())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_ne!(o.status.code(), Some(101), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

#[test]
fn run_without_a_file_runs_the_built_in_quickstart() {
    let dir = tempfile::tempdir().unwrap();
    let o = benchmatrix(dir.path(), &["run", "--dry-run"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.contains("built-in quickstart"))
            .count(),
        1,
        "{t}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("cells: 4"), "{t}");
    assert!(stdout.contains("  pool-x2: 2 replica(s) x cpu 1"), "{t}");
    assert!(stdout.contains("CPU limits: "), "{t}");
    // Nothing left behind: not even the default --out.
    assert!(!dir.path().join("benchmatrix-out").exists(), "{t}");
    let help = benchmatrix(dir.path(), &["run", "--help"]);
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("the quickstart sample built into"),
        "{}",
        text(&help)
    );
}

/// `size` on a BenchmarkRun without spec.sizing ran the whole matrix and printed no answer.
#[test]
fn size_refuses_a_file_it_cannot_answer_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let quickstart = repo("manifests/samples/quickstart.yaml");
    for extra in [&[][..], &["--dry-run"][..]] {
        let mut args = vec!["size", quickstart.as_str()];
        args.extend(extra);
        let o = benchmatrix(dir.path(), &args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(
            t.contains(
                "is a BenchmarkRun without spec.sizing; expected a BenchmarkRun with spec.sizing"
            ),
            "{t}"
        );
        assert!(t.contains("use `benchmatrix run FILE`"), "{t}");
        assert!(!dir.path().join("benchmatrix-out").exists(), "{t}");
    }
    std::fs::write(dir.path().join("d.yaml"), "kind: Deployment\nspec: {}\n").unwrap();
    let o = benchmatrix(dir.path(), &["size", "d.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("d.yaml is a Deployment, not a BenchmarkRun; expected"),
        "{}",
        text(&o)
    );
    let o = benchmatrix(dir.path(), &["compare", quickstart.as_str()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("compare expected the results of a finished run"),
        "{}",
        text(&o)
    );
}

/// A file whose target is an image (no command) ran benchmatrix's own target instead.
#[test]
fn a_cluster_only_target_is_refused_locally_in_a_dry_run_too() {
    let dir = tempfile::tempdir().unwrap();
    let sample = repo("manifests/samples/node-express.yaml");
    for dry in [true, false] {
        let mut args = vec!["run", sample.as_str()];
        if dry {
            args.push("--dry-run");
        }
        let o = benchmatrix(dir.path(), &args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(t.contains("spec.target.image: names the image \"benchmatrix-node-express:0.1.0\" but no spec.target.command"), "{t}");
        assert!(t.contains("kubectl benchmatrix run FILE"), "{t}");
        assert!(!dir.path().join("benchmatrix-out").exists(), "{t}");
    }
}

/// The dry run refuses what the run would refuse before it starts.
#[test]
fn a_dry_run_checks_the_outputs_and_the_target_command() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a-file"), "x").unwrap();
    let quickstart = repo("manifests/samples/quickstart.yaml");
    for (flag, value) in [
        ("--out", "a-file"),
        ("--out", "a-file/out"),
        ("--junit", "a-file/j.xml"),
    ] {
        let o = benchmatrix(dir.path(), &["run", &quickstart, "--dry-run", flag, value]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {t}");
        assert!(t.contains(&format!("{flag} {value}")), "{t}");
    }
    let missing = std::fs::read_to_string(&quickstart).unwrap().replacen(
        "spec:\n",
        "spec:\n  target:\n    command: [no-such-server-x, app.js]\n",
        1,
    );
    std::fs::write(dir.path().join("m.yaml"), missing).unwrap();
    let o = benchmatrix(dir.path(), &["run", "m.yaml", "--dry-run"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("spec.target.command[0]: \"no-such-server-x\" is not on PATH"),
        "{t}"
    );
    assert!(t.contains("(line "), "{t}");
    let big =
        std::fs::read_to_string(&quickstart)
            .unwrap()
            .replacen("cpu: \"2\"", "cpu: \"512\"", 1);
    std::fs::write(dir.path().join("big.yaml"), big).unwrap();
    let o = benchmatrix(dir.path(), &["run", "big.yaml", "--dry-run"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains(
            "warning: spec.configurations[0].cpu: 512 CPUs per replica, but this machine has"
        ),
        "{t}"
    );
    assert!(!dir.path().join("benchmatrix-out").exists(), "{t}");
}
