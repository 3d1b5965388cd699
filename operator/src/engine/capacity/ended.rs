//! A search's end, as the search and its rounds both write it: how it ended with its rates
//! and sentence, written into the cell's capacity, and the cell succeeding with it.

use crate::engine::{Ctx, Note};
use crate::resource::capacity::{CapacityStatus, SearchEnding};
use crate::resource::{CellPhase, CellStatus};

/// The search's end written into `cap`: how it ended, the rates, what limited them, and a
/// sentence.
pub(super) fn finish(cap: &mut CapacityStatus, ended: Ending) {
    cap.set_ending(ended.kind);
    cap.held_rate = ended.held;
    cap.failed_rate = ended.failed;
    cap.limiting = ended.limiting;
    cap.message = ended.message;
}

/// What a search (or a round of it) ended with.
pub(super) struct Ending {
    /// How it ended.
    pub kind: SearchEnding,
    /// The highest rate held, if any.
    pub held: Option<f64>,
    /// The lowest rate failed, if any.
    pub failed: Option<f64>,
    /// What failed at `failed` (or what bound the load generator).
    pub limiting: Option<String>,
    /// The ending in a sentence.
    pub message: String,
}

/// The cell's search is over (every round of it): the cell succeeds with its capacity.
pub(super) fn succeeded(c: &mut CellStatus, ctx: &Ctx) -> Vec<Note> {
    let Some(cap) = c.capacity.as_ref() else {
        return Vec::new();
    };
    // The cell's start is the search's first probe's: the same in a status this operator
    // wrote, not in one an older operator wrote mid-search (its `startTime` was the probe's).
    if let Some(start) = cap.start_time.clone() {
        c.start_time = Some(start);
    }
    c.phase = CellPhase::Succeeded;
    c.reason = None;
    c.completion_time = Some(ctx.now.clone());
    c.message = Some(cap.message.clone());
    vec![Note::normal(
        "CellSucceeded",
        format!("cell {}: {}", c.name, cap.message),
    )]
}
