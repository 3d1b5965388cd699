use super::*;
use crate::resource::status::Percentile;
use crate::resource::{CellResult, LatencyMs, RepetitionStatus};

/// A stream of the mixed phase: `rps` over 10 s, with a p99 of `p99` ms.
fn stream(endpoint: &str, p99: f64, rps: f64) -> CellResult {
    let requests = (rps * 10.0).round() as u64;
    CellResult {
        phase: "mixed".into(),
        endpoint: endpoint.into(),
        requests,
        samples: requests,
        rps,
        latency_ms: Some(LatencyMs {
            p50: p99 / 4.0,
            p90: p99 / 2.0,
            p99,
            p999: p99,
            max: p99,
            mean: p99 / 4.0,
        }),
        ..CellResult::default()
    }
}

/// A cell with a plain mix: /fast at 100 rps, /slow at 10 rps.
fn plain(name: &str, reserved: f64, cpu: f64) -> CellStatus {
    CellStatus::succeeded(name)
        .reserving(reserved)
        .using_cpu_seconds(cpu)
        .with_results(vec![
            stream("fast", 50.0, 100.0),
            stream("slow", 200.0, 10.0),
        ])
}

/// A passing or failing verdict of threshold `index` on `cell`: `figure` measured against
/// `limit`.
fn verdict(
    index: u32,
    cell: &str,
    figure: &str,
    measured: f64,
    limit: f64,
    verdict: Verdict,
) -> ThresholdResult {
    ThresholdResult {
        index,
        threshold: format!("threshold {index}"),
        figure: figure.into(),
        cell: cell.into(),
        phase: "mixed".into(),
        endpoint: "fast".into(),
        measured: Some(measured),
        limit: Some(limit),
        verdict,
        ..ThresholdResult::default()
    }
}

/// Every cell judged by thresholds 0..3 (p99 below 100 ms, measured `p99` of its entry in
/// `p99s`, default 50 ms), failing threshold 1 when listed in `failing`.
fn all_judged(
    cells: &[CellStatus],
    failing: &[&str],
    p99s: &[(&str, f64)],
) -> Vec<ThresholdResult> {
    let mut out = Vec::new();
    for i in 0..3 {
        for c in cells {
            let p99 = p99s
                .iter()
                .find(|(n, _)| *n == c.name)
                .map_or(50.0, |(_, v)| *v);
            let v = if failing.contains(&c.name.as_str()) && i == 1 {
                verdict(i, &c.name, "p99", 150.0, 100.0, Verdict::Fail)
            } else {
                verdict(i, &c.name, "p99", p99, 100.0, Verdict::Pass)
            };
            out.push(v);
        }
    }
    out
}

/// The Express matrix: four cells at 2 CPUs each, every one busy for the 10 s, but
/// cluster-pool's closed loop served /slow at half cluster's rate (5.5 against 10.7 rps, p99
/// 422 against 207 ms) and so completed many more cheap /fast requests per CPU-second.
fn express() -> Vec<CellStatus> {
    vec![
        CellStatus::succeeded("plain")
            .reserving(2.0)
            .using_cpu_seconds(20.0)
            .with_results(vec![
                stream("fast", 230.0, 112.0),
                stream("slow", 215.0, 10.6),
            ]),
        CellStatus::succeeded("cluster")
            .reserving(2.0)
            .using_cpu_seconds(20.0)
            .with_results(vec![
                stream("fast", 224.0, 110.0),
                stream("slow", 207.0, 10.7),
            ]),
        CellStatus::succeeded("pool")
            .reserving(2.0)
            .using_cpu_seconds(20.0)
            .with_results(vec![
                stream("fast", 226.0, 113.0),
                stream("slow", 210.0, 10.5),
            ]),
        CellStatus::succeeded("cluster-pool")
            .reserving(2.0)
            .using_cpu_seconds(20.0)
            .with_results(vec![
                stream("fast", 19.0, 234.0),
                stream("slow", 422.0, 5.5),
            ]),
    ]
}

#[test]
fn serving_half_the_heavy_requests_does_not_make_a_cell_cheaper() {
    let cells = express();
    // The premise: cluster-pool used far less CPU per 1,000 requests (the old ranking's
    // "47% less") while reserving the same 2 CPUs as cluster.
    let per_1000 = |name: &str| {
        let c = cells.iter().find(|c| c.name == name).unwrap();
        cpu_per_1000_requests(c).unwrap().median
    };
    assert!(per_1000("cluster-pool") < 0.6 * per_1000("cluster"));

    // A service level on the heavy endpoint's throughput: cluster-pool passes it, narrowly.
    let mut results = Vec::new();
    for c in &cells {
        let slow = c.results.iter().find(|r| r.endpoint == "slow").unwrap();
        results.push(ThresholdResult {
            endpoint: "slow".into(),
            threshold: "mixed/slow rps above 5".into(),
            ..verdict(0, &c.name, "rps", slow.rps, 5.0, Verdict::Pass)
        });
    }
    let r = recommend(&cells, &results);
    // Equal reservations, so the margin decides: cluster's 114% over the limit beats
    // cluster-pool's 10%, whatever CPU each used per request.
    assert_eq!(r.cell.as_deref(), Some("cluster"));
    assert_eq!(r.reserved_cpu, Some(2.0));
    let pool = r
        .alternatives
        .iter()
        .find(|a| a.cell == "cluster-pool")
        .unwrap();
    assert_eq!(pool.percent_less, 0.0);
    assert!((pool.margin.as_ref().unwrap().headroom - 0.1).abs() < 1e-9);
    assert_eq!(
        r.sentence,
        "cluster meets the only threshold with the smallest CPU reservation (CPU limit x \
         replicas), 2 CPUs, as do plain, pool, cluster-pool; of these it has the widest margin, \
         the least headroom on any of a cell's thresholds: 114% (mixed/slow rps above 5), \
         against plain 112% (mixed/slow rps above 5), pool 110% (mixed/slow rps above 5), \
         cluster-pool 10% (mixed/slow rps above 5)."
    );

    // Without thresholds nothing is recommended, and nobody is called cheaper.
    let r = recommend(&cells, &[]);
    assert_eq!(r.cell, None);
    assert!(!r.sentence.contains("less"), "{}", r.sentence);
    assert!(!r.sentence.contains("cheap"), "{}", r.sentence);
}

#[test]
fn the_smallest_reservation_wins_whatever_cpu_it_used() {
    // Reserved CPU (limit x replicas): big-x1 2, small-x2 2 x 500m = 1, wide-x4 4, tiny-x1
    // 0.5 (but it fails). small-x2 used the most CPU per request; that does not matter.
    let cells = vec![
        plain("big-x1", 2.0, 2.0),
        plain("small-x2", 1.0, 9.0),
        plain("wide-x4", 4.0, 3.0),
        plain("tiny-x1", 0.5, 1.0),
    ];
    let results = all_judged(&cells, &["tiny-x1"], &[("small-x2", 77.0)]);
    let r = recommend(&cells, &results);
    assert_eq!(r.cell.as_deref(), Some("small-x2"));
    assert_eq!(r.reserved_cpu, Some(1.0));
    assert_eq!(r.thresholds_met, 3);
    assert_eq!(
        r.alternatives
            .iter()
            .map(|a| (a.cell.as_str(), a.percent_less))
            .collect::<Vec<_>>(),
        vec![("big-x1", 50.0), ("wide-x4", 75.0)]
    );
    // Its p99 of 77 ms against 100 ms on each threshold: 23% headroom.
    assert_eq!(
        r.sentence,
        "small-x2 meets all 3 thresholds with the smallest CPU reservation (CPU limit x \
         replicas), 1 CPU: 50% less than big-x1 (2 CPUs), 75% less than wide-x4 (4 CPUs); its \
         margin, the least headroom on any of its thresholds, is 23% (threshold 0)."
    );
    assert_eq!(
        r.passed_over,
        vec![("tiny-x1".to_owned(), "it fails threshold 1".to_owned())]
    );
}

#[test]
fn equal_reservations_are_decided_by_the_margin_on_the_thresholds() {
    // An equal-budget matrix: 2 CPUs each. pool-x2 stays furthest inside its limits (its
    // tightest threshold, rps 240 above 200, has 20% headroom), then pool-x1 (p99 88 of 100
    // ms: 12%), then single-x1 (p99 97 of 100 ms: 3%). single-x4 reserves 4 CPUs.
    let cells = vec![
        plain("single-x1", 2.0, 4.0),
        plain("pool-x1", 2.0, 1.0),
        plain("pool-x2", 2.0, 8.0),
        plain("single-x4", 4.0, 4.0),
    ];
    let mut results = Vec::new();
    for (name, p99, rps) in [
        ("single-x1", 97.0, 400.0),
        ("pool-x1", 88.0, 400.0),
        ("pool-x2", 60.0, 240.0),
        ("single-x4", 10.0, 900.0),
    ] {
        results.push(ThresholdResult {
            threshold: "mixed/fast p99 below 100ms".into(),
            ..verdict(0, name, "p99", p99, 100.0, Verdict::Pass)
        });
        results.push(ThresholdResult {
            threshold: "mixed/fast rps above 200".into(),
            ..verdict(1, name, "rps", rps, 200.0, Verdict::Pass)
        });
    }
    let r = recommend(&cells, &results);
    assert_eq!(r.cell.as_deref(), Some("pool-x2"));
    let m = r.margin.clone().unwrap();
    assert!((m.headroom - 0.2).abs() < 1e-9, "{m:?}");
    assert_eq!(m.threshold, "mixed/fast rps above 200");
    assert_eq!(
        r.alternatives
            .iter()
            .map(|a| a.cell.as_str())
            .collect::<Vec<_>>(),
        vec!["pool-x1", "single-x1", "single-x4"]
    );
    assert_eq!(
        r.sentence,
        "pool-x2 meets all 2 thresholds with the smallest CPU reservation (CPU limit x \
         replicas), 2 CPUs, as do pool-x1, single-x1; of these it has the widest margin, the \
         least headroom on any of a cell's thresholds: 20% (mixed/fast rps above 200), against \
         pool-x1 12% (mixed/fast p99 below 100ms), single-x1 3.0% (mixed/fast p99 below \
         100ms); it reserves 50% less than single-x4 (4 CPUs)."
    );

    // At an equal margin too, the matrix order decides, and the sentence says so.
    let cells = vec![plain("pool-x1", 2.0, 4.0), plain("pool-x2", 2.0, 1.0)];
    let results = all_judged(&cells, &[], &[]);
    let r = recommend(&cells, &results);
    assert_eq!(r.cell.as_deref(), Some("pool-x1"));
    assert!(
        r.sentence
            .contains("50% (threshold 0) (equal to the next: it comes first in the matrix)"),
        "{}",
        r.sentence
    );
}

#[test]
fn without_thresholds_nothing_is_recommended_and_the_trades_are_listed() {
    let cells = express();
    let r = recommend(&cells, &[]);
    assert_eq!(r.cell, None);
    assert!(!r.service_level);
    assert_eq!(
        r.sentence,
        "No service level was given (spec.thresholds), so none is recommended; every cell that \
         succeeded reserves 2 CPUs; what each cell traded: plain: mixed/fast p99 230 ms at \
         112.0 rps, mixed/slow p99 215 ms at 10.6 rps; cluster: 224 ms at 110.0 rps, 207 ms at \
         10.7 rps; pool: 226 ms at 113.0 rps, 210 ms at 10.5 rps; cluster-pool: 19 ms at 234.0 \
         rps, 422 ms at 5.5 rps."
    );

    // Different reservations: the smallest is named as a fact about the configuration, with
    // each cell's reservation beside its trades, and still nothing is recommended.
    let mut failed = plain("single-x1", 0.5, 1.0);
    failed.phase = CellPhase::Failed;
    let cells = vec![
        failed,
        CellStatus::succeeded("pool-x2")
            .reserving(2.0)
            .using_cpu_seconds(20.0)
            .with_results(vec![
                stream("fast", 19.0, 234.0),
                stream("slow", 422.0, 5.5),
            ]),
        CellStatus::succeeded("pool-x1")
            .reserving(1.0)
            .using_cpu_seconds(10.0)
            .with_results(vec![
                stream("fast", 40.0, 120.0),
                stream("slow", 900.0, 2.5),
            ]),
    ];
    let r = recommend(&cells, &[]);
    assert_eq!(r.cell, None);
    assert_eq!(
        r.sentence,
        "No service level was given (spec.thresholds), so none is recommended; pool-x1 reserves \
         the least CPU (CPU limit x replicas), 1 CPU (the most: pool-x2, 2 CPUs), which is \
         cheaper to run but says nothing about how well it served; what each cell traded: \
         pool-x2 (2 CPUs): mixed/fast p99 19 ms at 234.0 rps, mixed/slow p99 422 ms at 5.5 rps; \
         pool-x1 (1 CPU): 40 ms at 120.0 rps, 900 ms at 2.5 rps."
    );
    assert_eq!(
        r.passed_over,
        vec![(
            "single-x1".to_owned(),
            "it did not succeed (Failed)".to_owned()
        )]
    );
}

#[test]
fn without_thresholds_only_phases_with_competing_endpoints_are_listed() {
    let mut c = plain("pool-x1", 2.0, 4.0);
    // A solo phase (one endpoint) is no trade; a p99 from too few samples says so.
    c.results.insert(
        0,
        CellResult {
            phase: "fast-only".into(),
            ..stream("fast", 5.0, 300.0)
        },
    );
    c.results[2].samples = 40;
    c.results[2].unsupported_percentiles = vec![Percentile::P99, Percentile::P999];
    let r = recommend(&[c], &[]);
    assert_eq!(
        r.sentence,
        "No service level was given (spec.thresholds), so none is recommended; the one cell \
         that succeeded reserves 2 CPUs; what it served: pool-x1: mixed/fast p99 50 ms at 100.0 \
         rps, mixed/slow p99 200 ms (from 40 samples) at 10.0 rps."
    );
}

#[test]
fn a_large_matrix_without_thresholds_ends_its_sentence_within_the_status_bound() {
    let cells: Vec<CellStatus> = (0..64)
        .map(|i| plain(&format!("configuration-number-{i:02}"), 2.0, 4.0))
        .collect();
    let r = recommend(&cells, &[]);
    assert!(json_len(&r.sentence) <= SENTENCE_MAX, "{}", r.sentence);
    assert!(r.sentence.ends_with(" more."), "{}", r.sentence);
    assert!(
        r.sentence
            .contains("configuration-number-00: mixed/fast p99 50 ms")
    );
}

#[test]
fn cells_that_fail_a_threshold_or_did_not_succeed_are_passed_over_with_the_reason() {
    let mut skipped = plain("single-x4", 4.0, 1.0);
    skipped.phase = CellPhase::Skipped;
    let cells = vec![
        plain("single-x1", 0.5, 1.0),
        plain("pool-x1", 1.0, 5.0),
        skipped,
        plain("pool-x2", 2.0, 4.1),
    ];
    // The cheapest reservation fails threshold 1; pool-x1 is the next cheapest.
    let results = all_judged(&cells, &["single-x1"], &[]);
    let r = recommend(&cells, &results);
    assert_eq!(r.cell.as_deref(), Some("pool-x1"));
    assert_eq!(
        r.passed_over,
        vec![
            ("single-x1".to_owned(), "it fails threshold 1".to_owned()),
            (
                "single-x4".to_owned(),
                "it did not succeed (Skipped)".to_owned()
            ),
        ]
    );
    assert!(
        r.sentence.starts_with(
            "pool-x1 meets all 3 thresholds with the smallest CPU reservation (CPU limit x \
             replicas), 1 CPU: 50% less than pool-x2 (2 CPUs); its margin"
        ),
        "{}",
        r.sentence
    );
}

#[test]
fn recommend_skips_a_cell_whose_deciding_figure_is_unstable() {
    let cells = vec![plain("pool-x1", 2.0, 5.0), plain("pool-x2", 1.0, 4.1)];
    let mut results = all_judged(&cells, &[], &[]);
    results
        .iter_mut()
        .find(|r| r.cell == "pool-x2" && r.index == 2)
        .unwrap()
        .unstable = true;
    let r = recommend(&cells, &results);
    assert_eq!(r.cell.as_deref(), Some("pool-x1"));
    assert_eq!(
        r.passed_over,
        vec![(
            "pool-x2".to_owned(),
            "its figure for threshold 2 is unstable over the repetitions".to_owned()
        )]
    );
    assert_eq!(
        r.sentence,
        "pool-x1 meets all 3 thresholds with the smallest CPU reservation (CPU limit x \
         replicas), 2 CPUs, the only configuration that does; its margin, the least headroom \
         on any of its thresholds, is 50% (threshold 0)."
    );
}

#[test]
fn recommend_passes_over_a_cell_no_threshold_judges_or_without_a_recorded_reservation() {
    let mut old = plain("pool-x2", 2.0, 1.0);
    old.reserved_cpu = None;
    let cells = vec![
        plain("single-x1", 1.0, 1.0),
        plain("pool-x1", 2.0, 5.0),
        old,
    ];
    let results = vec![
        verdict(0, "pool-x1", "p99", 50.0, 100.0, Verdict::Pass),
        verdict(0, "pool-x2", "p99", 50.0, 100.0, Verdict::Pass),
    ];
    let r = recommend(&cells, &results);
    assert_eq!(r.cell.as_deref(), Some("pool-x1"));
    assert_eq!(
        r.passed_over,
        vec![
            ("single-x1".to_owned(), "no threshold judges it".to_owned()),
            (
                "pool-x2".to_owned(),
                "its reserved CPU is not recorded (cells[].reservedCpu)".to_owned()
            ),
        ]
    );
}

#[test]
fn recommend_nothing_when_no_cell_meets_the_thresholds() {
    let cells = vec![plain("a", 1.0, 1.0), plain("b", 2.0, 2.0)];
    let results = all_judged(&cells, &["a", "b"], &[]);
    let r = recommend(&cells, &results);
    assert_eq!(r.cell, None);
    assert_eq!(
        r.sentence,
        "No configuration meets every threshold with stable figures, so none is recommended."
    );
}

#[test]
fn the_margin_is_the_smallest_relative_headroom_in_the_right_direction() {
    let p99 = verdict(0, "c", "p99", 80.0, 100.0, Verdict::Pass);
    let rps = verdict(1, "c", "rps", 330.0, 300.0, Verdict::Pass);
    let errors = verdict(2, "c", "errorRate", 0.0, 0.01, Verdict::Pass);
    let any_rps = verdict(3, "c", "rps", 5.0, 0.0, Verdict::Pass);
    let m = margin(&[&p99, &rps, &errors, &any_rps]).unwrap();
    // p99: 20% below its limit; rps: 10% above its floor; no errors: 100%. An rps floor of 0
    // has no relative headroom and is left out.
    assert!((m.headroom - 0.1).abs() < 1e-9, "{m:?}");
    assert_eq!(m.threshold, "threshold 1");
    assert_eq!(margin(&[&any_rps]), None);
}

#[test]
fn cpu_per_1000_uses_each_repetitions_own_cpu_and_knows_when_it_is_unstable() {
    let rep = |n: u32, cpu: f64, requests: u64| RepetitionStatus {
        repetition: n,
        phase: CellPhase::Succeeded,
        cpu_seconds_used: Some(cpu),
        results: vec![CellResult {
            requests,
            ..CellResult::default()
        }],
        ..RepetitionStatus::default()
    };
    // Steady: 0.40, 0.42, 0.44 CPU-s per 1000 requests, median 0.42. The cell's own totals
    // (3 repetitions' requests against one repetition's CPU) would say 0.14.
    let mut steady = plain("steady", 2.0, 4.2);
    steady.repetitions = vec![
        rep(1, 4.0, 10_000),
        rep(2, 4.2, 10_000),
        rep(3, 4.4, 10_000),
    ];
    let cpu = cpu_per_1000_requests(&steady).unwrap();
    assert!((cpu.median - 0.42).abs() < 1e-9, "{cpu:?}");
    assert!(!cpu.unstable());
    // Shaky: 0.10 to 0.30, spread 3x.
    let mut shaky = plain("shaky", 2.0, 2.0);
    shaky.repetitions = vec![
        rep(1, 1.0, 10_000),
        rep(2, 2.0, 10_000),
        rep(3, 3.0, 10_000),
    ];
    assert!(cpu_per_1000_requests(&shaky).unwrap().unstable());
    let mut silent = plain("silent", 2.0, 0.0);
    silent.target = None;
    assert_eq!(cpu_per_1000_requests(&silent), None);
}

#[test]
fn cores_read_as_the_spec_writes_them() {
    assert_eq!(cpus(1.0), "1 CPU");
    assert_eq!(cpus(0.5), "0.5 CPU");
    assert_eq!(cpus(2.0), "2 CPUs");
    assert_eq!(cpus(1.998), "1.998 CPUs");
}

/// A cell that searched and held `held` rps (none found when `None`) on `reserved` cores.
fn searched(name: &str, reserved: f64, held: Option<f64>) -> CellStatus {
    let mut c = CellStatus::succeeded(name).reserving(reserved);
    c.capacity = Some(crate::resource::capacity::CapacityStatus {
        found: held.is_some(),
        held_rate: held,
        message: "held even at the upper bound".into(),
        ..Default::default()
    });
    c
}

#[test]
fn a_run_that_searched_recommends_the_most_traffic_per_reserved_core() {
    // single-x2 holds the most in all, but pool-x1 holds the most per core; no threshold.
    let cells = [
        searched("single-x2", 4.0, Some(120.0)),
        searched("pool-x1", 2.0, Some(90.0)),
        searched("single-x1", 2.0, Some(60.0)),
        searched("capped", 2.0, None),
    ];
    let r = recommend(&cells, &[]);
    assert_eq!(r.cell.as_deref(), Some("pool-x1"));
    assert_eq!(r.reserved_cpu, Some(2.0));
    assert!(r.service_level);
    // 45 rps per core against 30: a third less CPU for the same traffic.
    assert_eq!(r.alternatives[0].cell, "single-x2");
    assert!((r.alternatives[0].percent_less - 100.0 / 3.0).abs() < 1e-9);
    assert_eq!(
        r.sentence,
        "pool-x1 holds the most traffic per reserved CPU at the SLO: 90 rps on 2 CPUs (CPU \
         limit x replicas), 45.0 rps per CPU; against single-x2 30.0 (33% less CPU for the same \
         traffic), single-x1 30.0 (33% less CPU for the same traffic)."
    );
    assert_eq!(
        r.passed_over,
        [(
            "capped".to_owned(),
            "no capacity found: held even at the upper bound".to_owned()
        )]
    );
}

#[test]
fn a_searched_cell_failing_a_threshold_is_passed_over_and_none_left_says_why() {
    let cells = [
        searched("pool-x1", 2.0, Some(90.0)),
        searched("single-x1", 2.0, Some(60.0)),
    ];
    let failing = [verdict(0, "pool-x1", "errorRate", 0.2, 0.01, Verdict::Fail)];
    let r = recommend(&cells, &failing);
    assert_eq!(r.cell.as_deref(), Some("single-x1"));
    assert_eq!(
        r.passed_over,
        [("pool-x1".to_owned(), "it fails threshold 0".to_owned())]
    );
    assert!(
        r.sentence
            .ends_with("the only configuration with a capacity."),
        "{}",
        r.sentence
    );

    let none = recommend(&[searched("capped", 1.0, None)], &[]);
    assert_eq!(none.cell, None);
    assert_eq!(
        none.sentence,
        "No configuration has a capacity at the SLO (capped: no capacity found: held even at \
         the upper bound), so none is recommended."
    );
}
