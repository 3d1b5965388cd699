use std::sync::Arc;

use super::*;
use crate::resource::RunPhase;

/// The finished run of the shared fixture: ci-gate in namespace bench.
fn finished() -> BenchmarkRunStatus {
    let text = include_str!("../../../../tests/fixtures/finished/ci-gate.yaml");
    crate::frontends::report::parse_status(text).expect("the fixture is a status")
}

/// `status` as if it had finished `secs` seconds after the fixture.
fn finished_at(secs: i64) -> BenchmarkRunStatus {
    let mut s = finished();
    let end = s.completion_time.as_ref().map(secs_of).unwrap() + secs;
    let text = chrono::DateTime::from_timestamp(end, 0)
        .unwrap()
        .to_rfc3339();
    s.completion_time = Some(serde_json::from_value(serde_json::Value::String(text)).unwrap());
    s
}

#[test]
fn a_finished_run_is_exported_with_its_labels_in_base_units() {
    let m = Arc::new(RunMetrics::default());
    m.record(Some("bench"), "ci-gate", &finished());
    let text = m.render();
    let at = r#"namespace="bench",run="ci-gate",cell="pool-x1",phase="mixed",endpoint="fast""#;
    // p99 31.6 ms in seconds; the largest in a family of its own.
    assert!(
        text.contains(&format!(
            "benchmatrix_run_latency_seconds{{{at},percentile=\"p99\"}} 0.0316"
        )),
        "{text}"
    );
    assert!(text.contains(&format!(
        "benchmatrix_run_latency_max_seconds{{{at}}} 0.0615"
    )));
    assert!(text.contains(&format!("benchmatrix_run_requests_per_second{{{at}}} 52.0")));
    assert!(text.contains(&format!("benchmatrix_run_requests_total{{{at}}} 2092")));
    let single = r#"namespace="bench",run="ci-gate",cell="single-x1""#;
    assert!(text.contains(&format!(
        "benchmatrix_run_errors_total{{{single},phase=\"mixed\",endpoint=\"fast\"}} 2"
    )));
    assert!(text.contains(&format!(
        "benchmatrix_run_target_cpu_seconds_total{{{single}}} 12.5"
    )));
    assert!(text.contains(&format!(
        "benchmatrix_run_target_cfs_throttled_periods_total{{{single}}} 30"
    )));
    assert!(text.contains(&format!(
        "benchmatrix_run_target_cfs_periods_total{{{single}}} 130"
    )));
    assert!(text.contains("# TYPE benchmatrix_run_latency_seconds gauge"));
    assert!(text.contains("# UNIT benchmatrix_run_latency_seconds seconds"));
    assert!(text.contains("# TYPE benchmatrix_run_requests counter"));
    assert!(text.ends_with("# EOF\n"), "{text}");
}

#[test]
fn a_percentile_its_samples_cannot_support_is_left_out() {
    let m = Arc::new(RunMetrics::default());
    m.record(Some("bench"), "ci-gate", &finished());
    let text = m.render();
    let slow = r#"cell="pool-x1",phase="mixed",endpoint="slow""#;
    let percentiles: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("benchmatrix_run_latency_seconds{") && l.contains(slow))
        .map(|l| {
            l.split("percentile=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
        })
        .collect();
    // 40 samples: p50 and p90 are supported, p99 and p99.9 are not; the largest always is.
    assert_eq!(percentiles, ["p50", "p90"], "{text}");
    assert!(text.contains(&format!(
        "benchmatrix_run_latency_max_seconds{{namespace=\"bench\",run=\"ci-gate\",{slow}}} 0.8161"
    )));
}

#[test]
fn the_run_its_cells_and_its_verdicts_are_exported() {
    let m = Arc::new(RunMetrics::default());
    m.record(Some("bench"), "ci-gate", &finished());
    let text = m.render();
    let run = r#"namespace="bench",run="ci-gate""#;
    for want in [
        format!("benchmatrix_run_completion_timestamp_seconds{{{run}}} 1796205700.0"),
        format!("benchmatrix_run_duration_seconds{{{run}}} 100.0"),
        // A threshold failed: exit 3, as `benchmatrix run` would give.
        format!("benchmatrix_run_exit_code{{{run}}} 3.0"),
        format!("benchmatrix_run_thresholds{{{run},verdict=\"pass\"}} 2.0"),
        format!("benchmatrix_run_thresholds{{{run},verdict=\"fail\"}} 1.0"),
        format!("benchmatrix_run_cell_measured{{{run},cell=\"pool-x1\"}} 1.0"),
        format!("benchmatrix_run_cell_measured{{{run},cell=\"pool-x2\"}} 0.0"),
        format!("benchmatrix_run_cell_repetitions{{{run},cell=\"pool-x1\"}} 1.0"),
        "benchmatrix_exported_runs 1".to_owned(),
    ] {
        assert!(text.contains(&want), "{want} missing:\n{text}");
    }
    // The failed cell has no figures, and no empty label is ever written.
    assert!(!text.contains(r#"cell="pool-x2",phase"#), "{text}");
    assert!(!text.contains("=\"\""), "{text}");
}

#[test]
fn every_family_written_is_listed_with_the_name_queries_use() {
    let m = Arc::new(RunMetrics::default());
    m.observe(
        Some("bench"),
        "ci-gate",
        &BenchmarkRunStatus::default(),
        &finished(),
    );
    let text = m.render();
    let written: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(['{', ' ']).next().unwrap())
        .collect();
    let listed: std::collections::BTreeSet<String> =
        FAMILIES.iter().map(Family::sample_name).collect();
    assert_eq!(
        written,
        listed.iter().map(String::as_str).collect(),
        "{text}"
    );
    for name in &listed {
        assert!(name.starts_with("benchmatrix_"), "{name}");
    }
}

#[test]
fn only_the_runs_that_finished_last_are_kept_and_a_name_is_kept_once() {
    let m = Arc::new(RunMetrics::new(2));
    m.record(Some("bench"), "a", &finished_at(0));
    m.record(Some("bench"), "b", &finished_at(10));
    m.record(Some("bench"), "c", &finished_at(5));
    assert_eq!(m.kept(), ["bench/b", "bench/c"]);
    // An older run than every kept one does not push a newer one out.
    m.record(Some("other"), "d", &finished_at(-100));
    assert_eq!(m.kept(), ["bench/b", "bench/c"]);
    // The same name again (a run created anew under it) replaces its earlier figures.
    m.record(Some("bench"), "c", &finished_at(20));
    assert_eq!(m.kept(), ["bench/c", "bench/b"]);
    let text = m.render();
    assert!(!text.contains(r#"run="a""#) && !text.contains(r#"run="d""#));
    assert!(text.contains("benchmatrix_exported_runs 2"), "{text}");
    assert_eq!(
        text.matches(r#"benchmatrix_run_exit_code{namespace="bench",run="c"}"#)
            .count(),
        1
    );
}

#[test]
fn runs_are_counted_once_as_they_finish_and_unfinished_ones_not_at_all() {
    let m = Arc::new(RunMetrics::default());
    let running = BenchmarkRunStatus {
        phase: RunPhase::Running,
        ..Default::default()
    };
    m.observe(
        Some("bench"),
        "ci-gate",
        &BenchmarkRunStatus::default(),
        &running,
    );
    assert!(m.kept().is_empty());
    m.observe(Some("bench"), "ci-gate", &running, &finished());
    // Reconciled again, finished before and after: kept, not counted again.
    m.observe(Some("bench"), "ci-gate", &finished(), &finished());
    let text = m.render();
    assert!(
        text.contains(r#"benchmatrix_runs_finished_total{outcome="thresholds_failed"} 1"#),
        "{text}"
    );
    assert_eq!(m.kept(), ["bench/ci-gate"]);
}

#[test]
fn a_local_status_has_no_namespace_label() {
    let m = Arc::new(RunMetrics::default());
    m.record(None, "quickstart", &finished());
    let text = m.render();
    assert!(
        text.contains(r#"benchmatrix_run_exit_code{run="quickstart"} 3.0"#),
        "{text}"
    );
    assert!(!text.contains("namespace="));
}
