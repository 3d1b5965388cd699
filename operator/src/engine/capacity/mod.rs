//! The capacity search (`spec.capacity`): each cell's measurement becomes a search for the
//! highest total rate it holds at the service level, probe by probe.
//!
//! Sans-IO, as the rest of the engine: a probe is loaded and collected like a repetition, and
//! after each measured probe the reducer judges it ([`probe::judge_probe`]), records it in
//! `status.cells[].capacity` and asks the search ([`search::next`]) for the next rate, or the
//! outcome. The next probe runs on the same target after a settle unless the last one left
//! more backlog than a short wait drains ([`settle`]): then the target is removed and the next
//! probe deploys a fresh one. The engine works out each probe's load once
//! ([`Load::of`](crate::engine::Load::of), at [`probe_rate`]) and hands it to the executors
//! with the command that starts it, so a probe runs the same plan locally and on a cluster.
//! Once the run ends, [`rank`] compares the cells by the rate held per reserved core.

mod ended;
pub mod probe;
pub mod rank;
mod record;
mod rounds;
pub mod search;
pub mod settle;
pub mod tally;

pub use record::{keep_or_release_target, measured, probe_words, record_probe};

use crate::resource::CellStatus;

/// The total rate of the cell's next (or current) probe: a sizing check's rate while one is
/// open, else what the search asked for last, or the start rate before the first.
pub fn probe_rate(spec: &crate::resource::capacity::CapacitySpec, cell: &CellStatus) -> f64 {
    let cap = cell.capacity.as_ref();
    if let Some(check) = cap.and_then(|c| c.check.as_ref()).filter(|c| !c.done) {
        return check.rate;
    }
    cap.and_then(|c| c.next_rate).unwrap_or(spec.start_rate)
}
