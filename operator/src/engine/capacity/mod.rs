//! The capacity search (`spec.capacity`): each cell's measurement becomes a search for the
//! highest total rate it holds at the service level, probe by probe.
//!
//! Sans-IO, as the rest of the engine: a probe is loaded and collected like a repetition, and
//! after each measured probe the reducer judges it ([`probe::judge_probe`]), records it in
//! `status.cells[].capacity` and asks the search ([`search::next`]) for the next rate, or the
//! outcome. The next probe runs on the same target after a settle unless the last one left
//! more backlog than a short wait drains ([`settle`]): then the target is removed and the next
//! probe deploys a fresh one. Both executors build a step's load
//! from [`step_run`], so a probe runs the same plan locally and on a cluster. Once the run
//! ends, [`rank`] compares the cells by the rate held per reserved core.

mod ended;
pub mod probe;
pub mod rank;
mod record;
mod rounds;
pub mod search;
pub mod sends;
pub mod settle;

pub use record::{measured, probe_words};
pub use sends::Sends;

use crate::engine::Step;
use crate::resource::{BenchmarkRunStatus, CellStatus, ValidatedRun};

/// The total rate of the cell's next (or current) probe: a sizing check's rate while one is
/// open, else what the search asked for last, or the start rate before the first.
pub fn probe_rate(spec: &crate::resource::capacity::CapacitySpec, cell: &CellStatus) -> f64 {
    let cap = cell.capacity.as_ref();
    if let Some(check) = cap.and_then(|c| c.check.as_ref()).filter(|c| !c.done) {
        return check.rate;
    }
    cap.and_then(|c| c.next_rate).unwrap_or(spec.start_rate)
}

/// The run as step `at` must load it: with `spec.capacity`, the run whose one phase is the
/// probe at the cell's current rate (see [`ValidatedRun::for_probe`]); `None` without (the run
/// itself applies). Both executors call this where they write the load generator's plan.
pub fn step_run(v: &ValidatedRun, status: &BenchmarkRunStatus, at: Step) -> Option<ValidatedRun> {
    let spec = v.spec().capacity.as_ref()?;
    let rate = status
        .cells
        .get(at.cell)
        .map_or(spec.start_rate, |c| probe_rate(spec, c));
    v.for_probe(rate)
}

/// The settle, in seconds, the probe of step `at` about to be loaded waited on the target the
/// cell's previous probe ran on; `None` when its target was deployed for it.
pub fn settled_before(status: &BenchmarkRunStatus, at: Step) -> Option<u32> {
    status.cells.get(at.cell)?.capacity.as_ref()?.settle_seconds
}
