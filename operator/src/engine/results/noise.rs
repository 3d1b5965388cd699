//! Telling a real difference from noise, with a repetition as the unit of evidence.
//!
//! A closed loop can lock into a different steady state on each run, which moves a whole run's
//! figures at once; per-request samples of one run would overstate certainty. So every test
//! here takes one value per repetition:
//!
//! - [`spread_of`]: median, min-max, a 95% bootstrap confidence interval of the median (from
//!   [`MIN_FOR_TEST`] values) and the `unstable` mark (max/min above [`UNSTABLE_RATIO`]).
//! - [`differ`]: with [`MIN_FOR_TEST`] or more values per side, a two-sided Mann-Whitney U test
//!   at [`ALPHA`], and a difference must also exceed a minimum practical change
//!   ([`MIN_PRACTICAL_CHANGE`] by default); with fewer, only non-overlapping min-max ranges
//!   (beyond the same practical change) count as different.
//!
//! Pure and deterministic: the bootstrap draws from a fixed-seed generator, so a status renders
//! the same interval every time.

use std::fmt;

use crate::resource::FigureSpread;
use crate::resource::status::Percentile;

/// Values per side from which a test (and a confidence interval) is computed.
pub const MIN_FOR_TEST: usize = 5;

/// Significance level of the Mann-Whitney U test.
pub const ALPHA: f64 = 0.05;

/// Default smallest relative change of the medians that counts, even when significant (5%).
pub const MIN_PRACTICAL_CHANGE: f64 = 0.05;

/// A figure whose max/min exceeds this is unstable.
pub const UNSTABLE_RATIO: f64 = 2.0;

/// Bootstrap resamples: enough that the interval's ends do not move with the generator (the
/// tail share of a resample quantile has a standard error of about 0.0016 at 10,000).
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;

/// Exact Mann-Whitney distribution up to this many values per side (without ties).
const EXACT_MAX_PER_SIDE: usize = 20;

/// The key of percentile `p` in [`crate::resource::Spread::figures`] (`p50`, `p90`, `p99`, `p999`).
pub fn figure_key(p: Percentile) -> &'static str {
    match p {
        Percentile::P50 => "p50",
        Percentile::P90 => "p90",
        Percentile::P99 => "p99",
        Percentile::P999 => "p999",
    }
}

/// The key of throughput in [`crate::resource::Spread::figures`].
pub const RPS: &str = "rps";

/// Median, range, confidence interval and stability of one figure's repetition values.
///
/// NaN values are ignored; no values at all give zeros and no interval.
pub fn spread_of(values: &[f64]) -> FigureSpread {
    let finite: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    let sorted = sorted(&finite);
    let (Some(&min), Some(&max)) = (sorted.first(), sorted.last()) else {
        return FigureSpread {
            values: finite,
            ..Default::default()
        };
    };
    let ci = (sorted.len() >= MIN_FOR_TEST).then(|| bootstrap_ci(&sorted));
    FigureSpread {
        median: median_of_sorted(&sorted),
        min,
        max,
        ci_low: ci.map(|c| c.0),
        ci_high: ci.map(|c| c.1),
        unstable: is_unstable(min, max),
        values: finite,
    }
}

/// True when values from `min` to `max` spread more than [`UNSTABLE_RATIO`]. All zeros is
/// stable; a zero beside a positive value is an unbounded spread, so unstable.
pub fn is_unstable(min: f64, max: f64) -> bool {
    if max <= 0.0 || min == max {
        return false;
    }
    min <= 0.0 || max / min > UNSTABLE_RATIO
}

/// The median of `values` (the mean of the middle two for an even count); 0 for none.
pub fn median(values: &[f64]) -> f64 {
    median_of_sorted(&sorted(values))
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

fn median_of_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// 95% percentile bootstrap interval of the median of `values` (in any order).
pub fn bootstrap_median_interval(values: &[f64]) -> (f64, f64) {
    bootstrap_ci(&sorted(values))
}

/// 95% percentile bootstrap interval of the median of `sorted`.
fn bootstrap_ci(sorted: &[f64]) -> (f64, f64) {
    let n = sorted.len();
    let mut rng = SplitMix64(0x6265_6e63_686d_6174); // "benchmat"
    let mut resample = vec![0.0; n];
    let mut medians: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            for slot in resample.iter_mut() {
                *slot = sorted[rng.below(n)];
            }
            resample.sort_by(f64::total_cmp);
            median_of_sorted(&resample)
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    let b = BOOTSTRAP_RESAMPLES as f64;
    let low = (0.025 * b).floor() as usize;
    let high = ((0.975 * b).ceil() as usize).saturating_sub(1);
    (medians[low], medians[high.min(medians.len() - 1)])
}

/// Sebastiano Vigna's SplitMix64: small, fast and good enough for resampling indices.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; its bias is below 2^-50 for small `n`).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// Whether the new values differ from the base ones, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The new values are better (lower when lower is better), beyond the noise.
    Better,
    /// The new values are worse, beyond the noise.
    Worse,
    /// No difference that the evidence supports (shown as "~").
    WithinNoise,
}

/// How a [`Difference`] was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Mann-Whitney U, p-value from the exact distribution (no ties, up to 20 values a side).
    MannWhitneyExact,
    /// Mann-Whitney U, p-value from the normal approximation with tie and continuity correction.
    MannWhitneyNormal,
    /// Fewer than [`MIN_FOR_TEST`] values on a side: different only when the min-max ranges do
    /// not overlap.
    RangeOverlap,
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::MannWhitneyExact => "Mann-Whitney U (exact)",
            Method::MannWhitneyNormal => "Mann-Whitney U (normal approximation)",
            Method::RangeOverlap => "min-max ranges",
        })
    }
}

/// The outcome of [`differ`].
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// Better, worse or within noise.
    pub direction: Direction,
    /// Relative change of the medians, `new / base - 1` (0.1 = 10% higher); `None` when the
    /// base median is zero and the new one is not.
    pub change: Option<f64>,
    /// How the direction was reached.
    pub method: Method,
    /// The two-sided p-value, when a test was computed.
    pub p_value: Option<f64>,
    /// A caveat for the reader, e.g. that a test needs 5 or more repetitions a side.
    pub note: Option<String>,
}

/// Whether `new` differs from `base` (one value per repetition on each side).
///
/// `lower_is_better` decides which direction is [`Direction::Better`]; `min_change` is the
/// smallest relative change of the medians that counts (e.g. [`MIN_PRACTICAL_CHANGE`]): below
/// it a significant difference is still within noise. With at least [`MIN_FOR_TEST`] values a
/// side a two-sided Mann-Whitney U test must reject at [`ALPHA`]; with fewer, the min-max
/// ranges must not overlap.
pub fn differ(base: &[f64], new: &[f64], lower_is_better: bool, min_change: f64) -> Difference {
    let base: Vec<f64> = base.iter().copied().filter(|v| !v.is_nan()).collect();
    let new: Vec<f64> = new.iter().copied().filter(|v| !v.is_nan()).collect();
    let (mb, mn) = (median(&base), median(&new));
    let change = relative_change(mb, mn);
    let practical = change.is_none_or(|c| c.abs() >= min_change) && mb != mn;
    let direction = if (mn < mb) == lower_is_better {
        Direction::Better
    } else {
        Direction::Worse
    };
    if base.len() >= MIN_FOR_TEST && new.len() >= MIN_FOR_TEST {
        let test = mann_whitney(&base, &new);
        let significant = test.p_value < ALPHA;
        return Difference {
            direction: if significant && practical {
                direction
            } else {
                Direction::WithinNoise
            },
            change,
            method: if test.exact {
                Method::MannWhitneyExact
            } else {
                Method::MannWhitneyNormal
            },
            p_value: Some(test.p_value),
            note: (significant && !practical).then(|| {
                format!(
                    "significant, but below the {:.0}% minimum practical change",
                    min_change * 100.0
                )
            }),
        };
    }
    let range = |v: &[f64]| {
        let s = sorted(v);
        Some((*s.first()?, *s.last()?))
    };
    let apart = match (range(&base), range(&new)) {
        (Some((bmin, bmax)), Some((nmin, nmax))) => bmax < nmin || nmax < bmin,
        _ => false,
    };
    let note = if base.is_empty() || new.is_empty() {
        "no values on one side".to_owned()
    } else {
        format!(
            "{} and {} repetitions: a test needs {MIN_FOR_TEST}+ repetitions a side",
            base.len(),
            new.len()
        )
    };
    Difference {
        direction: if apart && practical {
            direction
        } else {
            Direction::WithinNoise
        },
        change,
        method: Method::RangeOverlap,
        p_value: None,
        note: Some(note),
    }
}

/// `new / base - 1`, 0 when both are zero, `None` when only the base is.
pub fn relative_change(base: f64, new: f64) -> Option<f64> {
    if base != 0.0 {
        Some(new / base - 1.0)
    } else if new == 0.0 {
        Some(0.0)
    } else {
        None
    }
}

/// A two-sided Mann-Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample: pairs (a, b) with a > b, ties counting one half.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// True when the p-value comes from the exact distribution.
    pub exact: bool,
}

/// Mann-Whitney U of `a` against `b`: exact distribution without ties and up to 20 values a
/// side, otherwise the normal approximation with tie correction and continuity correction
/// (as scipy.stats.mannwhitneyu computes them).
pub fn mann_whitney(a: &[f64], b: &[f64]) -> MannWhitney {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return MannWhitney {
            u: 0.0,
            p_value: 1.0,
            exact: false,
        };
    }
    // Mid-ranks of the pooled sample.
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&v| (v, true))
        .chain(b.iter().map(|&v| (v, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = pooled.len();
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        rank_sum_a += rank * pooled[i..=j].iter().filter(|p| p.1).count() as f64;
        i = j + 1;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u = rank_sum_a - f1 * (f1 + 1.0) / 2.0;
    let u_big = u.max(f1 * f2 - u);
    if tie_term == 0.0 && n1 <= EXACT_MAX_PER_SIDE && n2 <= EXACT_MAX_PER_SIDE {
        let counts = u_counts(n1, n2);
        let total: f64 = counts.iter().sum();
        let at_least: f64 = counts[u_big.round() as usize..].iter().sum();
        return MannWhitney {
            u,
            p_value: (2.0 * at_least / total).min(1.0),
            exact: true,
        };
    }
    let nf = f1 + f2;
    let sigma = (f1 * f2 / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)))).sqrt();
    let p_value = if sigma > 0.0 {
        let z = (u_big - f1 * f2 / 2.0 - 0.5) / sigma;
        (2.0 * normal_sf(z)).min(1.0)
    } else {
        1.0
    };
    MannWhitney {
        u,
        p_value,
        exact: false,
    }
}

/// How many of the arrangements of `n1` and `n2` distinct values give each U (index = U).
fn u_counts(n1: usize, n2: usize) -> Vec<f64> {
    // c[i][j][u]: arrangements of i and j values with U = u; the largest value either belongs
    // to the first sample (beating all j of the second) or to the second.
    let max_u = n1 * n2;
    let mut prev: Vec<Vec<f64>> = vec![vec![0.0; max_u + 1]; n2 + 1];
    for row in prev.iter_mut() {
        row[0] = 1.0; // i = 0: one arrangement, U = 0
    }
    for i in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max_u + 1]; n2 + 1];
        cur[0][0] = 1.0;
        for j in 1..=n2 {
            for u in 0..=i * j {
                let first = if u >= j { prev[j][u - j] } else { 0.0 };
                cur[j][u] = first + cur[j - 1][u];
            }
        }
        prev = cur;
    }
    prev.swap_remove(n2)
}

/// P(Z > z) of a standard normal.
fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// The complementary error function (W. J. Cody's rational Chebyshev approximation as given in
/// Numerical Recipes' `erfcc`, relative error under 1.2e-7 everywhere).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests;
