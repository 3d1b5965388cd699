use benchmatrix_loadgen::result::{PhaseResult, RunResult, StreamResult, TimelinePoint};

use super::*;
use crate::fixtures::repeated::{self, Stream};

/// The number in `attr="..."` of an SVG element's text.
fn attr(element: &str, attr: &str) -> f64 {
    let key = format!(" {attr}=\"");
    let at = element
        .find(&key)
        .unwrap_or_else(|| panic!("no {attr} in {element}"))
        + key.len();
    let end = element[at..].find('"').unwrap() + at;
    element[at..end].parse().unwrap()
}

/// The elements named `tag` of `svg` whose title is `title`.
fn titled<'a>(svg: &'a str, tag: &str, title: &str) -> Vec<&'a str> {
    svg.split(&format!("<{tag} "))
        .skip(1)
        .filter(|e| e.contains(&format!("<title>{title}</title>")))
        .collect()
}

/// mixed/fast of three cells measured three times: pool-x1's and pool-x2's p99 is supported,
/// single-x1's is not (60 samples in all); every cell's rps has its three values.
fn repeated_three_times() -> crate::resource::BenchmarkRunStatus {
    let stream = |requests, rps: &'static [f64], p99: &'static [f64]| Stream {
        phase: "mixed",
        endpoint: "fast",
        requests,
        errors: 0,
        rps,
        p99,
    };
    repeated::status(vec![
        repeated::cell(
            "single-x1",
            &[stream(20, &[2.6, 2.4, 2.5], &[800.0, 810.0, 790.0])],
        ),
        repeated::cell(
            "pool-x1",
            &[stream(400, &[80.2, 79.5, 81.0], &[30.1, 33.9, 31.6])],
        ),
        repeated::cell(
            "pool-x2",
            &[stream(600, &[76.6, 75.0, 77.1], &[20.0, 28.0, 24.5])],
        ),
    ])
}

#[test]
fn p99_bars_of_a_repeated_run_carry_each_repetition_and_the_min_max() {
    let status = repeated_three_times();
    let charts = charts(&status, &[]);
    let svg = &charts
        .iter()
        .find(|(name, _)| name == "p99-mixed-fast.svg")
        .unwrap()
        .1;
    // The bar is the median, its top at the median's height; 0 is at its foot.
    let bar = titled(svg, "rect", "pool-x1: 31.6");
    assert_eq!(bar.len(), 1, "{svg}");
    let (top, base) = (
        attr(bar[0], "y"),
        attr(bar[0], "y") + attr(bar[0], "height"),
    );
    let height_of = |v: f64| base - (base - top) * v / 31.6;
    // One dot per repetition, in the order measured, each at its value's height.
    for (k, v) in [30.1, 33.9, 31.6].into_iter().enumerate() {
        let title = format!("pool-x1, repetition {}: {v}", k + 1);
        let dot = titled(svg, "circle", &title);
        assert_eq!(dot.len(), 1, "{title}: {svg}");
        let cy = attr(dot[0], "cy");
        assert!((cy - height_of(v)).abs() < 0.15, "{title} at {cy}: {svg}");
    }
    // The whisker spans the lowest to the highest repetition.
    let whisker = titled(svg, "g", "pool-x1: min 30.1 – max 33.9 over 3 repetitions");
    assert_eq!(whisker.len(), 1, "{svg}");
    let line = whisker[0].split("<line ").nth(1).unwrap();
    assert!((attr(line, "y1") - height_of(30.1)).abs() < 0.15, "{line}");
    assert!((attr(line, "y2") - height_of(33.9)).abs() < 0.15, "{line}");
    assert_eq!(
        titled(svg, "circle", "pool-x2, repetition 2: 28.0").len(),
        1
    );
    // No bar for a p99 its samples cannot support, so nothing on it either.
    assert!(
        !svg.contains("single-x1,") && !svg.contains("single-x1:"),
        "{svg}"
    );
    assert!(svg.contains(svg::REPETITIONS_CAPTION), "{svg}");
}

#[test]
fn throughput_bars_of_a_repeated_run_carry_each_repetition() {
    let status = repeated_three_times();
    let charts = charts(&status, &[]);
    let svg = &charts
        .iter()
        .find(|(n, _)| n == "throughput-mixed.svg")
        .unwrap()
        .1;
    for (cell, values) in [
        ("single-x1", ["2.60", "2.40", "2.50"]),
        // One number format per chart: the smallest value's (2.40) for all.
        ("pool-x1", ["80.20", "79.50", "81.00"]),
        ("pool-x2", ["76.60", "75.00", "77.10"]),
    ] {
        for (k, v) in values.iter().enumerate() {
            let title = format!("{cell}, repetition {}: {v}", k + 1);
            assert_eq!(titled(svg, "circle", &title).len(), 1, "{title}: {svg}");
        }
    }
    assert_eq!(svg.matches("<g class=\"whisker\"").count(), 3, "{svg}");
}

#[test]
fn a_single_run_draws_no_repetition_marks() {
    let once = |rps: &'static [f64], p99: &'static [f64]| {
        repeated::cell(
            "a",
            &[Stream {
                phase: "mixed",
                endpoint: "fast",
                requests: 400,
                errors: 0,
                rps,
                p99,
            }],
        )
    };
    let mut cell = once(&[80.0], &[30.0]);
    // One run: no spread at all.
    for r in &mut cell.results {
        r.spread = None;
    }
    for (_, svg) in charts(&repeated::status(vec![cell]), &[]) {
        assert!(
            !svg.contains("<circle") && !svg.contains("whisker"),
            "{svg}"
        );
        assert!(!svg.contains(svg::REPETITIONS_CAPTION), "{svg}");
    }
}

fn raw(cell: &str, repetition: Option<(u32, u32)>) -> RawCell {
    let point = TimelinePoint {
        second: 0,
        requests: 10,
        p99_ms: 30.0,
        ..Default::default()
    };
    RawCell {
        cell: cell.into(),
        result: RunResult {
            phases: vec![PhaseResult {
                name: "mixed".into(),
                duration_secs: 1.0,
                streams: vec![StreamResult {
                    endpoint: "fast".into(),
                    timeline: vec![point],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        },
        repetition,
    }
}

#[test]
fn the_latency_over_time_chart_says_which_repetition_it_shows() {
    let status = repeated_three_times();
    let title = |raw: &[RawCell]| {
        charts(&status, raw)
            .into_iter()
            .find(|(n, _)| n == "latency-over-time-fast.svg")
            .unwrap()
            .1
    };
    let same = title(&[raw("pool-x1", Some((3, 3))), raw("pool-x2", Some((3, 3)))]);
    assert!(
        same.contains(">p99 latency of fast, second by second, repetition 3 of 3</text>"),
        "{same}"
    );
    // A cell that failed in its third repetition shows its second: each cell says its own.
    let each = title(&[raw("pool-x1", Some((2, 3))), raw("pool-x2", Some((3, 3)))]);
    assert!(
        each.contains("second by second, each cell&#39;s latest repetition")
            || each.contains("second by second, each cell's latest repetition"),
        "{each}"
    );
    assert!(each.contains(">pool-x1 (rep 2/3)</text>"), "{each}");
    assert!(each.contains(">pool-x2 (rep 3/3)</text>"), "{each}");
    let once = title(&[raw("a", None)]);
    assert!(
        once.contains(">p99 latency of fast, second by second</text>"),
        "{once}"
    );
}

/// A saved status from operator/tests/fixtures.
fn saved(path: &str) -> crate::resource::BenchmarkRunStatus {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(path),
    )
    .unwrap();
    crate::frontends::report::parse_status(&text).unwrap()
}

#[test]
fn a_capacity_run_draws_its_answer_never_p99_bars_across_cells() {
    let status = saved("report/capacity-rounds.yaml");
    let charts = charts(&status, &[]);
    let names: Vec<&str> = charts.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "capacity.svg",
            "capacity-queue-10ms.svg",
            "capacity-latency-bound.svg"
        ]
    );
    let (_, stick) = &charts[1];
    let cap = status.cells[0].capacity.as_ref().unwrap();
    // Each probe twice (SLO figure above, achieved below): held filled, failed hollow.
    let held = cap
        .probes
        .iter()
        .filter(|p| p.verdict == crate::resource::capacity::ProbeVerdict::Held)
        .count();
    // Every probe in both panels, plus the legend's two circles.
    assert_eq!(
        stick.matches("<circle").count(),
        2 * cap.probes.len() + 2,
        "{stick}"
    );
    // Failed probes hollow in both panels, plus the legend's hollow one.
    let hollow = stick.matches("fill=\"white\" stroke=\"#").count();
    assert_eq!(hollow, 2 * (cap.probes.len() - held) + 1, "{stick}");
    assert!(stick.contains("SLO: below 60 ms") && stick.contains("held (median) 95 rps"));
    assert!(stick.contains("round 2") && stick.contains("failed 100 rps"));
    // Found: no note on why the search stopped.
    assert!(!stick.contains("no capacity"));
}

#[test]
fn a_search_the_load_generator_stopped_says_so_and_a_failed_search_gets_a_row() {
    let status = saved("report/capacity-loadgen.yaml");
    let charts = charts(&status, &[]);
    let stick = &charts
        .iter()
        .find(|(n, _)| n == "capacity-fast____wide_.svg")
        .unwrap()
        .1;
    assert!(stick.contains("stopped by the load generator"), "{stick}");
    assert!(stick.contains("fast &amp; &lt;wide&gt;"));
    let per_run = &charts.iter().find(|(n, _)| n == "capacity.svg").unwrap().1;
    assert!(
        per_run.contains("no capacity: failed even at the start rate"),
        "{per_run}"
    );
}

#[test]
fn the_sizing_map_places_each_configuration_and_marks_the_chosen_one() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/e2e/sized-status.yaml"),
    )
    .unwrap();
    let status = crate::frontends::report::parse_status(&text).unwrap();
    let (name, map) = super::super::sizing_map::chart(&status).unwrap();
    assert_eq!(name, "sizing-map.svg");
    // 8 configurations, one square each; the chosen one alone has the thick border.
    assert_eq!(map.matches("stroke=\"#000\" stroke-width=\"3\"").count(), 1);
    assert_eq!(
        titled(&map, "rect", "pool-x1-cpu1: chosen").len(),
        1,
        "{map}"
    );
    assert!(map.contains(">42 / 24 rps<") && map.contains(">≤ 13.2 rps<"));
    assert!(map.contains(">single<") && map.contains(">pool<"));
}
