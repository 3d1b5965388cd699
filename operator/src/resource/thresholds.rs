//! `spec.thresholds` and `status.thresholds`: the service level a run is judged against.
//!
//! Every limit is an object (`p99: {below: 100ms}`, `rps: {atLeast: 0.8, of: single-x2}`), never
//! a bare scalar beside an object form, because a Kubernetes structural schema cannot type a
//! field as "string or object". CEL rules below refuse the shapes serde would accept but that
//! mean nothing (no metric, two metrics, a limit that is both absolute and relative).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::spec::Duration;

/// A service level one or more cells must meet, judged on one phase and endpoint after the run.
/// Set exactly one of p50, p90, p99, p999, max, rps or errorRate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "[has(self.p50), has(self.p90), has(self.p99), has(self.p999), has(self.max), has(self.rps), has(self.errorRate)].filter(x, x).size() == 1",
        "message": "a threshold sets exactly one of p50, p90, p99, p999, max, rps or errorRate",
    },
]))]
pub struct Threshold {
    /// The cells this threshold applies to: a cell name or a glob where `*` matches any run of
    /// characters and `?` one character, e.g. "pool-*". Unset: every cell. A glob that matches
    /// no cell is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63), regex(pattern = "^[-a-z0-9*?]+$"))]
    pub cell: Option<String>,

    /// The measured phase whose figures are judged. Required unless the workload has only one
    /// phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub phase: Option<String>,

    /// The endpoint whose figures are judged. Required unless the workload has only one
    /// endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub endpoint: Option<String>,

    /// Limit on the median latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<LatencyLimit>,

    /// Limit on the 90th percentile latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90: Option<LatencyLimit>,

    /// Limit on the 99th percentile latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<LatencyLimit>,

    /// Limit on the 99.9th percentile latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999: Option<LatencyLimit>,

    /// Limit on the largest latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<LatencyLimit>,

    /// Limit on the throughput (successful requests per second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rps: Option<RpsLimit>,

    /// Limit on the share of requests that failed (errors over requests completed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<ErrorRateLimit>,
}

/// A latency limit: absolute (`below`) or relative to another cell of the run (`atMost` and
/// `of`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "has(self.below) != has(self.atMost)",
        "message": "set either below (absolute) or atMost with of (relative to another cell)",
    },
    {
        "rule": "has(self.atMost) == has(self.of)",
        "message": "atMost and of go together: atMost is a factor of the latency of the cell named in of",
    },
    {
        "rule": "!has(self.below) || duration(self.below) > duration('0s')",
        "message": "below must be a positive duration",
    },
]))]
pub struct LatencyLimit {
    /// The latency must be below this duration, e.g. "100ms".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub below: Option<Duration>,

    /// The latency must be at most this factor times the same figure of the cell named in
    /// `of`, e.g. 0.1 for "a tenth of it". Above 0, at most 1000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1000.0))]
    pub at_most: Option<f64>,

    /// The cell (an exact name) the relative limit refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub of: Option<String>,
}

/// A throughput limit: absolute (`above`, requests per second) or relative to another cell of
/// the run (`atLeast` and `of`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "has(self.above) != has(self.atLeast)",
        "message": "set either above (absolute) or atLeast with of (relative to another cell)",
    },
    {
        "rule": "has(self.atLeast) == has(self.of)",
        "message": "atLeast and of go together: atLeast is a factor of the throughput of the cell named in of",
    },
]))]
pub struct RpsLimit {
    /// The throughput must be above this many successful requests per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 10000000.0))]
    pub above: Option<f64>,

    /// The throughput must be at least this factor times the throughput of the cell named in
    /// `of`, e.g. 0.8. Above 0, at most 1000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1000.0))]
    pub at_least: Option<f64>,

    /// The cell (an exact name) the relative limit refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub of: Option<String>,
}

/// An error-rate limit.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorRateLimit {
    /// The share of failed requests must be below this fraction, from 0 to 1 (0.01 is 1%).
    #[schemars(range(min = 0.0, max = 1.0))]
    pub below: f64,
}

/// The figure a threshold judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Median latency, milliseconds.
    P50,
    /// 90th percentile latency, milliseconds.
    P90,
    /// 99th percentile latency, milliseconds.
    P99,
    /// 99.9th percentile latency, milliseconds.
    P999,
    /// Largest latency, milliseconds.
    Max,
    /// Successful requests per second.
    Rps,
    /// Failed requests over requests completed.
    ErrorRate,
}

impl Metric {
    /// The field name in the spec, which is also the key of the figure in a `Spread`.
    pub fn key(self) -> &'static str {
        match self {
            Metric::P50 => "p50",
            Metric::P90 => "p90",
            Metric::P99 => "p99",
            Metric::P999 => "p999",
            Metric::Max => "max",
            Metric::Rps => "rps",
            Metric::ErrorRate => "errorRate",
        }
    }

    /// The metric whose [`Metric::key`] is `key`.
    pub fn from_key(key: &str) -> Option<Metric> {
        [
            Metric::P50,
            Metric::P90,
            Metric::P99,
            Metric::P999,
            Metric::Max,
            Metric::Rps,
            Metric::ErrorRate,
        ]
        .into_iter()
        .find(|m| m.key() == key)
    }

    /// True for a figure where more is better (throughput); latency and errors are better low.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Rps)
    }
}

/// What a threshold's figure is compared with.
#[derive(Clone, Debug, PartialEq)]
pub enum Bound {
    /// Pass when the figure is below this value (milliseconds or a fraction).
    Below(f64),
    /// Pass when the figure is above this value (requests per second).
    Above(f64),
    /// Pass when the figure is at most `factor` times the same figure of cell `of`.
    AtMostOf {
        /// The factor.
        factor: f64,
        /// The reference cell.
        of: String,
    },
    /// Pass when the figure is at least `factor` times the same figure of cell `of`.
    AtLeastOf {
        /// The factor.
        factor: f64,
        /// The reference cell.
        of: String,
    },
}

impl Bound {
    /// The reference cell of a relative bound.
    pub fn reference(&self) -> Option<&str> {
        match self {
            Bound::AtMostOf { of, .. } | Bound::AtLeastOf { of, .. } => Some(of),
            Bound::Below(_) | Bound::Above(_) => None,
        }
    }
}

impl Threshold {
    /// Every metric this threshold sets, with its bound; exactly one for a valid threshold. A
    /// limit that sets neither or both of its absolute and relative forms yields no bound.
    pub fn limits(&self) -> Vec<(Metric, Option<Bound>)> {
        let latency = |l: &LatencyLimit| match (&l.below, l.at_most, &l.of) {
            (Some(d), None, None) => Some(Bound::Below(d.get().as_secs_f64() * 1000.0)),
            (None, Some(factor), Some(of)) => Some(Bound::AtMostOf {
                factor,
                of: of.clone(),
            }),
            _ => None,
        };
        let mut out = Vec::new();
        for (metric, limit) in [
            (Metric::P50, &self.p50),
            (Metric::P90, &self.p90),
            (Metric::P99, &self.p99),
            (Metric::P999, &self.p999),
            (Metric::Max, &self.max),
        ] {
            if let Some(l) = limit {
                out.push((metric, latency(l)));
            }
        }
        if let Some(r) = &self.rps {
            let bound = match (r.above, r.at_least, &r.of) {
                (Some(v), None, None) => Some(Bound::Above(v)),
                (None, Some(factor), Some(of)) => Some(Bound::AtLeastOf {
                    factor,
                    of: of.clone(),
                }),
                _ => None,
            };
            out.push((Metric::Rps, bound));
        }
        if let Some(e) = &self.error_rate {
            out.push((Metric::ErrorRate, Some(Bound::Below(e.below))));
        }
        out
    }

    /// The one metric and bound of a valid threshold.
    pub fn limit(&self) -> Option<(Metric, Bound)> {
        match self.limits().as_slice() {
            [(metric, Some(bound))] => Some((*metric, bound.clone())),
            _ => None,
        }
    }
}

/// Whether a threshold held.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Verdict {
    /// The figure met the limit.
    Pass,
    /// The figure missed the limit, or could not be measured (a failed cell, no sample).
    #[default]
    Fail,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "Pass",
            Verdict::Fail => "Fail",
        })
    }
}

/// One threshold judged on one cell.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdResult {
    /// Position of the threshold in spec.thresholds, from 0.
    pub index: u32,
    /// The threshold in words, e.g. "mixed/fast p99 below 100ms" or "mixed/slow rps at least
    /// 0.8 x single-x2".
    pub threshold: String,
    /// The figure judged: p50, p90, p99, p999 or max (milliseconds), rps (successful requests
    /// per second) or errorRate (a fraction).
    pub figure: String,
    /// The cell judged.
    pub cell: String,
    /// The phase judged.
    pub phase: String,
    /// The endpoint judged.
    pub endpoint: String,
    /// The cell's figure (milliseconds, requests per second or a fraction); with repetitions,
    /// the median over them. Absent when it could not be measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<f64>,
    /// The limit in the same unit: the absolute limit, or the factor times the reference cell's
    /// figure. Absent when the reference cell's figure could not be measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<f64>,
    /// Pass or Fail.
    pub verdict: Verdict,
    /// One line: the comparison made, or why the figure is missing.
    pub message: String,
    /// True when a figure this verdict rests on spread more than 2x over the repetitions; the
    /// verdict stands, but the cell is not recommended on it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unstable: bool,
}
