//! A sizing search: each configuration is a cell whose measurements are probes of a capacity
//! search (or of a check at a fixed rate, which the check counts: `crate::engine::sizing::check`),
//! recorded as a capacity search records them; after
//! every event the sizing search decides which configurations to measure next
//! (`crate::engine::sizing`).

use super::Recorder;
use super::capacity::{probe_deploying, probe_under_way};
use crate::engine::{Ctx, Measured, Note, schedule, sizing};
use crate::resource::measure::Sizing;
use crate::resource::{BenchmarkRunStatus, CellStatus, RunPhase};

impl Recorder for Sizing {
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
        // A probe of a check the sizing search asked for, or of the cell's capacity search.
        let c = &mut status.cells[cell];
        sizing::measured(c, measured, nodes, (&self.search, &self.workload), ctx)
    }

    /// Sizing takes no repeat: a failed probe ends its configuration's measurement.
    fn failure_ends_a_repetition(&self, _ctx: &Ctx) -> bool {
        false
    }

    /// Which cells run next, and when the run is over, is the sizing search's to say: it reads
    /// every measurement so far, after each event.
    fn after_event(&self, status: &mut BenchmarkRunStatus, ctx: &Ctx) -> Vec<Note> {
        if status.phase != RunPhase::Running {
            return Vec::new();
        }
        let slots = schedule::slots(status);
        sizing::update(status, (&self.space, &self.search), ctx.cells, slots)
    }
}
