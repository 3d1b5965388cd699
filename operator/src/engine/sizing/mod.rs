//! The sizing search (`spec.sizing`): the configuration with the least reserved CPU that holds
//! a traffic at the capacity's service level, found by searching the capacity of only the
//! configurations the measurements so far cannot rule out.
//!
//! Sans-IO, as the rest of the engine, and replayed from the status: after every event the
//! reducer calls [`update`], which reads what each configuration's cell measured
//! ([`knowledge`]), bounds and predicts the others ([`model`]), decides what to measure next
//! ([`plan`]) and writes `status.sizing`. A configuration is a cell; its capacity search is the
//! capacity search of `crate::engine::capacity`, and a check at a fixed rate is a probe of the
//! same kind, counted by the check ([`check`]). The scheduler runs only the cells
//! `status.sizing.next` names.

pub mod check;
pub mod hpa;
pub mod knowledge;
pub mod model;
pub mod plan;

use crate::engine::{Ctx, Measured, Note};
use crate::resource::capacity::{CapacitySpec, RateCheck};
use crate::resource::matrix::Cell;
use crate::resource::sizing::{SizedState, SizingSpec};
use crate::resource::{BenchmarkRunStatus, CellPhase, CellStatus, Workload};

use plan::Measure;

/// Decides the search's next measurements from `status` and writes them, with
/// `status.sizing`, into it: a configuration to search goes in line, one to check gets its
/// check, and once the search has ended every configuration not measured is Skipped with the
/// reason. `cells` are the run's (the space's configurations), `slots` the measurements
/// allowed at once.
pub fn update(
    status: &mut BenchmarkRunStatus,
    (spec, capacity): (&SizingSpec, &CapacitySpec),
    cells: &[Cell],
    slots: usize,
) -> Vec<Note> {
    if status.cells.len() != cells.len() {
        return Vec::new();
    }
    let was = status.sizing.as_ref().map(|s| s.outcome);
    let mut decision = plan::decide(spec, cells, &status.cells, slots);
    for action in &decision.actions {
        match *action {
            Measure::Search(i) => {
                let c = &mut status.cells[i];
                c.phase = CellPhase::Pending;
            }
            Measure::Check {
                cell,
                purpose,
                rate,
                wanted,
            } => {
                let c = &mut status.cells[cell];
                let cap = c.capacity.get_or_insert_with(Default::default);
                cap.check = Some(RateCheck {
                    purpose,
                    rate,
                    wanted,
                    ..RateCheck::default()
                });
                c.phase = CellPhase::Pending;
            }
        }
    }
    let outcome = decision.status.outcome;
    if outcome.is_final() {
        for (i, c) in status.cells.iter_mut().enumerate() {
            if c.phase.is_finished() {
                continue;
            }
            c.phase = CellPhase::Skipped;
            let why = decision
                .status
                .configurations
                .iter()
                .find(|s| s.name == c.name)
                .and_then(|s| s.why.clone());
            c.message = Some(why.unwrap_or_else(|| format!("not measured ({})", cells[i].name)));
        }
        if let Some(chosen) = decision.status.chosen.as_mut() {
            let i = cells
                .iter()
                .position(|c| c.name == chosen.configuration)
                .unwrap_or_default();
            chosen.hpa = hpa::target(&status.cells[i], &cells[i], capacity, spec);
        }
        for s in &mut decision.status.configurations {
            if s.state == SizedState::Measuring {
                s.state = SizedState::Measured;
            }
        }
    }
    let message = decision.status.message.clone();
    status.sizing = Some(decision.status);
    match was {
        Some(w) if w == outcome => Vec::new(),
        _ if outcome.is_final() => vec![Note::normal("SizingEnded", message)],
        _ => Vec::new(),
    }
}

/// Records the probe `measured` of a sizing run's cell `c` (its measurement ran on `nodes`),
/// judged by the capacity `search` over its workload's endpoints: a probe of the check open on
/// the cell ([`check::measured`]), else a probe of its capacity search.
pub fn measured(
    c: &mut CellStatus,
    measured: Measured,
    nodes: Vec<String>,
    search: (&CapacitySpec, &Workload),
    ctx: &Ctx,
) -> Vec<Note> {
    match check::open(c).map(|k| k.purpose) {
        Some(purpose) => check::measured(c, measured, nodes, search, purpose, ctx),
        None => crate::engine::capacity::measured(c, measured, nodes, search, ctx),
    }
}

/// True when step `cell` may run: always without sizing; with it, only the configurations the
/// search named (`status.sizing.next`).
pub fn eligible(status: &BenchmarkRunStatus, cell: usize) -> bool {
    let Some(sizing) = &status.sizing else {
        return true;
    };
    status
        .cells
        .get(cell)
        .is_some_and(|c| sizing.next.contains(&c.name))
}

#[cfg(test)]
mod tests;
