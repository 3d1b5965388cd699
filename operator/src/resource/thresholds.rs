//! `spec.thresholds` and `status.thresholds`: the service level a run is judged against, and the
//! checks of a spec's thresholds against its matrix and workload (judging them on measured
//! figures is the engine's, `crate::engine::verdict::judge`).
//!
//! Every limit is an object (`p99: {below: 100ms}`, `rps: {atLeast: 0.8, of: single-x2}`), never
//! a bare scalar beside an object form, because a Kubernetes structural schema cannot type a
//! field as "string or object". CEL rules below refuse the shapes serde would accept but that
//! mean nothing (no metric, two metrics, a limit that is both absolute and relative).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use benchmatrix_loadgen::duration::Duration;
use benchmatrix_loadgen::result::Percentile;
use benchmatrix_loadgen::strict_yaml::FieldError;

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

    /// With spec.variants: the variant whose cells this threshold applies to (an exact name).
    /// Unset: every variant's cells (with `ofVariant`: every variant but that one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 20))]
    pub variant: Option<String>,

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

/// A latency limit: absolute (`below`), relative to another cell of the run (`atMost` and
/// `of`), or relative to another variant of the same configuration (`atMost` and `ofVariant`),
/// judged on the median of the per-round ratios of the paired rounds.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "has(self.below) != has(self.atMost)",
        "message": "set either below (absolute) or atMost with of (relative to another cell)",
    },
    {
        "rule": "has(self.atMost) == (has(self.of) || has(self.ofVariant))",
        "message": "atMost goes with of (a cell) or ofVariant (a variant): it is a factor of that one's latency",
    },
    {
        "rule": "!(has(self.of) && has(self.ofVariant))",
        "message": "set either of (a cell) or ofVariant (a variant), not both",
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

    /// The variant (of spec.variants) the relative limit refers to: each judged cell against
    /// the cell of the same configuration in that variant, on the median of the per-round
    /// ratios, e.g. `{atMost: 1.05, ofVariant: base}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 20))]
    pub of_variant: Option<String>,
}

/// A throughput limit: absolute (`above`, requests per second), relative to another cell of
/// the run (`atLeast` and `of`), or relative to another variant (`atLeast` and `ofVariant`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "has(self.above) != has(self.atLeast)",
        "message": "set either above (absolute) or atLeast with of (relative to another cell)",
    },
    {
        "rule": "has(self.atLeast) == (has(self.of) || has(self.ofVariant))",
        "message": "atLeast goes with of (a cell) or ofVariant (a variant): it is a factor of that one's throughput",
    },
    {
        "rule": "!(has(self.of) && has(self.ofVariant))",
        "message": "set either of (a cell) or ofVariant (a variant), not both",
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

    /// The variant the relative limit refers to, as in a latency limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 20))]
    pub of_variant: Option<String>,
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
    /// The latency percentile this metric is, if it is one: its label and the samples it needs
    /// come from the load generator's one rule ([`Percentile::min_samples`]).
    pub fn percentile(self) -> Option<Percentile> {
        match self {
            Metric::P50 => Some(Percentile::P50),
            Metric::P90 => Some(Percentile::P90),
            Metric::P99 => Some(Percentile::P99),
            Metric::P999 => Some(Percentile::P999),
            Metric::Max | Metric::Rps | Metric::ErrorRate => None,
        }
    }

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
    /// Pass when the figure is at most `factor` times the same figure of `of`.
    AtMostOf {
        /// The factor.
        factor: f64,
        /// The reference.
        of: Reference,
    },
    /// Pass when the figure is at least `factor` times the same figure of `of`.
    AtLeastOf {
        /// The factor.
        factor: f64,
        /// The reference.
        of: Reference,
    },
}

/// What a relative bound is relative to.
#[derive(Clone, Debug, PartialEq)]
pub enum Reference {
    /// Another cell of the run (`of`): its median over the repetitions.
    Cell(String),
    /// The same configuration's cell in another variant (`ofVariant`): the bound is on the
    /// median of the per-round ratios.
    Variant(String),
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reference::Cell(cell) => f.write_str(cell),
            Reference::Variant(variant) => write!(f, "variant {variant}"),
        }
    }
}

impl Bound {
    /// The reference cell of a bound relative to a cell.
    pub fn reference(&self) -> Option<&str> {
        match self {
            Bound::AtMostOf {
                of: Reference::Cell(of),
                ..
            }
            | Bound::AtLeastOf {
                of: Reference::Cell(of),
                ..
            } => Some(of),
            _ => None,
        }
    }

    /// The reference variant of a bound relative to a variant.
    pub fn reference_variant(&self) -> Option<&str> {
        match self {
            Bound::AtMostOf {
                of: Reference::Variant(v),
                ..
            }
            | Bound::AtLeastOf {
                of: Reference::Variant(v),
                ..
            } => Some(v),
            _ => None,
        }
    }
}

/// The reference of a relative limit that sets exactly one of `of` and `ofVariant`.
fn reference(of: &Option<String>, of_variant: &Option<String>) -> Option<Reference> {
    match (of, of_variant) {
        (Some(cell), None) => Some(Reference::Cell(cell.clone())),
        (None, Some(variant)) => Some(Reference::Variant(variant.clone())),
        _ => None,
    }
}

impl Threshold {
    /// Every metric this threshold sets, with its bound; exactly one for a valid threshold. A
    /// limit that sets neither or both of its absolute and relative forms yields no bound.
    pub fn limits(&self) -> Vec<(Metric, Option<Bound>)> {
        let latency =
            |l: &LatencyLimit| match (&l.below, l.at_most, reference(&l.of, &l.of_variant)) {
                (Some(d), None, None) if l.of.is_none() && l.of_variant.is_none() => {
                    Some(Bound::Below(d.get().as_secs_f64() * 1000.0))
                }
                (None, Some(factor), Some(of)) => Some(Bound::AtMostOf { factor, of }),
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
            let bound = match (r.above, r.at_least, reference(&r.of, &r.of_variant)) {
                (Some(v), None, None) if r.of.is_none() && r.of_variant.is_none() => {
                    Some(Bound::Above(v))
                }
                (None, Some(factor), Some(of)) => Some(Bound::AtLeastOf { factor, of }),
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
    /// With `ofVariant`: the median of the per-round ratios (this cell's figure over the
    /// reference variant's, round by round) that the verdict rests on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// Pass or Fail.
    pub verdict: Verdict,
    /// One line: the comparison made, or why the figure is missing.
    pub message: String,
    /// True when a figure this verdict rests on spread more than 2x over the repetitions; the
    /// verdict stands, but the cell is not recommended on it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unstable: bool,
}

/// True when `name` matches `pattern`, where `*` matches any run of characters (none
/// included) and `?` exactly one; every other character matches itself.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative matcher with one backtrack point (the last `*`): linear in practice, and no
    // recursion a long pattern of stars could blow up.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?'])
}

/// The cells a threshold's `cell` selects (unset: all), in matrix order.
pub fn selected<'a, S: AsRef<str>>(pattern: Option<&str>, cells: &'a [S]) -> Vec<&'a str> {
    cells
        .iter()
        .map(AsRef::as_ref)
        .filter(|c| pattern.is_none_or(|p| glob_match(p, c)))
        .collect()
}

fn listed<S: AsRef<str>>(names: &[S]) -> String {
    names
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Everything wrong with `thresholds` for a run whose matrix has cells `cell_names` and whose
/// workload has measured phases `phases` and endpoints `endpoints`: a threshold must set
/// exactly one figure with one well-formed limit, name known phases and endpoints (or leave
/// them out where the workload has only one), select at least one cell, and refer to a known
/// cell in `of`. Paths are `spec.thresholds[i]...`.
pub fn check<C: AsRef<str>, P: AsRef<str>, E: AsRef<str>>(
    thresholds: &[Threshold],
    cell_names: &[C],
    phases: &[P],
    endpoints: &[E],
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, t) in thresholds.iter().enumerate() {
        let at = format!("spec.thresholds[{i}]");
        if let Some(pattern) = &t.cell
            && selected(Some(pattern), cell_names).is_empty()
        {
            let what = if is_glob(pattern) {
                format!("the pattern {pattern:?} matches no cell")
            } else {
                format!("no cell is named {pattern:?}")
            };
            errors.push(FieldError::new(
                format!("{at}.cell"),
                format!("{what}; the cells are {}", listed(cell_names)),
            ));
        }
        check_name(&mut errors, &at, "phase", t.phase.as_deref(), phases);
        check_name(
            &mut errors,
            &at,
            "endpoint",
            t.endpoint.as_deref(),
            endpoints,
        );
        let limits = t.limits();
        if limits.is_empty() {
            errors.push(FieldError::new(
                at.clone(),
                "set one of p50, p90, p99, p999, max, rps or errorRate",
            ));
        } else if limits.len() > 1 {
            let set: Vec<_> = limits.iter().map(|(m, _)| m.key()).collect();
            errors.push(FieldError::new(
                at.clone(),
                format!(
                    "set only one of p50, p90, p99, p999, max, rps or errorRate (found {}); \
                     write one threshold per figure",
                    set.join(", ")
                ),
            ));
        }
        for (metric, bound) in limits {
            let here = format!("{at}.{}", metric.key());
            match bound {
                None if metric == Metric::Rps => errors.push(FieldError::new(
                    here,
                    "set either above (requests per second) or atLeast with of or ofVariant (a \
                     factor of another cell's or variant's throughput)",
                )),
                None => errors.push(FieldError::new(
                    here,
                    "set either below (a duration such as \"100ms\") or atMost with of or \
                     ofVariant (a factor of another cell's or variant's latency)",
                )),
                Some(bound) => check_bound(&mut errors, &here, metric, &bound, cell_names),
            }
        }
    }
    errors
}

fn check_name<S: AsRef<str>>(
    errors: &mut Vec<FieldError>,
    at: &str,
    field: &str,
    name: Option<&str>,
    known: &[S],
) {
    match name {
        Some(name) if !known.iter().any(|k| k.as_ref() == name) => errors.push(FieldError::new(
            format!("{at}.{field}"),
            format!(
                "no {field} is named {name:?}; the {field}s are {}",
                listed(known)
            ),
        )),
        None if known.len() != 1 => errors.push(FieldError::new(
            format!("{at}.{field}"),
            format!(
                "required: the workload has {} {field}s ({})",
                known.len(),
                listed(known)
            ),
        )),
        _ => {}
    }
}

fn check_bound<S: AsRef<str>>(
    errors: &mut Vec<FieldError>,
    here: &str,
    metric: Metric,
    bound: &Bound,
    cell_names: &[S],
) {
    let mut refuse = |field: &str, message: String| {
        errors.push(FieldError::new(format!("{here}.{field}"), message));
    };
    match bound {
        Bound::Below(v) if metric == Metric::ErrorRate => {
            if !(*v > 0.0 && *v <= 1.0) {
                refuse(
                    "below",
                    format!("{v} is not a fraction above 0 and at most 1 (0.01 is 1%)"),
                );
            }
        }
        Bound::Below(v) => {
            if *v <= 0.0 {
                refuse(
                    "below",
                    "must be a positive duration, e.g. \"100ms\"".into(),
                );
            }
        }
        Bound::Above(v) => {
            if !(v.is_finite() && *v >= 0.0) {
                refuse("above", format!("{v} is not a rate of 0 or more"));
            }
        }
        Bound::AtMostOf { factor, of } | Bound::AtLeastOf { factor, of } => {
            let field = if matches!(bound, Bound::AtMostOf { .. }) {
                "atMost"
            } else {
                "atLeast"
            };
            if !(factor.is_finite() && *factor > 0.0 && *factor <= 1000.0) {
                refuse(
                    field,
                    format!("{factor} is not a factor above 0 and at most 1000"),
                );
            }
            if let Reference::Cell(of) = of
                && !cell_names.iter().any(|c| c.as_ref() == of)
            {
                refuse(
                    "of",
                    format!(
                        "no cell is named {of:?} (of takes an exact cell name); the cells are {}",
                        listed(cell_names)
                    ),
                );
            }
        }
    }
}

/// One cell of the matrix as a threshold sees it: its name and its variant.
pub struct CellOfVariant<'a> {
    /// The cell's name.
    pub name: &'a str,
    /// Its variant's name, in a run with spec.variants.
    pub variant: Option<&'a str>,
}

/// Everything wrong with the variants `thresholds` name, for a run whose variants are
/// `variants` (empty without spec.variants) and whose cells are `cells`: `variant` and
/// `ofVariant` name a variant of the run, a threshold is not relative to the variant it
/// judges, and `cell` with `variant` still selects a cell.
pub fn check_variants(
    thresholds: &[Threshold],
    cells: &[CellOfVariant<'_>],
    variants: &[&str],
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let unknown = |name: &str| {
        if variants.is_empty() {
            format!("the run has no spec.variants, so there is no variant {name:?}")
        } else {
            format!(
                "no variant is named {name:?}; the variants are {}",
                listed(variants)
            )
        }
    };
    for (i, t) in thresholds.iter().enumerate() {
        let at = format!("spec.thresholds[{i}]");
        if let Some(v) = &t.variant
            && !variants.contains(&v.as_str())
        {
            errors.push(FieldError::new(format!("{at}.variant"), unknown(v)));
            continue;
        }
        let Some((metric, bound)) = t.limit() else {
            continue;
        };
        let Some(of) = bound.reference_variant() else {
            continue;
        };
        let here = format!("{at}.{}.ofVariant", metric.key());
        if !variants.contains(&of) {
            errors.push(FieldError::new(here, unknown(of)));
            continue;
        }
        if t.variant.as_deref() == Some(of) {
            errors.push(FieldError::new(
                here,
                format!("the threshold judges variant {of:?} against itself; name another"),
            ));
            continue;
        }
        let judged = cells.iter().any(|c| {
            c.variant.is_some_and(|v| v != of)
                && t.variant
                    .as_deref()
                    .is_none_or(|want| c.variant == Some(want))
                && t.cell.as_deref().is_none_or(|p| glob_match(p, c.name))
        });
        if !judged {
            errors.push(FieldError::new(
                at.clone(),
                format!("selects no cell of a variant other than {of:?}"),
            ));
        }
    }
    errors
}

/// The threshold in words, without its cells: "mixed/fast p99 below 100ms".
pub fn describe(threshold: &Threshold, phase: &str, endpoint: &str) -> String {
    let Some((metric, bound)) = threshold.limit() else {
        return format!("{phase}/{endpoint}: malformed threshold");
    };
    let limit = match &bound {
        Bound::Below(v) if metric == Metric::ErrorRate => format!("below {v}"),
        Bound::Below(ms) => format!("below {}", ms_text(*ms)),
        Bound::Above(v) => format!("above {v}"),
        Bound::AtMostOf { factor, of } => format!("at most {factor} x {of}"),
        Bound::AtLeastOf { factor, of } => format!("at least {factor} x {of}"),
    };
    format!("{phase}/{endpoint} {} {limit}", metric.key())
}

/// A limit in milliseconds as the user wrote it ("100ms", "1.5s").
fn ms_text(ms: f64) -> String {
    if ms >= 1000.0 && (ms / 1000.0).fract() == 0.0 {
        format!("{}s", ms / 1000.0)
    } else {
        format!("{ms}ms")
    }
}

/// A figure with its unit, for messages and the report.
pub fn figure_text(metric: Metric, v: f64) -> String {
    match metric {
        Metric::Rps => format!("{v:.1} rps"),
        Metric::ErrorRate => format!("{:.2}%", v * 100.0),
        _ => format!("{v:.1} ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thresholds(yaml: &str) -> Vec<Threshold> {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn the_ci_gate_sample_parses_and_its_thresholds_validate() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../manifests/samples/ci-gate.yaml"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let run = crate::resource::validate::parse_benchmark_run(&text).unwrap();
        assert_eq!(run.spec.thresholds.len(), 6);
        assert_eq!(
            crate::resource::validate::check_thresholds(&run.spec),
            Vec::new()
        );
        // Relative ones included, each with one well-formed limit.
        assert!(run.spec.thresholds.iter().all(|t| t.limit().is_some()));
        assert_eq!(
            run.spec
                .thresholds
                .iter()
                .filter(|t| t.limit().unwrap().1.reference().is_some())
                .count(),
            3
        );
    }

    #[test]
    fn glob_matches_stars_and_question_marks() {
        assert!(glob_match("pool-*", "pool-x1"));
        assert!(glob_match("pool-*", "pool-"));
        assert!(!glob_match("pool-*", "single-x1"));
        assert!(glob_match("*-x1", "single-x1"));
        assert!(!glob_match("*-x1", "single-x12"));
        assert!(glob_match("pool-x?", "pool-x2"));
        assert!(!glob_match("pool-x?", "pool-x12"));
        assert!(glob_match("*", ""));
        assert!(glob_match("p*l*-x*", "pool-x2"));
        assert!(!glob_match("p*z*", "pool-x2"));
        assert!(glob_match("single-x1", "single-x1"));
        assert!(!glob_match("single-x1", "single-x10"));
        assert!(!glob_match("?", ""));
        // Backtracking: the first `*` must give back what the later literal needs.
        assert!(glob_match("*x*x", "axbxcx"));
        assert!(!glob_match("*x*x", "axbxc"));
    }

    #[test]
    fn threshold_validation_names_each_bad_field() {
        let t = thresholds(
            r#"
- {cell: "web-*", phase: mixed, endpoint: fast, p99: {below: 100ms}}
- {cell: pool-x9, phase: mixed, endpoint: fast, p99: {below: 100ms}}
- {phase: solo, endpoint: fast, p99: {below: 100ms}}
- {phase: mixed, endpoint: medium, p99: {below: 100ms}}
- {endpoint: fast, p99: {below: 100ms}}
- {phase: mixed, endpoint: fast, p99: {atMost: 0.1, of: single-x9}}
- {phase: mixed, endpoint: fast, rps: {atLeast: 0, of: single-x1}}
- {phase: mixed, endpoint: fast, errorRate: {below: 1.5}}
- {phase: mixed, endpoint: fast, p99: {below: 0s}}
- {phase: mixed, endpoint: fast}
- {phase: mixed, endpoint: fast, p50: {below: 1s}, rps: {above: 1}}
- {phase: mixed, endpoint: fast, p90: {below: 1s, atMost: 2, of: single-x1}}
- {phase: mixed, endpoint: fast, rps: {atLeast: 2}}
- {cell: "pool-?1", phase: mixed, endpoint: fast, p99: {atMost: 0.1, of: single-x1}}
"#,
        );
        let errors = check(
            &t,
            &["single-x1", "pool-x1"],
            &["fast-only", "mixed"],
            &["fast", "slow"],
        );
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "spec.thresholds[0].cell",
                "spec.thresholds[1].cell",
                "spec.thresholds[2].phase",
                "spec.thresholds[3].endpoint",
                "spec.thresholds[4].phase",
                "spec.thresholds[5].p99.of",
                "spec.thresholds[6].rps.atLeast",
                "spec.thresholds[7].errorRate.below",
                "spec.thresholds[8].p99.below",
                "spec.thresholds[9]",
                "spec.thresholds[10]",
                "spec.thresholds[11].p90",
                "spec.thresholds[12].rps",
            ],
            "{errors:#?}"
        );
        assert_eq!(
            errors[0].message,
            "the pattern \"web-*\" matches no cell; the cells are single-x1, pool-x1"
        );
        assert_eq!(
            errors[4].message,
            "required: the workload has 2 phases (fast-only, mixed)"
        );
    }
}
