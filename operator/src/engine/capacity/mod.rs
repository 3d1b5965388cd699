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
/// open, else the rate the search asks for next, replayed from the probes of its round so far
/// ([`search::replay`]); the start rate before the round's first probe (and once the search
/// has ended).
pub fn probe_rate(spec: &crate::resource::capacity::CapacitySpec, cell: &CellStatus) -> f64 {
    let Some(cap) = cell.capacity.as_ref() else {
        return spec.start_rate;
    };
    if let Some(check) = cap.check.as_ref().filter(|c| !c.done) {
        return check.rate;
    }
    if search::probed(cap).is_empty() {
        return spec.start_rate;
    }
    match search::replay(spec, cap) {
        search::Next::Probe { rate, .. } => rate,
        search::Next::Done(_) => spec.start_rate,
    }
}
