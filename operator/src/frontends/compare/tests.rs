use super::*;
use crate::resource::{CellResult, LatencyMs};

fn single(name: &str, p99: f64, rps: f64) -> CellStatus {
    CellStatus {
        name: name.into(),
        phase: CellPhase::Succeeded,
        results: vec![CellResult {
            phase: "mixed".into(),
            endpoint: "fast".into(),
            requests: 1000,
            samples: 1000,
            rps,
            latency_ms: Some(LatencyMs {
                p50: p99 / 2.0,
                p99,
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn status(cells: Vec<CellStatus>) -> BenchmarkRunStatus {
    BenchmarkRunStatus {
        cells,
        ..Default::default()
    }
}

fn mark_of(rows: &[Row], figure: Figure) -> (Mark, String) {
    let r = rows.iter().find(|r| r.figure == Some(figure)).unwrap();
    (r.mark.clone(), r.evidence.clone())
}

#[test]
fn single_runs_count_a_change_only_beyond_ten_percent() {
    let base = status(vec![single("a", 100.0, 50.0)]);
    // p99 +9%: within noise; rps -20%: a regression, flagged as a single run.
    let rows = compare(&base, &status(vec![single("a", 109.0, 40.0)]), 0.05);
    let (p99, why) = mark_of(&rows, Figure::P99);
    assert_eq!(p99, Mark::WithinNoise);
    assert!(why.starts_with("single run: no spread known"), "{why}");
    assert_eq!(mark_of(&rows, Figure::Rps).0, Mark::Regression);
    let rps = rows.iter().find(|r| r.figure == Some(Figure::Rps)).unwrap();
    assert!((rps.worse_pct.unwrap() - 20.0).abs() < 1e-9);
    assert!(fails(rps, 19.0) && !fails(rps, 20.0));
    // p99 halved: an improvement.
    let rows = compare(&base, &status(vec![single("a", 50.0, 50.0)]), 0.05);
    assert_eq!(mark_of(&rows, Figure::P99).0, Mark::Improvement);
}

#[test]
fn a_cell_that_fails_anew_fails_the_gate() {
    let base = status(vec![single("a", 100.0, 50.0)]);
    let failed = CellStatus {
        name: "a".into(),
        phase: CellPhase::Failed,
        reason: Some("OOMKilled".into()),
        ..Default::default()
    };
    let rows = compare(&base, &status(vec![failed]), 0.05);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].mark, Mark::Failed);
    assert_eq!(rows[0].evidence, "new run: Failed (OOMKilled)");
    assert!(fails(&rows[0], 1000.0));
}

#[test]
fn cpu_per_request_is_not_compared_when_the_request_mix_changed() {
    // The new run served half the heavy requests and so used less CPU per request: no
    // improvement, and the reverse no regression.
    let with_slow = |slow: u64, cpu: f64| {
        let mut c = single("a", 100.0, 50.0);
        let mut heavy = c.results[0].clone();
        heavy.endpoint = "slow".into();
        heavy.requests = slow;
        c.results.push(heavy);
        c.target = Some(crate::resource::TargetStats {
            cpu_seconds_used: Some(cpu),
            ..Default::default()
        });
        c
    };
    let (base, new) = (with_slow(100, 10.0), with_slow(50, 6.0));
    for (from, to) in [(&base, &new), (&new, &base)] {
        let rows = compare(&status(vec![from.clone()]), &status(vec![to.clone()]), 0.05);
        let cpu = rows.iter().find(|r| r.figure == Some(Figure::Cpu)).unwrap();
        assert_eq!(cpu.mark, Mark::NotComparable, "{cpu:?}");
        assert!(!rows.iter().any(|r| fails(r, 0.0)), "{rows:?}");
    }
    let rows = compare(&status(vec![base]), &status(vec![new]), 0.05);
    let cpu = rows.iter().find(|r| r.figure == Some(Figure::Cpu)).unwrap();
    assert_eq!(
        cpu.evidence,
        "the request mix changed (mixed/slow 9.1% -> 4.8% of requests): CPU per request \
         follows the mix, so it is not compared"
    );
    assert_eq!((cpu.base.as_str(), cpu.new.as_str()), ("9.1", "5.7"));
}

#[test]
fn cpu_per_thousand_requests_from_the_cell_when_not_repeated() {
    let mut a = single("a", 100.0, 50.0);
    a.target = Some(crate::resource::TargetStats {
        cpu_seconds_used: Some(3.0),
        ..Default::default()
    });
    let mut b = a.clone();
    b.target.as_mut().unwrap().cpu_seconds_used = Some(4.5);
    let rows = compare(&status(vec![a]), &status(vec![b]), 0.05);
    let cpu = rows.iter().find(|r| r.figure == Some(Figure::Cpu)).unwrap();
    assert_eq!((cpu.base_value, cpu.new_value), (Some(3.0), Some(4.5)));
    assert_eq!(cpu.mark, Mark::Regression);
}

/// Two runs whose every cell failed compare nothing: the gate must not pass on them; one
/// figure compared on both sides is enough to judge.
#[test]
fn runs_that_share_no_measured_cell_compare_nothing() {
    let failed = |name: &str| CellStatus {
        name: name.into(),
        phase: CellPhase::Failed,
        reason: Some("Unschedulable".into()),
        ..Default::default()
    };
    let both_failed = compare(&status(vec![failed("a")]), &status(vec![failed("a")]), 0.05);
    assert!(nothing_compared(&both_failed), "{both_failed:?}");
    let disjoint = compare(
        &status(vec![single("a", 10.0, 50.0)]),
        &status(vec![single("b", 10.0, 50.0)]),
        0.05,
    );
    assert!(nothing_compared(&disjoint), "{disjoint:?}");
    let one_measured = compare(
        &status(vec![failed("a"), single("b", 10.0, 50.0)]),
        &status(vec![failed("a"), single("b", 10.0, 50.0)]),
        0.05,
    );
    assert!(!nothing_compared(&one_measured), "{one_measured:?}");
}
