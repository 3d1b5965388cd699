//! `--junit FILE` of both `run` commands: a finished run as JUnit XML, the report format CI
//! systems show as test results (GitHub through a test-report action, GitLab's
//! `artifacts:reports:junit`, Jenkins). Each threshold verdict is a test case of the suite
//! `thresholds`, and each cell one of the suite `cells`: a measured cell passes, a failed one
//! fails with its reason, a skipped one is skipped. A run refused before any cell (an invalid
//! spec) is one failed case of the suite `run`. A run with variants adds the suite `variants`:
//! each candidate figure against the base (status.variants) is a case, with the ratio, its
//! interval and the p-value. It fails where the exit code does: with `--max-regression PCT`,
//! when the figure is worse at p < 0.05 by more than PCT ([`crate::engine::verdict::gate::regressed`]);
//! without it, when the status's verdict is Regression (worse, significant at 5% and beyond the
//! 5% minimum change). A CI page and the job's exit code never disagree.
//!
//! The elements and attributes are those of the Surefire/Jenkins JUnit format, which every
//! reader of JUnit XML accepts; `tests/junit.xsd` describes them, and a test validates the
//! output against it with xmllint.

use std::fmt::Write as _;
use std::path::Path;

use crate::resource::conditions::{self, secs_of};
use crate::resource::status::{ChangeVerdict, RatioFigure, VariantComparison};
use crate::resource::{BenchmarkRunStatus, CellPhase, CellStatus, ThresholdResult, Verdict};

/// One test case.
struct Case {
    name: String,
    seconds: f64,
    outcome: CaseOutcome,
}

enum CaseOutcome {
    Passed,
    Failed {
        kind: String,
        message: String,
        detail: String,
    },
    Skipped(String),
}

/// A suite of cases.
struct Suite {
    name: &'static str,
    cases: Vec<Case>,
}

impl Suite {
    fn count(&self, f: impl Fn(&CaseOutcome) -> bool) -> usize {
        self.cases.iter().filter(|c| f(&c.outcome)).count()
    }

    fn failures(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Failed { .. }))
    }

    fn skipped(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Skipped(_)))
    }

    fn seconds(&self) -> f64 {
        self.cases.iter().map(|c| c.seconds).sum()
    }
}

/// The JUnit XML of the finished run `run` (its name, for the suites' names) with `status`,
/// its variant cases judged by `max_regression` (`--max-regression`) when given.
pub fn junit_xml(run: &str, status: &BenchmarkRunStatus, max_regression: Option<f64>) -> String {
    let suites = suites(status, max_regression);
    let tests: usize = suites.iter().map(|s| s.cases.len()).sum();
    let failures: usize = suites.iter().map(Suite::failures).sum();
    let skipped: usize = suites.iter().map(Suite::skipped).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" \
         skipped=\"{skipped}\" time=\"{}\">",
        escape(&format!("benchmatrix {run}")),
        seconds_text(run_seconds(status)),
    );
    let timestamp = status
        .start_time
        .as_ref()
        .or(status.completion_time.as_ref())
        .map(|t| t.0.strftime("%Y-%m-%dT%H:%M:%S").to_string());
    for suite in &suites {
        write_suite(&mut out, run, suite, timestamp.as_deref());
    }
    out.push_str("</testsuites>\n");
    out
}

/// Writes [`junit_xml`] into `path`, atomically.
pub fn write_junit(
    path: &Path,
    run: &str,
    status: &BenchmarkRunStatus,
    max_regression: Option<f64>,
) -> std::io::Result<()> {
    super::write_atomically(path, junit_xml(run, status, max_regression).as_bytes())
}

fn write_suite(out: &mut String, run: &str, suite: &Suite, timestamp: Option<&str>) {
    let _ = write!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" \
         time=\"{}\"",
        suite.name,
        suite.cases.len(),
        suite.failures(),
        suite.skipped(),
        seconds_text(suite.seconds()),
    );
    if let Some(t) = timestamp {
        let _ = write!(out, " timestamp=\"{t}\"");
    }
    out.push_str(">\n");
    // The class name is what most readers group cases by: the run, then the suite.
    let class = escape(&format!("{run}.{}", suite.name));
    for case in &suite.cases {
        let _ = write!(
            out,
            "    <testcase classname=\"{class}\" name=\"{}\" time=\"{}\"",
            escape(&case.name),
            seconds_text(case.seconds)
        );
        match &case.outcome {
            CaseOutcome::Passed => out.push_str("/>\n"),
            CaseOutcome::Failed {
                kind,
                message,
                detail,
            } => {
                let _ = write!(
                    out,
                    ">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n",
                    escape(kind),
                    escape(message),
                    escape(detail)
                );
            }
            CaseOutcome::Skipped(message) => {
                let _ = write!(
                    out,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                    escape(message)
                );
            }
        }
    }
    out.push_str("  </testsuite>\n");
}

/// The suites of a finished run: its thresholds (when it has any), its cells, or, for a run
/// that never reached a cell, the run itself.
fn suites(status: &BenchmarkRunStatus, max_regression: Option<f64>) -> Vec<Suite> {
    let mut suites = Vec::new();
    if !status.thresholds.is_empty() {
        suites.push(Suite {
            name: "thresholds",
            cases: status.thresholds.iter().map(threshold_case).collect(),
        });
    }
    if status.cells.is_empty() {
        suites.push(Suite {
            name: "run",
            cases: vec![run_case(status)],
        });
    } else {
        suites.push(Suite {
            name: "cells",
            cases: status.cells.iter().map(cell_case).collect(),
        });
    }
    if !status.variants.is_empty() {
        suites.push(Suite {
            name: "variants",
            cases: status
                .variants
                .iter()
                .flat_map(|c| {
                    c.figures
                        .iter()
                        .map(move |f| variant_case(c, f, max_regression))
                })
                .collect(),
        });
    }
    suites
}

/// A candidate's figure against the base's: failed on a regression, beyond `max_regression`
/// percent when given (the exit code's gate), else by the status's verdict.
fn variant_case(c: &VariantComparison, f: &RatioFigure, max_regression: Option<f64>) -> Case {
    let change = |ratio: f64| format!("{:+.1}%", (ratio - 1.0) * 100.0);
    let interval = match (f.ratio_low, f.ratio_high) {
        (Some(low), Some(high)) => format!(", 95% interval {} to {}", change(low), change(high)),
        _ => String::new(),
    };
    let evidence = format!(
        "{} {} {}: base {} candidate {}, ratio {:.3} ({}{interval}) over {} rounds, p(worse)={:.3}",
        c.configuration,
        f.phase,
        f.endpoint,
        f.base,
        f.candidate,
        f.ratio,
        change(f.ratio),
        c.rounds,
        f.p_worse
    );
    let failed = match max_regression {
        Some(max) => crate::engine::verdict::gate::regressed(f, max),
        None => f.verdict == ChangeVerdict::Regression,
    };
    let outcome = if failed {
        CaseOutcome::Failed {
            kind: "Regression".into(),
            message: format!(
                "{} {} of {}: {}{interval}, p={:.3}{}",
                c.candidate,
                f.figure,
                c.configuration,
                change(f.ratio),
                f.p_worse,
                max_regression.map_or(String::new(), |max| format!(
                    ", beyond --max-regression {max}%"
                ))
            ),
            detail: evidence,
        }
    } else {
        CaseOutcome::Passed
    };
    Case {
        name: format!(
            "{}: {} vs {} {}/{} {}",
            c.configuration, c.candidate, c.base, f.phase, f.endpoint, f.figure
        ),
        seconds: 0.0,
        outcome,
    }
}

fn threshold_case(t: &ThresholdResult) -> Case {
    let outcome = match t.verdict {
        Verdict::Pass => CaseOutcome::Passed,
        Verdict::Fail => CaseOutcome::Failed {
            kind: "ThresholdFailed".into(),
            message: t.message.clone(),
            detail: format!(
                "{} on {}: measured {}, limit {}{}",
                t.threshold,
                t.cell,
                figure(t.measured),
                figure(t.limit),
                if t.unstable {
                    " (the figure spread more than 2x over the repetitions)"
                } else {
                    ""
                }
            ),
        },
    };
    Case {
        name: format!("{} [{}]", t.threshold, t.cell),
        seconds: 0.0,
        outcome,
    }
}

fn figure(v: Option<f64>) -> String {
    v.map_or_else(|| "none".into(), |v| format!("{v}"))
}

fn cell_case(cell: &CellStatus) -> Case {
    let seconds = match (&cell.start_time, &cell.completion_time) {
        (Some(s), Some(e)) => (secs_of(e) - secs_of(s)).max(0) as f64,
        _ => 0.0,
    };
    let message = cell.message.clone().unwrap_or_default();
    let outcome = match cell.phase {
        CellPhase::Succeeded => CaseOutcome::Passed,
        CellPhase::Skipped => CaseOutcome::Skipped(if message.is_empty() {
            "not run: an earlier cell failed (stopOnFailure)".into()
        } else {
            message
        }),
        phase => {
            let reason = cell.reason.clone().unwrap_or_else(|| phase.to_string());
            CaseOutcome::Failed {
                message: format!("{reason}: {message}"),
                kind: reason,
                detail: message,
            }
        }
    };
    Case {
        name: cell.name.clone(),
        seconds,
        outcome,
    }
}

fn run_case(status: &BenchmarkRunStatus) -> Case {
    let message = status.message.clone().unwrap_or_default();
    let refused = conditions::find(&status.conditions, conditions::SPEC_VALID)
        .filter(|c| c.status == conditions::status::FALSE);
    let outcome = match (status.phase, refused) {
        (_, Some(c)) => CaseOutcome::Failed {
            kind: c.reason.clone(),
            message: c.message.clone(),
            detail: message,
        },
        (crate::resource::RunPhase::Succeeded, None) => CaseOutcome::Passed,
        (phase, None) => CaseOutcome::Failed {
            kind: phase.to_string(),
            message: message.clone(),
            detail: message,
        },
    };
    Case {
        name: "run".into(),
        seconds: run_seconds(status),
        outcome,
    }
}

fn run_seconds(status: &BenchmarkRunStatus) -> f64 {
    match (&status.start_time, &status.completion_time) {
        (Some(s), Some(e)) => (secs_of(e) - secs_of(s)).max(0) as f64,
        _ => 0.0,
    }
}

fn seconds_text(s: f64) -> String {
    format!("{s:.3}")
}

/// `text` as XML character data or an attribute value: the five special characters escaped,
/// and characters XML 1.0 cannot hold at all (controls other than tab and newlines) dropped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
