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
mod tests {
    use super::*;
    use crate::resource::LatencyMs;
    use crate::resource::status::{FigureSpread, Percentile, Spread};

    #[test]
    fn the_interval_of_a_known_sample_matches_the_textbook() {
        // logs 0, ln 2, ln 4 (values 1, 2, 4): mean ln 2, s = ln 2, n = 3, t = 4.303, so the
        // interval is 2 * exp(±4.303 * ln 2 / sqrt 3).
        let (low, high) = median_interval(&[1.0, 2.0, 4.0]).unwrap();
        let half = 4.303 * std::f64::consts::LN_2 / 3f64.sqrt();
        assert!((low - 2.0 * (-half).exp()).abs() < 1e-9, "{low}");
        assert!((high - 2.0 * half.exp()).abs() < 1e-9, "{high}");
        // Equal values are known exactly.
        assert_eq!(width_percent(&[5.0, 5.0, 5.0]), Some(0.0));
    }

    #[test]
    fn the_same_spread_is_more_precise_with_more_values() {
        let three = width_percent(&[99.0, 100.0, 101.0]).unwrap();
        let six = width_percent(&[99.0, 100.0, 101.0, 99.0, 100.0, 101.0]).unwrap();
        assert!(six < three / 2.0, "three {three:.2}% six {six:.2}%");
        // About 1% apart over three values: within 5%, not within 2%.
        assert!((4.0..5.0).contains(&three), "{three}");
    }

    #[test]
    fn no_interval_from_one_value_or_from_a_zero_among_others_and_all_zeros_are_exact() {
        assert_eq!(median_interval(&[3.0]), None);
        assert_eq!(median_interval(&[0.0, 3.0]), None);
        // No error in any repetition is an exact figure.
        assert_eq!(width_percent(&[0.0, 0.0, 0.0]), Some(0.0));
        assert_eq!(median_interval(&[f64::NAN, 3.0]), None);
    }

    /// The interval covers the true median about 95% of the time: 4,000 samples of three
    /// lognormal values (median 100, sigma 0.1) from a fixed-seed generator.
    #[test]
    fn the_interval_covers_the_median_about_95_percent_of_the_time() {
        let mut seed = 0x1234_5678_u64;
        let mut uniform = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut normal = move || {
            // Box-Muller.
            let (u1, u2) = (uniform().max(1e-12), uniform());
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        };
        let trials = 4000;
        let covered = (0..trials)
            .filter(|_| {
                let values: Vec<f64> = (0..3).map(|_| 100.0 * (0.1 * normal()).exp()).collect();
                let (low, high) = median_interval(&values).unwrap();
                low <= 100.0 && 100.0 <= high
            })
            .count();
        let share = covered as f64 / trials as f64;
        assert!((0.935..0.965).contains(&share), "covered {share}");
    }

    fn stream(phase: &str, p99s: &[f64], rps: &[f64], samples: u64) -> CellResult {
        let spread = |values: &[f64]| FigureSpread {
            values: values.to_vec(),
            ..FigureSpread::default()
        };
        CellResult {
            phase: phase.into(),
            endpoint: "fast".into(),
            requests: samples,
            samples,
            latency_ms: Some(LatencyMs::default()),
            unsupported_percentiles: Percentile::unsupported_by(samples),
            spread: Some(Spread {
                figures: [
                    ("p99".to_string(), spread(p99s)),
                    ("rps".to_string(), spread(rps)),
                ]
                .into(),
                ..Spread::default()
            }),
            ..CellResult::default()
        }
    }

    #[test]
    fn ranked_p99s_and_judged_figures_decide_and_streams_too_short_do_not() {
        let merged = [
            stream("steady", &[10.0, 10.1, 9.9], &[100.0, 80.0, 120.0], 3000),
            // Too few samples for a p99: repeating does not mend it, so it does not count.
            stream("short", &[10.0, 30.0, 90.0], &[1.0, 1.0, 1.0], 60),
        ];
        let a = assess(&merged, &[]);
        assert_eq!(a.figures.len(), 1);
        assert_eq!(a.figures[0].figure, "steady/fast p99");
        assert!(a.within(5.0));
        // A threshold on the steady stream's rps brings in its spread, which is wide.
        let judged = [("steady".to_string(), "fast".to_string(), Metric::Rps)];
        let a = assess(&merged, &judged);
        assert_eq!(a.figures.len(), 2);
        assert!(!a.within(5.0));
        assert_eq!(a.widest().unwrap().figure, "steady/fast rps");
    }

    #[test]
    fn an_unstable_p99_counts_as_imprecise() {
        let merged = [stream(
            "mixed",
            &[183.0, 827.0, 400.0],
            &[5.0, 5.0, 5.0],
            3000,
        )];
        let a = assess(&merged, &[]);
        assert_eq!(a.figures.len(), 1);
        assert!(!a.within(50.0));
    }
}
