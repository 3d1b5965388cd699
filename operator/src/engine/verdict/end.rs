//! How a finished run ends: its phase, the `Complete` condition's reason and a message.
//!
//! One pure function shared by the operator and the local runner, so a cluster run and a local
//! run of the same cells end the same way. A run that measured no cell at all is `Failed`: a
//! run that produced no figure must never read as a success.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::engine::results;
use crate::resource::conditions::{self, Reason, set_condition, status as cs};
use crate::resource::status::Summary;
use crate::resource::thresholds::Threshold;
use crate::resource::{BenchmarkRunStatus, CellPhase, CellStatus, RunPhase};

/// The end of a run, as written into its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEnd {
    /// `Succeeded` when at least one cell was measured and the run was not stopped.
    pub phase: RunPhase,
    /// Reason of the `Complete` condition (a [`Reason`]).
    pub reason: Reason,
    /// One line a person can act on, naming the failed cells.
    pub message: String,
}

/// How a run with these cells ends. `interrupted`: stopped by a signal (local runs only).
pub fn run_end(cells: &[CellStatus], interrupted: bool) -> RunEnd {
    let failed: Vec<&str> = cells
        .iter()
        .filter(|c| c.phase == CellPhase::Failed)
        .map(|c| c.name.as_str())
        .collect();
    let measured = cells
        .iter()
        .filter(|c| c.phase == CellPhase::Succeeded)
        .count();
    let skipped = cells
        .iter()
        .filter(|c| c.phase == CellPhase::Skipped)
        .count();
    // stopOnFailure skips the cells after a failure; sizing skips the configurations its
    // answer does not need, with no failure at all, and that run did what it was asked.
    let stopped = skipped > 0 && !failed.is_empty();
    let total = cells.len();
    let (phase, reason, message) = if interrupted {
        (
            RunPhase::Failed,
            Reason::Interrupted,
            format!(
                "interrupted (SIGINT/SIGTERM) after {measured} of {total} cells measured; the cells finished before it are kept"
            ),
        )
    } else if stopped {
        (
            RunPhase::Failed,
            Reason::Stopped,
            format!("stopped at failed cell {}", failed.join(", ")),
        )
    } else if measured == 0 {
        (
            RunPhase::Failed,
            Reason::NoCellMeasured,
            format!("0 of {total} cells measured; failed: {}", failed.join(", ")),
        )
    } else if failed.is_empty() && skipped > 0 {
        (
            RunPhase::Succeeded,
            Reason::AllSucceeded,
            format!(
                "{measured} of {total} cells measured; the other {skipped} were not needed \
                 (spec.sizing)"
            ),
        )
    } else if failed.is_empty() {
        (
            RunPhase::Succeeded,
            Reason::AllSucceeded,
            format!("all {total} cells measured"),
        )
    } else {
        (
            RunPhase::Succeeded,
            Reason::SomeFailed,
            format!(
                "{measured} of {total} cells measured; failed: {}",
                failed.join(", ")
            ),
        )
    };
    RunEnd {
        phase,
        reason,
        message,
    }
}

/// `end` of a run whose cells were measured (all, or some with the others failed), told that
/// its question is left open: the `Complete` reason is NoAnswer and the message says what is
/// missing. The phase stays as the cells' measurement made it: nothing failed, and the figures
/// are there to read; the verdict and the exit code ([`super::outcome::Outcome`]) say that no
/// answer came of them. An interrupted or stopped run keeps its own reason.
fn with_answer(end: RunEnd, answer: &super::answer::Answer) -> RunEnd {
    let Some(missing) = answer.missing_line() else {
        return end;
    };
    if !matches!(end.reason, Reason::AllSucceeded | Reason::SomeFailed) {
        return end;
    }
    let reason = if end.reason == Reason::AllSucceeded {
        Reason::NoAnswer
    } else {
        end.reason
    };
    RunEnd {
        phase: end.phase,
        reason,
        message: format!("{}; {missing}", end.message),
    }
}

/// The run's one line for `kubectl get` and the report: the capacity ranking's when cells
/// searched ([`crate::engine::capacity::rank::headline`]), else the summary's ([`results::headline`]).
pub fn run_headline(cells: &[CellStatus], summary: &Summary) -> Option<String> {
    crate::engine::capacity::rank::rank(cells)
        .and_then(|r| crate::engine::capacity::rank::headline(&r))
        .or_else(|| results::headline(summary))
}

/// Ends the run in `status`: the summary and headline, each candidate variant against the
/// base, the completion time, and
/// the phase, message and conditions of [`run_end`] (`Progressing` False, `Complete` True with
/// its reason). The operator and the local runner both end a run through this, so the two
/// status documents agree field by field. `generation` is the spec generation it is about
/// (`None` locally).
pub fn finish_run(
    status: &mut BenchmarkRunStatus,
    interrupted: bool,
    thresholds: &[Threshold],
    generation: Option<i64>,
    now: &Time,
) -> RunEnd {
    let summary = results::summarize(&status.cells);
    status.headline = run_headline(&status.cells, &summary);
    status.summary = Some(summary);
    status.variants = results::variants::compare(&status.cells);
    // The verdicts, the ThresholdsMet condition and the recommendation, in the same status
    // write as Complete, so `kubectl wait --for=condition=Complete` sees them all.
    crate::engine::verdict::judge::judge_run(thresholds, status, generation, now);
    status.completion_time = Some(now.clone());
    let end = with_answer(
        run_end(&status.cells, interrupted),
        &super::answer::Answer::of(status),
    );
    status.phase = end.phase;
    status.message = Some(end.message.clone());
    set_condition(
        &mut status.conditions,
        conditions::PROGRESSING,
        cs::FALSE,
        Reason::Finished,
        "",
        generation,
        now,
    );
    set_condition(
        &mut status.conditions,
        conditions::COMPLETE,
        cs::TRUE,
        end.reason,
        end.message.clone(),
        generation,
        now,
    );
    end
}

#[cfg(test)]
mod tests;
