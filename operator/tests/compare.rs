//! `benchmatrix compare` on saved statuses with a known answer (fixtures/compare/): a planted
//! p99 regression exits 3 and is marked, a change within noise exits 0, bad input exits 2.

mod local_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use local_common::{exe, text};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/compare")
        .join(name)
}

fn compare(base: &str, new: &str, extra: &[&str]) -> Output {
    Command::new(exe())
        .arg("compare")
        .arg(fixture(base))
        .arg(fixture(new))
        .args(extra)
        .output()
        .expect("start benchmatrix compare")
}

/// The table row of `cell` for `figure` (e.g. "p99 ms").
fn row(stdout: &str, cell: &str, figure: &str) -> String {
    stdout
        .lines()
        .find(|l| l.starts_with(&format!("| {cell} |")) && l.contains(&format!("| {figure} |")))
        .unwrap_or_else(|| panic!("no {cell} {figure} row in\n{stdout}"))
        .to_owned()
}

#[test]
fn a_planted_p99_regression_exits_3_and_is_marked() {
    let o = compare("base.yaml", "new-regression.yaml", &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    // 20, 23, 19, 22, 21 ms against 30, 33, 29, 32, 31 ms: exact Mann-Whitney p = 2/252.
    assert_eq!(
        row(&stdout, "pool-x1", "p99 ms"),
        "| pool-x1 | mixed | fast | p99 ms | 21.0 (19.0–23.0) | 31.0 (29.0–33.0) | +47.6% | \
         regression | Mann-Whitney p=0.008 (5 vs 5) |"
    );
    assert!(
        row(&stdout, "pool-x1", "rps").contains("| ~ within noise |"),
        "{t}"
    );
    assert!(
        row(&stdout, "single-x1", "p99 ms").contains("| ~ within noise |"),
        "{t}"
    );
    assert!(
        stdout.contains("| pool-x4 |  |  |  | — | — | — | removed |"),
        "{t}"
    );
    assert!(
        stdout.contains("| pool-x2 |  |  |  | — | — | — | added |"),
        "{t}"
    );
    assert!(stdout.contains("1 regression(s), 0 improvement(s)"), "{t}");
}

#[test]
fn a_regression_under_the_allowed_percentage_passes() {
    let o = compare(
        "base.yaml",
        "new-regression.yaml",
        &["--max-regression", "50"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = compare(
        "base.yaml",
        "new-regression.yaml",
        &["--max-regression", "40"],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
}

#[test]
fn a_change_within_noise_exits_0_and_writes_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cmp");
    let o = compare(
        "base.yaml",
        "new-noise.yaml",
        &["--out", out.to_str().unwrap()],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        row(&stdout, "pool-x1", "p99 ms")
            .ends_with("| +2.4% | ~ within noise | Mann-Whitney p=0.690 (5 vs 5) |"),
        "{t}"
    );
    assert!(!stdout.contains("| regression |"), "{t}");
    let md = std::fs::read_to_string(out.join("compare.md")).unwrap();
    assert!(md.contains(&row(&stdout, "pool-x1", "p99 ms")), "{md}");
    assert!(md.contains("![compare-p99.svg](compare-p99.svg)"), "{md}");
    let svg = std::fs::read_to_string(out.join("compare-p99.svg")).unwrap();
    assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{svg}");
    assert!(svg.contains("pool-x1 mixed/fast"), "{svg}");
}

#[test]
fn bad_input_exits_2_with_the_reason() {
    let o = compare("base.yaml", "not-a-status.yaml", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(
            "not-a-status.yaml is a BenchmarkRun to run, with no results yet (no status); \
             compare expected the results of a finished run"
        ),
        "{stderr}"
    );
    let o = compare("base.yaml", "missing.yaml", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot read"),
        "{}",
        text(&o)
    );
}
