//! Which figures may be ranked.
//!
//! A stream (one endpoint in one phase of one cell) is ranked — may be the best cell, be
//! compared by ratio, make the headline or an interference ratio — only when its figures mean
//! what their names say:
//!
//! - at least one request succeeded (a stream whose every request failed has no latency at
//!   all, and a p99 of "0.0" must never win);
//! - errors are under half of its requests ([`MAX_ERROR_SHARE`]): otherwise its latency
//!   describes the few survivors, not the endpoint;
//! - its samples support the ranking percentile, p99 ([`RANKED`]): at least 100 samples (see
//!   [`Percentile::min_samples`]). From fewer, "p99" is one of the few largest samples;
//! - when the cell was measured several times (`spec.repeat`), its p99 is stable over the
//!   repetitions (max/min at most [`super::noise::UNSTABLE_RATIO`]): an unstable figure is a
//!   coin toss between steady states and never decides a ranking.
//!
//! Streams that fail the sample rule only need a longer phase; unstable ones need more
//! repetitions or a longer phase; the others need a healthier target.

use std::fmt;

use super::noise;
use crate::resource::status::Percentile;
use crate::resource::{CellResult, FigureSpread};

/// The percentile cells are ranked on.
pub const RANKED: Percentile = Percentile::P99;

/// A stream whose errors reach this share of its requests is not ranked.
pub const MAX_ERROR_SHARE: f64 = 0.5;

/// Why a stream is not ranked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Exclusion {
    /// Requests completed, and every one failed.
    AllFailed {
        /// Requests completed.
        requests: u64,
    },
    /// At least [`MAX_ERROR_SHARE`] of the requests failed.
    TooManyErrors {
        /// Requests that failed.
        errors: u64,
        /// Requests completed.
        requests: u64,
    },
    /// Fewer samples than [`RANKED`] needs (none at all when no request completed).
    TooFewSamples {
        /// Successful requests.
        samples: u64,
    },
    /// The ranked percentile spread more than [`noise::UNSTABLE_RATIO`] over the repetitions.
    Unstable {
        /// Its smallest value over the repetitions, milliseconds.
        min: f64,
        /// Its largest value over the repetitions, milliseconds.
        max: f64,
    },
}

impl Exclusion {
    /// True when running the phase longer would collect enough samples.
    pub fn needs_longer_phase(self) -> bool {
        matches!(self, Exclusion::TooFewSamples { .. })
    }
}

impl fmt::Display for Exclusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Exclusion::AllFailed { requests } => write!(f, "all {requests} requests failed"),
            Exclusion::TooManyErrors { errors, requests } => write!(
                f,
                "errors {:.0}% of {requests} requests",
                errors as f64 * 100.0 / requests as f64
            ),
            Exclusion::TooFewSamples { samples } => write!(
                f,
                "{samples} sample{}; {RANKED} needs {}",
                if samples == 1 { "" } else { "s" },
                RANKED.min_samples()
            ),
            Exclusion::Unstable { min, max } => {
                write!(
                    f,
                    "unstable over repetitions: {RANKED} from {min:.1} to {max:.1} ms ("
                )?;
                if min > 0.0 {
                    write!(f, "{:.1}x", max / min)?;
                } else {
                    f.write_str("unbounded")?;
                }
                f.write_str("); repeat more or lengthen the phase")
            }
        }
    }
}

/// Why `r` may not be ranked, or `None` when it may.
pub fn exclusion(r: &CellResult) -> Option<Exclusion> {
    if r.requests > 0 && r.errors >= r.requests {
        return Some(Exclusion::AllFailed {
            requests: r.requests,
        });
    }
    if r.requests > 0 && r.errors as f64 >= MAX_ERROR_SHARE * r.requests as f64 {
        return Some(Exclusion::TooManyErrors {
            errors: r.errors,
            requests: r.requests,
        });
    }
    if !r.supports(RANKED) {
        return Some(Exclusion::TooFewSamples { samples: r.samples });
    }
    if let Some(s) = figure(r, noise::figure_key(RANKED)).filter(|s| s.unstable) {
        return Some(Exclusion::Unstable {
            min: s.min,
            max: s.max,
        });
    }
    None
}

/// How figure `key` (see [`noise::figure_key`]) of `r` varied over the cell's repetitions;
/// `None` when the cell ran once.
pub fn figure<'a>(r: &'a CellResult, key: &str) -> Option<&'a FigureSpread> {
    r.spread.as_ref()?.figures.get(key)
}

/// The figure `r` is ranked by (its p99), or why it has none to rank.
pub fn ranked_p99(r: &CellResult) -> Result<f64, Exclusion> {
    match (exclusion(r), r.latency_ms) {
        (None, Some(l)) => Ok(l.get(RANKED)),
        (Some(e), _) => Err(e),
        // `supports` is false without a latency, so `exclusion` said so above.
        (None, None) => Err(Exclusion::TooFewSamples { samples: r.samples }),
    }
}

/// About how many seconds a phase of the same rate would take to collect the samples [`RANKED`]
/// needs, when the rate is known; for the "needs a longer phase" advice.
pub fn seconds_for_enough_samples(r: &CellResult) -> Option<f64> {
    (r.rps > 0.0 && r.rps.is_finite()).then(|| RANKED.min_samples() as f64 / r.rps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::LatencyMs;

    fn stream(requests: u64, errors: u64) -> CellResult {
        let samples = requests - errors;
        CellResult {
            requests,
            errors,
            samples,
            latency_ms: (samples > 0).then(LatencyMs::default),
            unsupported_percentiles: Percentile::unsupported_by(samples),
            spread: None,
            ..Default::default()
        }
    }

    #[test]
    fn the_three_rules_in_order() {
        assert_eq!(
            exclusion(&stream(40, 40)),
            Some(Exclusion::AllFailed { requests: 40 })
        );
        assert_eq!(
            exclusion(&stream(400, 200)),
            Some(Exclusion::TooManyErrors {
                errors: 200,
                requests: 400
            })
        );
        assert_eq!(exclusion(&stream(401, 200)), None);
        assert_eq!(
            exclusion(&stream(99, 0)),
            Some(Exclusion::TooFewSamples { samples: 99 })
        );
        assert_eq!(
            exclusion(&stream(0, 0)),
            Some(Exclusion::TooFewSamples { samples: 0 })
        );
        assert_eq!(exclusion(&stream(100, 0)), None);
    }

    #[test]
    fn reasons_read_as_sentences() {
        assert_eq!(
            Exclusion::TooFewSamples { samples: 1 }.to_string(),
            "1 sample; p99 needs 100"
        );
        assert_eq!(
            Exclusion::TooManyErrors {
                errors: 30,
                requests: 40
            }
            .to_string(),
            "errors 75% of 40 requests"
        );
        assert!(Exclusion::TooFewSamples { samples: 0 }.needs_longer_phase());
        assert!(!Exclusion::AllFailed { requests: 3 }.needs_longer_phase());
    }
}
