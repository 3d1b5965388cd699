//! The regression gate of `benchmatrix run` and `kubectl benchmatrix run`
//! (`--max-regression PCT`): a candidate regressed when a figure of `status.variants` is worse
//! than its base beyond PCT percent and the paired test says so at 5%. The rule is
//! [`paired::direction`], the one the engine's own verdict of each figure uses with a 5%
//! practical change, so the gate, the marks on the terminal and in report.md, and the JUnit
//! cases cannot read one figure two ways.

use crate::engine::results::noise::Direction;
use crate::engine::results::paired;
use crate::engine::results::variants::lower_is_better;
use crate::resource::BenchmarkRunStatus;
use crate::resource::status::{RatioFigure, VariantComparison};

/// How much worse the candidate is, in percent of the base: positive when worse (higher
/// latency, lower throughput), negative when better. Throughput is measured the way latency
/// is (base over candidate), so that +10% means the same on both.
pub fn worse_pct(figure: &RatioFigure) -> f64 {
    if lower_is_better(&figure.figure) {
        (figure.ratio - 1.0) * 100.0
    } else {
        (1.0 / figure.ratio - 1.0) * 100.0
    }
}

/// True when `figure` is a regression beyond `max_regression` percent: worse by more than
/// that, and significantly so at 5%.
pub fn regressed(figure: &RatioFigure, max_regression: f64) -> bool {
    let direction = paired::direction(
        figure.ratio,
        (figure.p_worse, figure.p_better),
        lower_is_better(&figure.figure),
        max_regression / 100.0,
    );
    direction == Direction::Worse
}

/// Every figure of `variants` that regressed beyond `max_regression`, with its comparison.
pub fn regressions(
    variants: &[VariantComparison],
    max_regression: f64,
) -> Vec<(&VariantComparison, &RatioFigure)> {
    variants
        .iter()
        .flat_map(|c| c.figures.iter().map(move |f| (c, f)))
        .filter(|(_, f)| regressed(f, max_regression))
        .collect()
}

/// What the gate found in a finished run.
#[derive(Debug, Clone, PartialEq)]
pub enum RegressionGate<'a> {
    /// No `--max-regression`, or a run that was interrupted or refused: nothing to judge.
    NotAsked,
    /// The option was given, but the run compared no variants.
    NothingCompared {
        /// `--max-regression`, percent.
        max: f64,
    },
    /// No figure regressed beyond `max`.
    Held {
        /// `--max-regression`, percent.
        max: f64,
    },
    /// Nothing regressed, but these comparisons of capacities have no figure: in no round did
    /// both variants find a capacity (one failed even at the start rate, say), so the gate
    /// cannot vouch for the candidate and fails.
    Uncompared {
        /// `--max-regression`, percent.
        max: f64,
        /// Each comparison without a figure.
        comparisons: Vec<&'a VariantComparison>,
    },
    /// These figures did.
    Regressed {
        /// `--max-regression`, percent.
        max: f64,
        /// Each figure that regressed, with its comparison.
        figures: Vec<(&'a VariantComparison, &'a RatioFigure)>,
    },
}

impl<'a> RegressionGate<'a> {
    /// The gate of `status` under `max_regression` (percent; `None` without the option).
    pub fn judge(
        status: &'a BenchmarkRunStatus,
        max_regression: Option<f64>,
    ) -> RegressionGate<'a> {
        let Some(max) = max_regression else {
            return RegressionGate::NotAsked;
        };
        if status.variants.is_empty() {
            return RegressionGate::NothingCompared { max };
        }
        let figures = regressions(&status.variants, max);
        if !figures.is_empty() {
            return RegressionGate::Regressed { max, figures };
        }
        // A comparison without figures whose cells both succeeded is of capacities one side
        // did not find; one with a cell that failed (or was skipped) fails the run anyway.
        let comparisons: Vec<&VariantComparison> = status
            .variants
            .iter()
            .filter(|c| c.figures.is_empty() && both_searched(status, c))
            .collect();
        if comparisons.is_empty() {
            RegressionGate::Held { max }
        } else {
            RegressionGate::Uncompared { max, comparisons }
        }
    }

    /// True when a candidate regressed, or could not be compared on its capacity.
    pub fn failed(&self) -> bool {
        matches!(
            self,
            RegressionGate::Regressed { .. } | RegressionGate::Uncompared { .. }
        )
    }
}

/// True when both cells of `comparison` searched for capacity and succeeded: their search ended,
/// with or without a capacity.
fn both_searched(status: &BenchmarkRunStatus, comparison: &VariantComparison) -> bool {
    let succeeded = |variant: &str| {
        status.cells.iter().any(|c| {
            c.configuration.as_deref() == Some(comparison.configuration.as_str())
                && c.variant.as_deref() == Some(variant)
                && c.capacity.is_some()
                && c.phase == crate::resource::CellPhase::Succeeded
        })
    };
    succeeded(&comparison.base) && succeeded(&comparison.candidate)
}
