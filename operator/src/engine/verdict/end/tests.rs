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
