//! How precisely a repeated cell's figures are known, for `spec.repeat: {min, max, precision}`.
//!
//! The rule is the textbook fixed-width sequential confidence interval (Chow and Robbins,
//! 1965): measure again until the interval of the estimate is narrower than asked, or a cap is
//! reached. It stops on the precision of an estimate, not on a significance test, so stopping
//! early does not inflate the rate of false "different" verdicts the way repeatedly peeking at
//! p-values would.
//!
//! The estimate is each figure's median over the repetitions. Its interval is Student's t on
//! the logarithms of the values: latencies and rates are positive and spread by a factor rather
//! than by an amount, so the logarithm is close to normal, and the interval for the mean
//! logarithm, turned back by `exp`, is an interval for the median (the geometric mean). Unlike
//! an interval from order statistics (which has no 95% interval below six values) or the
//! bootstrap (which from three values gives the range, a 75% interval), it exists from two
//! values and is honestly wide from few: t is 12.7 at two values, 4.3 at three, 2.3 at ten.
//! The status's reported CI (`spread.figures[].ciLow/ciHigh`) stays the bootstrap one from
//! five values; this interval only decides when to stop, and its width is recorded beside the
//! decision (`status.cells[].precision`).
//!
//! The figures judged are those that decide something: the p99 of every stream that may be
//! ranked (see [`super::trust`]; an unstable p99 counts, since more repetitions are what it
//! needs), and every figure a threshold judges on the cell. Streams excluded for errors are
//! not counted, as repeating cannot mend them; nor are those whose repetitions together hold
//! too few samples for a p99: they need a longer phase, and each repetition's own p99 from a
//! few dozen samples would keep the cell repeating to `max` for nothing.

use crate::resource::CellResult;
use crate::resource::thresholds::Metric;

use super::trust::{self, Exclusion, RANKED};

/// The two-sided 95% quantile of Student's t for 1 to 30 degrees of freedom (index = df - 1).
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The normal quantile beyond the table.
const Z_975: f64 = 1.960;

/// The 95% confidence interval of the median of `values`, from their logarithms; `None` from
/// fewer than two values or when a value is not positive (a logarithm needs one) unless all are
/// equal: an error rate of 0 in every repetition is known exactly.
pub fn median_interval(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n >= 2 && values.iter().all(|v| v.is_finite() && *v == values[0]) {
        return Some((values[0], values[0]));
    }
    if n < 2 || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let mean = logs.iter().sum::<f64>() / n as f64;
    let variance = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = T_975.get(n - 2).copied().unwrap_or(Z_975);
    let half = t * (variance / n as f64).sqrt();
    Some(((mean - half).exp(), (mean + half).exp()))
}

/// The width of the interval of `values` in percent of their median estimate; `None` when
/// there is no interval. The full width, low end to high end, as the spec's precision means.
pub fn width_percent(values: &[f64]) -> Option<f64> {
    let (low, high) = median_interval(values)?;
    if low == high {
        return Some(0.0);
    }
    let centre = (low * high).sqrt();
    Some((high - low) / centre * 100.0)
}

/// One figure whose precision decides whether its cell repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct FigurePrecision {
    /// "mixed/fast p99".
    pub figure: String,
    /// The interval's width in percent of the figure; `None` when no interval can be had (a
    /// zero among non-zero values, as an error rate of 0 in some repetitions and not in
    /// others: a logarithm needs a positive value): such a figure is never precise. Zero in
    /// every repetition is exact (width 0).
    pub width_percent: Option<f64>,
}

/// How precisely a cell's figures are known after its repetitions so far.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Assessment {
    /// Every figure that decides, in result order.
    pub figures: Vec<FigurePrecision>,
}

impl Assessment {
    /// The least precise figure: no interval first, then the widest.
    pub fn widest(&self) -> Option<&FigurePrecision> {
        self.figures.iter().max_by(|a, b| {
            let key = |f: &FigurePrecision| f.width_percent.unwrap_or(f64::INFINITY);
            key(a).total_cmp(&key(b))
        })
    }

    /// True when every figure's interval is at most `precision` percent wide (and so when no
    /// figure decides anything: more repetitions cannot make such a cell more useful).
    pub fn within(&self, precision: f64) -> bool {
        self.figures
            .iter()
            .all(|f| f.width_percent.is_some_and(|w| w <= precision))
    }
}

/// The precision of a repeated cell's figures. `merged` are its results over the repetitions
/// so far (`super::repeat::merge`: each carries the per-repetition values in its spread);
/// `judged` are the (phase, endpoint, metric) the thresholds judge on this cell.
pub fn assess(merged: &[CellResult], judged: &[(String, String, Metric)]) -> Assessment {
    let mut figures = Vec::new();
    for r in merged {
        let mut keys: Vec<&str> = Vec::new();
        if ranked(r) {
            keys.push(RANKED_KEY);
        }
        for (phase, endpoint, metric) in judged {
            if *phase == r.phase && *endpoint == r.endpoint && !keys.contains(&metric.key()) {
                keys.push(metric.key());
            }
        }
        for key in keys {
            let Some(spread) = trust::figure(r, key) else {
                continue;
            };
            figures.push(FigurePrecision {
                figure: format!("{}/{} {key}", r.phase, r.endpoint),
                width_percent: width_percent(&spread.values),
            });
        }
    }
    Assessment { figures }
}

const RANKED_KEY: &str = "p99";

/// True when `r`'s p99 may be ranked or is excluded only for being unstable, which more
/// repetitions can mend.
fn ranked(r: &CellResult) -> bool {
    debug_assert_eq!(super::noise::figure_key(RANKED), RANKED_KEY);
    matches!(trust::exclusion(r), None | Some(Exclusion::Unstable { .. }))
}

#[cfg(test)]
mod tests;
