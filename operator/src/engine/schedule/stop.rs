//! The stop rule: whether a cell, or a configuration's variants, is measured again.
//!
//! A fixed `repeat` measures each cell that many times. `repeat: {min, max, precision}` measures
//! every cell `min` times, then again while the figures that decide something (ranked or judged
//! ones; with variants, the candidate/base ratios) have a 95% interval wider than `precision`
//! percent, and never beyond `max`. The reducer (`engine/reduce.rs`) asks this after each
//! measured repetition and writes the answer into the cell's status as `precision`.

use crate::engine::Ctx;
use crate::engine::results;
use crate::resource::rounding::round2;
use crate::resource::status::CellPrecision;
use crate::resource::{BenchmarkRunStatus, CellResult, Repeat};

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

/// With a fixed `repeat`: again while fewer than its count are done, and no precision. With
/// `repeat: {min, max, precision}`: what [`Width::decide`] says of the width that `width`
/// works out for `precision` (called only then, so a fixed count computes nothing).
fn until_precise(
    ctx: &Ctx,
    done: u32,
    width: impl FnOnce(f64) -> Width,
) -> (bool, Option<CellPrecision>) {
    let Repeat::UntilPrecise { precision, .. } = ctx.repeat else {
        return (done < ctx.repeat.max_rounds(), None);
    };
    let (again, status) = width(precision).decide(ctx, done, precision);
    (again, Some(status))
}

/// How a status words one kind of deciding figure.
struct Words {
    /// What is measured, e.g. "ranked or judged figure's 95% CI".
    what: &'static str,
    /// Why a figure has no interval.
    without_interval: &'static str,
    /// What it means that there is no figure at all.
    nothing: &'static str,
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
pub(crate) fn capacity_again(ctx: &Ctx, done: u32, held: &[f64]) -> (bool, Option<CellPrecision>) {
    until_precise(ctx, done, |precision| {
        let width = results::precision::width_percent(held);
        Width {
            precise: width.is_some_and(|w| w <= precision),
            widest: Some(("capacity".to_owned(), width)),
            words: &CAPACITY_WORDS,
        }
    })
}

/// How precise a cell's (or a configuration's variants') deciding figures are after some
/// repetitions, in the words of its status.
struct Width {
    precise: bool,
    /// The widest figure and its interval's width in percent (`None`: no interval yet).
    widest: Option<(String, Option<f64>)>,
    /// How the status words this kind of figure.
    words: &'static Words,
}

impl Width {
    /// Again, or stop, after `done` repetitions of `repeat: {min, max, precision}`, and why.
    fn decide(&self, ctx: &Ctx, done: u32, precision: f64) -> (bool, CellPrecision) {
        let widest_text = match &self.widest {
            Some((figure, Some(pct))) => format!("widest {figure} at {pct:.1}%"),
            Some((figure, None)) => format!("{figure} {}", self.words.without_interval),
            None => self.words.nothing.to_owned(),
        };
        let (again, message) = if done < ctx.repeat.min_rounds() {
            (
                true,
                format!(
                    "{widest_text} after {done}; every cell runs {} first",
                    ctx.repeat.min_rounds()
                ),
            )
        } else if self.precise {
            let message = if self.widest.is_some() {
                format!(
                    "precise after {done}: every {} within {precision}% ({widest_text})",
                    self.words.what
                )
            } else {
                format!("stopped after {done}: {widest_text}, so more repetitions decide nothing")
            };
            (false, message)
        } else if done >= ctx.repeat.max_rounds() {
            (
                false,
                format!(
                    "max of {done} reached and still spread: {widest_text}, wanted {precision}%"
                ),
            )
        } else {
            (
                true,
                format!("not yet precise: {widest_text}, wanted {precision}%"),
            )
        };
        let status = CellPrecision {
            precise: self.precise && done >= ctx.repeat.min_rounds(),
            repetitions: done,
            widest_figure: self.widest.as_ref().map(|w| w.0.clone()),
            widest_percent: self.widest.as_ref().and_then(|w| w.1).map(round2),
            message,
        };
        (again, status)
    }
}

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
