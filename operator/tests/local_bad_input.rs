//! `benchmatrix run` refuses a file that cannot run before anything starts: exit code 2, the
//! field path (and line where known) on stderr, no output folder, no cgroup, no process.

mod local_common;

use benchmatrix::fixtures::rate;
use benchmatrix::resource::{Configuration, Mode};
use local_common::{quickstart, run, text};

/// A good file, written out: the tests that break its text (syntax, unknown fields, types,
/// durations no spec can hold) edit it where they name. The tests of values out of range build
/// their run from [`two_cells`] instead.
const GOOD: &str = r#"apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata:
  name: t
spec:
  configurations:
    - name: single-x1
      mode: single
      replicas: 1
      cpu: "1"
    - name: pool-x1
      mode: pool
      replicas: 1
      cpu: "1"
  workload:
    endpoints:
      - name: fast
        path: /fast
      - name: slow
        path: /slow
    warmup: 1s
    phases:
      - name: fast-only
        duration: 2s
        load:
          - endpoint: fast
            connections: 2
      - name: mixed
        duration: 2s
        load:
          - endpoint: fast
            connections: 2
          - endpoint: slow
            connections: 2
"#;

/// The good run, typed: cells single-x1 and pool-x1 through the quickstart's workload.
fn two_cells() -> benchmatrix::resource::BenchmarkRun {
    quickstart("1s", "2s", "2s")
        .with_cell(Configuration::named("single-x1"))
        .with_cell(Configuration::named("pool-x1").mode(Mode::Pool))
}

/// Runs `yaml` and asserts exit 2, that every `needles` is in stderr, and that nothing ran.
fn refused(yaml: &str, needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let (o, out) = run(dir.path(), yaml);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    for n in needles {
        assert!(stderr.contains(n), "stderr lacks {n:?}:\n{t}");
    }
    assert!(
        !out.exists(),
        "nothing may start for a bad file, yet {} exists",
        out.display()
    );
}

#[test]
fn yaml_syntax_error_names_the_line() {
    let broken = GOOD.replace("  workload:\n", "  workload: [\n");
    refused(&broken, &["YAML syntax error", "line "]);
}

#[test]
fn unknown_field_is_named_by_its_path() {
    let y = GOOD.replace(
        "      replicas: 1\n",
        "      replicas: 1\n      replica: 3\n",
    );
    refused(&y, &["spec.configurations[0].replica", "unknown field"]);
}

#[test]
fn duplicate_configuration_name_is_refused() {
    let y = quickstart("1s", "2s", "2s")
        .with_cell(Configuration::named("same"))
        .with_cell(Configuration::named("same").mode(Mode::Pool));
    refused(&y.to_yaml(), &["spec.configurations[1].name", "duplicate"]);
}

#[test]
fn phase_naming_an_unknown_endpoint_is_refused() {
    let y = GOOD.replace(
        "          - endpoint: slow\n",
        "          - endpoint: slowest\n",
    );
    refused(&y, &["spec.workload.phases[1].load[1].endpoint", "slowest"]);
}

#[test]
fn negative_duration_is_refused_with_its_path() {
    let y = GOOD.replacen("duration: 2s", "duration: -2s", 1);
    assert!(y.contains("-2s"));
    refused(&y, &["spec.workload.phases[0].duration"]);
}

#[test]
fn a_missing_file_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(local_common::exe())
        .args(["run", "/nonexistent/run.yaml", "--out"])
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read"));
}

/// Runs a good file with `--out OUT` and asserts exit 2 with the folder named on stderr and no
/// cgroup made.
fn refused_out(dir: &std::path::Path, out: &std::path::Path) {
    let file = dir.join("run.yaml");
    std::fs::write(&file, GOOD).unwrap();
    let child = std::process::Command::new(local_common::exe())
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("--out") && stderr.contains(&out.display().to_string()),
        "{t}"
    );
    assert!(local_common::leftover_cgroups(pid).is_empty());
}

#[test]
fn out_that_is_a_file_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("taken");
    std::fs::write(&out, "not a folder").unwrap();
    refused_out(dir.path(), &out);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "not a folder");
}

#[test]
fn out_that_cannot_be_created_is_exit_2() {
    // Under a regular file: not even root can make a folder there.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    refused_out(dir.path(), &file.join("sub"));
}

#[test]
fn out_that_is_not_writable_is_exit_2() {
    // /proc exists and is a folder, yet nothing can be written in it, root or not.
    let dir = tempfile::tempdir().unwrap();
    refused_out(dir.path(), std::path::Path::new("/proc"));
}

#[test]
fn replicas_beyond_the_limit_are_refused() {
    let y = quickstart("1s", "2s", "2s").with_cell(Configuration::named("big").replicas(1000));
    refused(&y.to_yaml(), &["spec.configurations[0].replicas", "64"]);
}

#[test]
fn pool_size_beyond_what_the_target_accepts_is_refused() {
    let mut y = two_cells();
    y.spec.configurations[0] = Configuration::named("single-x1").pool_size(2000);
    refused(&y.to_yaml(), &["spec.configurations[0].poolSize", "1024"]);
}

#[test]
fn connections_and_rate_beyond_the_limits_are_refused() {
    let mut y = two_cells();
    y.spec.workload.phases[0].load[0].connections = Some(1_000_000_000);
    refused(
        &y.to_yaml(),
        &["spec.workload.phases[0].load[0].connections", "10000"],
    );
    let mut y = two_cells();
    y.spec.workload.phases[1].load[1] = rate("slow", 1e12);
    refused(
        &y.to_yaml(),
        &["spec.workload.phases[1].load[1].rate", "10000000"],
    );
}

#[test]
fn a_duration_beyond_the_limit_is_refused_naming_it() {
    let y = GOOD.replacen("duration: 2s", "duration: 99999999999h", 1);
    assert!(y.contains("99999999999h"));
    refused(&y, &["spec.workload.phases[0].duration", "8760h"]);
    let y = two_cells().with_warmup("25h");
    refused(&y.to_yaml(), &["spec.workload.warmup", "24h"]);
}

#[test]
fn a_type_error_prints_its_path_once() {
    let y = GOOD.replace("      replicas: 1\n", "      replicas: x\n");
    let dir = tempfile::tempdir().unwrap();
    let (o, _) = run(dir.path(), &y);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        stderr.matches("spec.configurations[0].replicas").count(),
        1,
        "{stderr}"
    );
}
