//! The stop rule: whether a cell, or a configuration's variants, is measured again.
//!
//! A fixed `repeat` measures each cell that many times. `repeat: {min, max, precision}` measures
//! every cell `min` times, then again while the figures that decide something (ranked or judged
//! ones; with variants, the candidate/base ratios) have a 95% interval wider than `precision`
//! percent, and never beyond `max`. The reducer (`engine/reduce.rs`) asks this after each
//! measured repetition and writes the answer into the cell's status as `precision`.

use crate::engine::Ctx;
use crate::engine::results;
use crate::engine::results::until_precise::{Width, Words, until_precise};
use crate::resource::status::CellPrecision;
use crate::resource::{BenchmarkRunStatus, CellResult};

/// Whether a repeated cell is measured again after `done` successful repetitions whose
/// figures merge into `merged`; with `repeat: {min, max, precision}`, how precise they are.
/// A fixed count repeats until it is reached. The adaptive rule repeats until `min`, then
/// while a ranked or judged figure's 95% confidence interval is wider than `precision`
/// percent of it (`results::precision`), and never beyond `max`.
pub(crate) fn repeat_again(
    ctx: &Ctx,
    cell: &str,
    done: u32,
    merged: &[CellResult],
) -> (bool, Option<CellPrecision>) {
    until_precise(ctx, done, |precision| {
        let judged = crate::engine::verdict::judge::figures_judged(ctx.thresholds, cell, merged);
        let assessment = results::precision::assess(merged, &judged);
        let widest = assessment
            .widest()
            .map(|w| (w.figure.clone(), w.width_percent));
        Width {
            precise: assessment.within(precision),
            widest,
            words: &CELL_WORDS,
        }
    })
}

/// A cell's ranked or judged figures ([`repeat_again`]).
const CELL_WORDS: Words = Words {
    what: "ranked or judged figure's 95% CI",
    without_interval: "has no interval (a value of 0)",
    nothing: "no figure is ranked or judged",
};

/// A configuration's candidate/base ratios ([`pair_again`]).
const PAIR_WORDS: Words = Words {
    what: "candidate/base ratio's 95% CI",
    without_interval: "has no interval yet (it takes 3 rounds)",
    nothing: "no figure is compared",
};

/// Whether the configuration `group` is measured for another round after `done` rounds.
pub(crate) fn pair_again(
    status: &BenchmarkRunStatus,
    group: &[usize],
    done: u32,
    ctx: &Ctx,
) -> (bool, Option<CellPrecision>) {
    until_precise(ctx, done, |precision| {
        let comparisons = results::variants::compare_group(&status.cells, group);
        let widest = results::variants::widest(&comparisons);
        let precise = widest
            .as_ref()
            .is_none_or(|(_, w)| w.is_some_and(|w| w <= precision));
        Width {
            precise,
            widest,
            words: &PAIR_WORDS,
        }
    })
}
