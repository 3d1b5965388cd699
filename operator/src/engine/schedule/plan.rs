//! Several steps at once: in a run with `spec.parallelism`, each slot (a set of nodes no other
//! slot uses, `status.parallelism.nodeSets`) measures one step at a time, and the steps of a
//! turn are the ones in flight plus one new step for every free slot.
//!
//! Which cell goes to which free slot: the pair of a cell and a slot with the fewest
//! repetitions measured first (every cell once before any twice, as one at a time), then the
//! fewest measurements of that cell on that slot's nodes (so each cell's repetitions rotate
//! over the node sets, and no cell is measured only on one node while others were used), then
//! matrix order. A configuration's variants are measured back to back in a round, all on the
//! node set the round started on: a group with a step in flight waits, and a round that has
//! begun goes only to its own node set.
//!
//! A run without `status.parallelism` (spec.parallelism 1, or not recorded yet) has one slot
//! and no node set: [`plan`] is [`super::next_step`], today's order.

use super::{attempts, next_step, paired_candidates, round_nodes};
use crate::engine::Step;
use crate::resource::{BenchmarkRunStatus, CellPhase, CellStatus};

/// A step of the current turn and the slot it runs in (`None`: one at a time, not pinned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    /// The step.
    pub step: Step,
    /// Its slot: an index into `status.parallelism.nodeSets`.
    pub slot: Option<u32>,
}

/// Measurements that may run at once: the slots the run recorded, else 1.
pub fn slots(status: &BenchmarkRunStatus) -> usize {
    status
        .parallelism
        .as_ref()
        .filter(|p| !p.node_sets.is_empty())
        .map_or(1, |p| (p.slots as usize).clamp(1, p.node_sets.len()))
}

/// The nodes of `slot`, if the run has node sets.
pub fn slot_nodes(status: &BenchmarkRunStatus, slot: Option<u32>) -> &[String] {
    let sets = status.parallelism.as_ref().map(|p| &p.node_sets[..]);
    match (sets, slot) {
        (Some(sets), Some(i)) => sets.get(i as usize).map_or(&[][..], |s| &s[..]),
        _ => &[],
    }
}

/// The steps being deployed or measured now, with their slots.
pub fn in_flight(status: &BenchmarkRunStatus) -> Vec<Placed> {
    status
        .cells
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c.phase, CellPhase::Deploying | CellPhase::Running))
        .map(|(cell, c)| Placed {
            step: Step {
                cell,
                repetition: c.measured_repetitions() + 1,
            },
            slot: c.slot,
        })
        .collect()
}

/// The steps of this turn: those in flight, then a new one for each free slot (see the
/// module's words for which). Empty when nothing runs and nothing is left.
pub fn plan(status: &BenchmarkRunStatus) -> Vec<Placed> {
    let slots = slots(status);
    if status
        .parallelism
        .as_ref()
        .is_none_or(|p| p.node_sets.is_empty())
    {
        return next_step(status)
            .map(|step| Placed { step, slot: None })
            .into_iter()
            .collect();
    }
    let mut placed = in_flight(status);
    let mut free: Vec<u32> = (0..slots as u32)
        .filter(|s| !placed.iter().any(|p| p.slot == Some(*s)))
        .collect();
    let paired = status.cells.iter().any(|c| c.variant.is_some());
    let mut candidates: Vec<Step> = if paired {
        let busy: Vec<&String> = placed
            .iter()
            .filter_map(|p| status.cells[p.step.cell].configuration.as_ref())
            .collect();
        paired_candidates(status)
            .into_iter()
            .filter(|s| {
                let c = &status.cells[s.cell];
                c.phase == CellPhase::Pending
                    && c.configuration.as_ref().is_none_or(|g| !busy.contains(&g))
            })
            .collect()
    } else {
        status
            .cells
            .iter()
            .enumerate()
            .filter(|(i, c)| {
                c.phase == CellPhase::Pending && crate::engine::sizing::eligible(status, *i)
            })
            .map(|(cell, c)| Step {
                cell,
                repetition: c.measured_repetitions() + 1,
            })
            .collect()
    };
    while !free.is_empty() {
        let Some((ci, slot)) = best_pair(status, &candidates, &free, paired) else {
            break;
        };
        placed.push(Placed {
            step: candidates.remove(ci),
            slot: Some(slot),
        });
        free.retain(|&s| s != slot);
    }
    placed
}

/// The best (candidate index, free slot) pair, or `None` when no candidate may use any free
/// slot (a begun round whose node set is busy).
fn best_pair(
    status: &BenchmarkRunStatus,
    candidates: &[Step],
    free: &[u32],
    paired: bool,
) -> Option<(usize, u32)> {
    // (fewest repetitions, fewest on the slot's nodes, rank, slot) -> (candidate, slot)
    type Key = (u32, usize, usize, u32);
    let mut best: Option<(Key, (usize, u32))> = None;
    for (rank, step) in candidates.iter().enumerate() {
        let c = &status.cells[step.cell];
        let pinned = if paired {
            round_nodes(status, *step)
        } else {
            Vec::new()
        };
        for &slot in free {
            let nodes = slot_nodes(status, Some(slot));
            if !pinned.is_empty() && !pinned.iter().all(|n| nodes.contains(n)) {
                continue;
            }
            // Variants keep their configurations' order (rank); other cells go by fewest
            // repetitions, then matrix order.
            let first = if paired { 0 } else { c.measured_repetitions() };
            let key = (first, times_on(c, nodes), rank, slot);
            if best.as_ref().is_none_or(|(k, _)| key < *k) {
                best = Some((key, (rank, slot)));
            }
        }
    }
    best.map(|(_, pair)| pair)
}

/// How many of `c`'s measurements (a repetition each, or its one) ran on any of `nodes`.
pub fn times_on(c: &CellStatus, nodes: &[String]) -> usize {
    let on = |ran: &[String]| ran.iter().any(|n| nodes.contains(n));
    if c.repetitions.is_empty() {
        usize::from(attempts(c) > 0 && on(&c.nodes))
    } else {
        c.repetitions.iter().filter(|r| on(&r.nodes)).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::status::{ParallelismStatus, RepetitionStatus};

    fn variant(configuration: &str, variant: &str, phase: CellPhase) -> CellStatus {
        CellStatus {
            name: format!("{configuration}-{variant}"),
            configuration: Some(configuration.into()),
            variant: Some(variant.into()),
            phase,
            ..CellStatus::default()
        }
    }

    fn two_nodes(cells: Vec<CellStatus>) -> BenchmarkRunStatus {
        BenchmarkRunStatus {
            parallelism: Some(ParallelismStatus {
                asked: "2".into(),
                slots: 2,
                node_sets: vec![vec!["n1".into()], vec!["n2".into()]],
                message: String::new(),
            }),
            cells,
            ..BenchmarkRunStatus::default()
        }
    }

    #[test]
    fn a_begun_round_waits_for_its_own_node_set_and_a_busy_configuration_waits_its_turn() {
        let mut base = variant("a", "base", CellPhase::Pending);
        base.repetitions.push(RepetitionStatus {
            repetition: 1,
            phase: CellPhase::Succeeded,
            nodes: vec!["n1".into()],
            ..RepetitionStatus::default()
        });
        let mut running = variant("b", "base", CellPhase::Running);
        running.slot = Some(0);
        let mut status = two_nodes(vec![
            base,
            variant("a", "next", CellPhase::Pending),
            running,
            variant("b", "next", CellPhase::Pending),
        ]);
        // a's round 1 began on n1, busy with b; b's next variant waits for b-base: slot 1 idles.
        let flying = Placed {
            step: Step {
                cell: 2,
                repetition: 1,
            },
            slot: Some(0),
        };
        assert_eq!(plan(&status), [flying]);
        // b-base done: a-next goes to n1, where its round began (before b, in matrix order).
        status.cells[2].phase = CellPhase::Pending;
        status.cells[2].slot = None;
        status.cells[2].repetitions.push(RepetitionStatus {
            repetition: 1,
            phase: CellPhase::Succeeded,
            nodes: vec!["n1".into()],
            ..RepetitionStatus::default()
        });
        // b's round began on n1 too: b-next waits for n1 rather than go to n2.
        assert_eq!(
            plan(&status),
            [Placed {
                step: Step {
                    cell: 1,
                    repetition: 1
                },
                slot: Some(0)
            }]
        );
    }

    #[test]
    fn without_node_sets_the_plan_is_the_one_next_step() {
        let status = BenchmarkRunStatus {
            cells: vec![
                CellStatus {
                    name: "a".into(),
                    ..CellStatus::default()
                },
                CellStatus {
                    name: "b".into(),
                    ..CellStatus::default()
                },
            ],
            ..BenchmarkRunStatus::default()
        };
        assert_eq!(
            plan(&status),
            [Placed {
                step: next_step(&status).unwrap(),
                slot: None
            }]
        );
        assert_eq!(slots(&status), 1);
    }
}
