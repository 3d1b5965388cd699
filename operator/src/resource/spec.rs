//! `BenchmarkRun.spec`: what to deploy, how to load it, and what to do around it.
//!
//! Every field carries a doc comment because kube's derive turns them into the CRD's
//! descriptions, which is what `kubectl explain benchmarkrun.spec...` prints. Cross-field rules
//! that the schema alone cannot state are CEL rules (`x-kubernetes-validations`) on the spec, so
//! the API server refuses a run that cannot work at apply time; `crate::resource::validate` repeats them
//! with field paths for the operator and the local runner.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use kube::CustomResource;
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};

/// The target's own mode type: the operator passes it on as BENCH_MODE, so one enum keeps the
/// CRD's values and the target's `--mode` values the same.
pub use super::settings::Mode;
use super::settings::{EnvVar, PoolSize, default_memory};
pub use benchmatrix_loadgen::duration::Duration;
use benchmatrix_loadgen::limits::{MAX_GENERATORS, MAX_REPLICAS, MAX_THREADS};
pub use benchmatrix_loadgen::plan::Workload;

use super::pod_template::PodTemplate;
use super::quantity::Quantity;
use super::repeat::Repeat;
use super::status::BenchmarkRunStatus;
use super::thresholds::Threshold;

/// The image the operator deploys when `spec.target.image` is not set: the built-in target of
/// this release.
pub const DEFAULT_TARGET_IMAGE: &str = concat!(
    "ghcr.io/benchmatrix/benchmatrix-target:",
    env!("CARGO_PKG_VERSION")
);

/// The image of the load generator Job when `spec.loadgen.image` is not set.
pub const DEFAULT_LOADGEN_IMAGE: &str = concat!(
    "ghcr.io/benchmatrix/benchmatrix-loadgen:",
    env!("CARGO_PKG_VERSION")
);

/// A matrix of configurations of one HTTP service, each deployed and driven by the same workload;
/// the results of every configuration land side by side in the status.
// kube's `printcolumn(...)` attributes repeat the same keys by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "benchmatrix.dev",
    version = "v1alpha1",
    kind = "BenchmarkRun",
    plural = "benchmarkruns",
    shortname = "bmr",
    namespaced,
    status = "BenchmarkRunStatus",
    derive = "PartialEq",
    doc = "A benchmark matrix: one HTTP target deployed in several configurations (concurrency \
           mode x replicas x CPU limit), each driven through the same phased workload, with \
           latency percentiles, throughput and resource use per configuration in the status.",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Cells",
        type_ = "string",
        description = "cells finished / cells in the matrix",
        json_path = ".status.progress"
    ),
    printcolumn(
        name = "Headline",
        type_ = "string",
        description = "the best cell for the last phase's first endpoint, by p99",
        json_path = ".status.headline"
    ),
    printcolumn(
        name = "Thresholds",
        type_ = "string",
        description = "status of the ThresholdsMet condition: True when every threshold held",
        json_path = ".status.conditions[?(@.type==\"ThresholdsMet\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "self == oldSelf",
        "message": "the spec of a BenchmarkRun is immutable (results of two specs would mix): delete the run and apply it again",
    },
    {
        "rule": "has(self.configurations) || has(self.axes) || has(self.sizing)",
        "message": "give at least one of configurations or axes (or sizing, to search a space of them)",
    },
    {
        "rule": "!has(self.sizing) || (!has(self.configurations) && !has(self.axes))",
        "message": "with sizing, leave out configurations and axes: sizing.search states the configurations",
        "fieldPath": ".sizing",
    },
    {
        "rule": "!has(self.sizing) || has(self.capacity)",
        "message": "sizing needs capacity: its service level and mix are what a configuration must hold",
        "fieldPath": ".sizing",
    },
    {
        "rule": "!has(self.sizing) || !has(self.variants) || size(self.variants) == 0",
        "message": "with sizing, leave out variants: size one build at a time",
        "fieldPath": ".variants",
    },
    {
        "rule": "!has(self.configurations) || self.configurations.all(c, self.configurations.exists_one(d, d.name == c.name))",
        "message": "configuration names must be unique",
        "fieldPath": ".configurations",
    },
    {
        "rule": "has(self.capacity) || (has(self.workload.phases) && size(self.workload.phases) > 0)",
        "message": "give workload.phases (or capacity, to search each cell's highest rate instead)",
        "fieldPath": ".workload.phases",
    },
    {
        "rule": "!has(self.capacity) || !has(self.workload.phases) || size(self.workload.phases) == 0",
        "message": "with capacity, leave out workload.phases: each cell's measurement is the search's probes",
        "fieldPath": ".workload.phases",
    },
    {
        "rule": "!has(self.capacity) || !has(self.thresholds) || size(self.thresholds) == 0",
        "message": "with capacity, leave out thresholds: the service level is capacity.slo",
        "fieldPath": ".thresholds",
    },
    {
        "rule": "!has(self.capacity) || !has(self.capacity.mix) || self.capacity.mix.all(m, self.workload.endpoints.exists(e, e.name == m.endpoint))",
        "message": "every capacity.mix entry must name an endpoint listed in workload.endpoints",
        "fieldPath": ".capacity.mix",
    },
    {
        "rule": "!has(self.capacity) || self.capacity.slo.all(f, !has(f.endpoint) || self.workload.endpoints.exists(e, e.name == f.endpoint))",
        "message": "every capacity.slo endpoint must name an endpoint listed in workload.endpoints",
        "fieldPath": ".capacity.slo",
    },
    {
        "rule": "!has(self.capacity) || has(self.capacity.mix) || size(self.workload.endpoints) == 1",
        "message": "capacity.mix is required when the workload has several endpoints",
        "fieldPath": ".capacity",
    },
    {
        "rule": "self.workload.phases.all(p, p.load.all(s, self.workload.endpoints.exists(e, e.name == s.endpoint)))",
        "message": "every stream must name an endpoint listed in workload.endpoints",
        "fieldPath": ".workload.phases",
    },
    {
        "rule": "self.workload.phases.all(p, p.load.all(s, has(s.connections) != has(s.rate)))",
        "message": "each stream sets exactly one of connections (closed loop) or rate (open loop)",
        "fieldPath": ".workload.phases",
    },
    {
        "rule": "self.workload.phases.all(p, duration(p.duration) > duration('0s'))",
        "message": "every phase duration must be positive",
        "fieldPath": ".workload.phases",
    },
    {
        "rule": "self.workload.phases.all(p, duration(p.duration) <= duration('24h'))",
        "message": "every phase duration must be at most 24h",
        "fieldPath": ".workload.phases",
    },
    {
        "rule": "!has(self.workload.warmup) || duration(self.workload.warmup) <= duration('24h')",
        "message": "the warm-up must be at most 24h",
        "fieldPath": ".workload.warmup",
    },
    {
        "rule": "!has(self.workload.timeout) || duration(self.workload.timeout) <= duration('24h')",
        "message": "the request timeout must be at most 24h",
        "fieldPath": ".workload.timeout",
    },
    {
        "rule": "!has(self.timeouts) || ((!has(self.timeouts.ready) || duration(self.timeouts.ready) <= duration('24h')) && (!has(self.timeouts.runSlack) || duration(self.timeouts.runSlack) <= duration('24h')))",
        "message": "timeouts.ready and timeouts.runSlack must be at most 24h",
        "fieldPath": ".timeouts",
    },
    {
        "rule": "!has(self.ttlAfterFinished) || duration(self.ttlAfterFinished) <= duration('8760h')",
        "message": "ttlAfterFinished must be at most 8760h (365 days)",
        "fieldPath": ".ttlAfterFinished",
    },
    {
        "rule": "!has(self.thresholds) || self.thresholds.all(t, has(t.phase) ? self.workload.phases.exists(p, p.name == t.phase) : size(self.workload.phases) == 1)",
        "message": "every threshold must name a phase of workload.phases (phase may be left out only when there is one phase)",
        "fieldPath": ".thresholds",
    },
    {
        "rule": "!has(self.thresholds) || self.thresholds.all(t, has(t.endpoint) ? self.workload.endpoints.exists(e, e.name == t.endpoint) : size(self.workload.endpoints) == 1)",
        "message": "every threshold must name an endpoint of workload.endpoints (endpoint may be left out only when there is one endpoint)",
        "fieldPath": ".thresholds",
    },
]))]
pub struct BenchmarkRunSpec {
    /// The HTTP service under test. Defaults to the built-in target image of this release.
    #[serde(default)]
    pub target: TargetSpec,

    /// The matrix, one cell per entry, run in this order. Cell names must be unique DNS labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub configurations: Vec<Configuration>,

    /// A compact form of the matrix: the cross product of modes x replicas x CPU, appended after
    /// `configurations`. Cells are named `<mode>-x<replicas>-cpu<cpu>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub axes: Option<Axes>,

    /// Two or more variants of the target (an image, a command, env or a pod template each),
    /// crossed with every configuration: a cell is one configuration x one variant, named
    /// `<configuration>-<variant>`. The first variant is the base the others are compared with.
    /// In every round the variants of a configuration are measured back to back, on the same
    /// nodes, in an order that alternates (A B, then B A): each round's ratio candidate / base
    /// is the evidence, so drift of the machine between rounds cancels out of it
    /// (status.variants).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub variants: Vec<Variant>,

    /// The load: endpoints, warm-up and the measured phases, identical for every cell.
    #[schemars(transform = bound_workload_lists)]
    pub workload: Workload,

    /// Resources and fan-out of the load generator.
    #[serde(default)]
    pub loadgen: LoadgenSpec,

    /// Where pods run (node selector, tolerations) and whether load generator and target are
    /// kept on different nodes.
    #[serde(default)]
    pub placement: Placement,

    /// How long each wait may take before the cell fails.
    #[serde(default)]
    pub timeouts: Timeouts,

    /// What is deleted once a cell is finished.
    #[serde(default)]
    pub cleanup: CleanupPolicy,

    /// Stop the matrix at the first failed cell (the remaining cells are marked Skipped). By
    /// default a failed cell is recorded and the matrix goes on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stop_on_failure: bool,

    /// How many times every cell is measured: a number from 1 to 20 (default 1), or
    /// `{min, max, precision}` to measure every cell at least `min` times (default 3), then
    /// again only while the 95% confidence interval of one of its ranked figures is wider than
    /// `precision` percent of that figure, at most `max` (up to 20) times. Repetitions are
    /// interleaved (every cell once, then every cell again), so slow drift of the machine
    /// spreads over all cells; each figure is then the repetitions' median, with its spread
    /// beside it, and two cells that differ by less than the noise are not ranked. Five or
    /// more repetitions allow a significance test. Checked by the operator (condition
    /// SpecValid), not at apply time.
    #[serde(default, skip_serializing_if = "super::repeat::is_once")]
    pub repeat: Repeat,

    /// How many measurements may run at once (cluster only): a number (default 1: one at a
    /// time) or `auto`, as many as the Ready, schedulable nodes matching `placement` can hold,
    /// each needing room for its replicas x cpu plus its load generators. The operator picks a
    /// set of nodes per slot and pins every pod of a measurement (targets and load generators)
    /// to its slot's nodes, so no two measurements share a node; each cell's repetitions rotate
    /// over the node sets, and the status records the node of every repetition. A run that can
    /// hold fewer slots than asked says so (status.parallelism) and runs with what it has.
    /// Locally, one machine has no separate nodes: cells run one at a time. At most 16.
    #[serde(default, skip_serializing_if = "super::parallelism::is_one")]
    pub parallelism: super::parallelism::Parallelism,

    /// Delete the BenchmarkRun (and with it every child object) this long after it finished,
    /// e.g. "24h"; at most "8760h" (365 days). Unset: keep it until deleted by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub ttl_after_finished: Option<Duration>,

    /// Service levels the run is judged against once it has finished, each on one phase and
    /// endpoint of some cells: a latency percentile below a duration, a throughput above a
    /// rate, an error rate below a fraction, or a latency or throughput relative to another
    /// cell of the run. The verdicts land in status.thresholds and the condition ThresholdsMet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub thresholds: Vec<Threshold>,

    /// Search each cell's capacity instead of measuring the phases: the highest total rate it
    /// holds at a service level (`slo`), found by probes that grow the rate x2 until one fails,
    /// bisect down to `resolution` and confirm. Results land in status.cells[].capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<super::capacity::CapacitySpec>,

    /// Find the configuration with the least reserved CPU that holds `traffic` at
    /// `capacity.slo`, searching the space `search` (replicas x CPU x mode x env) instead of
    /// measuring a list of configurations: only the configurations that what was measured
    /// cannot rule out are searched for capacity, cheapest first, and the answer is confirmed
    /// by measurement. Needs `capacity`; leave out `configurations` and `axes`. Results land
    /// in status.sizing; `benchmatrix size` prints them as Kubernetes settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizing: Option<super::sizing::SizingSpec>,
}

impl BenchmarkRunSpec {
    /// How long one measurement's load is planned to take: warm-up and every phase, or with
    /// `capacity`, warm-up and one probe.
    pub fn planned_load(&self) -> std::time::Duration {
        match &self.capacity {
            Some(c) => self.workload.warmup.get() + c.probe_duration.get(),
            None => self.workload.planned_load(),
        }
    }
}

/// Caps the workload's lists so the API server's CEL cost estimate for the rules above stays
/// within budget (the estimate multiplies list bounds; unbounded lists make it refuse the CRD).
fn bound_workload_lists(schema: &mut Schema) {
    fn cap(schema: &mut serde_json::Value, path: &[&str], max: u64) {
        let mut node = schema;
        for key in path {
            match node.get_mut(*key) {
                Some(next) => node = next,
                None => return,
            }
        }
        if let Some(obj) = node.as_object_mut() {
            // An optional string is typed ["string", "null"] until kube folds it into nullable.
            let is_string = match obj.get("type") {
                Some(serde_json::Value::String(t)) => t == "string",
                Some(serde_json::Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                _ => false,
            };
            obj.insert(
                if is_string {
                    "maxLength".into()
                } else {
                    "maxItems".into()
                },
                max.into(),
            );
        }
    }
    let mut value = schema.clone().to_value();
    cap(&mut value, &["properties", "endpoints"], 32);
    cap(
        &mut value,
        &["properties", "endpoints", "items", "properties", "name"],
        63,
    );
    cap(&mut value, &["properties", "phases"], 32);
    cap(
        &mut value,
        &["properties", "phases", "items", "properties", "load"],
        32,
    );
    cap(
        &mut value,
        &[
            "properties",
            "phases",
            "items",
            "properties",
            "load",
            "items",
            "properties",
            "endpoint",
        ],
        63,
    );
    cap(
        &mut value,
        &["properties", "phases", "items", "properties", "duration"],
        32,
    );
    // The CEL rules parse these too; a bounded length keeps each parse's cost estimate small.
    cap(&mut value, &["properties", "warmup"], 32);
    cap(&mut value, &["properties", "timeout"], 32);
    if let Ok(bounded) = Schema::try_from(value) {
        *schema = bounded;
    }
}

/// The service under test.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetSpec {
    /// Container image of the target (cluster only). Defaults to the built-in target of this
    /// release, which understands `mode` and `poolSize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,

    /// Local runner only: the argv of a local program to start instead of the built-in target,
    /// e.g. ["node", "server.js"]. It must listen on `port` (passed as env PORT). Ignored by the
    /// operator, which runs `image`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,

    /// TCP port the target listens on (passed to it as env PORT).
    #[serde(default = "default_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: u16,

    /// HTTP path that answers 200 once the target is ready (the readiness probe).
    #[serde(default = "default_readiness_path")]
    #[schemars(regex(pattern = "^/"))]
    pub readiness_path: String,

    /// HTTP path of the target's JSON self-report (CPU quota seen, RSS, CPU used). Targets that
    /// do not serve it still run; their resource figures stay empty.
    #[serde(default = "default_stats_path")]
    #[schemars(regex(pattern = "^/"))]
    pub stats_path: String,

    /// Environment variables for every cell's target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,

    /// Cluster only: the target's pod (arguments, env from ConfigMaps or Secrets, volumes, a
    /// service account, sidecars, labels, annotations), merged with what the operator owns.
    /// Ignored by the local runner, which runs `command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,
}

impl Default for TargetSpec {
    fn default() -> Self {
        Self {
            image: None,
            command: Vec::new(),
            port: default_port(),
            readiness_path: default_readiness_path(),
            stats_path: default_stats_path(),
            env: Vec::new(),
            pod_template: None,
        }
    }
}

fn default_port() -> u16 {
    8080
}

fn default_readiness_path() -> String {
    "/healthz".into()
}

fn default_stats_path() -> String {
    "/stats".into()
}

/// One cell of the matrix: how the target is deployed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Configuration {
    /// Name of the cell, unique in the run; a DNS label (lower case, digits, '-', at most 40
    /// characters) since child object names derive from it.
    #[schemars(
        length(min = 1, max = 40),
        regex(pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub name: String,

    /// Concurrency mode of the built-in target (env BENCH_MODE): single (one event loop),
    /// threads (several loops) or pool (one loop plus a CPU worker pool). Passed to any target.
    #[serde(default)]
    pub mode: Mode,

    /// Number of target replicas (pods in the cluster, processes locally: sharing one port, or
    /// each on its own loopback address with `workload.spread: roundRobin`). 1 to 64.
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 1, max = MAX_REPLICAS))]
    pub replicas: u32,

    /// CPU per replica, e.g. "500m", "1", 2. Requests equal limits (Guaranteed QoS); locally a
    /// cgroup quota.
    pub cpu: Quantity,

    /// Memory per replica, e.g. "256Mi". Requests equal limits.
    #[serde(default = "default_memory")]
    pub memory: Quantity,

    /// Size of the CPU worker pool (env BENCH_POOL_SIZE): "auto" sizes it from the CPU quota,
    /// or a number from 1 to 1024 (the most the built-in target accepts).
    #[serde(default, skip_serializing_if = "PoolSize::is_auto")]
    pub pool_size: PoolSize,

    /// Environment variables of this cell only (after `target.env`), e.g. WEB_CONCURRENCY.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
}

/// What a cell runs as its target: its variant's image, command and pod template where the
/// variant sets them, else the target's; each with the field it came from, for messages.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetOf<'a> {
    /// The image (cluster), unset for the operator's default.
    pub image: Option<&'a str>,
    /// `spec.target.image` or `spec.variants[i].image`.
    pub image_field: String,
    /// The pod template (cluster).
    pub pod_template: Option<&'a PodTemplate>,
    /// `spec.target.podTemplate` or `spec.variants[i].podTemplate`.
    pub template_field: String,
    /// The program (local); empty for the built-in target.
    pub command: &'a [String],
}

impl TargetOf<'_> {
    /// The parsed pod template of this target, if it has one that parses (validation has
    /// refused the runs whose template does not).
    pub fn parsed_template(&self) -> Option<k8s_openapi::api::core::v1::PodTemplateSpec> {
        self.pod_template.and_then(|t| t.parse().ok())
    }
}

impl BenchmarkRunSpec {
    /// The target of `variant`'s cells, or of every cell when `None` (a run without variants).
    pub fn target_of(&self, variant: Option<&Variant>) -> TargetOf<'_> {
        let t = &self.target;
        // The spec's own variant of that name, whose fields the result borrows.
        let own = variant.and_then(|v| {
            self.variants
                .iter()
                .enumerate()
                .find(|(_, w)| w.name == v.name)
        });
        let at = |i: usize, field: &str| format!("spec.variants[{i}].{field}");
        let (image, image_field) = match own {
            Some((i, v)) if v.image.is_some() => (v.image.as_deref(), at(i, "image")),
            _ => (t.image.as_deref(), "spec.target.image".to_owned()),
        };
        let (pod_template, template_field) = match own {
            Some((i, v)) if v.pod_template.is_some() => {
                (v.pod_template.as_ref(), at(i, "podTemplate"))
            }
            _ => (
                t.pod_template.as_ref(),
                "spec.target.podTemplate".to_owned(),
            ),
        };
        let command = match own {
            Some((_, v)) if !v.command.is_empty() => &v.command[..],
            _ => &t.command[..],
        };
        TargetOf {
            image,
            image_field,
            pod_template,
            template_field,
            command,
        }
    }

    /// The target of each variant in order, or the target alone without variants.
    pub fn targets(&self) -> Vec<TargetOf<'_>> {
        if self.variants.is_empty() {
            vec![self.target_of(None)]
        } else {
            self.variants
                .iter()
                .map(|v| self.target_of(Some(v)))
                .collect()
        }
    }
}

/// A variant of the target: what differs from `target` for its cells. Unset fields take the
/// target's.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Variant {
    /// Name of the variant, unique in the run; a DNS label of at most 20 characters (it ends
    /// the cells' names). The first variant is the base.
    #[schemars(
        length(min = 1, max = 20),
        regex(pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub name: String,

    /// Cluster only: this variant's target image, in place of `target.image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,

    /// Local runner only: the argv of this variant's program, in place of `target.command`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,

    /// Environment variables of this variant's cells, after `target.env` and the
    /// configuration's own (a variant's value wins for the same name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,

    /// Cluster only: this variant's pod template, in place of `target.podTemplate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,
}

pub(crate) fn default_replicas() -> u32 {
    1
}

/// The compact form of a matrix: every combination of the listed values.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Axes {
    /// Concurrency modes to try.
    #[schemars(length(min = 1, max = 8))]
    pub modes: Vec<Mode>,

    /// Replica counts to try, each 1 to 64.
    #[schemars(length(min = 1, max = 16), inner(range(min = 1, max = MAX_REPLICAS)))]
    pub replicas: Vec<u32>,

    /// CPU per replica to try. Leave empty and set `totalCpu` to split a fixed budget instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub cpu: Vec<Quantity>,

    /// A CPU budget shared by the replicas of each cell: each replica gets totalCpu / replicas,
    /// so every cell uses the same total CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cpu: Option<Quantity>,

    /// Memory per replica for every cell.
    #[serde(default = "default_memory")]
    pub memory: Quantity,

    /// Worker pool size for every cell: "auto" or a number from 1 to 1024.
    #[serde(default, skip_serializing_if = "PoolSize::is_auto")]
    pub pool_size: PoolSize,

    /// Environment variables for every cell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
}

/// Resources and fan-out of the load generator.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!has(self.generators) || !has(self.parallelism) || self.generators == self.parallelism",
        "message": "parallelism is the deprecated name of generators: set generators alone",
        "fieldPath": ".parallelism",
    },
]))]
pub struct LoadgenSpec {
    /// Container image of the load generator (cluster only); defaults to this release's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,

    /// CPU for each load generator pod (requests == limits), so the load generator is not the
    /// bottleneck by accident and does not steal the target's CPU.
    #[serde(default = "default_loadgen_cpu")]
    pub cpu: Quantity,

    /// Memory for each load generator pod.
    #[serde(default = "default_memory")]
    pub memory: Quantity,

    /// Number of load generator pods, 1 to 32 (default 1); each drives its share of the
    /// connections and rate and the histograms are merged exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_GENERATORS))]
    pub generators: Option<u32>,

    /// Deprecated: the old name of `generators` (1 to 32), still read (with a warning) so that
    /// runs written for it keep working. It was renamed because `spec.parallelism` means something
    /// else: how many measurements run at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_GENERATORS))]
    pub parallelism: Option<u32>,

    /// Worker threads per load generator, 1 to 256 (default: from its CPU limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_THREADS))]
    pub threads: Option<u32>,
}

impl Default for LoadgenSpec {
    fn default() -> Self {
        Self {
            image: None,
            cpu: default_loadgen_cpu(),
            memory: default_memory(),
            generators: None,
            parallelism: None,
            threads: None,
        }
    }
}

impl LoadgenSpec {
    /// How many load generators share each measurement: `generators`, else the deprecated
    /// `parallelism`, else 1. (Both set to different counts is refused by validation.)
    pub fn generators(&self) -> u32 {
        self.generators.or(self.parallelism).unwrap_or(1)
    }
}

fn default_loadgen_cpu() -> Quantity {
    Quantity::from("1")
}

/// Where the pods of a run are scheduled.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// Node labels every pod of the run must match. Runs whose selectors give one key
    /// different values can never share a node, and do not queue behind each other.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,

    /// Tolerations for every pod of the run (e.g. for a dedicated benchmark node pool).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,

    /// Keep the load generator off the target's nodes when the cluster has room (a preferred
    /// pod anti-affinity), so they do not compete for CPU. Default true.
    #[serde(default = "default_true")]
    pub separate_loadgen: bool,

    /// The share of a CPU that the other pods and processes of a measurement's node may use
    /// during its measured phases before the measurement is flagged as having had a busy
    /// neighbour (status `neighbours[].busy`, a BusyNeighbours Event, the report's Neighbours
    /// section). Cluster only, from the kubelet figures. Default 250m.
    #[serde(default = "default_neighbour_cpu_limit")]
    pub neighbour_cpu_limit: Quantity,
}

impl Default for Placement {
    fn default() -> Self {
        Self {
            node_selector: BTreeMap::new(),
            tolerations: Vec::new(),
            separate_loadgen: true,
            neighbour_cpu_limit: default_neighbour_cpu_limit(),
        }
    }
}

fn default_neighbour_cpu_limit() -> Quantity {
    Quantity::from("250m")
}

impl Placement {
    /// Whether pods placed by `self` and by `other` could land on the same node. Only when both
    /// select one label key with different values can they not: no node carries two values of
    /// one key. Tolerations only widen where pods may go, and affinity in a pod template is not
    /// looked at, so anything else counts as overlapping (the safe side: such runs queue).
    pub fn may_share_nodes(&self, other: &Placement) -> bool {
        self.node_selector
            .iter()
            .all(|(key, value)| other.node_selector.get(key).is_none_or(|v| v == value))
    }
}

fn default_true() -> bool {
    true
}

/// Limits on each wait of a cell.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Timeouts {
    /// How long the target may take to have every replica available (image pull included),
    /// and then again how long every address the load goes to (the Service, or each replica's
    /// with spread roundRobin) may take to answer the load generator's GET of readinessPath
    /// before its warm-up (cell reason TargetUnreachable when one does not); at most "24h".
    #[serde(default = "default_ready_timeout")]
    #[schemars(length(max = 32))]
    pub ready: Duration,

    /// Slack allowed for the load generator beyond its check of the target (at most `ready`),
    /// warm-up and phases before the cell fails; at most "24h".
    #[serde(default = "default_run_slack")]
    #[schemars(length(max = 32))]
    pub run_slack: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            ready: default_ready_timeout(),
            run_slack: default_run_slack(),
        }
    }
}

fn default_ready_timeout() -> Duration {
    Duration::from_secs(300)
}

fn default_run_slack() -> Duration {
    Duration::from_secs(120)
}

/// What is deleted once a cell is finished.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum CleanupPolicy {
    /// Delete the cell's Deployment, Service and Job as soon as the cell ends (the default:
    /// leftover pods would compete with the next cell for CPU).
    #[default]
    Always,
    /// Keep a failed cell's objects for debugging (`kubectl describe`, logs); delete the others.
    KeepFailed,
    /// Keep everything until the BenchmarkRun is deleted. The kept targets keep their CPU
    /// reservations, which can starve later cells on a small cluster. A cell stopped midway
    /// because the spec changed or its image is no longer allowed is deleted all the same.
    Never,
}

#[cfg(test)]
mod tests {
    use benchmatrix_loadgen::limits::{
        MAX_ANY_DURATION, MAX_CONNECTIONS_PER_STREAM, MAX_DURATION, MAX_GENERATORS, MAX_POOL_SIZE,
        MAX_RATE_PER_STREAM, MAX_REPLICAS, MAX_THREADS,
    };
    use serde_json::Value;

    /// The spec schema of the generated CRD, as the API server receives it.
    fn spec_schema() -> Value {
        let crd: Value = serde_yaml::from_str(&crate::resource::crdgen::crd_yaml()).unwrap();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].clone()
    }

    fn at<'a>(mut v: &'a Value, path: &[&str]) -> &'a Value {
        for key in path {
            v = &v[*key];
        }
        v
    }

    /// Asserts the node at `path` has `maximum` `max` and a description naming it.
    fn bounded(spec: &Value, path: &[&str], max: f64, in_doc: &str) {
        let node = at(spec, path);
        assert_eq!(node["maximum"].as_f64(), Some(max), "{path:?}: {node}");
        let doc = node["description"].as_str().unwrap_or_default();
        assert!(doc.contains(in_doc), "{path:?}: {doc:?} lacks {in_doc}");
    }

    #[test]
    fn the_crd_carries_the_maxima_and_the_docs_state_them() {
        let spec = spec_schema();
        let cfg = ["properties", "configurations", "items", "properties"];
        let with = |base: &[&'static str], more: &[&'static str]| -> Vec<&'static str> {
            base.iter().chain(more).copied().collect()
        };
        bounded(
            &spec,
            &with(&cfg, &["replicas"]),
            f64::from(MAX_REPLICAS),
            "64",
        );
        bounded(
            &spec,
            &with(&cfg, &["poolSize"]),
            f64::from(MAX_POOL_SIZE),
            "1024",
        );
        let axes_replicas = at(&spec, &["properties", "axes", "properties", "replicas"]);
        assert_eq!(
            axes_replicas["items"]["maximum"].as_f64(),
            Some(f64::from(MAX_REPLICAS)),
            "{axes_replicas}"
        );
        bounded(
            &spec,
            &["properties", "axes", "properties", "poolSize"],
            f64::from(MAX_POOL_SIZE),
            "1024",
        );
        let stream = [
            "properties",
            "workload",
            "properties",
            "phases",
            "items",
            "properties",
            "load",
            "items",
            "properties",
        ];
        bounded(
            &spec,
            &with(&stream, &["connections"]),
            f64::from(MAX_CONNECTIONS_PER_STREAM),
            "10000",
        );
        bounded(
            &spec,
            &with(&stream, &["rate"]),
            MAX_RATE_PER_STREAM,
            "10000000",
        );
        bounded(
            &spec,
            &["properties", "loadgen", "properties", "generators"],
            f64::from(MAX_GENERATORS),
            "32",
        );
        bounded(
            &spec,
            &["properties", "loadgen", "properties", "parallelism"],
            f64::from(MAX_GENERATORS),
            "32",
        );
        bounded(
            &spec,
            &["properties", "loadgen", "properties", "threads"],
            f64::from(MAX_THREADS),
            "256",
        );
        // Durations are strings; CEL rules bound them.
        let rules = spec["x-kubernetes-validations"].to_string();
        for needle in [
            format!("duration(p.duration) <= duration('{MAX_DURATION}')"),
            format!("duration(self.workload.warmup) <= duration('{MAX_DURATION}')"),
            format!("duration(self.workload.timeout) <= duration('{MAX_DURATION}')"),
            format!("duration(self.timeouts.ready) <= duration('{MAX_DURATION}')"),
            format!("duration(self.timeouts.runSlack) <= duration('{MAX_DURATION}')"),
            format!("duration(self.ttlAfterFinished) <= duration('{MAX_ANY_DURATION}')"),
        ] {
            assert!(rules.contains(&needle), "no rule {needle} in {rules}");
        }
    }
}
