//! Which cell, and which repetition of it, comes next.
//!
//! Repetitions are interleaved: every cell measures its first repetition, then every cell its
//! second, and so on (A B C A B C ...), so that a slow drift of the machine (a neighbour, heat,
//! a cache warming) spreads over all cells instead of favouring the ones measured first.

use crate::engine::Step;
use crate::resource::{BenchmarkRunStatus, CellPhase, CellStatus, Repeat};

mod plan;
pub(crate) mod stop;

pub use plan::{Placed, in_flight, plan, slot_nodes, slots, times_on};

/// The step a running run is at, or `None` when no cell is left. A cell being deployed or
/// measured stays current until it ends. Otherwise, without variants, the unfinished cell with
/// the fewest repetitions measured goes next, the first in matrix order among equals; with
/// variants, see [`next_paired_step`].
pub fn next_step(status: &BenchmarkRunStatus) -> Option<Step> {
    let step = |(cell, c): (usize, &CellStatus)| Step {
        cell,
        repetition: c.measured_repetitions() + 1,
    };
    let cells = status.cells.iter().enumerate();
    if let Some(active) = cells
        .clone()
        .find(|(_, c)| matches!(c.phase, CellPhase::Deploying | CellPhase::Running))
    {
        return Some(step(active));
    }
    if status.cells.iter().any(|c| c.variant.is_some()) {
        return next_paired_step(status);
    }
    cells
        .filter(|(i, c)| !c.phase.is_finished() && crate::engine::sizing::eligible(status, *i))
        .min_by_key(|(i, c)| (c.measured_repetitions(), *i))
        .map(step)
}

/// With variants, a round of a configuration measures its variants back to back: a round one
/// variant has started is finished before any other configuration goes on. Otherwise the
/// configuration with the fewest rounds goes next, the first in matrix order among equals.
/// Within a round the order alternates: the matrix's (base first) in odd rounds, reversed in
/// even ones (A B, B A, A B ...), so that over each two rounds every variant's average place in
/// the round is the same and a drift within rounds (a cache warming, a machine heating) favours
/// none.
pub fn next_paired_step(status: &BenchmarkRunStatus) -> Option<Step> {
    paired_candidates(status).into_iter().next()
}

/// Each configuration's next step with variants, best first (see [`next_paired_step`]): an
/// open round first, then the fewest rounds, then matrix order; none of a configuration with
/// nothing left.
fn paired_candidates(status: &BenchmarkRunStatus) -> Vec<Step> {
    let mut ranked: Vec<(bool, u32, usize, Step)> = Vec::new();
    for (g, group) in crate::engine::results::variants::groups(&status.cells)
        .iter()
        .enumerate()
    {
        let cells = &status.cells;
        let unfinished: Vec<usize> = group
            .iter()
            .copied()
            .filter(|&i| !cells[i].phase.is_finished())
            .collect();
        let Some(round) = unfinished
            .iter()
            .map(|&i| attempts(&cells[i]) as u32 + 1)
            .min()
        else {
            continue;
        };
        let open = group.iter().any(|&i| attempts(&cells[i]) as u32 >= round);
        let mut order = group.clone();
        if round % 2 == 0 {
            order.reverse();
        }
        let Some(&cell) = order
            .iter()
            .find(|&&i| unfinished.contains(&i) && attempts(&cells[i]) as u32 + 1 == round)
        else {
            continue;
        };
        let step = Step {
            cell,
            repetition: cells[cell].measured_repetitions() + 1,
        };
        ranked.push((!open, round, g, step));
    }
    ranked.sort_by_key(|&(closed, round, g, _)| (closed, round, g));
    ranked.into_iter().map(|(_, _, _, step)| step).collect()
}

/// The nodes on which the other variants of `step`'s configuration ran in `step`'s round, so
/// that the round's variants share them (on one node, or a set, all alike); empty when none has
/// run in it yet or the executor records no nodes.
pub fn round_nodes(status: &BenchmarkRunStatus, step: Step) -> Vec<String> {
    let Some(me) = status.cells.get(step.cell) else {
        return Vec::new();
    };
    let Some(configuration) = me.configuration.as_ref().filter(|_| me.variant.is_some()) else {
        return Vec::new();
    };
    let mut nodes: Vec<String> = Vec::new();
    for (i, c) in status.cells.iter().enumerate() {
        if i == step.cell || c.configuration.as_ref() != Some(configuration) {
            continue;
        }
        let ran = if c.repetitions.is_empty() {
            if step.repetition == 1 {
                &c.nodes[..]
            } else {
                &[][..]
            }
        } else {
            c.repetitions
                .iter()
                .find(|r| r.repetition == step.repetition)
                .map_or(&[][..], |r| &r.nodes[..])
        };
        for n in ran {
            if !nodes.contains(n) {
                nodes.push(n.clone());
            }
        }
    }
    nodes
}

/// How many measurements (cell repetitions) a run has made, and how many it will make in all,
/// as `status.progress` shows them ("3/8") and both executors' progress displays count them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measurements {
    /// Measured or failed so far.
    pub done: usize,
    /// Done plus the most still to come: a cell that has not finished may take up to `max`
    /// repetitions; one that has finished takes no more (a failure ends its cell, and an
    /// adaptive cell that is precise stops early), so the total shrinks as cells end.
    pub total: usize,
}

impl Measurements {
    /// The count of `status` for a run repeating as `repeat` says.
    pub fn of(status: &BenchmarkRunStatus, repeat: Repeat) -> Measurements {
        let most = repeat.max_rounds() as usize;
        let mut m = Measurements { done: 0, total: 0 };
        for c in &status.cells {
            let tried = attempts(c);
            m.done += tried;
            m.total += if c.phase.is_finished() {
                tried
            } else {
                tried.max(most)
            };
        }
        m
    }

    /// The count of a run of `cells` cells that has not started.
    pub fn before_start(cells: usize, repeat: Repeat) -> Measurements {
        Measurements {
            done: 0,
            total: cells * repeat.max_rounds() as usize,
        }
    }
}

impl std::fmt::Display for Measurements {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.done, self.total)
    }
}

/// The measurements cell `c` has made: its repetitions (the measured ones and the failed one
/// that ended it; a repeated capacity search's rounds), or, in a run that does not repeat and
/// so records none, one once it ended.
fn attempts(c: &CellStatus) -> usize {
    if let Some(cap) = c.capacity.as_ref().filter(|cap| !cap.rounds.is_empty()) {
        // A repeated capacity search: its finished rounds, and the one a failure ended.
        return cap.rounds.len() + usize::from(c.phase == CellPhase::Failed);
    }
    if c.repetitions.is_empty() {
        usize::from(matches!(c.phase, CellPhase::Succeeded | CellPhase::Failed))
    } else {
        c.repetitions.len()
    }
}
