//! Measuring until precise: after each repetition (of a cell, of a configuration's variants,
//! or of a capacity search's rounds) whether another one runs, by `repeat`'s fixed count or by
//! `repeat: {min, max, precision}` and the width of the deciding figures' 95% interval; and
//! what the status says of it. The stop rule of each kind of repetition (`schedule::stop` for
//! cells and variants, `capacity::rounds` for a search) gives the width and its words; the rule
//! itself is here once, below both.

use crate::engine::Ctx;
use crate::resource::Repeat;
use crate::resource::rounding::round2;
use crate::resource::status::CellPrecision;

/// With a fixed `repeat`: again while fewer than its count are done, and no precision. With
/// `repeat: {min, max, precision}`: what [`Width::decide`] says of the width that `width`
/// works out for `precision` (called only then, so a fixed count computes nothing).
pub(crate) fn until_precise(
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
pub(crate) struct Words {
    /// What is measured, e.g. "ranked or judged figure's 95% CI".
    pub what: &'static str,
    /// Why a figure has no interval.
    pub without_interval: &'static str,
    /// What it means that there is no figure at all.
    pub nothing: &'static str,
}

/// How precise a cell's (or a configuration's variants') deciding figures are after some
/// repetitions, in the words of its status.
pub(crate) struct Width {
    pub precise: bool,
    /// The widest figure and its interval's width in percent (`None`: no interval yet).
    pub widest: Option<(String, Option<f64>)>,
    /// How the status words this kind of figure.
    pub words: &'static Words,
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
