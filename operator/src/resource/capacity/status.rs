//! `status.cells[].capacity`: what a cell's search found, probe by probe.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::check::{CheckPurpose, RateCheck};

/// A cell's capacity search: the rate held, the rate failed, what limited it, and every probe.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapacityStatus {
    /// True when `heldRate` is the cell's capacity: the search bracketed it within
    /// spec.capacity.resolution of `failedRate` and a confirmation probe held. False while the
    /// search runs and when it ended without one (held even at maxRate, failed at startRate,
    /// load-generator bound, out of probes: `message` says which).
    #[serde(default)]
    pub found: bool,
    /// How the search ended, once it has: Found (`heldRate` is the capacity), HeldAtUpperBound,
    /// FailedAtStartRate, LoadGeneratorBound or OutOfProbes; `message` says it in a sentence.
    /// With spec.repeat, Found only when every round found one, else the first round's ending
    /// that did not. Absent while the search runs (and in a status an older operator wrote:
    /// [`CapacityStatus::ended`] reads those from `found` and `message`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "SearchEnding::lenient"
    )]
    pub ending: Option<SearchEnding>,
    /// The highest total rate (requests per second offered, all endpoints) that held. With
    /// spec.repeat, the median of the rounds' held rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_rate: Option<f64>,
    /// With spec.repeat: the 95% confidence interval of the median held rate over the rounds
    /// (from 2 rounds; a t interval on the logarithms), low end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_rate_low: Option<f64>,
    /// With spec.repeat: the high end of that interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_rate_high: Option<f64>,
    /// The lowest total rate that failed. With spec.repeat, the median of the rounds'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_rate: Option<f64>,
    /// What failed at `failedRate`: an SLO figure ("probe/fast p99 118.0 ms, not below 100.0
    /// ms at 62 rps"), the target falling behind, or the load generator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limiting: Option<String>,
    /// The search's outcome in a sentence, or while it runs, what it does next.
    #[serde(default)]
    pub message: String,
    /// Every probe, in the order run (with spec.repeat, of every round).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<ProbeStatus>,
    /// With spec.repeat: each finished round of the search. A round is a whole search from
    /// startRate on a fresh target, as if the cell were measured again; the cell's figures
    /// above are over the rounds, and with variants a round of the base and one of a
    /// candidate give one ratio of capacities.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<CapacityRound>,
    /// When the search's first probe started: the cell's `startTime` too (the current
    /// probe's start is the cell's `stepStartTime`, and while the search runs its
    /// `completionTime` is the last probe's end). An operator before `stepStartTime` moved the
    /// cell's `startTime` to each probe while the search ran, and kept the search's start only
    /// here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// With spec.sizing: probes at one fixed rate that the sizing search asked of this cell
    /// (confirming the chosen configuration, or ruling out a cheaper one), outside its search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<RateCheck>,
    /// How many targets the cell's probes have deployed and removed. The probes under way run
    /// on target number `targets + 1` (on a cluster its objects carry that number); a target
    /// kept for the next probe is not counted until it is removed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub targets: u32,
    /// The settle before the next probe, in seconds, until that probe records it. The cell
    /// waits on its kept target from its `stepStartTime` (the last probe's end) for this long,
    /// so that the last probe's backlog has drained and the target is idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_seconds: Option<u32>,
    /// What the latest probe on a fresh target waited for it, in seconds: from the target's
    /// deployment until the probe's load started (scheduled, started and ready). A settle
    /// longer than this gets the next probe a fresh target instead: it is ready sooner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_target_seconds: Option<u32>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How a capacity search (or one round of it) ended: with a capacity, or which way it ended
/// without one. A run's verdict and exit code are decided from this, never from the sentence.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum SearchEnding {
    /// Bracketed within spec.capacity.resolution and confirmed: `heldRate` is the capacity.
    Found,
    /// Every rate held up to spec.capacity.maxRate: the capacity is above it.
    HeldAtUpperBound,
    /// spec.capacity.startRate already failed: the capacity is below it.
    FailedAtStartRate,
    /// The load generator could not send the rate on time while the target kept up: the
    /// figure would be the load generator's, not the target's.
    LoadGeneratorBound,
    /// spec.capacity.maxProbes ran out before the search bracketed the capacity.
    OutOfProbes,
}

impl SearchEnding {
    /// Every ending, in the order above.
    pub const ALL: [SearchEnding; 5] = [
        SearchEnding::Found,
        SearchEnding::HeldAtUpperBound,
        SearchEnding::FailedAtStartRate,
        SearchEnding::LoadGeneratorBound,
        SearchEnding::OutOfProbes,
    ];

    /// True when the search answered its question.
    pub fn found(self) -> bool {
        self == SearchEnding::Found
    }

    /// The ending in a few words, for a verdict line.
    pub fn words(self) -> &'static str {
        match self {
            SearchEnding::Found => "capacity found",
            SearchEnding::HeldAtUpperBound => "held at the upper bound (maxRate)",
            SearchEnding::FailedAtStartRate => "failed at the start rate",
            SearchEnding::LoadGeneratorBound => "load-generator bound",
            SearchEnding::OutOfProbes => "out of probes",
        }
    }

    /// The ending an older operator's status says in its sentence alone (it wrote `found` and
    /// `message`, no `ending`): each ending's message has opened the same way since capacity
    /// searches were written.
    fn from_message(found: bool, message: &str) -> Option<SearchEnding> {
        if found {
            return Some(SearchEnding::Found);
        }
        // A repeated search's message names the round first ("round 2 of the search: ...").
        let said = message
            .strip_prefix("round ")
            .and_then(|m| m.split_once(" of the search: "))
            .map_or(message, |(_, rest)| rest);
        [
            ("held at the upper bound", SearchEnding::HeldAtUpperBound),
            (
                "failed even at the start rate",
                SearchEnding::FailedAtStartRate,
            ),
            ("load-generator bound", SearchEnding::LoadGeneratorBound),
            ("ran out of probes", SearchEnding::OutOfProbes),
        ]
        .into_iter()
        .find(|(opening, _)| said.starts_with(opening))
        .map(|(_, ending)| ending)
    }

    /// Reads an ending, or none for a value this version does not know (a status written by a
    /// newer operator): an unknown ending is missing, never a status that cannot be read.
    fn lenient<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<SearchEnding>, D::Error> {
        let value = Option::<serde_yaml::Value>::deserialize(d)?;
        Ok(value.and_then(|v| serde_yaml::from_value(v).ok()))
    }
}

impl CapacityStatus {
    /// How the search ended, or `None` while it runs: the `ending` written, or for a status
    /// an older operator wrote, the one its `found` and `message` say.
    pub fn ended(&self) -> Option<SearchEnding> {
        self.ending
            .or_else(|| SearchEnding::from_message(self.found, &self.message))
    }

    /// Writes how the search ended: `ending`, and `found` beside it for readers of older
    /// versions.
    pub fn set_ending(&mut self, ending: SearchEnding) {
        self.ending = Some(ending);
        self.found = ending.found();
    }

    /// The number of the round under way: the first while none has ended.
    pub fn current_round(&self) -> u32 {
        self.rounds.len() as u32 + 1
    }

    /// True while the search runs: it has probed and has not ended (by its `ending`, or in a
    /// status an older operator wrote, by `found` and `message`). The next probe's rate is not
    /// kept: the engine replays the search from the probes (`engine::capacity::search`).
    pub fn searching(&self) -> bool {
        self.ended().is_none() && self.probes.iter().any(|p| p.check.is_none())
    }

    /// How many probes round `round` of a repeated search took.
    pub fn probes_in_round(&self, round: u32) -> usize {
        self.probes
            .iter()
            .filter(|p| p.round == Some(round) && p.check.is_none())
            .count()
    }

    /// The probes of the round under way (all of them in a search that is not repeated,
    /// whose probes carry no round).
    pub fn round_probes(&self) -> impl Iterator<Item = &ProbeStatus> {
        let round = self.current_round();
        self.probes
            .iter()
            .filter(move |p| p.round.is_none_or(|r| r == round))
    }

    /// The held rate of each round that found a capacity, by round: the values a paired
    /// comparison of variants and the spread over rounds are made of. A search that is not
    /// repeated is its one round.
    pub fn held_by_round(&self) -> Vec<(u32, f64)> {
        if self.rounds.is_empty() {
            return match (self.found, self.held_rate) {
                (true, Some(held)) => vec![(1, held)],
                _ => Vec::new(),
            };
        }
        self.rounds
            .iter()
            .filter(|r| r.found)
            .filter_map(|r| Some((r.round, r.held_rate?)))
            .collect()
    }
}

/// One finished round of a repeated capacity search.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapacityRound {
    /// 1-based number of the round.
    pub round: u32,
    /// True when the round bracketed a capacity and confirmed it.
    #[serde(default)]
    pub found: bool,
    /// How the round ended (as the cell's `ending`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "SearchEnding::lenient"
    )]
    pub ending: Option<SearchEnding>,
    /// The round's highest rate held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_rate: Option<f64>,
    /// The round's lowest rate failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_rate: Option<f64>,
    /// What failed at the round's `failedRate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limiting: Option<String>,
    /// The round's outcome in a sentence.
    #[serde(default)]
    pub message: String,
}

impl CapacityRound {
    /// How the round ended: its `ending`, or in a status an older operator wrote, the one its
    /// `found` and `message` say.
    pub fn ended(&self) -> Option<SearchEnding> {
        self.ending
            .or_else(|| SearchEnding::from_message(self.found, &self.message))
    }
}

/// One probe of a search: one open-loop phase at one total rate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeStatus {
    /// 1-based number of the probe in the cell's search (counting on over rounds).
    pub probe: u32,
    /// With spec.repeat: the round of the search the probe belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// The total rate offered, requests per second over every endpoint of the mix.
    pub rate: f64,
    /// Successful requests per second the probe achieved, over every endpoint.
    pub achieved: f64,
    /// The share of the offered sends the load generator sent on time (within 2 ms of their
    /// schedule), 0 to 1; absent when the load generator did not report it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_on_time: Option<f64>,
    /// The share of the offered sends still unanswered when the probe ended: the backlog the
    /// target built up, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog: Option<f64>,
    /// Each SLO figure as this probe measured it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<ProbeFigure>,
    /// Held, Failed, LoadgenBound or NotBelieved.
    pub verdict: ProbeVerdict,
    /// True when an SLO figure landed within spec.capacity.repeatWithin of its limit, so the
    /// rate was probed again before its verdict was believed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub close: bool,
    /// Set on a probe of a sizing check (not part of the capacity search).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckPurpose>,
    /// Why the probe did not hold (or was not believed), in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Set when the probe ran on the previous probe's target, kept: the seconds it waited
    /// on it first (the settle). Absent: the probe's target was deployed for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_seconds: Option<u32>,
}

/// One SLO figure of one endpoint in one probe.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeFigure {
    /// The endpoint.
    pub endpoint: String,
    /// p50, p90, p99, p999, max (milliseconds) or errorRate (a fraction).
    pub figure: String,
    /// The probe's figure; absent when it could not be measured (too few samples, none
    /// succeeded), which fails it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<f64>,
    /// The limit, in the same unit.
    pub limit: f64,
    /// True when the figure was below its limit.
    pub pass: bool,
}

/// How one probe went.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ProbeVerdict {
    /// Every SLO figure passed, the sends went out on time and the target kept up.
    Held,
    /// An SLO figure failed, or the target fell behind.
    #[default]
    Failed,
    /// The load generator could not send the rate on time while the target kept up: the
    /// probe says nothing of the target, and the search stops.
    LoadgenBound,
    /// Measured beside a busy neighbour (cluster): repeated, not believed.
    NotBelieved,
}

impl std::fmt::Display for ProbeVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProbeVerdict::Held => "held",
            ProbeVerdict::Failed => "failed",
            ProbeVerdict::LoadgenBound => "load-generator bound",
            ProbeVerdict::NotBelieved => "not believed",
        })
    }
}
