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
    let Repeat::UntilPrecise { precision, .. } = ctx.repeat else {
        return (done < ctx.repeat.max_rounds(), None);
    };
    let judged = crate::engine::verdict::judge::figures_judged(ctx.thresholds, cell, merged);
    let assessment = results::precision::assess(merged, &judged);
    let widest = assessment
        .widest()
        .map(|w| (w.figure.clone(), w.width_percent));
    let width = Width {
        precise: assessment.within(precision),
        widest,
        what: "ranked or judged figure's 95% CI",
        without_interval: "has no interval (a value of 0)",
        nothing: "no figure is ranked or judged",
    };
    let (again, status) = width.decide(ctx, done, precision);
    (again, Some(status))
}

/// How precise a cell's (or a configuration's variants') deciding figures are after some
/// repetitions, in the words of its status.
struct Width<'a> {
    precise: bool,
    /// The widest figure and its interval's width in percent (`None`: no interval yet).
    widest: Option<(String, Option<f64>)>,
    /// What is measured, e.g. "ranked or judged figure's 95% CI".
    what: &'a str,
    /// Why a figure has no interval.
    without_interval: &'a str,
    /// What it means that there is no figure at all.
    nothing: &'a str,
}

impl Width<'_> {
    /// Again, or stop, after `done` repetitions of `repeat: {min, max, precision}`, and why.
    fn decide(&self, ctx: &Ctx, done: u32, precision: f64) -> (bool, CellPrecision) {
        let widest_text = match &self.widest {
            Some((figure, Some(pct))) => format!("widest {figure} at {pct:.1}%"),
            Some((figure, None)) => format!("{figure} {}", self.without_interval),
            None => self.nothing.to_owned(),
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
                    self.what
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
    let Repeat::UntilPrecise { precision, .. } = ctx.repeat else {
        return (done < ctx.repeat.max_rounds(), None);
    };
    let comparisons = results::variants::compare_group(&status.cells, group);
    let widest = results::variants::widest(&comparisons);
    let precise = widest
        .as_ref()
        .is_none_or(|(_, w)| w.is_some_and(|w| w <= precision));
    let width = Width {
        precise,
        widest,
        what: "candidate/base ratio's 95% CI",
        without_interval: "has no interval yet (it takes 3 rounds)",
        nothing: "no figure is compared",
    };
    let (again, status) = width.decide(ctx, done, precision);
    (again, Some(status))
}
