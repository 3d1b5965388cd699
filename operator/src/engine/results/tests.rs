use super::*;
use benchmatrix_loadgen::result::{LatencyMs, PhaseResult, ReplicaStats, StreamResult};

fn lat(p99: f64) -> LatencyMs {
    LatencyMs {
        p50: p99 / 2.0,
        p90: p99 * 0.8,
        p99,
        p999: p99 * 1.2,
        max: p99 * 1.5,
        mean: p99 / 2.0,
    }
}

fn result(name: &str, endpoint: &str, p99: f64, rps: f64) -> CellResult {
    counts(
        CellResult {
            phase: name.into(),
            endpoint: endpoint.into(),
            rps,
            latency_ms: Some(lat(p99)),
            ..Default::default()
        },
        100,
        0,
    )
}

/// `r` with these request and error counts, and what follows from them.
fn counts(r: CellResult, requests: u64, errors: u64) -> CellResult {
    let samples = requests - errors;
    CellResult {
        requests,
        errors,
        samples,
        latency_ms: r.latency_ms.filter(|_| samples > 0),
        unsupported_percentiles: Percentile::unsupported_by(samples),
        spread: None,
        ..r
    }
}

fn seeds_like() -> Vec<CellStatus> {
    vec![
        CellStatus::succeeded("single-x1").with_results(vec![
            result("fast-only", "fast", 10.0, 150.0),
            result("mixed", "fast", 400.0, 5.0),
            result("mixed", "slow", 800.0, 2.5),
        ]),
        CellStatus::succeeded("pool-x1").with_results(vec![
            result("fast-only", "fast", 10.0, 160.0),
            result("mixed", "fast", 20.0, 80.0),
            result("mixed", "slow", 900.0, 2.4),
        ]),
        CellStatus {
            name: "broken".into(),
            phase: CellPhase::Failed,
            ..Default::default()
        },
    ]
}

#[test]
fn the_best_cell_has_the_lowest_p99_and_ratios_are_relative_to_it() {
    let summary = summarize(&seeds_like());
    assert_eq!(summary.comparisons.len(), 3);
    let mixed_fast = &summary.comparisons[1];
    assert_eq!(
        (mixed_fast.phase.as_str(), mixed_fast.endpoint.as_str()),
        ("mixed", "fast")
    );
    assert_eq!(mixed_fast.best_cell.as_deref(), Some("pool-x1"));
    let single = &mixed_fast.cells[0];
    assert_eq!(single.cell, "single-x1");
    assert!((single.p99_ratio.unwrap() - 20.0).abs() < 1e-9);
    assert!((single.rps_ratio.unwrap() - 5.0 / 80.0).abs() < 1e-9);
    // A failed cell takes no part.
    assert!(mixed_fast.cells.iter().all(|c| c.cell != "broken"));
}

#[test]
fn ties_on_p99_go_to_the_higher_throughput() {
    let summary = summarize(&seeds_like());
    assert_eq!(summary.comparisons[0].best_cell.as_deref(), Some("pool-x1"));
}

#[test]
fn interference_is_mixed_p99_over_solo_p99() {
    let summary = summarize(&seeds_like());
    let single = summary
        .interference
        .iter()
        .find(|i| i.cell == "single-x1")
        .unwrap();
    assert_eq!(single.endpoint, "fast");
    assert_eq!(
        (single.solo_phase.as_str(), single.mixed_phase.as_str()),
        ("fast-only", "mixed")
    );
    assert!((single.ratio.unwrap() - 40.0).abs() < 1e-9);
    let pool = summary
        .interference
        .iter()
        .find(|i| i.cell == "pool-x1")
        .unwrap();
    assert!((pool.ratio.unwrap() - 2.0).abs() < 1e-9);
}

#[test]
fn headline_names_the_best_and_the_worst_ratio() {
    let summary = summarize(&seeds_like());
    assert_eq!(
        headline(&summary).unwrap(),
        "mixed/fast: pool-x1 p99 20.0ms (single-x1 20.0x)"
    );
}

/// `r` as the median of repetitions whose p99 took `p99s` (the other figures steady).
fn repeated(r: CellResult, p99s: &[f64]) -> CellResult {
    let spread = noise::spread_of(p99s);
    let mut figures = BTreeMap::new();
    figures.insert(
        noise::RPS.to_owned(),
        noise::spread_of(&vec![r.rps; p99s.len()]),
    );
    let latency = r.latency_ms.map(|l| LatencyMs {
        p99: spread.median,
        ..l
    });
    figures.insert("p99".to_owned(), spread);
    CellResult {
        latency_ms: latency,
        spread: Some(crate::resource::Spread {
            repetitions: p99s.len() as u32,
            figures,
            merged_latency_ms: None,
        }),
        ..r
    }
}

/// mixed/fast of three cells repeated five times: pool-x1 and pool-x2 overlap (exact
/// Mann-Whitney p = 0.69), single-x1 is far slower in every repetition.
fn repeated_cells(x1: &[f64], x2: &[f64]) -> Vec<CellStatus> {
    let stream = |p99s: &[f64], rps| repeated(result("mixed", "fast", 0.0, rps), p99s);
    vec![
        CellStatus::succeeded("single-x1")
            .with_results(vec![stream(&[400.0, 410.0, 395.0, 420.0, 405.0], 5.0)]),
        CellStatus::succeeded("pool-x1").with_results(vec![stream(x1, 80.0)]),
        CellStatus::succeeded("pool-x2").with_results(vec![stream(x2, 82.0)]),
    ]
}

const X1: [f64; 5] = [20.0, 23.0, 19.0, 22.0, 21.0];
const X2: [f64; 5] = [21.5, 20.5, 22.5, 19.5, 24.0];

#[test]
fn cells_within_noise_are_not_ranked_against_each_other() {
    let summary = summarize(&repeated_cells(&X1, &X2));
    let cmp = &summary.comparisons[0];
    // The lowest median stays the reference of the ratios...
    assert_eq!(cmp.best_cell.as_deref(), Some("pool-x1"));
    let by = |name: &str| cmp.cells.iter().find(|c| c.cell == name).unwrap();
    // ...but it is no winner over pool-x2, and the headline names none.
    assert_eq!(by("pool-x2").within_noise_of.as_deref(), Some("pool-x1"));
    assert_eq!(by("pool-x1").within_noise_of.as_deref(), Some("pool-x2"));
    assert_eq!(by("single-x1").within_noise_of, None);
    let line = headline(&summary).unwrap();
    assert_eq!(
        line,
        "mixed/fast: no clear winner, within noise: pool-x1 p99 21.0ms, pool-x2 21.5ms \
         (single-x1 19.3x)"
    );
}

#[test]
fn a_difference_beyond_the_noise_is_ranked() {
    let far: Vec<f64> = X2.iter().map(|v| v * 1.5).collect();
    let summary = summarize(&repeated_cells(&X1, &far));
    let cmp = &summary.comparisons[0];
    assert_eq!(cmp.best_cell.as_deref(), Some("pool-x1"));
    assert!(
        cmp.cells.iter().all(|c| c.within_noise_of.is_none()),
        "{cmp:?}"
    );
    assert_eq!(
        headline(&summary).unwrap(),
        "mixed/fast: pool-x1 p99 21.0ms (single-x1 19.3x)"
    );
}

/// The autocannon p99s (183, 827, 825 ms): the lowest median would not win if it
/// were stable; unstable, it is not ranked at all.
#[test]
fn an_unstable_figure_never_decides_a_ranking() {
    let mut cells = repeated_cells(&X1, &X2);
    cells.push(CellStatus::succeeded("lucky").with_results(vec![repeated(
        result("mixed", "fast", 0.0, 90.0),
        &[3.0, 30.0, 2.0, 3.5, 2.5],
    )]));
    let summary = summarize(&cells);
    let cmp = &summary.comparisons[0];
    assert_eq!(cmp.best_cell.as_deref(), Some("pool-x1"));
    let lucky = cmp.cells.iter().find(|c| c.cell == "lucky").unwrap();
    assert_eq!(lucky.p99_ratio, None);
    assert_eq!(
        lucky.excluded.as_deref(),
        Some(
            "unstable over repetitions: p99 from 2.0 to 30.0 ms (15.0x); repeat more or \
             lengthen the phase"
        )
    );
    assert!(summary.needs_longer_phase.is_empty(), "{summary:?}");
}

/// A Succeeded cell whose mixed/fast stream failed every request (p99 reads 0.0).
fn with_dead_cell() -> Vec<CellStatus> {
    let mut cells = seeds_like();
    let dead = counts(result("mixed", "fast", 0.0, 0.0), 100, 100);
    cells.push(
        CellStatus::succeeded("dead")
            .with_results(vec![result("fast-only", "fast", 10.0, 150.0), dead]),
    );
    cells
}

#[test]
fn a_stream_whose_every_request_failed_is_not_best_nor_in_the_headline() {
    let summary = summarize(&with_dead_cell());
    let mixed_fast = &summary.comparisons[1];
    assert_eq!(mixed_fast.best_cell.as_deref(), Some("pool-x1"));
    let line = headline(&summary).unwrap();
    assert!(!line.contains("dead"), "{line}");
    let json = serde_json::to_value(&summary).unwrap();
    let dead = json["comparisons"][1]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cell"] == "dead")
        .unwrap()
        .clone();
    assert!(dead.get("p99Ratio").is_none(), "{dead}");
    assert_eq!(dead["excluded"], "all 100 requests failed", "{dead}");
}

#[test]
fn four_samples_do_not_rank_and_the_summary_names_the_stream() {
    let mut cells = seeds_like();
    let few = counts(result("mixed", "slow", 1.0, 2.0), 4, 0);
    cells.push(CellStatus::succeeded("pool-x4").with_results(vec![few]));
    let summary = summarize(&cells);
    let mixed_slow = summary
        .comparisons
        .iter()
        .find(|c| c.phase == "mixed" && c.endpoint == "slow")
        .unwrap();
    assert_eq!(mixed_slow.best_cell.as_deref(), Some("single-x1"));
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(
        json["needsLongerPhase"],
        serde_json::json!([
            "pool-x4 mixed/slow: 4 samples; p99 needs 100 (a phase of about 50 s at 2.0/s)"
        ]),
        "{json}"
    );
    let status = serde_json::to_value(&cell_results_of(&few_samples_doc())[0]).unwrap();
    assert_eq!(status["samples"], 4, "{status}");
    assert_eq!(
        status["unsupportedPercentiles"],
        serde_json::json!(["p90", "p99", "p999"]),
        "{status}"
    );
}

#[test]
fn the_headline_says_why_no_cell_is_ranked() {
    let short = |name: &str, requests| {
        CellStatus::succeeded(name).with_results(vec![counts(
            result("mixed", "fast", 5.0, 2.0),
            requests,
            0,
        )])
    };
    let summary = summarize(&[short("a", 4), short("b", 60)]);
    assert_eq!(
        headline(&summary).unwrap(),
        "mixed/fast: no cell ranked (too few samples: run the phase longer)"
    );
    let failing = CellStatus::succeeded("c").with_results(vec![counts(
        result("mixed", "fast", 5.0, 2.0),
        400,
        300,
    )]);
    let summary = summarize(&[short("a", 4), failing]);
    assert_eq!(
        headline(&summary).unwrap(),
        "mixed/fast: no cell ranked (too few samples or too many errors)"
    );
}

#[test]
fn no_interference_ratio_from_an_unsupported_p99() {
    let mut cells = seeds_like();
    cells[0].results[0] = counts(result("fast-only", "fast", 1.0, 150.0), 30, 0);
    let summary = summarize(&cells);
    let single = summary
        .interference
        .iter()
        .find(|i| i.cell == "single-x1")
        .unwrap();
    let json = serde_json::to_value(single).unwrap();
    assert!(json.get("ratio").is_none(), "{json}");
    assert_eq!(
        json["excluded"], "solo: 30 samples; p99 needs 100",
        "{json}"
    );
}

#[test]
fn a_stream_with_no_completed_request_has_no_latency_in_status() {
    let mut d = few_samples_doc();
    let s = &mut d.phases[0].streams[0];
    s.requests = 0;
    s.rps = 0.0;
    s.latency_ms = None;
    let json = serde_json::to_value(&cell_results_of(&d)[0]).unwrap();
    assert!(json.get("latencyMs").is_none(), "{json}");
    assert_eq!(json["samples"], 0, "{json}");
}

fn cell_results_of(d: &RunResult) -> Vec<CellResult> {
    cell_results(d)
}

/// One mixed/slow stream with 4 successful requests.
fn few_samples_doc() -> RunResult {
    RunResult {
        version: 1,
        phases: vec![PhaseResult {
            name: "mixed".into(),
            duration_secs: 2.0,
            streams: vec![StreamResult {
                endpoint: "slow".into(),
                requests: 4,
                rps: 2.0,
                latency_ms: Some(lat(1990.0)),
                ..Default::default()
            }],
            target_stats: vec![],
            started_unix_ms: None,
        }],
        ..Default::default()
    }
}

#[test]
fn zero_latencies_never_make_infinite_ratios() {
    assert_eq!(ratio(0.0, 0.0), 1.0);
    assert!(ratio(1.0, 0.0).is_finite());
    assert_eq!(finite(f64::NAN), 0.0);
}

fn snapshot(rss: f64, peak: f64, throttled: f64) -> StatsSnapshot {
    StatsSnapshot {
        mode: Some("pool".into()),
        host_cpus: Some(8.0),
        detected_cpus: Some(1.0),
        cpu_quota: Some(0.5),
        quota_source: Some("/sys/fs/cgroup/cpu.max".into()),
        pool_size: Some(1.0),
        rss_bytes: Some(rss),
        rss_peak_bytes: Some(peak),
        throttled_periods: Some(throttled),
        ..Default::default()
    }
}

fn doc() -> RunResult {
    let replica = |addr: &str, start: StatsSnapshot, end: StatsSnapshot, cpu: f64| ReplicaStats {
        address: addr.into(),
        start: Some(start),
        end: Some(end),
        cpu_seconds_in_phase: Some(cpu),
        ..Default::default()
    };
    let stream = |endpoint: &str, p99: f64| StreamResult {
        endpoint: endpoint.into(),
        requests: 50,
        errors: 1,
        rps: 10.0,
        latency_ms: Some(lat(p99)),
        ..Default::default()
    };
    RunResult {
        version: 1,
        phases: vec![
            PhaseResult {
                name: "fast-only".into(),
                duration_secs: 5.0,
                streams: vec![stream("fast", 3.0)],
                target_stats: vec![
                    replica(
                        "a",
                        snapshot(10.0, 10.0, 0.0),
                        snapshot(12.0, 15.0, 4.0),
                        1.0,
                    ),
                    replica(
                        "b",
                        snapshot(20.0, 20.0, 0.0),
                        snapshot(22.0, 25.0, 6.0),
                        2.0,
                    ),
                ],
                started_unix_ms: None,
            },
            PhaseResult {
                name: "mixed".into(),
                duration_secs: 5.0,
                streams: vec![stream("fast", 9.0), stream("slow", 300.0)],
                target_stats: vec![
                    replica(
                        "a",
                        snapshot(12.0, 15.0, 4.0),
                        snapshot(13.0, 40.0, 10.0),
                        2.5,
                    ),
                    replica(
                        "b",
                        snapshot(22.0, 25.0, 6.0),
                        snapshot(23.0, 30.0, 8.0),
                        2.5,
                    ),
                ],
                started_unix_ms: None,
            },
        ],
        ..Default::default()
    }
}

#[test]
fn results_follow_the_document_order() {
    let rs = cell_results(&doc());
    let keys: Vec<_> = rs
        .iter()
        .map(|r| (r.phase.as_str(), r.endpoint.as_str()))
        .collect();
    assert_eq!(
        keys,
        [("fast-only", "fast"), ("mixed", "fast"), ("mixed", "slow")]
    );
    assert_eq!(rs[2].latency_ms.unwrap().p99, 300.0);
    assert_eq!(rs[0].errors, 1);
}

#[test]
fn target_stats_sum_over_replicas_and_difference_counters() {
    let t = target_stats(&doc()).unwrap();
    assert_eq!(t.replicas, Some(2));
    assert_eq!(t.detected_cpus, Some(1));
    assert_eq!(t.cpu_quota, Some(0.5));
    assert_eq!(t.idle_rss_bytes, Some(30));
    assert_eq!(t.peak_rss_bytes, Some(40 + 30));
    assert_eq!(t.cpu_seconds_used, Some(8.0));
    assert_eq!(t.throttled_periods, Some(10 + 8));
    // Per replica and phase: its own CPU.
    let cpu: Vec<_> = t
        .per_replica
        .iter()
        .map(|r| {
            let p: Vec<_> = r
                .phases
                .iter()
                .map(|p| (p.phase.as_str(), p.cpu_seconds_used))
                .collect();
            (r.replica.as_str(), p)
        })
        .collect();
    assert_eq!(
        cpu,
        [
            ("a", vec![("fast-only", Some(1.0)), ("mixed", Some(2.5))]),
            ("b", vec![("fast-only", Some(2.0)), ("mixed", Some(2.5))])
        ]
    );
}

#[test]
fn no_stats_means_no_target_figures() {
    let mut d = doc();
    for p in &mut d.phases {
        p.target_stats.clear();
    }
    assert_eq!(target_stats(&d), None);
}

#[test]
fn searched_cells_are_not_ranked_by_latency_and_the_headline_is_their_capacity() {
    // Each result is a confirmation probe at the rate its cell held: 120 rps against 40.
    let searched = |name: &str, held: f64, p99: f64| {
        let mut c = CellStatus::succeeded(name)
            .reserving(2.0)
            .with_results(vec![result("probe", "fast", p99, held)]);
        c.capacity = Some(crate::resource::capacity::CapacityStatus {
            found: true,
            held_rate: Some(held),
            ..Default::default()
        });
        c
    };
    let cells = [
        searched("single", 40.0, 30.0),
        searched("pool", 120.0, 80.0),
    ];
    let summary = summarize(&cells);
    assert!(summary.comparisons.is_empty(), "{summary:?}");
    assert_eq!(headline(&summary), None);
    assert_eq!(
        crate::engine::verdict::end::run_headline(&cells, &summary).unwrap(),
        "capacity: pool 60.0 rps per reserved CPU (120 rps held; single 3.0x less)"
    );
}
