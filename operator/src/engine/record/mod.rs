//! How each kind of run records what happens to its cells. The reducer asks [`recorder`] once
//! for the recorder of the run's [`Measure`], and leaves to it what differs between the kinds:
//! what the run's message says of a measurement under way, when a measurement starts, what a
//! measured step becomes, whether a failure ends a repetition, and what the kind decides after
//! every event. A new kind of run implements [`Recorder`] in a module of its own and gets its
//! arm in [`recorder`]; the compiler names both.

mod capacity;
mod fixed_load;
mod sizing;

use super::{Ctx, Measured, Note};
use crate::resource::{BenchmarkRunStatus, CellStatus, Measure};

/// What one kind of run does with the reducer's events.
pub(super) trait Recorder {
    /// What the run's progress message adds about the measurement of `c` under way after its
    /// cell and repetition, e.g. ", probe 3 at 40 rps"; empty when nothing.
    fn under_way(&self, c: &CellStatus) -> String;

    /// Cell `c` is deployed for its next measurement: when that measurement starts.
    fn deploying(&self, c: &mut CellStatus, ctx: &Ctx);

    /// A measurement of `cell`, taken on `nodes`, is recorded; `share` is the characters a
    /// stream's histogram may keep (`None`: none). Returns the notes worth publishing.
    fn measured(
        &self,
        status: &mut BenchmarkRunStatus,
        cell: usize,
        measured: Measured,
        nodes: Vec<String>,
        share: Option<usize>,
        ctx: &Ctx,
    ) -> Vec<Note>;

    /// Whether a failed measurement is recorded as a failed repetition of its cell (the cell's
    /// earlier repetitions kept beside it), rather than as the cell's own failure.
    fn failure_ends_a_repetition(&self, ctx: &Ctx) -> bool;

    /// What the kind decides after every event of a running run, from the status as the event
    /// left it (which cells to measure next, and when the run is over); the notes worth
    /// publishing.
    fn after_event(&self, status: &mut BenchmarkRunStatus, ctx: &Ctx) -> Vec<Note>;
}

/// The recorder of a run measuring `measure`.
pub(super) fn recorder(measure: &Measure) -> &dyn Recorder {
    match measure {
        Measure::FixedLoad(fixed) => fixed,
        Measure::Capacity(capacity) => capacity,
        Measure::Sizing(sizing) => sizing,
    }
}
