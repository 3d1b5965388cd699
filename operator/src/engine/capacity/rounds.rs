//! A repeated search (`spec.repeat` with `spec.capacity`): each round is a whole search from
//! the start rate on a fresh target, as a repetition of a cell is a whole measurement. The
//! cell's capacity is the median of its rounds' held rates with the 95% interval of that
//! median, so that one lucky or unlucky round does not decide it; with variants, each round of
//! a candidate against the same round of its base is one ratio of capacities
//! (`engine::results::variants`).
//!
//! A round that finds no capacity (held at the upper bound, failed at the start rate,
//! load-generator bound, out of probes) ends the cell: over its rounds the cell has no
//! capacity either, and more rounds would not give it one.

use super::ended::{Ending, succeeded};
use super::probe::rate_text;
use crate::engine::results::until_precise::{Width, Words, until_precise};
use crate::engine::results::{noise, precision};
use crate::engine::{Ctx, Note};
use crate::resource::capacity::{CapacityRound, CapacityStatus, ProbeStatus, SearchEnding};
use crate::resource::rounding::round2;
use crate::resource::status::CellPrecision;
use crate::resource::{CellPhase, CellStatus};

/// The round under way of cell `c` ended as `ended`: it is recorded, and either another round
/// follows (the cell goes back in line, and true: its target goes) or the cell succeeds with
/// its figures over the rounds.
pub(super) fn round_ended(c: &mut CellStatus, ended: Ending, ctx: &Ctx) -> (Vec<Note>, bool) {
    let Some(cap) = c.capacity.as_mut() else {
        return (Vec::new(), false);
    };
    let found = ended.kind.found();
    let round = cap.current_round();
    cap.rounds.push(CapacityRound {
        round,
        found,
        ending: Some(ended.kind),
        held_rate: ended.held,
        failed_rate: ended.failed,
        limiting: ended.limiting,
        message: ended.message,
    });
    let held: Vec<f64> = cap.held_by_round().into_iter().map(|(_, h)| h).collect();
    let (again, precision) = capacity_again(ctx, round, &held);
    c.precision = precision;
    let planned = ctx.repeat.max_rounds();
    if found && again {
        cap.message = format!(
            "round {round} of at most {planned}: {}; round {} next, from the start rate on a \
             fresh target",
            cap.rounds[cap.rounds.len() - 1].message,
            round + 1
        );
        c.phase = CellPhase::Pending;
        c.reason = None;
        c.message = Some(cap.message.clone());
        let note = Note::normal(
            "CapacityRoundMeasured",
            format!("cell {}: {}", c.name, cap.message),
        );
        return (vec![note], true);
    }
    over_rounds(cap);
    if !found {
        // No capacity to be precise about: the rounds stopped because this one found none.
        c.precision = None;
    }
    (succeeded(c, ctx), false)
}

/// A cell's capacity over the rounds of its search ([`capacity_again`]).
const CAPACITY_WORDS: Words = Words {
    what: "capacity's 95% CI over rounds",
    without_interval: "has no interval yet (it takes 2 rounds)",
    nothing: "no round found a capacity",
};

/// Whether a repeated capacity search runs another round after `done` rounds, `held` being
/// the rates held by those of them that found a capacity. A fixed `repeat` runs its count; the
/// adaptive rule runs `min` rounds, then more while the 95% interval of the median held rate is
/// wider than `precision` percent of it, and never beyond `max`. The caller stops earlier at a
/// round without a capacity: the cell cannot have one over its rounds then.
fn capacity_again(ctx: &Ctx, done: u32, held: &[f64]) -> (bool, Option<CellPrecision>) {
    until_precise(ctx, done, |precision| {
        let width = precision::width_percent(held);
        Width {
            precise: width.is_some_and(|w| w <= precision),
            widest: Some(("capacity".to_owned(), width)),
            words: &CAPACITY_WORDS,
        }
    })
}

/// The cell's figures over its finished rounds, written into `cap`: with a capacity in every
/// round, the median held and failed rates, the interval of the median held rate and what
/// limited the median round; otherwise the first round without one, as that round said it.
pub(super) fn over_rounds(cap: &mut CapacityStatus) {
    let Some(missed) = cap.rounds.iter().find(|r| !r.found).cloned() else {
        return found_in_every_round(cap);
    };
    let others: Vec<String> = cap
        .held_by_round()
        .iter()
        .map(|(r, h)| format!("round {r} held {} rps", rate_text(*h)))
        .collect();
    match missed.ended() {
        Some(ending) => cap.set_ending(ending),
        // A round an older operator wrote, in words this version does not know.
        None => (cap.ending, cap.found) = (None, false),
    }
    cap.held_rate = missed.held_rate;
    cap.held_rate_low = None;
    cap.held_rate_high = None;
    cap.failed_rate = missed.failed_rate;
    cap.limiting = missed.limiting;
    cap.message = format!(
        "round {} of the search: {}{}",
        missed.round,
        missed.message,
        if others.is_empty() {
            String::new()
        } else {
            format!(" (before it, {})", others.join(", "))
        }
    );
}

/// [`over_rounds`] of a cell whose every round found a capacity.
fn found_in_every_round(cap: &mut CapacityStatus) {
    let held: Vec<f64> = cap.rounds.iter().filter_map(|r| r.held_rate).collect();
    let failed: Vec<f64> = cap.rounds.iter().filter_map(|r| r.failed_rate).collect();
    let median = round2(noise::median(&held));
    let interval = precision::median_interval(&held);
    // What limited the round nearest the median: a figure that happened, not a blend.
    let typical = cap.rounds.iter().min_by(|a, b| {
        let off = |r: &CapacityRound| (r.held_rate.unwrap_or(0.0) - median).abs();
        off(a).total_cmp(&off(b))
    });
    let limiting = typical.and_then(|r| r.limiting.clone());
    cap.set_ending(SearchEnding::Found);
    cap.held_rate = Some(median);
    cap.held_rate_low = interval.map(|i| round2(i.0));
    cap.held_rate_high = interval.map(|i| round2(i.1));
    cap.failed_rate = (!failed.is_empty()).then(|| round2(noise::median(&failed)));
    cap.limiting = limiting;
    let each: Vec<String> = held.iter().map(|h| rate_text(*h)).collect();
    cap.message = format!(
        "capacity {} rps: the median of {} rounds ({} rps held{}), failed at {} rps ({}); {} \
         probes",
        rate_text(median),
        held.len(),
        each.join(", "),
        interval
            .map(|(low, high)| format!(
                "; 95% CI {}-{} rps",
                rate_text(round2(low)),
                rate_text(round2(high))
            ))
            .unwrap_or_default(),
        cap.failed_rate.map_or("none".into(), rate_text),
        cap.limiting.as_deref().unwrap_or("no reason recorded"),
        cap.probes
            .iter()
            .filter(|p: &&ProbeStatus| p.check.is_none())
            .count()
    );
}

#[cfg(test)]
mod tests;
