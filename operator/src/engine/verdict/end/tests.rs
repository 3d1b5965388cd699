use super::*;

fn cell(name: &str, phase: CellPhase) -> CellStatus {
    CellStatus {
        name: name.into(),
        phase,
        ..Default::default()
    }
}

#[test]
fn a_run_that_measured_no_cell_fails() {
    let end = run_end(
        &[cell("a", CellPhase::Failed), cell("b", CellPhase::Failed)],
        false,
    );
    assert_eq!(end.phase, RunPhase::Failed);
    assert_eq!(end.reason, Reason::NoCellMeasured);
    assert_eq!(end.message, "0 of 2 cells measured; failed: a, b");
}

#[test]
fn a_partial_run_succeeds_with_some_cells_failed() {
    let end = run_end(
        &[
            cell("a", CellPhase::Succeeded),
            cell("b", CellPhase::Failed),
        ],
        false,
    );
    assert_eq!(end.phase, RunPhase::Succeeded);
    assert_eq!(end.reason, Reason::SomeFailed);
    assert_eq!(end.message, "1 of 2 cells measured; failed: b");
}

#[test]
fn every_cell_measured_succeeds() {
    let end = run_end(&[cell("a", CellPhase::Succeeded)], false);
    assert_eq!(
        (end.phase, end.reason),
        (RunPhase::Succeeded, Reason::AllSucceeded)
    );
}

#[test]
fn a_stopped_or_interrupted_run_fails() {
    let cells = [
        cell("a", CellPhase::Succeeded),
        cell("b", CellPhase::Failed),
        cell("c", CellPhase::Skipped),
    ];
    assert_eq!(run_end(&cells, false).reason, Reason::Stopped);
    assert_eq!(run_end(&cells, false).phase, RunPhase::Failed);
    assert_eq!(run_end(&cells, true).reason, Reason::Interrupted);
    assert_eq!(run_end(&cells, true).phase, RunPhase::Failed);
}

/// A sizing run skips the configurations its answer does not need: no cell failed, so the run
/// succeeded (it ended "stopped at failed cell" with phase Failed, and exit 1, before).
#[test]
fn cells_skipped_without_a_failure_are_a_sizing_runs_and_it_succeeds() {
    let cells = [
        cell("a", CellPhase::Succeeded),
        cell("b", CellPhase::Skipped),
        cell("c", CellPhase::Skipped),
    ];
    let end = run_end(&cells, false);
    assert_eq!(
        (end.phase, end.reason),
        (RunPhase::Succeeded, Reason::AllSucceeded)
    );
    assert_eq!(
        end.message,
        "1 of 3 cells measured; the other 2 were not needed (spec.sizing)"
    );
}

#[test]
fn a_measured_run_whose_search_found_no_capacity_ends_without_an_answer_and_exits_1() {
    use crate::engine::verdict::outcome::Outcome;
    use crate::resource::capacity::{CapacityStatus, SearchEnding};
    let searched = |name: &str, ending: SearchEnding| {
        let mut cap = CapacityStatus::default();
        cap.set_ending(ending);
        CellStatus {
            capacity: Some(cap),
            ..cell(name, CellPhase::Succeeded)
        }
    };
    let mut status = BenchmarkRunStatus {
        cells: vec![
            searched("pool-x1", SearchEnding::Found),
            searched("single-x1", SearchEnding::FailedAtStartRate),
        ],
        ..Default::default()
    };
    let now = crate::resource::conditions::now();
    let end = finish_run(&mut status, false, &[], None, &now);
    assert_eq!(
        end.phase,
        RunPhase::Succeeded,
        "the figures are there to read"
    );
    assert_eq!(end.reason, Reason::NoAnswer);
    assert_eq!(
        end.message,
        "all 2 cells measured; no answer: single-x1: no capacity (failed at the start rate)"
    );
    let complete = conditions::find(&status.conditions, conditions::COMPLETE).unwrap();
    assert_eq!(complete.reason, Reason::NoAnswer);
    assert_eq!(Outcome::of(&status), Outcome::NoAnswer);
    assert_eq!(Outcome::of(&status).code(), 1);

    // Every search found one: answered.
    status.cells[1] = searched("single-x1", SearchEnding::Found);
    let end = finish_run(&mut status, false, &[], None, &now);
    assert_eq!(end.reason, Reason::AllSucceeded);
    assert_eq!(Outcome::of(&status).code(), 0);
}
