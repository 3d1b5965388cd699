//! `spec.capacity`: instead of measuring each cell at one load the user picked, search for the
//! highest total rate each cell holds at a service level. What a user may write, and its checks
//! against the workload; the search itself is the engine's (`crate::engine::capacity`).
//!
//! The service level reuses the figures of `spec.thresholds` (p50 ... max below a duration,
//! errorRate below a fraction) without their cell and phase: every cell is searched, and a
//! probe has one phase. Relative limits and rps limits have no meaning here (the rate is what
//! is searched), so the types do not offer them.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use benchmatrix_loadgen::duration::Duration;
use benchmatrix_loadgen::limits::MAX_RATE_PER_STREAM;
use benchmatrix_loadgen::plan::{Phase, Stream, Workload};
use benchmatrix_loadgen::strict_yaml::FieldError;

use super::thresholds::{ErrorRateLimit, Metric};

mod check;
mod status;

pub use check::{CheckPurpose, RateCheck};
pub use status::{
    CapacityRound, CapacityStatus, ProbeFigure, ProbeStatus, ProbeVerdict, SearchEnding,
};

/// Name of the one phase of every probe: the cell's results, once searched, are the
/// confirmation probe's under this phase name.
pub const PROBE_PHASE: &str = "probe";

/// Most probes one cell's search may take (the spec's `maxProbes` is at most this): each
/// probe is recorded in the status, whose size is bounded.
pub const MAX_PROBES: u32 = 40;

/// The search for each cell's highest rate at a service level (Nighthawk's adaptive load
/// controller): probes grow the total rate x2 from `startRate` until one fails, then bisect
/// between the last rate held and the first failed until they are within `resolution`, and
/// end with a confirmation probe at the rate held. Each probe is one open-loop phase of
/// `probeDuration` (after `workload.warmup`) at the total rate split over `mix`, latency
/// corrected for coordinated omission. A probe holds when every `slo` figure passes with
/// enough samples, at least 98% of the offered sends were achieved (answered by the probe's
/// end, or in flight for less than the SLO's latency), so the target did not fall behind; a
/// shortfall while the target answered what it was sent quickly is the load generator's, and
/// stops the search. With
/// `capacity`, leave out `workload.phases` and `thresholds`. With `repeat`, each round is a
/// whole search on a fresh target and the capacity is the median of the rounds' held rates,
/// with its 95% interval; with `variants`, each round's capacities of a candidate and its base
/// give one ratio, and status.variants compares them on it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!has(self.mix) || self.mix.map(m, m.weight).sum() > 0",
        "message": "the mix's weights must add up to more than 0",
        "fieldPath": ".mix",
    },
    {
        "rule": "!has(self.maxRate) || !has(self.startRate) || self.maxRate >= self.startRate",
        "message": "maxRate must be at least startRate",
    },
    {
        "rule": "!has(self.probeDuration) || (duration(self.probeDuration) >= duration('1s') && duration(self.probeDuration) <= duration('1h'))",
        "message": "probeDuration must be from 1s to 1h",
        "fieldPath": ".probeDuration",
    },
]))]
pub struct CapacitySpec {
    /// What "held" means: each entry one figure (p50, p90, p99, p999, max below a duration, or
    /// errorRate below a fraction) of one endpoint, or of every endpoint of the mix when
    /// `endpoint` is left out. At least one.
    #[schemars(length(min = 1, max = 16))]
    pub slo: Vec<SloFigure>,

    /// The traffic's shape: the total rate is split over these endpoints in proportion to
    /// their weights. Default: the workload's one endpoint (required when it has several).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub mix: Vec<MixEntry>,

    /// Stop when the rate held and the rate failed are this close (the failed one at most
    /// this much above the held one), e.g. "5%". From 0.5% to 50%. Default 5%.
    #[serde(default = "default_resolution")]
    pub resolution: Percent,

    /// The first probe's total rate, requests per second. The search grows from here; a cell
    /// that fails at it has no capacity found (lower it). Default 10.
    #[serde(default = "default_start_rate")]
    #[schemars(range(min = 0.1, max = MAX_RATE_PER_STREAM))]
    pub start_rate: f64,

    /// The highest total rate probed, requests per second. A cell that holds even here has
    /// no capacity found ("held at the upper bound": raise it). Default 10000.
    #[serde(default = "default_max_rate")]
    #[schemars(range(min = 0.1, max = MAX_RATE_PER_STREAM))]
    pub max_rate: f64,

    /// How long each probe loads the target, after `workload.warmup`. A percentile needs
    /// samples (p99: 100, p999: 1000), so at a low rate a short probe cannot hold a p99 SLO:
    /// give it at least 100 / startRate seconds. From 1s to 1h. Default "10s".
    #[serde(default = "default_probe_duration")]
    #[schemars(length(max = 32))]
    pub probe_duration: Duration,

    /// A probe whose SLO figure lands this close to its limit (either side, relative to the
    /// limit), e.g. "10%", is run again at the same rate before its verdict is believed; with
    /// two verdicts that disagree a third decides. "0%" turns this off. At most 50%. Default
    /// 10%.
    #[serde(default = "default_repeat_within")]
    pub repeat_within: Percent,

    /// The most probes one cell's search may take (confirmation and repeats included), from 2
    /// to 40. A search that runs out says so and reports no capacity. Default 20. With
    /// spec.sizing, each check at a fixed rate (a confirmation, a rule-out) may take as many
    /// of its own; one that runs out has no verdict and is not asked again.
    #[serde(default = "default_max_probes")]
    #[schemars(range(min = 2, max = MAX_PROBES))]
    pub max_probes: u32,

    /// Whether a probe may run on the target the previous probe of the same cell ran on,
    /// after a settle, instead of a target deployed afresh. Default true: a probe that held,
    /// or whose backlog drains within seconds, leaves its target for the next one (see
    /// `status.cells[].capacity.probes[].settleSeconds`). False: every probe deploys a fresh
    /// target (for a service whose state drifts under load: a cache, a leak).
    #[serde(default = "default_reuse_target")]
    pub reuse_target: bool,
}

fn default_reuse_target() -> bool {
    true
}

/// One figure of the service level: set `endpoint` (or leave it out for every endpoint of the
/// mix) and exactly one of p50, p90, p99, p999, max or errorRate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "[has(self.p50), has(self.p90), has(self.p99), has(self.p999), has(self.max), has(self.errorRate)].filter(x, x).size() == 1",
        "message": "an SLO figure sets exactly one of p50, p90, p99, p999, max or errorRate",
    },
]))]
pub struct SloFigure {
    /// The endpoint whose figure is judged; unset: every endpoint of the mix, each on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub endpoint: Option<String>,
    /// Limit on the median latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<LatencyBelow>,
    /// Limit on the 90th percentile latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90: Option<LatencyBelow>,
    /// Limit on the 99th percentile latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<LatencyBelow>,
    /// Limit on the 99.9th percentile latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999: Option<LatencyBelow>,
    /// Limit on the largest latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<LatencyBelow>,
    /// Limit on the share of requests that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<ErrorRateLimit>,
}

/// A latency limit of the service level: the figure must be below this duration.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "duration(self.below) > duration('0s')",
        "message": "below must be a positive duration",
    },
]))]
pub struct LatencyBelow {
    /// The latency must be below this duration, e.g. "100ms".
    #[schemars(length(max = 32))]
    pub below: Duration,
}

/// One endpoint's share of the traffic.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MixEntry {
    /// An endpoint of `workload.endpoints`.
    #[schemars(length(min = 1, max = 63))]
    pub endpoint: String,
    /// Its weight: its share of the total rate is weight / (sum of the weights). 0 to 1000000.
    #[schemars(range(min = 0.0, max = 1000000.0))]
    pub weight: f64,
}

impl SloFigure {
    /// The figure's metric and limit (milliseconds, or a fraction for errorRate), when exactly
    /// one is set.
    pub fn limit(&self) -> Option<(Metric, f64)> {
        let set = self.limits();
        match set.as_slice() {
            [one] => Some(*one),
            _ => None,
        }
    }

    fn limits(&self) -> Vec<(Metric, f64)> {
        let ms = |l: &LatencyBelow| l.below.get().as_secs_f64() * 1000.0;
        let mut out = Vec::new();
        for (metric, limit) in [
            (Metric::P50, &self.p50),
            (Metric::P90, &self.p90),
            (Metric::P99, &self.p99),
            (Metric::P999, &self.p999),
            (Metric::Max, &self.max),
        ] {
            if let Some(l) = limit {
                out.push((metric, ms(l)));
            }
        }
        if let Some(e) = &self.error_rate {
            out.push((Metric::ErrorRate, e.below));
        }
        out
    }
}

impl CapacitySpec {
    /// The load of one probe at total rate `rate`: the workload's endpoints, warm-up, timeout
    /// and spread with one open-loop phase, [`PROBE_PHASE`], of `probeDuration`, each endpoint
    /// of the mix at its share of the rate (an endpoint of weight 0 gets no stream). Open loop
    /// because a capacity is a rate the target must keep up with whatever its latency; its
    /// latency runs from each request's intended send time, so a target that stalls shows in
    /// the percentiles (coordinated omission corrected). The one definition of a probe both
    /// executors run.
    pub fn probe_workload(&self, workload: &Workload, rate: f64) -> Workload {
        let endpoints = workload.endpoint_names();
        let mix = self.mix_or_default(&endpoints);
        let total: f64 = mix.iter().map(|m| m.weight).sum();
        let load = mix
            .iter()
            .filter(|m| m.weight > 0.0 && total > 0.0)
            .map(|m| Stream {
                endpoint: m.endpoint.clone(),
                connections: None,
                rate: Some(rate * m.weight / total),
            })
            .collect();
        Workload {
            phases: vec![Phase {
                name: PROBE_PHASE.to_owned(),
                duration: self.probe_duration,
                load,
            }],
            ..workload.clone()
        }
    }

    /// The mix in force: the one given, or the workload's only endpoint at weight 1.
    pub fn mix_or_default(&self, endpoints: &[&str]) -> Vec<MixEntry> {
        if !self.mix.is_empty() {
            return self.mix.clone();
        }
        match endpoints {
            [only] => vec![MixEntry {
                endpoint: (*only).to_owned(),
                weight: 1.0,
            }],
            _ => Vec::new(),
        }
    }

    /// Why the first probe, at `startRate` for `probeDuration`, cannot judge a percentile of
    /// the SLO: its endpoint's share of the probe's requests is fewer than the percentile
    /// needs (p99: 100), so the search would fail at its start for want of samples, not for
    /// the target's latency. None when every percentile has its samples.
    fn too_few_samples(&self, mix: &[MixEntry]) -> Option<String> {
        let total: f64 = mix.iter().map(|m| m.weight).sum();
        let seconds = self.probe_duration.get().as_secs_f64();
        if total <= 0.0 || seconds <= 0.0 {
            return None;
        }
        self.slo.iter().find_map(|f| {
            let needed = f
                .limits()
                .iter()
                .filter_map(|(m, _)| m.percentile())
                .map(|p| (p.label(), p.min_samples() as f64))
                .next()?;
            // Without an endpoint the figure is each endpoint's: the smallest share binds.
            let entry = mix
                .iter()
                .filter(|m| m.weight > 0.0)
                .filter(|m| f.endpoint.as_ref().is_none_or(|e| *e == m.endpoint))
                .min_by(|a, b| a.weight.total_cmp(&b.weight))?;
            let share = entry.weight / total;
            let samples = self.start_rate * share * seconds;
            let wanted = needed.1;
            (samples < wanted).then(|| {
                let rate = (wanted / (share * seconds)).ceil();
                let secs = (wanted / (share * self.start_rate)).ceil();
                format!(
                    "a probe at {} rps for {} sends {} {} requests; its {} needs {}: raise \
                     startRate to {rate} or probeDuration to {secs}s (or more: requests in \
                     flight as it ends are no samples)",
                    self.start_rate,
                    self.probe_duration,
                    entry.endpoint,
                    samples.floor(),
                    needed.0,
                    needed.1
                )
            })
        })
    }

    /// Everything wrong with this search for a workload with endpoints `endpoints`. Paths
    /// start with `spec.capacity`.
    pub fn check(&self, endpoints: &[&str]) -> Vec<FieldError> {
        let at = "spec.capacity";
        let mut errors = Vec::new();
        if self.slo.is_empty() {
            errors.push(FieldError::new(
                format!("{at}.slo"),
                "give at least one figure, e.g. {endpoint: fast, p99: {below: 100ms}}",
            ));
        }
        let mix = self.mix_or_default(endpoints);
        self.check_mix(at, endpoints, &mix, &mut errors);
        for (i, f) in self.slo.iter().enumerate() {
            check_slo_figure(f, &format!("{at}.slo[{i}]"), endpoints, &mix, &mut errors);
        }
        self.check_search_bounds(at, &mix, &mut errors);
        errors
    }

    /// Pushes onto `errors` what is wrong with `spec.capacity.mix` (`at` is `spec.capacity`):
    /// a mix left out where the workload has several endpoints, entries naming no endpoint or
    /// one listed twice, weights that are not 0 or more, and weights that add up to 0. `mix`
    /// is the mix in force ([`Self::mix_or_default`]). Kept apart from [`Self::check`] so each
    /// part of the spec is checked in one place; the errors keep their order.
    fn check_mix(
        &self,
        at: &str,
        endpoints: &[&str],
        mix: &[MixEntry],
        errors: &mut Vec<FieldError>,
    ) {
        let mut refuse =
            |path: String, message: String| errors.push(FieldError::new(path, message));
        let listed = endpoints.join(", ");
        if self.mix.is_empty() && mix.is_empty() {
            refuse(
                format!("{at}.mix"),
                format!(
                    "required: the workload has {} endpoints ({listed}); give each a weight",
                    endpoints.len()
                ),
            );
        }
        for (i, m) in self.mix.iter().enumerate() {
            if !endpoints.contains(&m.endpoint.as_str()) {
                refuse(
                    format!("{at}.mix[{i}].endpoint"),
                    format!(
                        "no endpoint is named {:?}; the endpoints are {listed}",
                        m.endpoint
                    ),
                );
            }
            if self.mix[..i].iter().any(|o| o.endpoint == m.endpoint) {
                refuse(
                    format!("{at}.mix[{i}].endpoint"),
                    format!("endpoint {:?} is listed twice", m.endpoint),
                );
            }
            if !(m.weight.is_finite() && m.weight >= 0.0) {
                refuse(
                    format!("{at}.mix[{i}].weight"),
                    format!("{} is not a weight of 0 or more", m.weight),
                );
            }
        }
        if !self.mix.is_empty() && self.mix.iter().map(|m| m.weight).sum::<f64>() <= 0.0 {
            refuse(
                format!("{at}.mix"),
                "the weights add up to 0: give at least one endpoint a positive weight".into(),
            );
        }
    }

    /// Pushes onto `errors` what is wrong with the search's own numbers (`at` is
    /// `spec.capacity`): resolution, repeatWithin, startRate and maxRate (each a rate, and
    /// maxRate not below startRate), probeDuration, a first probe too short for the SLO's
    /// percentiles under the mix in force `mix`, and maxProbes. Apart from [`Self::check`]
    /// so that function stays a list of the spec's parts; the errors keep their order.
    fn check_search_bounds(&self, at: &str, mix: &[MixEntry], errors: &mut Vec<FieldError>) {
        let mut refuse =
            |path: String, message: String| errors.push(FieldError::new(path, message));
        let res = self.resolution.0;
        if !(0.5..=50.0).contains(&res) {
            refuse(
                format!("{at}.resolution"),
                format!("{res}% is outside 0.5% to 50%"),
            );
        }
        if !(0.0..=50.0).contains(&self.repeat_within.0) {
            refuse(
                format!("{at}.repeatWithin"),
                format!("{}% is outside 0% to 50%", self.repeat_within.0),
            );
        }
        for (field, v) in [("startRate", self.start_rate), ("maxRate", self.max_rate)] {
            if !(v.is_finite() && (0.1..=MAX_RATE_PER_STREAM).contains(&v)) {
                refuse(
                    format!("{at}.{field}"),
                    format!("{v} is not a rate from 0.1 to {MAX_RATE_PER_STREAM} per second"),
                );
            }
        }
        if self.max_rate < self.start_rate {
            refuse(
                format!("{at}.maxRate"),
                format!(
                    "{} is below startRate {}: the search needs room to grow",
                    self.max_rate, self.start_rate
                ),
            );
        }
        let d = self.probe_duration.get();
        if d < std::time::Duration::from_secs(1) || d > std::time::Duration::from_secs(3600) {
            refuse(
                format!("{at}.probeDuration"),
                format!("{} is outside 1s to 1h", self.probe_duration),
            );
        }
        if let Some(short) = self.too_few_samples(mix) {
            refuse(format!("{at}.startRate"), short);
        }
        if !(2..=MAX_PROBES).contains(&self.max_probes) {
            refuse(
                format!("{at}.maxProbes"),
                format!("{} is outside 2 to {MAX_PROBES}", self.max_probes),
            );
        }
    }
}

/// Pushes onto `errors` what is wrong with one SLO figure `f` at path `here`
/// (`spec.capacity.slo[i]`): an endpoint that gets no load under the mix in force `mix` (or
/// is no endpoint of `endpoints`), and a figure that sets none, or more than one, of p50 ...
/// errorRate, or a limit out of range. Apart from [`CapacitySpec::check`] because each figure
/// is checked alike; the errors keep their order.
fn check_slo_figure(
    f: &SloFigure,
    here: &str,
    endpoints: &[&str],
    mix: &[MixEntry],
    errors: &mut Vec<FieldError>,
) {
    let mut refuse = |path: String, message: String| errors.push(FieldError::new(path, message));
    let listed = endpoints.join(", ");
    // An endpoint of weight 0 gets no stream: a figure of it would have no samples.
    if let Some(e) = &f.endpoint
        && !mix.iter().any(|m| &m.endpoint == e && m.weight > 0.0)
    {
        let what = if mix.iter().any(|m| &m.endpoint == e) {
            format!("endpoint {e:?} has weight 0 in the mix, so it gets no load")
        } else if endpoints.contains(&e.as_str()) {
            format!("endpoint {e:?} is not in the mix, so it gets no load")
        } else {
            format!("no endpoint is named {e:?}; the endpoints are {listed}")
        };
        refuse(format!("{here}.endpoint"), what);
    }
    match f.limits().as_slice() {
        [] => refuse(
            here.to_owned(),
            "set one of p50, p90, p99, p999, max or errorRate".into(),
        ),
        [(metric, v)] => match metric {
            Metric::ErrorRate if !(*v > 0.0 && *v <= 1.0) => refuse(
                format!("{here}.errorRate.below"),
                format!("{v} is not a fraction above 0 and at most 1 (0.01 is 1%)"),
            ),
            Metric::ErrorRate => {}
            _ if *v <= 0.0 => refuse(
                format!("{here}.{}.below", metric.key()),
                "must be a positive duration, e.g. \"100ms\"".into(),
            ),
            _ => {}
        },
        more => refuse(
            here.to_owned(),
            format!(
                "set only one of p50, p90, p99, p999, max or errorRate (found {}); write \
                 one entry per figure",
                more.iter()
                    .map(|(m, _)| m.key())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    }
}

/// A share written as a percentage, e.g. "5%" (a string, as Kubernetes writes percentages
/// elsewhere, such as maxSurge).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Percent(pub f64);

impl Percent {
    /// The share as a fraction: 5% is 0.05.
    pub fn fraction(self) -> f64 {
        self.0 / 100.0
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

impl Serialize for Percent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Percent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.strip_suffix('%')
            .and_then(|n| n.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite())
            .map(Percent)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "invalid percentage {text:?}: expected a number followed by %, e.g. \"5%\""
                ))
            })
    }
}

written_schema!(Percent, {
    "type": "string",
    "maxLength": 16,
    "pattern": "^[0-9]+(\\.[0-9]+)?%$",
});

fn default_resolution() -> Percent {
    Percent(5.0)
}

fn default_repeat_within() -> Percent {
    Percent(10.0)
}

fn default_start_rate() -> f64 {
    10.0
}

fn default_max_rate() -> f64 {
    10000.0
}

fn default_probe_duration() -> Duration {
    Duration::from_secs(10)
}

fn default_max_probes() -> u32 {
    20
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capacity(yaml: &str) -> CapacitySpec {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn defaults_fill_in_what_the_issue_leaves_to_the_interface() {
        let c = capacity("slo: [{p99: {below: 100ms}}]");
        assert_eq!(c.resolution, Percent(5.0));
        assert_eq!(c.start_rate, 10.0);
        assert_eq!(c.max_rate, 10000.0);
        assert_eq!(c.probe_duration, Duration::from_secs(10));
        assert_eq!(c.repeat_within, Percent(10.0));
        assert_eq!(c.max_probes, 20);
        assert_eq!(c.check(&["fast"]), Vec::new());
        assert_eq!(c.mix_or_default(&["fast"])[0].endpoint, "fast");
        assert_eq!(c.slo[0].limit(), Some((Metric::P99, 100.0)));
    }

    #[test]
    fn a_percentage_must_say_percent() {
        let err = serde_yaml::from_str::<CapacitySpec>("slo: []\nresolution: 5")
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected a number followed by %"), "{err}");
        assert_eq!(
            capacity("slo: []\nresolution: 2.5%").resolution,
            Percent(2.5)
        );
    }

    #[test]
    fn bad_input_is_refused_with_its_field_path() {
        let c = capacity(
            r#"
slo:
  - {endpoint: medium, p99: {below: 100ms}}
  - {errorRate: {below: 1.5}}
  - {endpoint: fast}
  - {p50: {below: 1s}, p99: {below: 2s}}
  - {endpoint: slow, p99: {below: 1s}}
mix: [{endpoint: fast, weight: 0}, {endpoint: nope, weight: 0}]
resolution: 60%
startRate: 100
maxRate: 50
maxProbes: 1
probeDuration: 500ms
"#,
        );
        let errors = c.check(&["fast", "slow"]);
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.capacity.mix[1].endpoint",
                "spec.capacity.mix",
                "spec.capacity.slo[0].endpoint",
                "spec.capacity.slo[1].errorRate.below",
                // fast has weight 0 in this mix.
                "spec.capacity.slo[2].endpoint",
                "spec.capacity.slo[2]",
                "spec.capacity.slo[3]",
                "spec.capacity.slo[4].endpoint",
                "spec.capacity.resolution",
                "spec.capacity.maxRate",
                "spec.capacity.probeDuration",
                "spec.capacity.maxProbes",
            ],
            "{errors:#?}"
        );
        assert_eq!(
            errors[2].message,
            "no endpoint is named \"medium\"; the endpoints are fast, slow"
        );
        assert_eq!(
            errors[7].message,
            "endpoint \"slow\" is not in the mix, so it gets no load"
        );
        // A figure of an endpoint the mix gives weight 0 would judge a stream never sent.
        let zero = capacity(
            "slo: [{endpoint: slow, p99: {below: 1s}}]\nmix: [{endpoint: fast, weight: 1}, \
             {endpoint: slow, weight: 0}]",
        )
        .check(&["fast", "slow"]);
        assert_eq!(zero.len(), 1, "{zero:#?}");
        assert_eq!(zero[0].path, "spec.capacity.slo[0].endpoint");
        assert_eq!(
            zero[0].message,
            "endpoint \"slow\" has weight 0 in the mix, so it gets no load"
        );
        // Several endpoints and no mix: which share each gets is the user's to say.
        let no_mix = capacity("slo: [{p99: {below: 1s}}]").check(&["fast", "slow"]);
        assert_eq!(no_mix[0].path, "spec.capacity.mix");
    }

    #[test]
    fn a_first_probe_too_short_for_its_percentile_is_refused_with_what_would_do() {
        // 10 rps for 5 s is 50 requests: a p99 needs 100.
        let short = capacity(
            "slo: [{endpoint: fast, p99: {below: 100ms}}]\nstartRate: 10\nprobeDuration: 5s",
        );
        let errors = short.check(&["fast"]);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].path, "spec.capacity.startRate");
        assert_eq!(
            errors[0].message,
            "a probe at 10 rps for 5s sends fast 50 requests; its p99 needs 100: raise startRate to \
             20 or probeDuration to 10s (or more: requests in flight as it ends are no samples)"
        );
        // In a 19:1 mix the slow endpoint gets a twentieth of the rate.
        let mixed = capacity(
            "slo: [{endpoint: slow, p99: {below: 1s}}]\nmix: [{endpoint: fast, weight: 19}, \
             {endpoint: slow, weight: 1}]\nstartRate: 40\nprobeDuration: 10s",
        );
        let errors = mixed.check(&["fast", "slow"]);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].message.contains("sends slow 20 requests"),
            "{errors:?}"
        );
        // Enough samples, or a figure that needs none: accepted.
        for ok in [
            "slo: [{endpoint: fast, p99: {below: 100ms}}]\nstartRate: 20\nprobeDuration: 5s",
            "slo: [{errorRate: {below: 0.01}}]\nstartRate: 1\nprobeDuration: 1s",
        ] {
            assert_eq!(capacity(ok).check(&["fast"]), Vec::new(), "{ok}");
        }
    }
}
