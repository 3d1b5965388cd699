//! The CI files of `benchmatrix run` / `kubectl benchmatrix run` against what reads them:
//!
//! - `--junit`: every shape a run can end in (verdicts passed and failed, cells measured,
//!   failed and skipped, a run refused before any cell) validates with xmllint against
//!   tests/junit.xsd, the Surefire/Jenkins JUnit format's elements and attributes; and the schema
//!   refuses what a reader would (so the check can fail);
//! - `--benchmark-json`: both files hold exactly what github-action-benchmark documents for its
//!   custom tools: an array of entries with a string `name`, a string `unit`, a number `value`,
//!   and optionally string `range` and `extra`; names unique within a file, as the tracker keys
//!   a figure's history on its name.

use std::path::Path;
use std::process::Command;

use benchmatrix::frontends::report::{benchmark_json, junit, parse_status};
use benchmatrix::resource::{BenchmarkRunStatus, CellPhase, RunPhase};

use benchmatrix_tests::repo_root;

fn fixture(path: &str) -> BenchmarkRunStatus {
    let text = std::fs::read_to_string(repo_root().join(path)).unwrap();
    parse_status(&text).unwrap()
}

/// xmllint's verdict on `xml` against tests/junit.xsd: Ok, or its complaint.
fn validate(xml: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("junit.xml");
    std::fs::write(&file, xml).unwrap();
    let o = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(repo_root().join("tests/junit.xsd"))
        .arg(&file)
        .output()
        .expect("xmllint is needed: install Debian's libxml2-utils (scripts/test-deps.sh does)");
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

#[test]
fn every_shape_of_junit_output_validates_against_the_schema() {
    let finished = fixture("operator/tests/fixtures/finished/ci-gate.yaml");
    let mut skipped = finished.clone();
    skipped.cells[2].phase = CellPhase::Skipped;
    let repeated = fixture("operator/tests/fixtures/compare/base.yaml");
    let paired = fixture("operator/tests/fixtures/finished/paired.yaml");
    let refused = BenchmarkRunStatus {
        phase: RunPhase::Failed,
        message: Some("spec.configurations: at least one & <none> given".into()),
        ..Default::default()
    };
    for (what, status) in [
        ("verdicts and a failed cell", &finished),
        ("a skipped cell", &skipped),
        ("repeated cells without times", &repeated),
        ("variants, two candidate figures regressed", &paired),
        ("a run that never reached a cell", &refused),
    ] {
        let xml = junit::junit_xml("ci-gate", status, None);
        if let Err(e) = validate(&xml) {
            panic!("{what}: {e}\n{xml}");
        }
    }
}

#[test]
fn the_schema_refuses_what_a_junit_reader_would() {
    let good = junit::junit_xml(
        "ci-gate",
        &fixture("operator/tests/fixtures/finished/ci-gate.yaml"),
        None,
    );
    validate(&good).unwrap();
    for (what, from, to) in [
        (
            "a case without a name",
            "<testcase classname=\"ci-gate.cells\" name=\"pool-x1\"",
            "<testcase classname=\"ci-gate.cells\"",
        ),
        ("a negative count", "failures=\"2\"", "failures=\"-2\""),
        (
            "a time that is no number",
            "time=\"100.000\"",
            "time=\"100s\"",
        ),
        (
            "a result the format lacks",
            "<failure type=\"NeverReady\"",
            "<broken type=\"NeverReady\"",
        ),
    ] {
        assert!(good.contains(from), "{what}: {from} not in the output");
        let bad = good.replacen(from, to, 1);
        let bad = if what == "a result the format lacks" {
            bad.replacen(
                "</failure>\n    </testcase>\n  </testsuite>\n</testsuites>",
                "</broken>\n    </testcase>\n  </testsuite>\n</testsuites>",
                1,
            )
        } else {
            bad
        };
        assert!(validate(&bad).is_err(), "{what} validated:\n{bad}");
    }
}

/// Checks one file against github-action-benchmark's documented entry fields; returns the
/// names.
fn check_entries(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let entries = value
        .as_array()
        .unwrap_or_else(|| panic!("{}: not an array", file.display()));
    let mut names = Vec::new();
    for e in entries {
        let e = e.as_object().expect("each entry is an object");
        for key in e.keys() {
            assert!(
                ["name", "unit", "value", "range", "extra"].contains(&key.as_str()),
                "{}: field {key} is not one the tracker reads",
                file.display()
            );
        }
        let name = e["name"].as_str().expect("name is a string");
        assert!(!name.is_empty());
        assert!(
            e["unit"].as_str().is_some_and(|u| !u.is_empty()),
            "{name}: unit"
        );
        assert!(
            e["value"].as_f64().is_some_and(f64::is_finite),
            "{name}: value is a number"
        );
        for optional in ["range", "extra"] {
            assert!(
                e.get(optional).is_none_or(serde_json::Value::is_string),
                "{name}: {optional} is a string"
            );
        }
        names.push(name.to_owned());
    }
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        names.len(),
        "{}: a name twice",
        file.display()
    );
    names
}

#[test]
fn benchmark_json_holds_the_trackers_documented_fields_only() {
    let dir = tempfile::tempdir().unwrap();
    for status in [
        fixture("operator/tests/fixtures/finished/ci-gate.yaml"),
        fixture("operator/tests/fixtures/compare/base.yaml"),
        fixture("operator/tests/fixtures/finished/paired.yaml"),
    ] {
        let (smaller, bigger) =
            benchmark_json::write_benchmark_json(&dir.path().join("bench.json"), &status).unwrap();
        let small = check_entries(&smaller);
        let big = check_entries(&bigger);
        assert!(!small.is_empty() && !big.is_empty());
        assert!(small.iter().all(|n| !n.ends_with(" rps")), "{small:?}");
        assert!(big.iter().all(|n| n.ends_with(" rps")), "{big:?}");
    }
}
