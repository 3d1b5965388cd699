//! `status.cells[].capacity.check`: a sizing check, probes of one cell at one fixed rate that
//! the sizing search asked for (`crate::engine::sizing::check` runs and counts them). Its
//! status sits in the cell's capacity status beside the search's probes, whose kind its probes
//! are (`probes[].check` names the check a probe belongs to); `resource::sizing` builds on
//! `resource::capacity`, not the other way round, so the check's types live here.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Probes of one cell at one fixed rate, asked by the sizing search.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateCheck {
    /// Why: Confirm (the chosen configuration at traffic x (1 + margin); every probe must
    /// hold) or RuleOut (a cheaper configuration at the same rate; one probe, expected to fail).
    pub purpose: CheckPurpose,
    /// The total rate probed.
    pub rate: f64,
    /// How many believed probes it takes. How many held and failed so far is counted from
    /// the check's probes (`probes[].check`), not kept here.
    pub wanted: u32,
    /// True once decided (or ended without a verdict: `message` says why).
    #[serde(default)]
    pub done: bool,
    /// The check's outcome, in a sentence.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// What a [`RateCheck`] is for.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum CheckPurpose {
    /// The chosen configuration, at traffic x (1 + margin).
    #[default]
    Confirm,
    /// A cheaper configuration the bounds ruled out, at the target rate.
    RuleOut,
}
