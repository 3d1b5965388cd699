//! `status.sizing`: what the search over configurations found, the answer as settings, and
//! the evidence for it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::EnvVar;

/// The sizing search: where it stands, the chosen configuration, and every configuration of
/// the space with what is known of it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SizingStatus {
    /// spec.sizing.traffic, requests per second.
    pub traffic: f64,
    /// The rate the chosen configuration must hold: traffic x (1 + margin).
    pub target_rate: f64,
    /// Searching, Confirming, RulingOut while it runs; Chosen, NothingHolds or OutOfBudget once
    /// it ended.
    pub outcome: SizingOutcome,
    /// The outcome, or what the search does next, in a sentence.
    #[serde(default)]
    pub message: String,
    /// The configurations being measured now, or next.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next: Vec<String>,
    /// Configurations searched for capacity so far (at most spec.sizing.budget).
    #[serde(default)]
    pub searched: u32,
    /// The answer: the configuration with the least reserved CPU that held the target rate,
    /// confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen: Option<ChosenConfiguration>,
    /// Every configuration of the space, cheapest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configurations: Vec<SizedConfiguration>,
    /// Where the service broke what the search assumes (more CPU or replicas never lower
    /// capacity; replicas add at most their share), in sentences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Where a sizing search stands, or how it ended.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum SizingOutcome {
    /// Searching configurations for capacity, cheapest first.
    #[default]
    Searching,
    /// The cheapest configuration that held is being probed again at the target rate.
    Confirming,
    /// Cheaper configurations ruled out without a search are probed once at the target rate.
    RulingOut,
    /// A configuration was chosen and confirmed.
    Chosen,
    /// No configuration of the space holds the target rate.
    NothingHolds,
    /// The budget ran out before the search could tell which configuration is cheapest.
    OutOfBudget,
}

impl SizingOutcome {
    /// True once the search has ended.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            SizingOutcome::Chosen | SizingOutcome::NothingHolds | SizingOutcome::OutOfBudget
        )
    }
}

/// One configuration of the space and what the search knows of it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SizedConfiguration {
    /// The configuration (the cell of the same name).
    pub name: String,
    /// CPU limit x replicas, cores.
    pub reserved_cpu: f64,
    /// What the search did with it.
    pub state: SizedState,
    /// The highest rate it held (its capacity search, or a probe at the target rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_rate: Option<f64>,
    /// The lowest rate it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_rate: Option<f64>,
    /// The most it can hold from what was measured of others (unmeasured configurations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<f64>,
    /// The model's estimate of its capacity (Amdahl's law over replicas, fitted per mode and
    /// env; CPU interpolated between the values measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<f64>,
    /// Why it is in this state, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// What the search did with one configuration.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum SizedState {
    /// Not measured, not ruled out (yet).
    #[default]
    Unmeasured,
    /// Being measured.
    Measuring,
    /// Its capacity was searched.
    Measured,
    /// Ruled out without a search: its bound is below the target rate.
    Pruned,
    /// Ruled out, and a probe at the target rate failed as the bound said.
    RuledOut,
    /// Not needed: a cheaper configuration holds the target rate.
    NotNeeded,
    /// Its measurement failed (the target never came up, the load generator failed): nothing
    /// is known of it.
    Failed,
    /// The chosen configuration.
    Chosen,
}

/// The answer, as the settings of a Deployment and an autoscaler.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChosenConfiguration {
    /// The configuration's name.
    pub configuration: String,
    /// Concurrency mode (env BENCH_MODE).
    pub mode: String,
    /// Replicas.
    pub replicas: u32,
    /// CPU per replica, requests and limits.
    pub cpu: String,
    /// Memory per replica, requests and limits.
    pub memory: String,
    /// The env the Deployment patch sets: the values of the search's env axes, and BENCH_MODE
    /// when the search varied the mode; nothing the search did not vary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// CPU limit x replicas, cores.
    pub reserved_cpu: f64,
    /// Its capacity: the highest rate it held at the service level.
    pub held_rate: f64,
    /// heldRate / traffic - 1: the headroom measured, as a fraction.
    pub headroom: f64,
    /// The confirmation at the target rate, in words ("3 of 3 probes held 360 rps").
    pub confirmed: String,
    /// The autoscaler's target, from the CPU it used at the held rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hpa: Option<HpaTarget>,
}

/// A HorizontalPodAutoscaler's CPU target for the chosen configuration.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HpaTarget {
    /// CPU used per replica at the held rate over the CPU requested, 0 to 1 (or above, a
    /// target without a quota).
    pub utilization_at_held: f64,
    /// The autoscaler's averageUtilization target, percent: the utilization at the held rate
    /// less the margin, and less the autoscaler's 10% tolerance, so it asks for a replica
    /// before the load reaches traffic x (1 + margin) per replica's share.
    pub target_utilization: u32,
    /// The chosen replicas: the autoscaler never goes below them.
    pub min_replicas: u32,
    /// Twice the chosen replicas (at least one more).
    pub max_replicas: u32,
}
