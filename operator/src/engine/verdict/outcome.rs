//! How a finished run ended, as an exit code: the one verdict of `benchmatrix run` on this
//! machine and of `kubectl benchmatrix run` on a cluster, decided from the final status alone,
//! so the two cannot disagree about the same status document. With `--max-regression` the
//! regression gate ([`super::gate`]) is part of the verdict.

use std::process::ExitCode;

use super::answer::Answer;
use super::exit;
use super::gate::RegressionGate;
use crate::resource::conditions::{self, Reason, status as cs};
use crate::resource::{BenchmarkRunStatus, CellPhase, RunPhase};

/// How a whole run ended, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every cell measured.
    AllSucceeded,
    /// Some cell failed; the others ran.
    SomeFailed,
    /// Every cell measured, and the run's question is left open: a capacity search ended
    /// without a capacity, or the sizing chose no configuration ([`super::answer::Answer`]).
    NoAnswer,
    /// Every cell ran, and a threshold of spec.thresholds failed.
    ThresholdsFailed,
    /// A candidate regressed beyond `--max-regression` (whatever the cells and thresholds
    /// did: the gate is what CI asks about).
    Regressed,
    /// Stopped by SIGINT/SIGTERM.
    Interrupted,
    /// The executor refused the spec (condition SpecValid False): on a cluster, a rule only
    /// the operator knows, such as its image allow-list. The local runner refuses a spec
    /// before it starts, so its runs never end this way.
    Refused,
}

impl Outcome {
    /// The outcome of a finished run's `status`. In order: interrupted (condition Complete,
    /// reason Interrupted); refused (SpecValid False); a threshold failed (ThresholdsMet False,
    /// before a failed cell, as the gate is what CI asks about, and a threshold on a failed
    /// cell fails anyway); some cell failed, or the run ended Failed; the question left open
    /// (a search or the sizing without an answer); else all measured.
    pub fn of(status: &BenchmarkRunStatus) -> Outcome {
        let is_false = |type_: &str| {
            conditions::find(&status.conditions, type_).is_some_and(|c| c.status == cs::FALSE)
        };
        let complete = conditions::find(&status.conditions, conditions::COMPLETE);
        if complete.is_some_and(|c| c.reason == Reason::Interrupted) {
            Outcome::Interrupted
        } else if is_false(conditions::SPEC_VALID) {
            Outcome::Refused
        } else if is_false(conditions::THRESHOLDS_MET) {
            Outcome::ThresholdsFailed
        } else if status.phase == RunPhase::Failed
            || status.cells.iter().any(|c| c.phase == CellPhase::Failed)
        {
            Outcome::SomeFailed
        } else if Answer::of(status).is_missing() {
            Outcome::NoAnswer
        } else {
            Outcome::AllSucceeded
        }
    }

    /// The outcome of `status` under the regression gate `--max-regression` (`None` without
    /// it), with what the gate found: a run that measured (all cells, some, or failed a
    /// threshold) is [`Outcome::Regressed`] when a candidate regressed; an interrupted or
    /// refused run keeps its outcome, and its gate is not asked.
    pub fn gated(
        status: &BenchmarkRunStatus,
        max_regression: Option<f64>,
    ) -> (Outcome, RegressionGate<'_>) {
        let plain = Outcome::of(status);
        if matches!(plain, Outcome::Interrupted | Outcome::Refused) {
            return (plain, RegressionGate::NotAsked);
        }
        let gate = RegressionGate::judge(status, max_regression);
        let outcome = if gate.failed() {
            Outcome::Regressed
        } else {
            plain
        };
        (outcome, gate)
    }

    /// The exit code: 0, 1 (some cell failed, or no answer), 2 (refused, as an invalid file is), 3 (a
    /// threshold failed, or a candidate regressed) or 130 (the shell's code for an interrupt).
    pub fn code(self) -> u8 {
        match self {
            Outcome::AllSucceeded => exit::SUCCESS,
            Outcome::SomeFailed | Outcome::NoAnswer => exit::FAILED,
            Outcome::Refused => exit::BAD_INPUT,
            Outcome::ThresholdsFailed | Outcome::Regressed => exit::GATE_FAILED,
            Outcome::Interrupted => exit::INTERRUPTED,
        }
    }

    /// [`Outcome::code`] as the process's exit code.
    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::CellStatus;
    use crate::resource::conditions::{now, set_condition};

    fn cell(phase: CellPhase) -> CellStatus {
        CellStatus {
            name: format!("{phase:?}"),
            phase,
            ..CellStatus::default()
        }
    }

    fn status(cells: Vec<CellStatus>, conds: &[(&str, &str, Reason)]) -> BenchmarkRunStatus {
        let mut s = BenchmarkRunStatus {
            phase: RunPhase::Succeeded,
            cells,
            ..Default::default()
        };
        for (type_, value, reason) in conds {
            set_condition(&mut s.conditions, type_, value, *reason, "", None, &now());
        }
        s
    }

    #[test]
    fn the_gate_comes_before_a_failed_cell_and_an_interrupt_before_both() {
        let measured = || vec![cell(CellPhase::Succeeded), cell(CellPhase::Succeeded)];
        let one_failed = || vec![cell(CellPhase::Succeeded), cell(CellPhase::Failed)];
        let passed = (
            conditions::THRESHOLDS_MET,
            cs::TRUE,
            Reason::ThresholdsPassed,
        );
        let failed = (
            conditions::THRESHOLDS_MET,
            cs::FALSE,
            Reason::ThresholdsFailed,
        );
        let interrupted = (conditions::COMPLETE, cs::TRUE, Reason::Interrupted);
        let cases = [
            (status(measured(), &[]), Outcome::AllSucceeded, 0),
            (status(measured(), &[passed]), Outcome::AllSucceeded, 0),
            (status(one_failed(), &[]), Outcome::SomeFailed, 1),
            (status(one_failed(), &[passed]), Outcome::SomeFailed, 1),
            (status(measured(), &[failed]), Outcome::ThresholdsFailed, 3),
            (
                status(one_failed(), &[failed]),
                Outcome::ThresholdsFailed,
                3,
            ),
            (
                status(one_failed(), &[failed, interrupted]),
                Outcome::Interrupted,
                130,
            ),
        ];
        for (s, want, code) in cases {
            assert_eq!(Outcome::of(&s), want, "{:?}", s.conditions);
            assert_eq!(Outcome::of(&s).code(), code);
        }
    }

    #[test]
    fn a_refused_spec_is_bad_input_and_a_failed_run_without_a_failed_cell_is_a_failure() {
        let refused = status(
            Vec::new(),
            &[(conditions::SPEC_VALID, cs::FALSE, Reason::InvalidSpec)],
        );
        assert_eq!(Outcome::of(&refused), Outcome::Refused);
        assert_eq!(Outcome::Refused.code(), 2);
        // e.g. the spec changed under a running run: the run is Failed, no cell is.
        let mut changed = status(vec![cell(CellPhase::Succeeded)], &[]);
        changed.phase = RunPhase::Failed;
        assert_eq!(Outcome::of(&changed), Outcome::SomeFailed);
    }
}
