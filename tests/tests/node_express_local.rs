//! The seeds' Express experiment end to end on this machine: `benchmatrix run` on
//! manifests/samples/node-express-local.yaml starts the Express app of examples/node-express in
//! its four modes (single, cluster, pool, both) under a 2-CPU quota and drives each through the
//! sample's short phases; the status it writes must show what the seeds found.
//!
//! Needs Node.js 20+ and npm on PATH. The example's dependencies are installed by the test itself
//! from the example's lock file (`npm ci`) when they are missing, so the README's test command
//! passes on a fresh clone. Without Node.js the test fails and says so: a skipped end-to-end test
//! looks exactly like a passing one.
//!
//! The `benchmatrix` binary belongs to another package of the workspace, so Cargo does not hand
//! this crate its path (`CARGO_BIN_EXE_*` is per package): the test asks Cargo to build it into
//! the same target folder and profile as this test binary (`cargo build --workspace --bin
//! benchmatrix`, a no-op after `cargo nextest run --workspace`; the first time after
//! `cargo nextest run -p benchmatrix-tests` it takes minutes), or takes `BENCHMATRIX_BIN`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_yaml::Value;

/// The sample under test, relative to the repository root.
const SAMPLE: &str = "manifests/samples/node-express-local.yaml";

/// The four cells of the sample, in its order.
const CELLS: [&str; 4] = ["single", "cluster", "pool", "both"];

/// What the seeds found, on the sample's short phases: in the mixed phase /fast's p99 with a
/// single event loop is at least 5x that with a worker pool (the pool keeps /slow off the loop),
/// and /slow's throughput is not raised by the pool (within 2x of single) and is not starved in
/// any mode (within 4x across all four: the same 2 CPUs do the heavy work). Also checks the cells really ran the Express modes they are named after, sized
/// from the 2-CPU quota.
#[test]
fn timing_node_express_local_matrix_shows_what_the_seeds_found() {
    let root = repo_root();
    check_node_ready(&root);
    let build = Instant::now();
    let exe = benchmatrix_exe();
    eprintln!(
        "benchmatrix binary {} ready in {:?}",
        exe.display(),
        build.elapsed()
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // The sample as shipped, measured once instead of five times: the same cells and phases in
    // a fifth of the time (the suite stays short; the full sample, with medians and spreads,
    // was measured passing in BENCHMARKS.md). The ratios asserted below are wide (single
    // against pool, asserted 5x, measured 12.6x in BENCHMARKS.md), so one measurement per cell
    // decides them.
    let text_of_sample = std::fs::read_to_string(root.join(SAMPLE)).expect("the sample");
    assert!(
        text_of_sample.contains("\n  repeat: 5\n"),
        "the sample's repeat changed: update this test"
    );
    let copy = dir.path().join("node-express-local.yaml");
    std::fs::write(
        &copy,
        text_of_sample.replace("\n  repeat: 5\n", "\n  repeat: 1\n"),
    )
    .unwrap();

    let started = Instant::now();
    let o = Command::new(&exe)
        .current_dir(&root) // the sample's command is relative to the repository root
        .arg("run")
        .arg(&copy)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", exe.display()));
    let took = started.elapsed();
    eprintln!("benchmatrix run {SAMPLE} took {took:?}");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "benchmatrix run {SAMPLE}\n{t}");
    assert!(
        took < Duration::from_secs(240),
        "the sample with repeat: 1 should take about a minute, took {took:?}\n{t}"
    );

    let st: Value = serde_yaml::from_str(
        &std::fs::read_to_string(out.join("status.yaml")).expect("status.yaml written"),
    )
    .expect("status.yaml parses");
    assert_eq!(st["phase"].as_str(), Some("Succeeded"), "{st:?}");

    // Each cell ran the Express mode it is named after (the cell's env BENCH_MODE won over the
    // one derived from `mode`), with worker counts from the 2-CPU quota.
    for name in CELLS {
        let c = cell(&st, name);
        assert_eq!(c["phase"].as_str(), Some("Succeeded"), "{name}: {c:?}");
        let target = &c["target"];
        assert_eq!(
            target["mode"].as_str(),
            Some(name),
            "{name}: the target's /stats reports another mode: {target:?}"
        );
        assert_eq!(
            target["detectedCpus"].as_u64(),
            Some(2),
            "{name}: {target:?}"
        );
        let pool = target["poolSize"].as_u64();
        let want_pool = match name {
            "single" | "cluster" => 0,
            _ => 2, // pool: 2 threads in one process; both: 1 thread in each of 2 workers
        };
        assert_eq!(pool, Some(want_pool), "{name}: {target:?}");
        for phase in ["fast-only", "mixed"] {
            let (_, rps, errors) = figures(c, phase, "fast");
            assert!(rps > 0.0, "{name} {phase}: no /fast answered\n{c:?}");
            assert_eq!(errors, 0, "{name} {phase}: /fast errors\n{c:?}");
        }
    }

    let (single_p99, _, _) = figures(cell(&st, "single"), "mixed", "fast");
    let (pool_p99, _, _) = figures(cell(&st, "pool"), "mixed", "fast");
    assert!(
        single_p99 >= 5.0 * pool_p99,
        "mixed /fast p99: single {single_p99} ms vs pool {pool_p99} ms (want >= 5x)\n{}",
        table(&st)
    );

    // /slow throughput. The seeds' point: a worker pool does not make heavy work faster. So
    // pool and single agree within 2x. Across all four modes /slow is flat within the seeds'
    // own range (2.7 to 5.4 rps, 2.0x), which is 2x by construction: with closed-loop /fast
    // traffic competing for the same 2 CPUs, cluster gives /slow both cores (each worker runs
    // a /slow, then a /fast), single one core, and both gives /fast a core's worth while one
    // pool thread per process runs /slow. Three runs of this sample on a quiet machine
    // (2026-11-30): single 4.0, cluster 7.9-8.0, pool 4.8-4.9, both 3.8-3.9 rps, 2.0-2.1x. But
    // how the 2 CPUs split between the loops and the pool threads of `both` varies from run to
    // run: a CI run the same day gave both /fast 156.8 rps and /slow 2.44 (3.2x against
    // cluster's 7.89), and a busy box once 3.3x. So across all four the bound is 4x (no mode
    // starves /slow); the strict 2x above holds between single and pool.
    let slow = |name: &str| figures(cell(&st, name), "mixed", "slow").1;
    let (single_slow, pool_slow) = (slow("single"), slow("pool"));
    assert!(
        single_slow > 0.0
            && pool_slow > 0.0
            && pool_slow <= 2.0 * single_slow
            && single_slow <= 2.0 * pool_slow,
        "mixed /slow rps of single {single_slow} and pool {pool_slow} should agree within 2x\n{}",
        table(&st)
    );
    let all = CELLS.map(slow);
    let lo = all.iter().cloned().fold(f64::MAX, f64::min);
    let hi = all.iter().cloned().fold(0.0, f64::max);
    assert!(
        lo > 0.0 && hi <= 4.0 * lo,
        "mixed /slow rps across {CELLS:?} should stay within 4x: {all:?}\n{}",
        table(&st)
    );
    eprintln!("{}", table(&st));
}

/// The workspace root (this crate lives in `tests/`).
use benchmatrix_tests::repo_root;

/// The example's runtime dependencies, as `npm ci` installs them from its lock file.
const NODE_DEPS: [&str; 2] = ["express", "piscina"];

/// Fails with what to do when Node.js is missing; installs the example's dependencies from its
/// lock file (`npm ci`) when they are not there yet, as on a fresh clone.
fn check_node_ready(root: &Path) {
    let example = root.join("examples/node-express");
    match Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "`node --version` failed ({}): this test needs Node.js 20+ on PATH",
            o.status
        ),
        Err(e) => panic!("cannot run `node` ({e}): this test needs Node.js 20+ on PATH"),
    }
    let installed = |dep: &str| example.join("node_modules").join(dep).is_dir();
    if NODE_DEPS.iter().all(|d| installed(d)) {
        return;
    }
    eprintln!(
        "installing the example's dependencies: npm ci in {}",
        example.display()
    );
    let o = Command::new("npm")
        .current_dir(&example)
        .args(["ci", "--no-audit", "--no-fund"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run `npm` ({e}): this test needs npm on PATH"));
    assert!(
        o.status.success(),
        "`npm ci` in {} failed\n{}",
        example.display(),
        text(&o)
    );
    for dep in NODE_DEPS {
        assert!(
            installed(dep),
            "`npm ci` in {} did not install {dep}",
            example.display()
        );
    }
}

/// The `benchmatrix` binary: `BENCHMATRIX_BIN`, else built by Cargo into this test binary's
/// target folder and profile (quick when it is up to date).
fn benchmatrix_exe() -> PathBuf {
    if let Some(bin) = std::env::var_os("BENCHMATRIX_BIN") {
        return PathBuf::from(bin);
    }
    // This test runs as <target dir>/<profile dir>/deps/<name>-<hash>.
    let me = std::env::current_exe().expect("current_exe");
    let profile_dir = me
        .parent()
        .and_then(Path::parent)
        .expect("test binary under <target>/<profile>/deps");
    let target_dir = profile_dir.parent().expect("target dir");
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_string(),
        Some(other) => other.to_string(),
        None => panic!("unexpected test binary path {}", me.display()),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let o = Command::new(&cargo)
        .current_dir(repo_root())
        .env("CARGO_TARGET_DIR", target_dir)
        // `--workspace` resolves features as `cargo nextest run --workspace` does, so after such
        // a run this is a no-op instead of a rebuild of half the dependency tree with `-p`'s
        // narrower feature set.
        .args([
            "build",
            "--quiet",
            "--workspace",
            "--bin",
            "benchmatrix",
            "--profile",
            &profile,
            "--message-format=json",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cargo:?} to build the benchmatrix binary: {e}"));
    assert!(
        o.status.success(),
        "building the benchmatrix binary failed (set BENCHMATRIX_BIN to use a built one)\n{}",
        text(&o)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "benchmatrix")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo reported no benchmatrix executable\n{}", text(&o)))
}

/// A cell of the status by name.
fn cell<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["cells"]
        .as_sequence()
        .expect("cells")
        .iter()
        .find(|c| c["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no cell {name} in {status:?}"))
}

/// (p99 ms, rps, errors) of `endpoint` in `phase` of a cell.
fn figures(cell: &Value, phase: &str, endpoint: &str) -> (f64, f64, u64) {
    let r = cell["results"]
        .as_sequence()
        .expect("results")
        .iter()
        .find(|r| r["phase"].as_str() == Some(phase) && r["endpoint"].as_str() == Some(endpoint))
        .unwrap_or_else(|| panic!("no {phase}/{endpoint} in {cell:?}"));
    (
        r["latencyMs"]["p99"].as_f64().expect("p99"),
        r["rps"].as_f64().expect("rps"),
        r["errors"].as_u64().expect("errors"),
    )
}

/// Every cell's mixed-phase figures, for assertion messages.
fn table(st: &Value) -> String {
    let mut s = String::from("cell      mixed /fast p99 ms  rps   | mixed /slow p99 ms  rps\n");
    for name in CELLS {
        let c = cell(st, name);
        let (fp, fr, _) = figures(c, "mixed", "fast");
        let (sp, sr, _) = figures(c, "mixed", "slow");
        s.push_str(&format!(
            "{name:<9} {fp:>16.1} {fr:>6.1} | {sp:>16.1} {sr:>5.2}\n"
        ));
    }
    s
}

/// Exit code and output of a finished command, for assertion messages.
fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
