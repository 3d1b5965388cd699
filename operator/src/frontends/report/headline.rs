//! The verdict every rendering of a status leads with: report.md's first line, report.html's
//! banner, the first line `benchmatrix report` prints, and its exit code. All come from
//! [`Outcome::gated`], the one verdict `run` and `kubectl benchmatrix run` exit with, so no
//! page can say "Succeeded" above a gate that failed.

use crate::engine::verdict::outcome::Outcome;
use crate::resource::conditions::{self, find};
use crate::resource::{BenchmarkRunStatus, CellPhase};

/// A run's verdict in words, with the exit code it goes with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// One word: passed, failed, regressed, no answer.
    pub word: &'static str,
    /// Why, in a sentence.
    pub why: String,
    /// The exit code of [`Outcome::code`].
    pub code: u8,
}

impl Verdict {
    /// "verdict: failed — 1 of 3 threshold verdicts failed (exit 3)".
    pub fn line(&self) -> String {
        format!("verdict: {} — {} (exit {})", self.word, self.why, self.code)
    }

    /// A CSS class for the banner: pass, fail or none.
    pub fn class(&self) -> &'static str {
        match self.word {
            "passed" => "pass",
            "no answer" | "interrupted" => "none",
            _ => "fail",
        }
    }
}

/// The verdict of `status` under `--max-regression` (none: the gate is not asked).
pub fn verdict(status: &BenchmarkRunStatus, max_regression: Option<f64>) -> Verdict {
    let (outcome, _) = Outcome::gated(status, max_regression);
    let message = |type_: &str| find(&status.conditions, type_).map(|c| c.message.clone());
    let failed = status
        .cells
        .iter()
        .filter(|c| c.phase == CellPhase::Failed)
        .count();
    let (word, why) = match outcome {
        Outcome::AllSucceeded => ("passed", passed_why(status)),
        Outcome::SomeFailed if failed > 0 => (
            "failed",
            format!("{failed} of {} cells failed", status.cells.len()),
        ),
        Outcome::SomeFailed => (
            "failed",
            status.message.clone().unwrap_or("the run failed".into()),
        ),
        Outcome::NoAnswer => (
            "no answer",
            crate::engine::verdict::answer::Answer::of(status)
                .missing_line()
                .map(|l| l.trim_start_matches("no answer: ").to_owned())
                .unwrap_or("the run's question is left open".into()),
        ),
        Outcome::ThresholdsFailed => (
            "failed",
            message(conditions::THRESHOLDS_MET).unwrap_or("a threshold failed".into()),
        ),
        Outcome::Regressed => ("regressed", regressed_why(status, max_regression)),
        Outcome::Interrupted => ("interrupted", "the run was interrupted".into()),
        Outcome::Refused => (
            "refused",
            message(conditions::SPEC_VALID).unwrap_or("the spec was refused".into()),
        ),
    };
    Verdict {
        word,
        why,
        code: outcome.code(),
    }
}

/// What passed: every cell measured, and the gate when there was one.
fn passed_why(status: &BenchmarkRunStatus) -> String {
    if let Some(s) = &status.sizing {
        return format!("sizing {:?}: {}", s.outcome, s.message);
    }
    if status.cells.is_empty() {
        return "nothing was measured: the status has no cells".into();
    }
    let mut why = format!("all {} cells measured", status.cells.len());
    if let Some(t) = find(&status.conditions, conditions::THRESHOLDS_MET) {
        why.push_str(&format!("; thresholds: {}", t.message));
    }
    why
}

/// The figures that regressed beyond `--max-regression`, counted.
fn regressed_why(status: &BenchmarkRunStatus, max_regression: Option<f64>) -> String {
    let m = max_regression.unwrap_or(0.0);
    let n = crate::engine::verdict::gate::regressions(&status.variants, m).len();
    if n == 0 {
        format!("a comparison of capacities has no figure, so the gate at {m}% cannot vouch")
    } else {
        format!("{n} figure(s) of a candidate worse than its base beyond {m}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_of_the_ci_gate_fixture_is_the_failed_threshold_and_exit_3() {
        let text = include_str!("../../../tests/fixtures/finished/ci-gate.yaml");
        let status = super::super::parse_status(text).unwrap();
        let v = verdict(&status, None);
        assert_eq!(v.word, "failed");
        assert_eq!(v.code, 3);
        assert!(
            v.line().contains("1 of 3 threshold verdicts failed"),
            "{}",
            v.line()
        );
        let empty = verdict(&BenchmarkRunStatus::default(), None);
        assert_eq!((empty.word, empty.code), ("passed", 0));
        assert!(empty.why.contains("no cells"));
    }
}
