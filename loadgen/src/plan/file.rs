//! The plan file for `benchmatrix-loadgen --plan FILE`: the workload and where and how to run
//! it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::workload::Workload;
use crate::duration::Duration;
use crate::strict_yaml::{self, FieldError};

/// A plan file for `benchmatrix-loadgen --plan FILE` (YAML or JSON).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanFile {
    /// Base URL of the target, e.g. "http://10.0.0.5:8080"; endpoint paths are appended.
    pub target: String,
    /// Addresses ("IP:PORT") of the individual replicas, whose `/stats` is read at each phase
    /// boundary. Empty: read `/stats` once through `target` instead. At most 64.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<String>,
    /// Addresses ("IP:PORT") to read each replica's `/stats` from instead of `replicas`, in
    /// the same order: a target's statistics port, served by a thread the workload cannot
    /// block, so the read at a phase boundary neither waits behind a busy event loop nor
    /// disturbs the measurement. Snapshots stay keyed by the replica's address in `replicas`
    /// when it lists one per statistics address; else (one shared address) by the statistics
    /// address. Empty: read from `replicas` (or `target`). At most 64.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stats_addresses: Vec<String>,
    /// Path of the target's statistics endpoint. Default "/stats".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats_path: Option<String>,
    /// Load-generator threads, at most 256. Default: what this process's CPU quota allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// The workload, as in a BenchmarkRun's `spec.workload`.
    pub workload: Workload,
    /// Which of several load generators sharing the workload this is, from 0. With
    /// `roundRobin` spread this generator's k-th connection is connection
    /// `generatorIndex + k * generators` of the whole, so together the generators deal the
    /// replicas in turn. Default 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generator_index: u32,
    /// How many load generators share the workload, at most 32. Default 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub generators: u32,
    /// Before the warm-up: wait until every address the load goes to answers. Absent: no
    /// check, the load starts at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<Preflight>,
    /// True: a run in which no request succeeded still writes its result and exits 0. A
    /// capacity probe at a rate the target cannot answer at all is a probe that failed, judged
    /// from its result (nothing answered, everything in flight at the end), not a load
    /// generator that failed. Default false: no success is exit 1.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_success_is_a_result: bool,
}

/// The check before the load (see [`crate::preflight`]): `GET path` on a fresh connection
/// every 50 ms at the target's address (`service` spread) or at each replica's (`roundRobin`),
/// until each gives a complete HTTP response head with a status below 500. An address that has
/// not by `timeout` fails the run, naming it and why; the time taken is the result's
/// `preflightSeconds`, outside warm-up and phases.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Preflight {
    /// Path sent, from the server's root (not under the target URL's path, as a readiness
    /// probe's), e.g. "/healthz".
    pub path: String,
    /// How long the addresses may take to answer, e.g. "5m"; greater than 0, at most "24h".
    pub timeout: Duration,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// Parses and validates a plan file; every problem comes back as a field error, unknown fields
/// included.
pub fn parse_plan_file(text: &str) -> Result<PlanFile, Vec<FieldError>> {
    strict_yaml::parse_strict_checked(
        text,
        |_| false,
        |plan: &PlanFile| plan.validate().err().unwrap_or_default(),
    )
}
