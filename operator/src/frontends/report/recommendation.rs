//! The recommendation in report.md: the sentence (status.summary.recommendation), then what
//! each cell reserved beside what it served and the CPU it used.
//!
//! The CPU used per 1,000 requests is printed next to the rates it was measured at, and only
//! as information: the recommendation ranks by reserved CPU, since a cell that serves fewer of
//! the expensive requests uses less CPU per request without being any cheaper to run.

use std::fmt::Write as _;

use super::{ABSENT, phase_endpoints, result_of};
use crate::engine::verdict::recommend::{cpu_per_1000_requests, cpus};
use crate::resource::{BenchmarkRunStatus, CellStatus};

/// Markdown for report.md: `**Recommendation.** <sentence>` when the status has one, then a
/// table with a column per cell: its reserved CPU, its rate on each phase and endpoint, and
/// its CPU used per 1,000 requests (`!` when that spread more than 2x over the repetitions).
/// Empty when there is neither a sentence nor a measured cell.
pub fn render(status: &BenchmarkRunStatus) -> String {
    let mut o = String::new();
    if let Some(line) = status
        .summary
        .as_ref()
        .and_then(|s| s.recommendation.as_deref())
    {
        let _ = writeln!(o, "\n**Recommendation.** {line}");
    }
    let streams = phase_endpoints(status);
    if streams.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "\nWhat each cell reserved (CPU limit x replicas, the cost the recommendation ranks by), \
         the rate it served each stream at, and the CPU it used per 1,000 requests of that mix. \
         CPU used is information only: it falls when a cell serves fewer of the expensive \
         requests, without the cell being any cheaper to run.\n"
    );
    // One column per cell, so the figures of a cell read down and the cells compare across.
    let mut header = "| |".to_owned();
    let mut rule = "|---|".to_owned();
    for c in &status.cells {
        let _ = write!(header, " {} |", c.name);
        rule.push_str("---:|");
    }
    let _ = writeln!(o, "{header}\n{rule}");
    let mut row = |label: &str, value: &dyn Fn(&CellStatus) -> String| {
        let mut line = format!("| {label} |");
        for c in &status.cells {
            let _ = write!(line, " {} |", value(c));
        }
        let _ = writeln!(o, "{line}");
    };
    row("reserved CPU", &|c| {
        c.reserved_cpu.map_or_else(|| ABSENT.to_owned(), cpus)
    });
    for (phase, endpoint) in &streams {
        row(&format!("{phase}/{endpoint} rps"), &|c| {
            result_of(status, &c.name, phase, endpoint)
                .map_or_else(|| ABSENT.to_owned(), |r| format!("{:.1}", r.rps))
        });
    }
    row(
        "CPU-s used per 1000 requests",
        &|c| match cpu_per_1000_requests(c) {
            Some(cpu) if cpu.unstable() => format!("{:.2}!", cpu.median),
            Some(cpu) => format!("{:.2}", cpu.median),
            None => ABSENT.to_owned(),
        },
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{CellResult, Summary};

    /// The mixed phase's two streams over 10 s: /fast at `fast` and /slow at `slow` rps.
    fn mixed(fast: f64, slow: f64) -> Vec<CellResult> {
        let stream = |endpoint: &str, rps: f64| CellResult {
            phase: "mixed".into(),
            endpoint: endpoint.into(),
            requests: (rps * 10.0).round() as u64,
            rps,
            ..CellResult::default()
        };
        vec![stream("fast", fast), stream("slow", slow)]
    }

    #[test]
    fn the_section_shows_the_sentence_then_reservations_beside_rates_and_cpu_used() {
        let status = BenchmarkRunStatus {
            cells: vec![
                CellStatus::succeeded("cluster")
                    .reserving(2.0)
                    .using_cpu_seconds(20.0)
                    .with_results(mixed(110.0, 10.7)),
                CellStatus::succeeded("cluster-pool")
                    .reserving(2.0)
                    .using_cpu_seconds(20.0)
                    .with_results(mixed(234.0, 5.5)),
                // No reservation recorded: the row shows a dash.
                CellStatus::succeeded("old")
                    .using_cpu_seconds(20.0)
                    .with_results(mixed(100.0, 10.0)),
            ],
            summary: Some(Summary {
                recommendation: Some("No service level was given.".into()),
                ..Summary::default()
            }),
            ..BenchmarkRunStatus::default()
        };
        let md = render(&status);
        assert!(
            md.starts_with("\n**Recommendation.** No service level was given.\n"),
            "{md}"
        );
        assert!(md.contains("CPU used is information only"), "{md}");
        // 20 CPU-s over 1100 + 107 and over 2340 + 55 requests; 20 over 1000 + 100.
        assert!(
            md.ends_with(
                "| | cluster | cluster-pool | old |\n\
                 |---|---:|---:|---:|\n\
                 | reserved CPU | 2 CPUs | 2 CPUs | — |\n\
                 | mixed/fast rps | 110.0 | 234.0 | 100.0 |\n\
                 | mixed/slow rps | 10.7 | 5.5 | 10.0 |\n\
                 | CPU-s used per 1000 requests | 16.57 | 8.35 | 18.18 |\n"
            ),
            "{md}"
        );
    }

    #[test]
    fn nothing_to_show_without_a_sentence_or_a_measured_cell() {
        assert_eq!(render(&BenchmarkRunStatus::default()), "");
    }
}
