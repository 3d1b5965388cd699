//! Placeholder until the noise statistics land (replaced wholesale at merge).

use crate::api::status::FigureSpread;

/// The median, range and stability of a figure over repetitions.
pub fn spread_of(values: &[f64]) -> FigureSpread {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let (min, max) = (
        v.first().copied().unwrap_or(0.0),
        v.last().copied().unwrap_or(0.0),
    );
    FigureSpread {
        values: values.to_vec(),
        median,
        min,
        max,
        ci_low: None,
        ci_high: None,
        unstable: min > 0.0 && max / min > 2.0,
    }
}
