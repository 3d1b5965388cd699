//! Helpers shared by the `benchmatrix run` end-to-end tests: the run they start from and a
//! runner.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use benchmatrix::fixtures::fast_then_mixed;
use benchmatrix::resource::BenchmarkRun;

/// A service of known capacity (Python's standard library): one request at a time, each
/// holding a lock for `BASE_MS` milliseconds, then waiting `WAIT_PER_RPS_MS x (requests started
/// in the last second)` more without it (`local_capacity.rs` says what each setting models).
pub const QUEUE_SERVICE: &str = include_str!("queue_service.py");

/// The `benchmatrix` binary under test.
pub fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_benchmatrix"))
}

/// A run named `t` with no cell yet, through the quickstart's workload: `warmup`, then /fast
/// alone for `fast_only`, then /fast and /slow together for `mixed`, two connections each.
pub fn quickstart(warmup: &str, fast_only: &str, mixed: &str) -> BenchmarkRun {
    BenchmarkRun::sample()
        .named("t")
        .with_workload(fast_then_mixed(warmup, fast_only, mixed))
}

/// Writes `yaml` to DIR/run.yaml and runs `benchmatrix run` on it with `--out DIR/out`.
pub fn run(dir: &Path, yaml: &str) -> (Output, PathBuf) {
    run_with(dir, yaml, &[])
}

/// [`run`] with more arguments after `--out`.
pub fn run_with(dir: &Path, yaml: &str, args: &[&std::ffi::OsStr]) -> (Output, PathBuf) {
    let file = dir.join("run.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = dir.join("out");
    let output = Command::new(exe())
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .args(args)
        .output()
        .expect("start benchmatrix run");
    (output, out)
}

/// The status document written by a run.
pub fn status(out: &Path) -> serde_yaml::Value {
    let text = std::fs::read_to_string(out.join("status.yaml")).expect("status.yaml written");
    serde_yaml::from_str(&text).expect("status.yaml parses")
}

/// A cell of the status by name.
pub fn cell<'a>(status: &'a serde_yaml::Value, name: &str) -> &'a serde_yaml::Value {
    status["cells"]
        .as_sequence()
        .expect("cells")
        .iter()
        .find(|c| c["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no cell {name} in {status:?}"))
}

/// (p99 ms, rps) of `endpoint` in `phase` of a cell.
pub fn figures(cell: &serde_yaml::Value, phase: &str, endpoint: &str) -> (f64, f64) {
    let r = cell["results"]
        .as_sequence()
        .expect("results")
        .iter()
        .find(|r| r["phase"].as_str() == Some(phase) && r["endpoint"].as_str() == Some(endpoint))
        .unwrap_or_else(|| panic!("no {phase}/{endpoint} in {cell:?}"));
    (
        r["latencyMs"]["p99"].as_f64().unwrap(),
        r["rps"].as_f64().unwrap(),
    )
}

/// Text of the output, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Run folders this runner left in the cgroup hierarchies (should be none after it exits).
pub fn leftover_cgroups(runner_pid: u32) -> Vec<PathBuf> {
    [
        "/sys/fs/cgroup/cpu",
        "/sys/fs/cgroup/cpuacct",
        "/sys/fs/cgroup/unified",
    ]
    .iter()
    .map(|m| Path::new(m).join(format!("benchmatrix-{runner_pid}")))
    .filter(|p| p.exists())
    .collect()
}

/// Every live descendant of `pid` (children, their children, ...), found through
/// /proc/PID/task/*/children.
pub fn descendants_of(pid: u32) -> Vec<u32> {
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        let tasks = std::fs::read_dir(format!("/proc/{p}/task"))
            .into_iter()
            .flatten()
            .flatten();
        for t in tasks {
            if let Ok(c) = std::fs::read_to_string(t.path().join("children")) {
                found.extend(c.split_whitespace().filter_map(|x| x.parse::<u32>().ok()));
            }
        }
        i += 1;
    }
    found.remove(0);
    found
}

/// True while `pid` runs; a zombie has exited (only its parent's bookkeeping remains).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

/// The command line of a process, its arguments joined by spaces ("" once it is gone).
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
                .trim_end()
                .to_string()
        })
        .unwrap_or_default()
}

/// The parent pid of a live process.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Polls `f` every 20 ms until it returns `Some`, or panics with `what` after `limit`.
pub fn wait_for<T>(limit: std::time::Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(std::time::Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Starts `benchmatrix run DIR/run.yaml --out DIR/out` in the background, its output going to
/// DIR/runner.log (a file, so a test that does not read it cannot block the runner).
pub fn spawn_run(dir: &Path, yaml: &str) -> (std::process::Child, PathBuf) {
    let file = dir.join("run.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = dir.join("out");
    let log = std::fs::File::create(dir.join("runner.log")).unwrap();
    let child = Command::new(exe())
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start benchmatrix run");
    (child, out)
}

/// What a background run printed so far.
pub fn runner_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("runner.log")).unwrap_or_default()
}

/// Validates the JUnit XML file `xml` against the workspace's schema of the format
/// (tests/junit.xsd) with xmllint (Debian's libxml2-utils; .ci/run installs it).
pub fn assert_valid_junit(xml: &Path) {
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/junit.xsd");
    let o = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&xsd)
        .arg(xml)
        .output()
        .expect("xmllint is needed: install Debian's libxml2-utils (scripts/test-deps.sh does)");
    assert!(
        o.status.success(),
        "{} does not validate against tests/junit.xsd: {}",
        xml.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}
