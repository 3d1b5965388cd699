//! Helpers shared by the `benchmatrix run` end-to-end tests: a spec builder and a runner.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `benchmatrix` binary under test.
pub fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_benchmatrix"))
}

/// One configuration line set: (name, mode, replicas, cpu).
pub type Cfg<'a> = (&'a str, &'a str, u32, &'a str);

/// A BenchmarkRun YAML with the given cells and phase durations (fast-only, then mixed with
/// `slow_conns` connections on /slow); `extra_spec` is appended inside `spec:`.
pub fn spec(cells: &[Cfg], warmup: &str, fast_only: &str, mixed: &str, extra_spec: &str) -> String {
    let mut s = String::from(
        "apiVersion: benchmatrix.dev/v1alpha1\nkind: BenchmarkRun\nmetadata:\n  name: t\nspec:\n  configurations:\n",
    );
    for (name, mode, replicas, cpu) in cells {
        s.push_str(&format!(
            "    - name: {name}\n      mode: {mode}\n      replicas: {replicas}\n      cpu: \"{cpu}\"\n"
        ));
    }
    s.push_str(&format!(
        "  workload:\n    endpoints:\n      - name: fast\n        path: /fast\n      - name: slow\n        path: /slow\n    warmup: {warmup}\n    phases:\n      - name: fast-only\n        duration: {fast_only}\n        load:\n          - endpoint: fast\n            connections: 2\n      - name: mixed\n        duration: {mixed}\n        load:\n          - endpoint: fast\n            connections: 2\n          - endpoint: slow\n            connections: 2\n  loadgen:\n    cpu: \"1\"\n"
    ));
    s.push_str(extra_spec);
    s
}

/// Writes `yaml` to DIR/run.yaml and runs `benchmatrix run` on it with `--out DIR/out`.
pub fn run(dir: &Path, yaml: &str) -> (Output, PathBuf) {
    let file = dir.join("run.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = dir.join("out");
    let output = Command::new(exe())
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
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
