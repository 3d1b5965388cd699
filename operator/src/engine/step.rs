//! Which cell, and which repetition of it, comes next.
//!
//! Repetitions are interleaved: every cell measures its first repetition, then every cell its
//! second, and so on (A B C A B C ...), so that a slow drift of the machine (a neighbour, heat,
//! a cache warming) spreads over all cells instead of favouring the ones measured first.

use crate::resource::{BenchmarkRunStatus, CellPhase, CellStatus};

/// The cell to work on and the repetition it is at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Index of the cell in the matrix.
    pub cell: usize,
    /// 1-based repetition of that cell about to be (or being) measured.
    pub repetition: u32,
    /// The cell's phase now: Pending (to deploy), Deploying or Running.
    pub phase: CellPhase,
}

/// The step a running run is at, or `None` when no cell is left. A cell being deployed or
/// measured stays current until it ends; otherwise the unfinished cell with the fewest
/// repetitions measured goes next, the first in matrix order among equals.
pub fn next_step(status: &BenchmarkRunStatus) -> Option<Step> {
    let step = |(cell, c): (usize, &CellStatus)| Step {
        cell,
        repetition: measured(c) + 1,
        phase: c.phase,
    };
    let cells = status.cells.iter().enumerate();
    if let Some(active) = cells
        .clone()
        .find(|(_, c)| matches!(c.phase, CellPhase::Deploying | CellPhase::Running))
    {
        return Some(step(active));
    }
    cells
        .filter(|(_, c)| !c.phase.is_finished())
        .min_by_key(|(i, c)| (measured(c), *i))
        .map(step)
}

fn measured(c: &CellStatus) -> u32 {
    c.repetitions
        .iter()
        .filter(|r| r.phase == CellPhase::Succeeded)
        .count() as u32
}
