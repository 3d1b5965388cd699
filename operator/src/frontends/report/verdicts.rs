//! The "Thresholds" section of report.md: each verdict with its measured and limit values (the
//! recommendation follows it, from [`super::recommendation`]).

use std::fmt::Write as _;

use crate::resource::thresholds::figure_text;
use crate::resource::{Metric, ThresholdResult, Verdict};

use super::ABSENT;

/// A figure with its unit, or [`ABSENT`] when it could not be measured.
fn value(figure: &str, v: Option<f64>) -> String {
    match (Metric::from_key(figure), v) {
        (Some(metric), Some(v)) => figure_text(metric, v),
        (None, Some(v)) => format!("{v}"),
        (_, None) => ABSENT.to_owned(),
    }
}

/// Table cells may not contain a pipe or a line break.
fn cell_text(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Markdown for report.md: a "Thresholds" section (omitted when `results` is empty) with a
/// one-line verdict and a table of threshold, cell, measured, limit and verdict (a failure with
/// its reason). Empty without thresholds.
pub fn render(results: &[ThresholdResult]) -> String {
    let mut o = String::new();
    if !results.is_empty() {
        let failed = results
            .iter()
            .filter(|r| r.verdict == Verdict::Fail)
            .count();
        let _ = writeln!(o, "\n## Thresholds\n");
        if failed == 0 {
            let _ = writeln!(
                o,
                "All {} threshold verdicts passed (condition ThresholdsMet is True).\n",
                results.len()
            );
        } else {
            let _ = writeln!(
                o,
                "**{failed} of {} threshold verdicts failed** (condition ThresholdsMet is \
                 False; `benchmatrix run` exits with 3).\n",
                results.len()
            );
        }
        let _ = writeln!(o, "| threshold | cell | measured | limit | verdict |");
        let _ = writeln!(o, "|---|---|---:|---:|---|");
        for r in results {
            let verdict = match r.verdict {
                Verdict::Pass => "pass".to_owned(),
                Verdict::Fail => format!("**FAIL**: {}", cell_text(&r.message)),
            };
            let unstable = if r.unstable { " (unstable)" } else { "" };
            let _ = writeln!(
                o,
                "| {} | {} | {}{unstable} | {} | {verdict} |",
                cell_text(&r.threshold),
                cell_text(&r.cell),
                value(&r.figure, r.measured),
                value(&r.figure, r.limit),
            );
        }
        if results.iter().any(|r| r.unstable) {
            let _ = writeln!(
                o,
                "\n(unstable): the figure spread more than 2x over the repetitions; the \
                 verdict stands, but the cell is not recommended on it. Repeat more or \
                 lengthen the phase."
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(
        figure: &str,
        cell: &str,
        measured: Option<f64>,
        limit: f64,
        pass: bool,
    ) -> ThresholdResult {
        ThresholdResult {
            index: 0,
            threshold: format!("mixed/fast {figure} below something"),
            figure: figure.into(),
            cell: cell.into(),
            phase: "mixed".into(),
            endpoint: "fast".into(),
            measured,
            limit: Some(limit),
            ratio: None,
            verdict: if pass { Verdict::Pass } else { Verdict::Fail },
            message: if pass {
                "ok".into()
            } else {
                "cell pool-x1 failed (OOMKilled): a | b".into()
            },
            unstable: false,
        }
    }

    #[test]
    fn threshold_section_lists_each_verdict_with_units() {
        let md = render(&[
            result("p99", "single-x1", Some(20.04), 100.0, true),
            result("rps", "pool-x1", None, 3.2, false),
            result("errorRate", "pool-x2", Some(0.005), 0.001, false),
        ]);
        assert!(md.contains("## Thresholds"), "{md}");
        assert!(md.contains("**2 of 3 threshold verdicts failed**"), "{md}");
        assert!(
            md.contains(
                "| mixed/fast p99 below something | single-x1 | 20.0 ms | 100.0 ms | pass |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| mixed/fast rps below something | pool-x1 | — | 3.2 rps | **FAIL**: cell pool-x1 \
                 failed (OOMKilled): a \\| b |"
            ),
            "{md}"
        );
        assert!(
            md.ends_with(
                "| 0.50% | 0.10% | **FAIL**: cell pool-x1 failed (OOMKilled): a \\| b |\n"
            ),
            "{md}"
        );
    }

    #[test]
    fn threshold_section_is_absent_without_thresholds() {
        assert_eq!(render(&[]), "");
    }
}
