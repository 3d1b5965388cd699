//! Statuses an older operator saved (`fixtures/older/`, with `capacity.nextRate`,
//! `capacity.settleUntil`, the sizing check's `held`/`failed` and `rounds[].probes`, which this
//! version derives instead of writing) are still read by `report`, `compare` and `size`,
//! through the binary: a field it no longer knows is never bad input, and what it derives
//! from the probes says what the older operator wrote. (A restarted operator going on from
//! them is `engine/tests/restart.rs`.)

mod local_common;

use std::path::Path;
use std::process::{Command, Output};

use local_common::{exe, text};

/// Every status in `fixtures/older/`: mid-run and finished, capacity, rounds and sizing.
const SAVED: [&str; 6] = [
    "capacity-mid-search",
    "capacity-finished",
    "rounds-mid-search",
    "rounds-finished",
    "sizing-mid-check",
    "sizing-finished",
];

fn older(name: &str) -> String {
    format!(
        "{}/tests/fixtures/older/{name}.yaml",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn benchmatrix(dir: &Path, args: &[&str]) -> Output {
    Command::new(exe())
        .current_dir(dir)
        .args(args)
        .output()
        .expect("start benchmatrix")
}

/// `report` renders each of them (exit 0 or 1, the run's verdict, never 2 for bad input), and
/// what it counts from the probes is what the older operator counted: each round's probes, a
/// search still running, a sizing check's verdict.
#[test]
fn report_reads_the_statuses_an_older_operator_saved() {
    let dir = tempfile::tempdir().unwrap();
    for name in SAVED {
        let out = dir.path().join(name);
        let o = benchmatrix(
            dir.path(),
            &["report", &older(name), "--out", out.to_str().unwrap()],
        );
        let t = text(&o);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{name}: {t}");
        assert!(out.join("report.md").is_file(), "{name}: {t}");
    }
    let md = |name: &str| std::fs::read_to_string(dir.path().join(name).join("report.md")).unwrap();
    // rounds[].probes was 11 and 10 in the saved status; they are counted from the probes.
    let rounds = md("rounds-finished");
    assert!(
        rounds.contains("- round 1: capacity (held 92.50 rps, failed 95 rps, 11 probes)"),
        "{rounds}"
    );
    assert!(
        rounds.contains("- round 2: capacity (held 46.25 rps, failed 47.50 rps, 10 probes)"),
        "{rounds}"
    );
    // Mid-search the older operator wrote nextRate; a search is running while it has no end.
    let mid = md("capacity-mid-search");
    assert!(mid.contains("| half-cpu | searching |"), "{mid}");
    // The rule-out probes failed, as the counters the older operator wrote said.
    let sized = md("sizing-finished");
    assert!(
        sized.contains("### pool-x1-cpu500m: rule-out probe at 36 rps failed"),
        "{sized}"
    );
}

/// `size` answers from the finished sizing (exit 0: its checks counted from their probes
/// say the answer was confirmed and two cheaper ones ruled out) and, mid-confirmation, says
/// the search is not over (exit 1), as for a status it wrote itself.
#[test]
fn size_reads_the_sizings_an_older_operator_saved() {
    let dir = tempfile::tempdir().unwrap();
    let o = benchmatrix(
        dir.path(),
        &["size", &older("sizing-finished"), "--manifests", "sized"],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("chosen: pool-x1-cpu1"), "{t}");
    assert!(t.contains("2 of 2 probes held 36 rps"), "{t}");
    assert!(
        dir.path().join("sized/deployment-patch.yaml").is_file(),
        "{t}"
    );
    let o = benchmatrix(dir.path(), &["size", &older("sizing-mid-check")]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("Confirming"), "{t}");
}

/// `compare` compares them, a status mid-search against its end and two finished ones.
#[test]
fn compare_reads_the_statuses_an_older_operator_saved() {
    let dir = tempfile::tempdir().unwrap();
    for (base, new) in [
        ("capacity-mid-search", "capacity-finished"),
        ("capacity-finished", "rounds-finished"),
        ("sizing-mid-check", "sizing-finished"),
    ] {
        let o = benchmatrix(dir.path(), &["compare", &older(base), &older(new)]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{base} against {new}: {t}");
        assert!(t.contains("0 regression(s)"), "{base} against {new}: {t}");
    }
}
