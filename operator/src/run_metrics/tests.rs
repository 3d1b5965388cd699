use std::sync::Arc;

use super::*;
use crate::resource::RunPhase;

/// The finished run of the shared fixture: ci-gate in namespace bench.
fn finished() -> BenchmarkRunStatus {
    let text = include_str!("../../tests/fixtures/finished/ci-gate.yaml");
    let run: serde_yaml::Value = serde_yaml::from_str(text).expect("the fixture is YAML");
    serde_yaml::from_value(run["status"].clone()).expect("the fixture is a status")
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
    m.record(Some("bench"), "paired", &with_variants());
    m.record(Some("bench"), "capacity", &with_capacity(true));
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

/// The fixture as a run with variants: single-x1 and pool-x1 stand for the base and the
/// candidate of configuration `web`, with one comparison of them in status.variants.
fn with_variants() -> BenchmarkRunStatus {
    use crate::resource::status::{ChangeVerdict, RatioFigure, VariantComparison};
    let mut s = finished();
    for (cell, variant) in s.cells.iter_mut().zip(["base", "candidate"]) {
        cell.configuration = Some("web".to_owned());
        cell.variant = Some(variant.to_owned());
    }
    let figure = |figure: &str, ratio, low, high, verdict| RatioFigure {
        phase: "mixed".to_owned(),
        endpoint: "fast".to_owned(),
        figure: figure.to_owned(),
        base: 30.0,
        candidate: 30.0 * ratio,
        ratios: vec![ratio; 5],
        ratio,
        ratio_low: low,
        ratio_high: high,
        p_worse: 0.03125,
        p_better: 1.0,
        verdict,
    };
    s.variants = vec![VariantComparison {
        configuration: "web".to_owned(),
        base: "base".to_owned(),
        candidate: "candidate".to_owned(),
        rounds: 5,
        figures: vec![
            figure(
                "p99",
                1.108,
                Some(1.07),
                Some(1.15),
                ChangeVerdict::Regression,
            ),
            // Too few rounds for an interval: no interval series, never a made-up one.
            figure("rps", 0.99, None, None, ChangeVerdict::WithinNoise),
        ],
    }];
    s
}

#[test]
fn a_variant_cell_is_labelled_with_its_configuration_and_variant() {
    let m = Arc::new(RunMetrics::default());
    m.record(Some("bench"), "paired", &with_variants());
    let text = m.render();
    let base =
        r#"namespace="bench",run="paired",cell="single-x1",configuration="web",variant="base""#;
    let candidate =
        r#"namespace="bench",run="paired",cell="pool-x1",configuration="web",variant="candidate""#;
    for want in [
        format!(
            "benchmatrix_run_latency_seconds{{{candidate},phase=\"mixed\",endpoint=\"fast\",percentile=\"p99\"}} 0.0316"
        ),
        format!("benchmatrix_run_requests_total{{{base},phase=\"mixed\",endpoint=\"fast\"}} 110"),
        format!("benchmatrix_run_target_cpu_seconds_total{{{base}}} 12.5"),
        format!("benchmatrix_run_cell_measured{{{candidate}}} 1.0"),
    ] {
        assert!(text.contains(&want), "{want} missing:\n{text}");
    }
    // A cell without a variant keeps today's labels; no repetition label anywhere.
    assert!(
        text.contains(
            r#"benchmatrix_run_cell_measured{namespace="bench",run="paired",cell="pool-x2"} 0.0"#
        ),
        "{text}"
    );
    assert!(!text.contains("repetition="), "{text}");
}

#[test]
fn each_ratio_figure_is_exported_with_its_interval_p_values_and_verdict() {
    let m = Arc::new(RunMetrics::default());
    m.record(Some("bench"), "paired", &with_variants());
    let text = m.render();
    let pair =
        r#"namespace="bench",run="paired",configuration="web",base="base",candidate="candidate""#;
    let p99 = format!(r#"{pair},phase="mixed",endpoint="fast",figure="p99""#);
    let rps = format!(r#"{pair},phase="mixed",endpoint="fast",figure="rps""#);
    for want in [
        format!("benchmatrix_run_variant_rounds{{{pair}}} 5.0"),
        format!("benchmatrix_run_variant_ratio{{{p99}}} 1.108"),
        format!("benchmatrix_run_variant_ratio_interval_low{{{p99}}} 1.07"),
        format!("benchmatrix_run_variant_ratio_interval_high{{{p99}}} 1.15"),
        format!("benchmatrix_run_variant_p_worse{{{p99}}} 0.03125"),
        format!("benchmatrix_run_variant_p_better{{{p99}}} 1.0"),
        format!("benchmatrix_run_variant_verdict{{{p99},verdict=\"regression\"}} 1.0"),
        format!("benchmatrix_run_variant_verdict{{{p99},verdict=\"improvement\"}} 0.0"),
        format!("benchmatrix_run_variant_verdict{{{p99},verdict=\"within_noise\"}} 0.0"),
        format!("benchmatrix_run_variant_ratio{{{rps}}} 0.99"),
        format!("benchmatrix_run_variant_verdict{{{rps},verdict=\"within_noise\"}} 1.0"),
    ] {
        assert!(text.contains(&want), "{want} missing:\n{text}");
    }
    assert!(!text.contains(&format!("interval_low{{{rps}}}")), "{text}");
    assert!(
        text.contains("# TYPE benchmatrix_run_variant_ratio gauge"),
        "{text}"
    );
}

#[test]
fn a_run_without_variants_writes_no_variant_family() {
    let m = Arc::new(RunMetrics::default());
    m.record(Some("bench"), "ci-gate", &finished());
    let text = m.render();
    assert!(!text.contains("benchmatrix_run_variant"), "{text}");
    assert!(!text.contains("variant="), "{text}");
}

/// The fixture with its first cell's capacity search, found or not.
fn with_capacity(found: bool) -> BenchmarkRunStatus {
    let mut s = finished();
    s.cells[0].capacity = Some(crate::resource::capacity::CapacityStatus {
        found,
        held_rate: Some(46.25),
        failed_rate: Some(47.5),
        ..Default::default()
    });
    s
}

#[test]
fn a_found_capacity_is_exported_per_cell_and_no_capacity_is_not() {
    let m = Arc::new(RunMetrics::default());
    m.record(Some("bench"), "cap", &with_capacity(true));
    let text = m.render();
    let cell = &finished().cells[0].name;
    assert!(
        text.contains(&format!(
            "benchmatrix_run_cell_capacity_requests_per_second{{namespace=\"bench\",run=\"cap\",cell=\"{cell}\"}} 46.25"
        )),
        "{text}"
    );
    let m = Arc::new(RunMetrics::default());
    m.record(Some("bench"), "cap", &with_capacity(false));
    assert!(!m.render().contains("benchmatrix_run_cell_capacity"));
}
