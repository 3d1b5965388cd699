use super::*;
use crate::resource::status::Percentile;
use crate::resource::{FigureSpread, LatencyMs, Spread};

fn thresholds(yaml: &str) -> Vec<Threshold> {
    serde_yaml::from_str(yaml).unwrap()
}

/// A stream with `samples` successes, `errors` failures, throughput `rps` and p99 `p99`
/// (the other percentiles planted below it).
fn stream(phase: &str, endpoint: &str, p99: f64, rps: f64, errors: u64) -> CellResult {
    let samples = 1000;
    CellResult {
        phase: phase.into(),
        endpoint: endpoint.into(),
        requests: samples + errors,
        errors,
        samples,
        rps,
        latency_ms: Some(LatencyMs {
            p50: p99 / 4.0,
            p90: p99 / 2.0,
            p99,
            p999: p99 * 1.5,
            max: p99 * 2.0,
            mean: p99 / 3.0,
        }),
        unsupported_percentiles: Percentile::unsupported_by(samples),
        spread: None,
    }
}

/// single-x1: /fast p99 500 ms in mixed (blocked behind /slow), /slow 4 rps;
/// pool-x1: /fast p99 20 ms, /slow 3.5 rps; pool-x2: /fast p99 30 ms, /slow 3 rps.
fn matrix() -> Vec<CellStatus> {
    vec![
        CellStatus::succeeded("single-x1").with_results(vec![
            stream("mixed", "fast", 500.0, 50.0, 0),
            stream("mixed", "slow", 900.0, 4.0, 0),
        ]),
        CellStatus::succeeded("pool-x1").with_results(vec![
            stream("mixed", "fast", 20.0, 300.0, 0),
            stream("mixed", "slow", 800.0, 3.5, 0),
        ]),
        CellStatus::succeeded("pool-x2").with_results(vec![
            stream("mixed", "fast", 30.0, 280.0, 5),
            stream("mixed", "slow", 850.0, 3.0, 0),
        ]),
    ]
}

fn verdicts(results: &[ThresholdResult]) -> Vec<(String, Verdict)> {
    results
        .iter()
        .map(|r| (r.cell.clone(), r.verdict))
        .collect()
}

#[test]
fn judging_writes_verdicts_condition_and_recommendation() {
    let t = thresholds(
        r#"
- {cell: "pool-*", phase: mixed, endpoint: fast, p99: {below: 100ms}}
- {phase: mixed, endpoint: fast, p99: {below: 100ms}}
"#,
    );
    let mut status = BenchmarkRunStatus {
        cells: matrix(),
        ..BenchmarkRunStatus::default()
    };
    for (c, cpu) in status.cells.iter_mut().zip([1.0, 3.0, 2.0]) {
        c.reserved_cpu = Some(2.0);
        c.target = Some(crate::resource::TargetStats {
            cpu_seconds_used: Some(cpu),
            ..Default::default()
        });
    }
    let now = conditions::time_from_secs(1000);
    judge_run(&t, &mut status, Some(2), &now);
    assert!(status.thresholds.iter().any(|r| r.verdict == Verdict::Fail));
    assert_eq!(status.thresholds.len(), 5);
    let met = conditions::find(&status.conditions, conditions::THRESHOLDS_MET).unwrap();
    assert_eq!(met.status, "False");
    assert_eq!(met.observed_generation, Some(2));
    // single-x1 fails. pool-x1 and pool-x2 reserve the same 2 CPUs, so the margin decides:
    // pool-x1's p99 of 20 ms is further below 100 ms than pool-x2's 30 ms. pool-x2 used less
    // CPU (2 CPU-s against 3), which does not count.
    let line = status.summary.unwrap().recommendation.unwrap();
    assert!(
        line.starts_with(
            "pool-x1 meets all 2 thresholds with the smallest CPU reservation (CPU limit x \
                 replicas), 2 CPUs, as does pool-x2; of these it has the widest margin"
        ),
        "{line}"
    );
    // No thresholds: the condition goes away.
    let mut status = BenchmarkRunStatus {
        cells: matrix(),
        conditions: vec![met.clone()],
        ..BenchmarkRunStatus::default()
    };
    judge_run(&[], &mut status, Some(2), &now);
    assert!(status.thresholds.is_empty());
    assert!(conditions::find(&status.conditions, conditions::THRESHOLDS_MET).is_none());
}

#[test]
fn absolute_thresholds_pass_and_fail_on_the_planted_figures() {
    let t = thresholds(
        r#"
- {cell: "pool-*", phase: mixed, endpoint: fast, p99: {below: 100ms}}
- {phase: mixed, endpoint: fast, p99: {below: 100ms}}
- {phase: mixed, endpoint: slow, rps: {above: 3.2}}
- {phase: mixed, endpoint: fast, errorRate: {below: 0.001}}
"#,
    );
    let r = evaluate(&t, &matrix());
    let pass = Verdict::Pass;
    let fail = Verdict::Fail;
    let by_threshold = |i: u32| {
        verdicts(
            &r.iter()
                .filter(|x| x.index == i)
                .cloned()
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        by_threshold(0),
        vec![("pool-x1".into(), pass), ("pool-x2".into(), pass)]
    );
    assert_eq!(
        by_threshold(1),
        vec![
            ("single-x1".into(), fail),
            ("pool-x1".into(), pass),
            ("pool-x2".into(), pass)
        ]
    );
    assert_eq!(
        by_threshold(2),
        vec![
            ("single-x1".into(), pass),
            ("pool-x1".into(), pass),
            ("pool-x2".into(), fail)
        ]
    );
    // pool-x2 had 5 errors in 1005 requests: 0.5%, above 0.1%.
    assert_eq!(
        by_threshold(3),
        vec![
            ("single-x1".into(), pass),
            ("pool-x1".into(), pass),
            ("pool-x2".into(), fail)
        ]
    );
    let single = &r[2];
    assert_eq!(single.cell, "single-x1");
    assert_eq!(single.measured, Some(500.0));
    assert_eq!(single.limit, Some(100.0));
    assert_eq!(single.threshold, "mixed/fast p99 below 100ms");
    assert_eq!(single.message, "p99 500.0 ms, not below 100.0 ms");
    let errors = r
        .iter()
        .find(|x| x.index == 3 && x.cell == "pool-x2")
        .unwrap();
    assert!((errors.measured.unwrap() - 5.0 / 1005.0).abs() < 1e-12);
}

#[test]
fn relative_thresholds_compare_with_the_named_cell() {
    let t = thresholds(
        r#"
- {cell: pool-x1, phase: mixed, endpoint: fast, p99: {atMost: 0.1, of: single-x1}}
- {cell: pool-x2, phase: mixed, endpoint: fast, p99: {atMost: 0.05, of: single-x1}}
- {cell: pool-x1, phase: mixed, endpoint: slow, rps: {atLeast: 0.8, of: single-x1}}
- {cell: pool-x2, phase: mixed, endpoint: slow, rps: {atLeast: 0.8, of: single-x1}}
"#,
    );
    let r = evaluate(&t, &matrix());
    // 20 <= 0.1 x 500 = 50; 30 > 0.05 x 500 = 25; 3.5 >= 3.2; 3.0 < 3.2.
    assert_eq!(
        r.iter().map(|x| x.verdict).collect::<Vec<_>>(),
        vec![Verdict::Pass, Verdict::Fail, Verdict::Pass, Verdict::Fail]
    );
    assert_eq!(r[0].limit, Some(50.0));
    assert_eq!(r[1].limit, Some(25.0));
    assert!((r[3].limit.unwrap() - 3.2).abs() < 1e-9);
    assert_eq!(
        r[1].message,
        "p99 30.0 ms, more than 0.05 x single-x1's 500.0 ms = 25.0 ms"
    );
    assert_eq!(r[3].threshold, "mixed/slow rps at least 0.8 x single-x1");
}

#[test]
fn a_threshold_on_a_failed_or_skipped_cell_fails_and_says_why() {
    let mut cells = matrix();
    cells[1].phase = CellPhase::Failed;
    cells[1].reason = Some("OOMKilled".into());
    cells[1].message = Some("the target ran out of memory".into());
    cells[1].results.clear();
    cells[2].phase = CellPhase::Skipped;
    cells[2].results.clear();
    let t = thresholds(
        r#"
- {cell: "pool-*", phase: mixed, endpoint: fast, p99: {below: 1s}}
- {cell: single-x1, phase: mixed, endpoint: fast, p99: {atMost: 100, of: pool-x1}}
"#,
    );
    let r = evaluate(&t, &cells);
    assert_eq!(r.len(), 3);
    assert!(r.iter().all(|x| x.verdict == Verdict::Fail), "{r:#?}");
    assert_eq!(
        r[0].message,
        "cell pool-x1 failed (OOMKilled): the target ran out of memory"
    );
    assert!(r[1].message.contains("skipped"), "{}", r[1].message);
    // The measured cell is fine; its reference is not.
    assert_eq!(r[2].measured, Some(500.0));
    assert_eq!(r[2].limit, None);
    assert!(
        r[2].message.starts_with("reference cell pool-x1 failed"),
        "{}",
        r[2].message
    );
}

#[test]
fn a_figure_without_samples_fails_the_threshold() {
    let mut cells = matrix();
    let fast = &mut cells[1].results[0];
    fast.latency_ms = None;
    fast.samples = 0;
    fast.errors = fast.requests;
    let thin = &mut cells[2].results[0];
    thin.samples = 30;
    thin.unsupported_percentiles = Percentile::unsupported_by(30);
    let t = thresholds("- {cell: \"pool-*\", phase: mixed, endpoint: fast, p99: {below: 1s}}");
    let r = evaluate(&t, &cells);
    assert_eq!(verdicts(&r)[0].1, Verdict::Fail);
    assert!(
        r[0].message.contains("no request succeeded"),
        "{}",
        r[0].message
    );
    assert_eq!(verdicts(&r)[1].1, Verdict::Fail);
    assert!(
        r[1].message.contains("30 samples and needs 100"),
        "{}",
        r[1].message
    );
}

#[test]
fn repeated_cells_are_judged_on_the_median_and_unstable_figures_are_marked() {
    let mut cells = matrix();
    // Three repetitions of pool-x1's /fast p99: 20, 70, 90 ms; the result holds the
    // median, 70, and the spread is 4.5x, so unstable.
    cells[1].results[0].latency_ms.as_mut().unwrap().p99 = 70.0;
    cells[1].results[0].spread = Some(Spread {
        repetitions: 3,
        figures: [(
            "p99".to_owned(),
            FigureSpread {
                values: vec![20.0, 70.0, 90.0],
                median: 70.0,
                min: 20.0,
                max: 90.0,
                unstable: true,
                ..FigureSpread::default()
            },
        )]
        .into(),
        ..Spread::default()
    });
    let t = thresholds("- {cell: pool-x1, phase: mixed, endpoint: fast, p99: {below: 60ms}}");
    let r = evaluate(&t, &cells);
    assert_eq!(r[0].measured, Some(70.0));
    assert_eq!(r[0].verdict, Verdict::Fail);
    assert!(r[0].unstable);
    assert!(r[0].message.contains("unstable"), "{}", r[0].message);
}

#[test]
fn phase_and_endpoint_may_be_left_out_when_the_run_has_only_one() {
    let cells = vec![
        CellStatus::succeeded("only").with_results(vec![stream("steady", "root", 10.0, 100.0, 0)]),
    ];
    let t = thresholds("- {p99: {below: 50ms}}");
    assert!(crate::resource::thresholds::check(&t, &["only"], &["steady"], &["root"]).is_empty());
    let r = evaluate(&t, &cells);
    assert_eq!(r[0].threshold, "steady/root p99 below 50ms");
    assert_eq!(r[0].verdict, Verdict::Pass);
}

#[test]
fn thresholds_met_names_the_failed_verdicts_and_is_absent_without_thresholds() {
    assert_eq!(condition(&[]), None);
    let t = thresholds(
        r#"
- {cell: "pool-*", phase: mixed, endpoint: fast, p99: {below: 100ms}}
- {phase: mixed, endpoint: fast, p99: {below: 100ms}}
"#,
    );
    let (status, reason, message) = condition(&evaluate(&t, &matrix())).unwrap();
    assert_eq!((status, reason), ("False", Reason::ThresholdsFailed));
    assert_eq!(
        message,
        "1 of 5 threshold verdicts failed: single-x1 mixed/fast p99 below 100ms \
             (p99 500.0 ms, not below 100.0 ms)"
    );
    let (status, reason, message) = condition(&evaluate(&t[..1], &matrix())).unwrap();
    assert_eq!((status, reason), ("True", Reason::ThresholdsPassed));
    assert_eq!(message, "all 2 threshold verdicts passed");
}

/// A cell of configuration `threads`, variant `variant`, one round per p99 in `p99s`.
fn rounds_of(variant: &str, p99s: &[f64]) -> CellStatus {
    let mut cell = CellStatus::succeeded(&format!("threads-{variant}"));
    cell.configuration = Some("threads".into());
    cell.variant = Some(variant.into());
    cell.repetitions = p99s
        .iter()
        .enumerate()
        .map(|(i, &p99)| crate::resource::RepetitionStatus {
            repetition: i as u32 + 1,
            phase: CellPhase::Succeeded,
            results: vec![stream("mixed", "fast", p99, 1000.0 / p99, 0)],
            ..Default::default()
        })
        .collect();
    cell
}

#[test]
fn a_threshold_of_variant_is_judged_on_the_median_paired_ratio_not_on_the_medians() {
    // The rounds drift (the base moves from 20 to 40 ms) and the candidate is 4% slower in
    // every round: its median over the rounds (31.2) is 4% above the base's (30), and the
    // median per-round ratio is 1.04.
    let base = [20.0, 40.0, 30.0, 25.0, 35.0];
    let cells = vec![
        rounds_of("base", &base),
        rounds_of("candidate", &base.map(|b| b * 1.04)),
    ];
    let t = thresholds(
        "[{variant: candidate, phase: mixed, endpoint: fast, p99: {atMost: 1.05, ofVariant: base}},
          {phase: mixed, endpoint: fast, p99: {atMost: 1.03, ofVariant: base}},
          {phase: mixed, endpoint: fast, rps: {atLeast: 0.99, ofVariant: base}}]",
    );
    let results = evaluate(&t, &cells);
    let messages: Vec<&str> = results.iter().map(|r| r.message.as_str()).collect();
    // Each threshold judges the candidate only: never the base against itself.
    assert_eq!(
        verdicts(&results),
        [
            ("threads-candidate".to_string(), Verdict::Pass),
            ("threads-candidate".to_string(), Verdict::Fail),
            ("threads-candidate".to_string(), Verdict::Fail),
        ],
        "{messages:?}"
    );
    let r = &results[0];
    assert!((r.ratio.unwrap() - 1.04).abs() < 1e-9, "{r:?}");
    assert!((r.measured.unwrap() - 31.2).abs() < 1e-9, "{r:?}");
    assert!((r.limit.unwrap() - 31.5).abs() < 1e-9, "{r:?}");
    assert_eq!(r.threshold, "mixed/fast p99 at most 1.05 x variant base");
    assert!(
        r.message.starts_with(
            "p99 median ratio 1.040 over 5 round(s), 95% interval 1.040–1.040, at most 1.05 x variant base (threads-base 30.0 ms, threads-candidate 31.2 ms)"
        ),
        "{}",
        r.message
    );
    assert!(results[1].message.contains("more than 1.03 x variant base"));
    // A failed base fails the verdict, with its reason.
    let mut failed = cells.clone();
    failed[0].phase = CellPhase::Failed;
    let results = evaluate(&t[..1], &failed);
    assert_eq!(results[0].verdict, Verdict::Fail);
    assert!(
        results[0].message.starts_with("cell threads-base failed"),
        "{}",
        results[0].message
    );
}
