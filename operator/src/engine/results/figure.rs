//! One figure of one stream's result, as every judge reads it: the thresholds of a finished
//! run, the stop rule of repetitions, and the capacity search's SLO. A percentile its samples
//! cannot support is no figure.

use crate::resource::status::Percentile;
use crate::resource::{CellResult, Metric};

/// One figure of a stream, or why it does not exist. A CellResult from repeated measurements
/// already holds each figure's median over the repetitions (and its `spread` the values), so
/// thresholds judge the median without computing it again; only the error rate, which the
/// result keeps as totals, is read from the spread's median when there is one.
pub fn figure(result: &CellResult, metric: Metric) -> Result<(f64, bool), String> {
    let spread = result
        .spread
        .as_ref()
        .and_then(|s| s.figures.get(metric.key()));
    let unstable = spread.is_some_and(|f| f.unstable);
    let percentile = match metric {
        Metric::P50 => Some(Percentile::P50),
        Metric::P90 => Some(Percentile::P90),
        Metric::P99 => Some(Percentile::P99),
        Metric::P999 => Some(Percentile::P999),
        _ => None,
    };
    let value = match metric {
        Metric::Rps => result.rps,
        Metric::ErrorRate => match spread {
            Some(f) => f.median,
            None if result.requests == 0 => return Err("no request completed".into()),
            None => result.errors as f64 / result.requests as f64,
        },
        _ => {
            let Some(latency) = &result.latency_ms else {
                return Err(format!(
                    "no request succeeded, so there is no {}",
                    metric.key()
                ));
            };
            match percentile {
                Some(p) if !result.supports(p) => {
                    return Err(format!(
                        "{} rests on {} samples and needs {}; lengthen the phase",
                        p.label(),
                        result.samples,
                        p.min_samples()
                    ));
                }
                Some(p) => latency.get(p),
                None => latency.max,
            }
        }
    };
    Ok((value, unstable))
}

/// One figure of one stream's result as a threshold judges it, or why it has none: the same
/// rule for thresholds and for the capacity search's SLO (a percentile the samples cannot
/// support is no figure).
pub fn stream_figure(result: &CellResult, metric: Metric) -> Result<f64, String> {
    figure(result, metric).map(|(v, _)| v)
}
