use super::*;
use crate::fixtures::repeated::{self, Stream};
use crate::resource::CellStatus;

/// Five repetitions' values around `base`, `wobble` apart (the last one the farthest).
fn five(base: f64, wobble: f64) -> [f64; 5] {
    [
        base,
        base - wobble,
        base + wobble * 0.5,
        base - wobble * 0.25,
        base + wobble * 1.5,
    ]
}

/// The matrix of a large repeated run: eight configurations, two phases, four endpoints (six
/// streams a cell), each measured five times, with latencies from milliseconds to seconds,
/// thin percentiles, an unstable figure, a stream whose every request failed, heavy errors,
/// and a failed cell whose message carries the load generator's last words.
fn large_repeated_status() -> BenchmarkRunStatus {
    let names = [
        "single-x1",
        "single-x2",
        "single-x4",
        "pool-x1",
        "pool-x2",
        "pool-x4",
        "pool-x2-cpu1500m",
        "single-x2-cpu1500m",
    ];
    let mut cells: Vec<CellStatus> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let f = 1.0 + i as f64 * 0.37;
            let (fast_rps, fast_p99) = (five(2412.0 / f, 60.0), five(31.6 * f, 1.8));
            let (mixed_rps, mixed_p99) = (five(161.2 / f, 4.4), five(1523.4 * f, 310.2));
            let (slow_rps, slow_p99) = (five(2.7, 0.3), five(12345.6 * f, 2345.6));
            let (search_rps, search_p99) = (five(88.8, 1.1), five(212.3 * f, 11.4));
            let upload_rps = [0.0; 5];
            // pool-x1's search p99 moved 3x between repetitions.
            let unstable = [80.0, 240.0, 95.0, 100.0, 90.0];
            let streams = [
                Stream {
                    phase: "fast-only",
                    endpoint: "fast",
                    requests: 123_456,
                    errors: 0,
                    rps: &fast_rps,
                    p99: &fast_p99,
                },
                Stream {
                    phase: "fast-only",
                    endpoint: "search",
                    requests: 4_400,
                    errors: 12,
                    rps: &search_rps,
                    p99: if *name == "pool-x1" {
                        &unstable
                    } else {
                        &search_p99
                    },
                },
                Stream {
                    phase: "mixed",
                    endpoint: "fast",
                    requests: 12_000,
                    errors: 0,
                    rps: &mixed_rps,
                    p99: &mixed_p99,
                },
                Stream {
                    phase: "mixed",
                    endpoint: "slow",
                    requests: 15,
                    errors: 0,
                    rps: &slow_rps,
                    p99: &slow_p99,
                },
                Stream {
                    phase: "mixed",
                    endpoint: "search",
                    requests: 3_000,
                    errors: 2_100,
                    rps: &search_rps,
                    p99: &search_p99,
                },
                Stream {
                    phase: "mixed",
                    endpoint: "upload",
                    requests: 1_398,
                    errors: 1_398,
                    rps: &upload_rps,
                    p99: &search_p99,
                },
            ];
            repeated::cell(name, &streams)
        })
        .collect();
    cells.push(CellStatus {
        name: "pool-x8-cpu250m".into(),
        phase: CellPhase::Failed,
        reason: Some("LoadgenFailed".into()),
        message: Some(format!(
            "repetition 3 of 5: the load generator failed: it exited with exit status: 1; its \
             last output: {}",
            "error: connection refused (os error 111) to http://127.0.0.1:40123/slow "
                .repeat(3)
                .trim_end()
        )),
        ..Default::default()
    });
    repeated::status(cells)
}

#[test]
fn a_large_repeated_run_fits_120_columns_with_one_compact_spread_per_figure() {
    let status = large_repeated_status();
    let table = comparison_table(&status);
    for line in table.lines() {
        let n = line.chars().count();
        assert!(n <= TABLE_WIDTH, "{n} characters: {line}\n{table}");
    }
    // Every stream is there: 6 headings, each with a row for each of the 8 measured cells.
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("configuration "), "{table}");
    let headings = [
        "fast-only / fast",
        "fast-only / search",
        "mixed / fast",
        "mixed / slow",
        "mixed / search",
        "mixed / upload",
    ];
    for h in headings {
        let at = lines
            .iter()
            .position(|l| *l == h)
            .unwrap_or_else(|| panic!("{h}: {table}"));
        assert!(
            lines[at + 1..at + 9].iter().all(|l| l.starts_with("  ")),
            "{table}"
        );
    }
    let row = |phase: &str, endpoint: &str, cell: &str| {
        let heading = format!("{phase} / {endpoint}");
        lines
            .iter()
            .skip_while(|l| **l != heading)
            .find(|l| l.split_whitespace().next() == Some(cell))
            .unwrap_or_else(|| panic!("no {phase}/{endpoint} {cell} row in\n{table}"))
            .to_string()
    };
    // single-x1's fast-only /fast p99 over its repetitions: 31.6, 29.8, 32.5, 31.15, 34.3.
    // Median 31.6, and every repetition within 2.7 of it (34.3 − 31.6).
    let r = row("fast-only", "fast", "single-x1");
    assert!(r.contains(" 31.6 ±2.7 "), "{r}");
    // rps: median 2412.0, farthest 90.0 above.
    assert!(r.contains(" 2412.0 ±90.0 "), "{r}");
    // The figure once, its spread once: no min–max range, no CI (the notes say where they are).
    let rows: Vec<&&str> = lines.iter().take_while(|l| !l.starts_with("* ")).collect();
    assert_eq!(rows.len(), 1 + 6 * 9, "{table}");
    assert!(
        rows.iter().all(|r| !r.contains("CI") && !r.contains('–')),
        "{table}"
    );
    assert!(
        table.contains("±d: every repetition within d of the median"),
        "{table}"
    );
    // Thin and unstable figures keep their marks.
    assert!(row("mixed", "slow", "pool-x1").contains('*'), "{table}");
    let unstable = row("fast-only", "search", "pool-x1");
    assert!(
        unstable.contains("!") && unstable.ends_with("not ranked"),
        "{unstable}"
    );
    // A stream whose every request failed has no latency.
    let failed = row("mixed", "upload", "pool-x2");
    assert_eq!(failed.matches(ABSENT).count(), 3, "{failed}");
    // The long failure message is wrapped, not cut off.
    assert!(
        table.contains("not measured: pool-x8-cpu250m: Failed (repetition 3"),
        "{table}"
    );
    let tail: String = table
        .lines()
        .skip_while(|l| !l.starts_with("not measured:"))
        .map(str::trim_start)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(tail.ends_with("40123/slow)"), "{tail}");
}

#[test]
fn report_md_keeps_the_full_columns_and_the_range() {
    let status = large_repeated_status();
    let md = crate::frontends::report::markdown::render(&status, &[], &[], &Default::default());
    assert!(md.contains("| p99 ms | p99.9 ms | max ms |"), "{md}");
    let row = md
        .lines()
        .skip_while(|l| !l.starts_with("### fast in phase fast-only"))
        .find(|l| l.starts_with("| single-x1 |"))
        .unwrap_or_else(|| panic!("{md}"));
    // The median with its min–max; the CI of five repetitions equals that range here, so it
    // is left out.
    assert!(row.contains("| 31.6 (29.8–34.3) |"), "{row}");
}

#[test]
fn notes_wrap_at_spaces_with_an_indent_and_long_words_are_cut() {
    assert_eq!(wrap("short", 20), "short\n");
    assert_eq!(
        wrap("one two three four five six", 13),
        "one two three\n  four five\n  six\n"
    );
    assert_eq!(
        wrap("abcdefghijklmnop xy", 10),
        "abcdefgh\n  ijklmnop\n  xy\n"
    );
    for line in wrap(&"word ".repeat(60), 40).lines() {
        assert!(line.chars().count() <= 40, "{line}");
    }
}

#[test]
fn a_run_that_searched_shows_each_cells_capacity_and_compares_no_latency_across_rates() {
    use crate::resource::capacity::CapacityStatus;
    // Each cell's row is its confirmation probe at its own rate: pool held 3x single's rate at
    // a higher p99, which must not read as pool being slower.
    let probe = |rps: f64, p99: f64| crate::resource::CellResult {
        phase: "probe".into(),
        endpoint: "fast".into(),
        requests: (rps * 10.0) as u64,
        samples: (rps * 10.0) as u64,
        rps,
        latency_ms: Some(crate::resource::LatencyMs {
            p50: p99 / 2.0,
            p90: p99,
            p99,
            p999: p99,
            max: p99,
            mean: p99 / 2.0,
        }),
        ..Default::default()
    };
    let searched = |name: &str, held: Option<f64>, result| {
        let mut c = CellStatus::succeeded(name)
            .reserving(2.0)
            .with_results(vec![result]);
        c.capacity = Some(CapacityStatus {
            found: held.is_some(),
            held_rate: held,
            ..CapacityStatus::default()
        });
        c
    };
    let status = BenchmarkRunStatus {
        cells: vec![
            searched("single", Some(40.0), probe(40.0, 30.0)),
            searched("pool", Some(120.5), probe(120.5, 80.0)),
            searched("capped", None, probe(10.0, 900.0)),
        ],
        ..BenchmarkRunStatus::default()
    };
    let table = comparison_table(&status);
    let header = table.lines().next().unwrap();
    assert!(header.trim_end().ends_with("capacity"), "{table}");
    assert!(!table.contains("p99 vs best"), "{table}");
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap()
            .to_owned()
    };
    assert!(row("single").ends_with("40 rps"), "{table}");
    assert!(row("pool").ends_with("120.50 rps"), "{table}");
    assert!(row("capped").ends_with("none found"), "{table}");
    assert!(!table.contains("not ranked"), "{table}");
    assert!(
        table.contains("latencies are not compared across cells"),
        "{table}"
    );
}
