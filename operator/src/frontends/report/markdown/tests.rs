use super::*;
use crate::resource::{CellResult, CellStatus, LatencyMs, TargetStats};

#[test]
fn renders_tables_ratios_and_measurement_notes() {
    let cell = |name: &str, p99: f64, rps: f64| CellStatus {
        name: name.into(),
        phase: CellPhase::Succeeded,
        results: vec![CellResult {
            phase: "mixed".into(),
            endpoint: "fast".into(),
            requests: 100,
            errors: 0,
            samples: 100,
            rps,
            latency_ms: Some(LatencyMs {
                p50: 1.0,
                p90: 2.0,
                p99,
                p999: p99,
                max: p99,
                mean: 1.0,
            }),
            unsupported_percentiles: vec![Percentile::P999],
            spread: None,
        }],
        target: Some(TargetStats {
            replicas: Some(1),
            detected_cpus: Some(2),
            ..Default::default()
        }),
        overhead_seconds: Some(0.42),
        ..Default::default()
    };
    let status = BenchmarkRunStatus {
        cells: vec![
            cell("single-x1", 1600.0, 3.0),
            cell("pool-x1", 48.0, 80.0),
            CellStatus {
                name: "broken".into(),
                phase: CellPhase::Failed,
                reason: Some("NeverReady".into()),
                message: Some("not ready | in 5s".into()),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let md = render(
        &status,
        &[],
        &["p99-mixed-fast.svg".into()],
        &Notes::default(),
    );
    assert!(
        md.contains("| single-x1 | 100 | 0 | 100 | 3.0 | 1.0 | 2.0 | 1600.0 | 1600.0\\* |"),
        "{md}"
    );
    assert!(md.contains("33.3x"), "{md}");
    assert!(md.contains("| pool-x1 | 100 | 0 | 100 | 80.0 |"));
    assert!(md.contains("![p99 of fast in mixed](p99-mixed-fast.svg)"));
    assert!(md.contains("Failed (NeverReady)") && md.contains("not ready \\| in 5s"));
    assert!(md.contains("| 0.42 |"));
    assert!(md.contains("## How each figure was measured"));
    let table = super::super::comparison_table(&status);
    assert!(
        table.contains("single-x1") && table.contains("33.3x"),
        "{table}"
    );
    assert!(table.contains("not measured: broken: Failed"), "{table}");
}

/// The matrix of the issue: in pool-x8 /slow completed no request, in pool-x4 one.
fn short_phase_status() -> BenchmarkRunStatus {
    let result = |requests: u64, p: f64| CellResult {
        phase: "mixed".into(),
        endpoint: "slow".into(),
        requests,
        errors: 0,
        samples: requests,
        rps: requests as f64 / 2.0,
        latency_ms: (requests > 0).then_some(LatencyMs {
            p50: p,
            p90: p,
            p99: p,
            p999: p,
            max: p,
            mean: p,
        }),
        unsupported_percentiles: Percentile::unsupported_by(requests),
        spread: None,
    };
    let cell = |name: &str, r: CellResult| CellStatus {
        name: name.into(),
        phase: CellPhase::Succeeded,
        results: vec![r],
        ..Default::default()
    };
    let mut status = BenchmarkRunStatus {
        cells: vec![
            cell("pool-x8", result(0, 0.0)),
            cell("pool-x4", result(1, 1990.0)),
            cell("pool-x2", result(400, 700.0)),
        ],
        ..Default::default()
    };
    status.summary = Some(crate::engine::results::summarize(&status.cells));
    status
}

/// The row of `cell` among the figures in `md`, not its row in the table of cells (which
/// says its phase, Succeeded).
fn figures_row(md: &str, cell: &str) -> String {
    md.lines()
        .find(|l| l.starts_with(&format!("| {cell} |")) && !l.contains("Succeeded"))
        .unwrap_or_else(|| panic!("no row for {cell} in {md}"))
        .to_owned()
}

#[test]
fn absent_figures_print_a_dash_and_thin_percentiles_are_marked() {
    let status = short_phase_status();
    let md = render(&status, &[], &[], &Notes::default());
    let row = |cell: &str| figures_row(&md, cell);
    let x8 = row("pool-x8");
    assert_eq!(
        x8,
        "| pool-x8 | 0 | 0 | 0 | 0.0 | — | — | — | — | — | not ranked: 0 samples; p99 needs 100 |"
    );
    let x4 = row("pool-x4");
    assert!(x4.contains("1990.0\\*"), "{x4}");
    assert!(!x4.contains("x |"), "pool-x4 has a ratio: {x4}");
    assert!(md.contains("pool-x8 mixed/slow: 0 samples"), "{md}");
    let table = super::super::comparison_table(&status);
    let line = |cell: &str| {
        table
            .lines()
            .find(|l| l.contains(cell))
            .unwrap_or_else(|| panic!("no {cell} in {table}"))
            .to_owned()
    };
    // p50, p99 and max: no figure, no zero.
    assert_eq!(line("pool-x8").matches('—').count(), 3, "{table}");
    assert!(line("pool-x8").ends_with("not ranked"), "{table}");
    assert!(line("pool-x4").contains("1990.0*"), "{table}");
    assert!(line("pool-x2").contains("1.0x"), "{table}");
    assert!(
        table.contains(
            "needs a longer phase: pool-x4 mixed/slow: 1 sample; p99 needs 100 \
             (a phase of about 200 s at 0.5/s)"
        ),
        "{table}"
    );
    assert!(!table.contains("not ranked: pool-x4"), "{table}");
}

/// mixed/fast of cells repeated five times: pool-x1 and pool-x2 overlap, single-x1 is
/// far slower, and `lucky`'s p99 spread 15x.
fn repeated_status() -> BenchmarkRunStatus {
    use crate::engine::results::noise::spread_of;
    let cell = |name: &str, p99s: &[f64], rps: f64| {
        let p99 = spread_of(p99s);
        let mut figures = std::collections::BTreeMap::new();
        figures.insert("rps".to_owned(), spread_of(&[rps; 5]));
        let median = p99.median;
        figures.insert("p99".to_owned(), p99);
        CellStatus {
            name: name.into(),
            phase: CellPhase::Succeeded,
            results: vec![CellResult {
                phase: "mixed".into(),
                endpoint: "fast".into(),
                requests: 1000,
                errors: 0,
                samples: 1000,
                rps,
                latency_ms: Some(LatencyMs {
                    p50: 1.0,
                    p90: 2.0,
                    p99: median,
                    p999: median,
                    max: median,
                    mean: 1.0,
                }),
                unsupported_percentiles: vec![],
                spread: Some(crate::resource::Spread {
                    repetitions: 5,
                    figures,
                    merged_latency_ms: None,
                }),
            }],
            ..Default::default()
        }
    };
    BenchmarkRunStatus {
        cells: vec![
            cell("single-x1", &[400.0, 410.0, 395.0, 420.0, 405.0], 5.0),
            cell("pool-x1", &[20.0, 23.0, 19.0, 22.0, 21.0], 80.0),
            cell("pool-x2", &[21.5, 20.5, 22.5, 19.5, 24.0], 82.0),
            cell("lucky", &[3.0, 30.0, 2.0, 3.5, 2.5], 90.0),
        ],
        ..Default::default()
    }
}

#[test]
fn repeated_cells_show_their_spread_noise_and_instability() {
    let status = repeated_status();
    let md = render(&status, &[], &[], &Notes::default());
    let row = |cell: &str| figures_row(&md, cell);
    let x2 = row("pool-x2");
    // Five repetitions' CI is their range here: shown once.
    assert!(x2.contains("| 21.5 (19.5–24.0) |"), "{x2}");
    assert!(x2.contains("| 82.0 (82.0–82.0) |"), "{x2}");
    assert!(x2.ends_with("| ~1.0x |"), "{x2}");
    assert!(row("pool-x1").ends_with("| ~1.0x |"), "{md}");
    assert!(row("single-x1").ends_with("| 19.3x |"), "{md}");
    let lucky = row("lucky");
    assert!(lucky.contains("| 3.0 (2.0–30.0"), "{lucky}");
    assert!(lucky.contains(")! |"), "{lucky}");
    assert!(
        lucky.ends_with(
            "| not ranked: unstable over repetitions: p99 from 2.0 to 30.0 ms \
             (15.0x); repeat more or lengthen the phase |"
        ),
        "{lucky}"
    );
    assert!(
        md.contains("~ within noise: the p99 of pool-x1, pool-x2 do not differ"),
        "{md}"
    );
    assert!(
        md.contains("! unstable over repetitions in lucky (p99): ")
            && md.contains("repeat more or lengthen the phase."),
        "{md}"
    );
    assert!(
        md.contains("- spread: figures are medians of up to 5 repetitions"),
        "{md}"
    );
    assert!(
        md.contains("- headline: mixed/fast: no clear winner, within noise: pool-x1"),
        "{md}"
    );
    let table = super::super::comparison_table(&status);
    let line = |cell: &str| table.lines().find(|l| l.contains(cell)).unwrap().to_owned();
    assert!(line("pool-x2").ends_with("~1.0x"), "{table}");
    // The terminal's compact spread: every repetition within 2.5 of the median.
    assert!(line("pool-x2").contains(" 21.5 ±2.5 "), "{table}");
    assert!(line("lucky").ends_with("not ranked"), "{table}");
    assert!(
        table.contains("not ranked: lucky mixed/fast: unstable"),
        "{table}"
    );
    assert!(table.contains(super::super::UNSTABLE_NOTE), "{table}");
}

#[test]
fn the_resource_table_says_where_figures_come_from_and_shows_the_working_set() {
    let mut status = short_phase_status();
    status.cells[0].target = Some(TargetStats {
        source: Some("kubelet".into()),
        cpu_seconds_used: Some(14.9),
        working_set_idle_bytes: Some(2 << 20),
        working_set_peak_bytes: Some(3 << 20),
        ..TargetStats::default()
    });
    let md = render(&status, &[], &[], &Notes::default());
    let name = &status.cells[0].name;
    let row = md
        .lines()
        .skip_while(|l| !l.starts_with("## Target resources"))
        .find(|l| l.starts_with(&format!("| {name} |")))
        .unwrap_or_else(|| panic!("no resource row in {md}"));
    assert!(row.starts_with(&format!("| {name} | kubelet |")), "{row}");
    assert!(row.contains("| 2.0 MiB ws | 3.0 MiB ws |"), "{row}");
    assert!(row.contains("| 14.90 |"), "{row}");
}

#[test]
fn a_single_run_says_no_spread_is_known() {
    let md = render(&short_phase_status(), &[], &[], &Notes::default());
    assert!(
        md.contains("- spread: none known: each cell ran once (`spec.repeat: 1`)"),
        "{md}"
    );
    assert!(!md.contains("~ within noise") && !md.contains("~1"), "{md}");
}

#[test]
fn shows_each_replicas_share_and_calls_out_an_uneven_split() {
    let share =
        |replica: &str, cpu: [f64; 2], requests: Option<[f64; 2]>| crate::resource::ReplicaShare {
            replica: replica.into(),
            phases: ["fast-only", "mixed"]
                .iter()
                .enumerate()
                .map(|(k, p)| crate::resource::ReplicaPhaseShare {
                    phase: (*p).into(),
                    cpu_seconds_used: Some(cpu[k]),
                    requests_served: requests.map(|r| r[k]),
                })
                .collect(),
        };
    let cell = |name: &str, per_replica| CellStatus {
        name: name.into(),
        phase: CellPhase::Succeeded,
        target: Some(TargetStats {
            replicas: Some(2),
            per_replica,
            ..Default::default()
        }),
        ..Default::default()
    };
    let partial = |replica: &str, cpu: Option<f64>| crate::resource::ReplicaShare {
        replica: replica.into(),
        phases: vec![crate::resource::ReplicaPhaseShare {
            phase: "mixed".into(),
            cpu_seconds_used: cpu,
            requests_served: None,
        }],
    };
    let status = BenchmarkRunStatus {
        cells: vec![
            // One replica's /stats read failed: no shares, no verdict.
            cell("unread", vec![partial("a", Some(3.0)), partial("b", None)]),
            // Too little CPU for shares to mean anything.
            cell(
                "idle",
                vec![partial("a", Some(0.01)), partial("b", Some(0.03))],
            ),
            // Both /fast connections on one replica: it did all of fast-only's work.
            cell(
                "lopsided",
                vec![share("r0", [3.0, 8.0], None), share("r1", [0.0, 8.0], None)],
            ),
            cell(
                "even",
                vec![
                    share("127.0.0.2:9", [1.5, 8.0], Some([240.0, 100.0])),
                    share("127.0.0.3:9", [1.5, 8.2], Some([245.0, 98.0])),
                ],
            ),
        ],
        ..Default::default()
    };
    let md = render(&status, &[], &[], &Notes::default());
    assert!(md.contains("## How the work spread over replicas"), "{md}");
    assert!(
        md.contains("| lopsided | fast-only | r0 | 3.00 | 100% | - | - |"),
        "{md}"
    );
    assert!(
        md.contains("| even | mixed | 127.0.0.3:9 | 8.20 | 51% | 98 | 49% |"),
        "{md}"
    );
    assert!(
        md.contains("Uneven: in lopsided (fast-only) a replica"),
        "{md}"
    );
    assert!(
        !md.contains("lopsided (mixed)") && !md.contains("even ("),
        "{md}"
    );
    assert!(
        md.contains("| unread | mixed | a | 3.00 | - | - | - |"),
        "{md}"
    );
    assert!(
        md.contains("| idle | mixed | b | 0.03 | - | - | - |"),
        "{md}"
    );
    assert!(!md.contains("unread (") && !md.contains("idle ("), "{md}");
}
