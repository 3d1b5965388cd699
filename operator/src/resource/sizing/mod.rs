//! `spec.sizing`: instead of a matrix the user guessed, a space of configurations (replicas x
//! CPU x mode x the service's own env knobs) and a traffic to hold; the engine finds the
//! configuration with the least reserved CPU that holds the traffic at `spec.capacity`'s
//! service level, measuring the capacity of only a few configurations
//! (`crate::engine::sizing`). What a user may write, its checks, and the configurations the
//! space expands to.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use benchmatrix_loadgen::limits::MAX_RATE_PER_STREAM;
use benchmatrix_loadgen::strict_yaml::FieldError;

use super::Quantity;
use super::capacity::Percent;
use super::settings::{Mode, PoolSize, default_memory};
use benchmatrix_loadgen::limits::MAX_REPLICAS;

mod status;

pub use status::{
    ChosenConfiguration, HpaTarget, SizedConfiguration, SizedState, SizingOutcome, SizingStatus,
};

/// Most configurations a sizing space may hold: the matrix's limit, as each configuration is a
/// cell of the run's status.
pub const MAX_CONFIGURATIONS: usize = benchmatrix_loadgen::limits::MAX_CELLS;

/// Most repetitions of the confirmation at the target rate.
pub const MAX_CONFIRMATIONS: u32 = 5;

/// Most cheaper configurations measured once at the target rate to show they fail.
pub const MAX_RULE_OUTS: u32 = 4;

/// The search for the cheapest configuration that holds `traffic` (plus `margin`) at the
/// service level of `spec.capacity` (its `slo` and `mix`): the configurations are the cross
/// product of `search`; the capacity of a configuration is found as `spec.capacity` finds a
/// cell's, but only for the configurations the search cannot rule out from what it measured
/// (capacity never falls with more CPU per replica or more replicas, and grows at most in
/// proportion to replicas and to CPU), cheapest first, at most `budget` of them. The answer is confirmed
/// by measurement: `confirmations` probes at traffic x (1 + margin) on the chosen configuration,
/// and one probe at that rate on each of up to `ruleOut` cheaper configurations the bounds
/// ruled out, which must fail. Results land in status.sizing; `benchmatrix size` prints them as
/// Kubernetes settings.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "self.traffic > 0.0",
        "message": "traffic must be above 0 requests per second",
        "fieldPath": ".traffic",
    },
]))]
pub struct SizingSpec {
    /// Requests per second to hold, in spec.capacity's mix.
    #[schemars(range(min = 0.0, max = MAX_RATE_PER_STREAM))]
    pub traffic: f64,

    /// Headroom: the chosen configuration must hold traffic x (1 + margin), e.g. "20%". From
    /// 0% to 200%. Default 20%.
    #[serde(default = "default_margin")]
    pub margin: Percent,

    /// The space searched: every combination of the listed values is a configuration.
    pub search: SearchSpace,

    /// At most this many configurations are searched for capacity (the confirmation and
    /// rule-out probes are not counted). From 1 to 64. Default 12.
    #[serde(default = "default_budget")]
    #[schemars(range(min = 1, max = MAX_CONFIGURATIONS))]
    pub budget: u32,

    /// Probes at traffic x (1 + margin) on the chosen configuration; every one must hold. From
    /// 1 to 5. Default 3.
    #[serde(default = "default_confirmations")]
    #[schemars(range(min = 1, max = MAX_CONFIRMATIONS))]
    pub confirmations: u32,

    /// Cheaper configurations ruled out without a search that are probed once at the target
    /// rate, those the fitted model predicts closest to holding first (the evidence that
    /// nothing cheaper would do). From 0 to 4. Default 2.
    #[serde(default = "default_rule_out")]
    #[schemars(range(min = 0, max = MAX_RULE_OUTS))]
    pub rule_out: u32,
}

/// The axes of the space. Configurations are named `<mode>-x<replicas>-cpu<cpu>`, then
/// `-<name><value>` for each env axis (lower case, in name order).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchSpace {
    /// Replica counts, each 1 to 64.
    #[schemars(length(min = 1, max = 16), inner(range(min = 1, max = MAX_REPLICAS)))]
    pub replicas: Vec<u32>,

    /// CPU per replica (requests equal limits), e.g. ["250m", "500m", "1"].
    #[schemars(length(min = 1, max = 16))]
    pub cpu: Vec<Quantity>,

    /// Concurrency modes of the built-in target (env BENCH_MODE). Default: single.
    #[serde(default = "default_modes")]
    #[schemars(length(min = 1, max = 3))]
    pub mode: Vec<Mode>,

    /// The service's own knobs: each variable's values, crossed with the other axes, e.g.
    /// {WORKERS: ["1", "2", "4"]}.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 4))]
    pub env: BTreeMap<String, Vec<String>>,

    /// Memory per replica for every configuration.
    #[serde(default = "default_memory")]
    pub memory: Quantity,

    /// Worker pool size for every configuration: "auto" or a number from 1 to 1024.
    #[serde(default, skip_serializing_if = "PoolSize::is_auto")]
    pub pool_size: PoolSize,
}

impl SizingSpec {
    /// The rate the chosen configuration must hold: traffic x (1 + margin).
    pub fn target_rate(&self) -> f64 {
        self.traffic * (1.0 + self.margin.fraction())
    }

    /// Everything wrong with this space; paths start with `spec.sizing`.
    pub fn check(&self) -> Vec<FieldError> {
        let at = "spec.sizing";
        let mut errors = Vec::new();
        let mut refuse = |path: String, message: String| {
            errors.push(FieldError::new(path, message));
        };
        if !(self.traffic.is_finite() && self.traffic > 0.0 && self.traffic <= MAX_RATE_PER_STREAM)
        {
            refuse(
                format!("{at}.traffic"),
                format!(
                    "{} is not a rate above 0 and at most {MAX_RATE_PER_STREAM} per second",
                    self.traffic
                ),
            );
        }
        if !(0.0..=200.0).contains(&self.margin.0) {
            refuse(
                format!("{at}.margin"),
                format!("{} is outside 0% to 200%", self.margin),
            );
        }
        let s = &self.search;
        for (field, empty) in [
            ("replicas", s.replicas.is_empty()),
            ("cpu", s.cpu.is_empty()),
            ("mode", s.mode.is_empty()),
        ] {
            if empty {
                refuse(
                    format!("{at}.search.{field}"),
                    "list at least one value".into(),
                );
            }
        }
        for (name, values) in &s.env {
            if values.is_empty() {
                refuse(
                    format!("{at}.search.env.{name}"),
                    "list at least one value".into(),
                );
            }
            let mut seen = std::collections::HashSet::new();
            for (i, v) in values.iter().enumerate() {
                if !seen.insert(v) {
                    refuse(
                        format!("{at}.search.env.{name}[{i}]"),
                        format!("{v:?} is listed twice"),
                    );
                }
            }
        }
        for (field, dup) in [
            ("replicas", first_repeat(&s.replicas)),
            ("cpu", first_repeat(&s.cpu)),
            ("mode", first_repeat(&s.mode)),
        ] {
            if let Some(i) = dup {
                refuse(
                    format!("{at}.search.{field}[{i}]"),
                    "listed twice: each value is one configuration".into(),
                );
            }
        }
        errors.extend(self.check_counts());
        errors
    }

    /// The space's size and what the search may spend on it: the configurations it holds, the
    /// budget (at least one search per family), confirmations and rule-outs.
    fn check_counts(&self) -> Vec<FieldError> {
        let at = "spec.sizing";
        let mut errors = Vec::new();
        let mut refuse = |path: String, message: String| {
            errors.push(FieldError::new(path, message));
        };
        let count = self.configuration_count();
        if count > MAX_CONFIGURATIONS {
            refuse(
                format!("{at}.search"),
                format!(
                    "the space has {count} configurations; at most {MAX_CONFIGURATIONS} are \
                     allowed (drop values from an axis)"
                ),
            );
        }
        let needs = u32::try_from(self.families()).unwrap_or(u32::MAX).max(1);
        if !(1..=MAX_CONFIGURATIONS as u32).contains(&self.budget) {
            refuse(
                format!("{at}.budget"),
                format!("{} is outside 1 to {MAX_CONFIGURATIONS}", self.budget),
            );
        } else if self.budget < needs {
            refuse(
                format!("{at}.budget"),
                format!(
                    "{} is below what the search needs: {needs}, one search in each of the \
                     {needs} combinations of mode and env (their capacities bound the rest)",
                    self.budget
                ),
            );
        }
        if !(1..=MAX_CONFIRMATIONS).contains(&self.confirmations) {
            refuse(
                format!("{at}.confirmations"),
                format!("{} is outside 1 to {MAX_CONFIRMATIONS}", self.confirmations),
            );
        }
        if self.rule_out > MAX_RULE_OUTS {
            refuse(
                format!("{at}.ruleOut"),
                format!("{} is more than {MAX_RULE_OUTS}", self.rule_out),
            );
        }
        errors
    }

    /// How many configurations the space holds (`usize::MAX` for more than that).
    pub fn configuration_count(&self) -> usize {
        let s = &self.search;
        s.replicas
            .len()
            .saturating_mul(s.cpu.len())
            .saturating_mul(self.families())
    }

    /// How many combinations of mode and env values the space holds: the families whose
    /// configurations differ only in replicas and CPU. Counted without overflow: a product
    /// that wrapped (four env axes of 65,536 values make 2^64) would let a space of that size
    /// pass as empty, and then be expanded.
    pub fn families(&self) -> usize {
        self.search
            .env
            .values()
            .map(|v| v.len().max(1))
            .fold(self.search.mode.len(), usize::saturating_mul)
    }
}

/// The first of `values` listed before it too. (Quadratic, on lists the schema bounds to 16
/// items; `crate::resource::validate` refuses longer ones first on a cluster.)
fn first_repeat<T: PartialEq>(values: &[T]) -> Option<usize> {
    (0..values.len()).find(|&i| values[..i].contains(&values[i]))
}

fn default_margin() -> Percent {
    Percent(20.0)
}

fn default_budget() -> u32 {
    12
}

fn default_confirmations() -> u32 {
    3
}

fn default_rule_out() -> u32 {
    2
}

fn default_modes() -> Vec<Mode> {
    vec![Mode::Single]
}

#[cfg(test)]
mod tests;
