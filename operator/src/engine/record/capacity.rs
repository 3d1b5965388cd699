//! A capacity search per cell: each measurement is a probe, which the search judges and
//! records (`crate::engine::capacity`), and which decides the cell's next probe or its end.

use super::Recorder;
use crate::engine::capacity::probe::rate_text;
use crate::engine::capacity::{self, probe_rate};
use crate::engine::{Ctx, Measured, Note};
use crate::resource::capacity::CapacitySpec;
use crate::resource::measure::Capacity;
use crate::resource::{BenchmarkRunStatus, CellStatus};

impl Recorder for Capacity {
    fn under_way(&self, c: &CellStatus) -> String {
        probe_under_way(&self.search, c)
    }

    fn deploying(&self, c: &mut CellStatus, ctx: &Ctx) {
        probe_deploying(c, ctx);
    }

    fn measured(
        &self,
        status: &mut BenchmarkRunStatus,
        cell: usize,
        measured: Measured,
        nodes: Vec<String>,
        _share: Option<usize>,
        ctx: &Ctx,
    ) -> Vec<Note> {
        let c = &mut status.cells[cell];
        capacity::measured(c, measured, nodes, (&self.search, &self.workload), ctx)
    }

    /// A repeated search keeps its rounds in `capacity.rounds`: its failure ends the cell as
    /// an unrepeated cell's does.
    fn failure_ends_a_repetition(&self, _ctx: &Ctx) -> bool {
        false
    }

    fn after_event(&self, _status: &mut BenchmarkRunStatus, _ctx: &Ctx) -> Vec<Note> {
        Vec::new()
    }
}

/// ", probe 3 at 40 rps": the probe of `search` that cell `c` runs.
pub(super) fn probe_under_way(search: &CapacitySpec, c: &CellStatus) -> String {
    let rate = probe_rate(search, c);
    let probe = c.capacity.as_ref().map_or(0, |s| s.probes.len()) + 1;
    format!(", probe {probe} at {} rps", rate_text(rate))
}

/// Each target of a capacity search is a step of its own (its start, `stepStartTime`, times
/// the target's readiness and its overhead); the search's start is its first step's, kept in
/// `capacity.startTime` too (a repeated search keeps its rounds in capacity.rounds, not as
/// repetitions).
pub(super) fn probe_deploying(c: &mut CellStatus, ctx: &Ctx) {
    let search = c.capacity.get_or_insert_with(Default::default);
    search.start_time.get_or_insert_with(|| ctx.now.clone());
}
