//! `BenchmarkRun.status`: the state machine's only memory, and the results.
//!
//! The operator resumes from this document after a restart, and the local runner writes the very
//! same document to `status.yaml`, so reports render from either.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use benchmatrix_loadgen::result::{LatencyMs, Percentile};

/// Observed state of a BenchmarkRun.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BenchmarkRunStatus {
    /// Pending (queued or not started), Running, Succeeded (every cell ran; some may have
    /// failed, see cells) or Failed (the run could not run at all, e.g. an invalid spec).
    #[serde(default)]
    pub phase: RunPhase,

    /// A sentence about the current state: why it is queued, which cell runs, why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,

    /// The metadata.generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// When the first cell started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,

    /// When the run finished (Succeeded or Failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,

    /// Cells finished out of cells in the matrix, e.g. "2/4" (a printer column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,

    /// One line for `kubectl get`: the best cell of the last phase's first endpoint by p99,
    /// among the cells whose figures can be ranked (see summary.comparisons).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<String>,

    /// Standard conditions: SpecValid, Progressing, Complete, CellFailed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,

    /// One entry per cell of the matrix, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<CellStatus>,

    /// Comparison across cells, written when the run finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,

    /// Each threshold of spec.thresholds judged on each cell it applies to, written when the
    /// run finished.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<super::thresholds::ThresholdResult>,

    /// With spec.parallelism other than 1: the slots the run measures in and the nodes of each,
    /// as the executor found them when the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<ParallelismStatus>,

    /// With spec.variants: each candidate variant against the base in each configuration,
    /// round by round, written when the run finished.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<VariantComparison>,

    /// With spec.sizing: the search over configurations, its answer as settings and the
    /// evidence (every configuration: measured, ruled out by a bound, or not needed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizing: Option<super::sizing::SizingStatus>,
}

/// How a run with spec.parallelism measures: in how many slots, on which nodes.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParallelismStatus {
    /// spec.parallelism as written: a number or "auto".
    pub asked: String,
    /// Measurements that run at once.
    pub slots: u32,
    /// The nodes of each slot: every pod of a measurement in slot i is pinned to
    /// `nodeSets[i]`. Empty where the executor has no separate nodes (a local run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_sets: Vec<Vec<String>>,
    /// How the slots came about, and fewer than asked said so, e.g. "2 slots of the 4 asked:
    /// 2 Ready nodes match spec.placement and each measurement needs 1.5 CPU".
    #[serde(default)]
    pub message: String,
}

/// Phase of a whole run.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum RunPhase {
    /// Accepted, not started (possibly queued behind other runs).
    #[default]
    Pending,
    /// A cell is being deployed or measured.
    Running,
    /// Every cell has ended and at least one was measured; cells that failed say so
    /// individually (condition Complete, reason SomeCellsFailed).
    Succeeded,
    /// The run cannot run (invalid spec), stopped at a failed cell (stopOnFailure), or
    /// measured no cell at all.
    Failed,
}

impl RunPhase {
    /// True once the run will not change any more.
    pub fn is_finished(self) -> bool {
        matches!(self, RunPhase::Succeeded | RunPhase::Failed)
    }
}

impl std::fmt::Display for RunPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RunPhase::Pending => "Pending",
            RunPhase::Running => "Running",
            RunPhase::Succeeded => "Succeeded",
            RunPhase::Failed => "Failed",
        })
    }
}

/// Phase of one cell.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum CellPhase {
    /// Not started yet.
    #[default]
    Pending,
    /// The target is being deployed; waiting for every replica to be available.
    Deploying,
    /// The load generator is running against the target.
    Running,
    /// Measured; results are present.
    Succeeded,
    /// Ended without results; `message` says why.
    Failed,
    /// Not run, because an earlier cell failed and the spec says stopOnFailure.
    Skipped,
}

impl CellPhase {
    /// True once the cell will not change any more.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            CellPhase::Succeeded | CellPhase::Failed | CellPhase::Skipped
        )
    }
}

impl std::fmt::Display for CellPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CellPhase::Pending => "Pending",
            CellPhase::Deploying => "Deploying",
            CellPhase::Running => "Running",
            CellPhase::Succeeded => "Succeeded",
            CellPhase::Failed => "Failed",
            CellPhase::Skipped => "Skipped",
        })
    }
}

/// State and results of one configuration.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellStatus {
    /// The cell's name: its configuration's, or with spec.variants
    /// `<configuration>-<variant>`.
    pub name: String,

    /// With spec.variants: the configuration this cell measures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<String>,

    /// With spec.variants: the variant this cell measures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,

    /// The CPU the cell reserves, in cores: its CPU limit per replica times its replicas, as
    /// configured. What a cluster schedules and bills, and what the recommendation ranks
    /// cells by: unlike the CPU used per request, it cannot be lowered by serving less of the
    /// expensive work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_cpu: Option<f64>,

    /// Where the cell is.
    #[serde(default)]
    pub phase: CellPhase,

    /// Why the cell failed (a machine-readable word such as ImagePullBackOff, NeverReady,
    /// OOMKilled, LoadgenFailed, ResultUnparsable, Timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,

    /// What happened, in a sentence (the cause of a failure, with the pod's own words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,

    /// When the cell started deploying: its first step's start, which stays while the cell is
    /// measured again (a repetition, a probe of a capacity search, a round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,

    /// When the cell's current (or last) step started: its target's deployment, or for a
    /// probe of a capacity search on the target the probe before it kept, that probe's end
    /// (its settle's start). The wait for a ready target and the step's overhead count from
    /// here. Absent in a status an older operator wrote, whose `startTime` was the step's while
    /// the cell ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_start_time: Option<Time>,

    /// When the load generator was started (the run timeout counts from here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_start_time: Option<Time>,

    /// When the cell ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,

    /// The target's CPU, throttling and memory (from the kubelets, its own /stats or the local
    /// runner's cgroups: see `source`), and what it saw of its quota, summed or maxed over replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetStats>,

    /// One entry per measured phase and endpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<CellResult>,

    /// How the CPU limits of this cell were enforced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforcement: Option<Enforcement>,

    /// Seconds the runner spent on this cell outside warm-up and phases (deploy, readiness,
    /// collection, cleanup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_seconds: Option<f64>,

    /// The nodes the target ran on (cluster only): a cell measured once records them here, a
    /// repeated cell in each repetition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,

    /// What else used the CPU of each of those nodes while the cell was measured (cluster only,
    /// with the kubelet figures): a cell measured once records it here, a repeated cell in each
    /// repetition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub neighbours: Vec<Neighbours>,

    /// In a parallel run, while the cell is being deployed or measured: the slot its current
    /// step runs in (an index into status.parallelism.nodeSets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,

    /// The target pods the load was started against (cluster only), recorded when the load
    /// generator starts and cleared when the measurement ends. A pod that is gone, replaced or
    /// restarted before the result comes in fails the cell with reason ReplicaExited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_pods: Vec<RecordedPod>,

    /// Each repetition of the cell, in the order measured (only when spec.repeat is above 1).
    /// The cell's own results then hold each figure's median over the successful repetitions,
    /// with the spread beside it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repetitions: Vec<RepetitionStatus>,

    /// While a repeated cell is being measured: each stream's latency histogram over its
    /// successful repetitions so far, added up exactly (HDR, base64), keyed "phase/endpoint".
    /// When the cell ends they become each result's spread.mergedLatencyMs and are dropped. A
    /// stream whose histogram outgrows its share of the status (128 KiB shared by every cell and
    /// stream, at most 16 KiB each) is dropped from here, and its mergedLatencyMs is then
    /// absent.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub histograms: std::collections::BTreeMap<String, String>,

    /// With `spec.repeat: {min, max, precision}`: how precisely the cell's figures were known
    /// when it stopped repeating, and why it stopped (precise, or the most repetitions reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<CellPrecision>,

    /// With spec.capacity: the cell's search, its outcome and every probe. The cell's results
    /// are then those of the last probe that held at the rate held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<crate::resource::capacity::CapacityStatus>,
}

impl CellStatus {
    /// When the cell's current (or last) step started (`stepStartTime`); in a status an older
    /// operator wrote, its `startTime`, which was the step's while the cell ran.
    pub fn step_started(&self) -> Option<&Time> {
        self.step_start_time.as_ref().or(self.start_time.as_ref())
    }

    /// The start of a repeated cell: the earlier of its `startTime` and its first
    /// repetition's (in a status an older operator wrote while a repetition ran, `startTime`
    /// was that repetition's).
    pub fn repeated_start(&self) -> Option<Time> {
        let first = self.repetitions.first().and_then(|r| r.start_time.as_ref());
        match (self.start_time.as_ref(), first) {
            (Some(s), Some(f)) => Some(if f.0 < s.0 { f } else { s }.clone()),
            (s, f) => s.or(f).cloned(),
        }
    }

    /// Repetitions measured so far: the successful entries of `repetitions` (a run that does
    /// not repeat records none, so its cells count 0 until they end).
    pub fn measured_repetitions(&self) -> u32 {
        let repeated = RepetitionStatus::measured(&self.repetitions).count() as u32;
        // A capacity search's steps are its targets: probes that share a kept target are one
        // step (on a cluster, one set of objects), numbered from 1.
        let targets = self.capacity.as_ref().map_or(0, |c| c.targets);
        repeated.max(targets)
    }
}

/// Why a cell of `spec.repeat: {min, max, precision}` stopped repeating.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellPrecision {
    /// True when every ranked or judged figure's 95% confidence interval was within the
    /// precision asked for; false when the cell reached `max` repetitions still wider.
    pub precise: bool,
    /// Repetitions measured.
    pub repetitions: u32,
    /// The least precise figure, e.g. "mixed/fast p99" (none when no figure decides anything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widest_figure: Option<String>,
    /// Its interval's width, in percent of the figure (absent when it has no interval, e.g. a
    /// value of zero).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widest_percent: Option<f64>,
    /// The decision in a sentence, e.g. "precise after 4: every ranked or judged figure's 95% CI
    /// within 5% (widest mixed/fast p99 at 3.1%)".
    #[serde(default)]
    pub message: String,
}

/// One measurement of a cell when the run repeats every cell (spec.repeat above 1).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RepetitionStatus {
    /// 1-based number of the repetition.
    pub repetition: u32,
    /// Succeeded or Failed.
    #[serde(default)]
    pub phase: CellPhase,
    /// Why the repetition failed (the same words as a cell's reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What happened, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When this repetition's target started deploying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When this repetition's load started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_start_time: Option<Time>,
    /// When this repetition ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// One entry per measured phase and endpoint, as measured in this repetition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<CellResult>,
    /// Target CPU seconds used over the phases of this repetition, where measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds_used: Option<f64>,
    /// Seconds spent on this repetition outside warm-up and phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_seconds: Option<f64>,
    /// The nodes this repetition's target ran on (cluster only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    /// What else used the CPU of each of those nodes during this repetition's measured phases
    /// (cluster only, with the kubelet figures).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub neighbours: Vec<Neighbours>,
}

/// What else ran on one node of a measurement during its measured phases, from the kubelet's
/// `/metrics/resource` sampled every second.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Neighbours {
    /// The node.
    pub node: String,
    /// The node's CPU use outside the measurement's own pods (its target replicas and load
    /// generators) around the measured phases (over windowSeconds), in cores on average (3
    /// decimals): the node's CPU counter less the own pods' counters, so the kubelet, the container runtime and other
    /// system processes count as well as other pods. Absent when `missing` says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_cpu: Option<f64>,
    /// The seconds the figures are over (1 decimal): the span between two of the node's own
    /// samples (the kubelet refreshes them every 10-15 s) around the measured phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_seconds: Option<f64>,
    /// True when foreignCpu is above spec.placement.neighbourCpuLimit: the measurement shared
    /// its node with a busy neighbour.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub busy: bool,
    /// The other pods seen on the node by the CPU they used over the measured phases, largest
    /// first (at most 3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<NeighbourPod>,
    /// How many more other pods ran on the node than `pods` lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_pods: Option<u32>,
    /// Why foreignCpu is absent (the kubelet could not be read, its samples do not cover the
    /// phases, the operator does not read kubelets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

impl Neighbours {
    /// The node's use in a few words: "node n1: 0.660 CPU of other use, most by other/busy
    /// (0.600)".
    pub fn busy_words(&self) -> String {
        let top = self
            .pods
            .first()
            .map(|p| format!(", most by {} ({:.3})", p.pod, p.cpu))
            .unwrap_or_default();
        format!(
            "node {}: {:.3} CPU of other use{top}",
            self.node,
            self.foreign_cpu.unwrap_or_default()
        )
    }
}

/// Another pod on a measurement's node.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NeighbourPod {
    /// `namespace/name`.
    pub pod: String,
    /// The CPU it used over the measured phases, in cores on average (3 decimals).
    pub cpu: f64,
}

impl RepetitionStatus {
    /// The repetitions of `all` that measured (a failed one ends its cell and counts for
    /// nothing).
    pub fn measured(all: &[RepetitionStatus]) -> impl Iterator<Item = &RepetitionStatus> {
        all.iter().filter(|r| r.phase == CellPhase::Succeeded)
    }
}

/// How one figure varied over the repetitions of a cell.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FigureSpread {
    /// Each successful repetition's value, in the order measured.
    pub values: Vec<f64>,
    /// The median of the values (the figure the cell reports and thresholds use).
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// Lower end of a 95% bootstrap confidence interval of the median (five or more values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_low: Option<f64>,
    /// Upper end of a 95% bootstrap confidence interval of the median (five or more values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_high: Option<f64>,
    /// True when the values spread more than 2x (max / min): such a figure is shown but never
    /// decides a ranking or a recommendation; repeat more or lengthen the phase.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unstable: bool,
}

/// How a cell's figures for one phase and endpoint varied over its repetitions.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Spread {
    /// Repetitions that measured this stream.
    pub repetitions: u32,
    /// Figures by name: rps, p50, p90, p99, p999, max, errorRate.
    #[serde(default)]
    pub figures: std::collections::BTreeMap<String, FigureSpread>,
    /// Latency percentiles of every repetition's requests together (their histograms merged
    /// exactly); absent when a repetition's histogram was not kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_latency_ms: Option<LatencyMs>,
}

/// A target pod as it was when the load started.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordedPod {
    /// The pod's name.
    pub name: String,
    /// The node it runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The pod's UID: a pod replaced under the same name has a new one.
    pub uid: String,
    /// Container restarts of the pod, summed over its containers.
    pub restarts: i32,
}

/// The target's resource figures and what it reported about itself. Null fields were not
/// measured. `source` says where the CPU and throttling figures come from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetStats {
    /// Where `cpuSecondsUsed` and the throttling figures come from: "kubelet" (read from the
    /// kubelet of each target pod's node, for any image), "target" (the target's own /stats
    /// report) or "cgroup" (the local runner's cgroups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Replicas that reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
    /// CPUs of the machine the target ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpus: Option<u32>,
    /// CPUs the target believed it could use (from its quota), per replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detected_cpus: Option<u32>,
    /// The CPU quota in cores per replica; null when unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_quota: Option<f64>,
    /// Where the quota was read from (a cgroup file, "affinity" or "host").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_source: Option<String>,
    /// The concurrency mode the target ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Worker pool size (0 when the mode has no pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_size: Option<u32>,
    /// Resident memory when idle, summed over replicas (before the first phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_rss_bytes: Option<u64>,
    /// Peak resident memory, summed over replicas' peaks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
    /// CPU seconds used during the measured phases, summed over replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds_used: Option<f64>,
    /// CFS periods in which the target was throttled, summed over replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_periods: Option<u64>,
    /// Seconds the target was throttled, summed over replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_seconds: Option<f64>,
    /// CFS periods (of 100 ms, by default) in which the target ran, summed over replicas: the
    /// denominator of the throttled share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cfs_periods: Option<u64>,
    /// Kubelet only: the seconds of the measured phases that cadvisor's samples (every 10-15 s)
    /// covered; the throttling figures are scaled from them to the whole measured time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle_covered_seconds: Option<f64>,
    /// Kubelet only: the memory working set just before the measured phases, summed over
    /// replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_set_idle_bytes: Option<u64>,
    /// Kubelet only: the highest memory working set sampled (every second) in the measured
    /// phases, summed over replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_set_peak_bytes: Option<u64>,
    /// When the kubelet's figures are used and the target also reported its CPU seconds: the
    /// target's own figure, for the check below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_reported_cpu_seconds: Option<f64>,
    /// How far the kubelet's CPU seconds are from the target's own, in percent of the target's
    /// (both measure the same process over the same phases, so a few percent at most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_difference_percent: Option<f64>,
    /// Why a figure the kubelet should have given is missing (for example a measured time
    /// shorter than cadvisor's sampling), or why it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// How the work spread over the replicas in each measured phase, one entry per replica
    /// (cells with several replicas): an uneven split means the connections, not only the
    /// configuration, decided part of the result (see `spec.workload.spread`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_replica: Vec<ReplicaShare>,
}

/// One replica's part of a cell's work.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaShare {
    /// The replica: its address where it has its own ("IP:PORT"), else its index ("r0").
    pub replica: String,
    /// Its work in each measured phase, in phase order.
    pub phases: Vec<ReplicaPhaseShare>,
}

/// One replica's work in one phase.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaPhaseShare {
    /// Phase name.
    pub phase: String,
    /// CPU seconds it used in the phase (its cgroup locally, its `/stats` in a cluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds_used: Option<f64>,
    /// Requests it served in the phase, from its `/stats` read on its own address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_served: Option<f64>,
}

/// Results of one endpoint in one phase.
#[derive(Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellResult {
    /// Phase name.
    pub phase: String,
    /// Endpoint name.
    pub endpoint: String,
    /// Requests completed (answered, successfully or not).
    pub requests: u64,
    /// Requests that failed (connect, timeout, non-2xx).
    pub errors: u64,
    /// Successful requests, each with a recorded latency: the samples the percentiles in
    /// latencyMs are read from. With repetitions, all of theirs together (their histograms
    /// merge exactly; the spread shows how far each repetition's own figure moved).
    pub samples: u64,
    /// Successful requests per second over the phase.
    pub rps: f64,
    /// Latency percentiles in milliseconds (open loop: corrected for coordinated omission).
    /// Absent when no request succeeded: no sample, no figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<LatencyMs>,
    /// Percentiles in latencyMs that the samples cannot support, so they are shown marked
    /// and never used to rank cells: pN needs 1/(1-N) samples, that is p50 2, p90 10, p99
    /// 100 and p999 1000. Absent when every percentile is supported.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsupported_percentiles: Vec<Percentile>,
    /// How the figures varied over the cell's repetitions (only when spec.repeat is above 1);
    /// the figures above are then the repetitions' medians, and requests, errors and samples
    /// their totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<Spread>,
}

impl CellResult {
    /// True when the samples support percentile `p`, i.e. it may be ranked on.
    pub fn supports(&self, p: Percentile) -> bool {
        self.latency_ms.is_some() && !self.unsupported_percentiles.contains(&p)
    }
}

/// Reads results written by any version: documents from before sample counts were recorded
/// have no `samples` (then `requests - errors`, what the load generator measured them from)
/// and carry zeros in `latencyMs` for a stream without samples (then absent). The
/// unsupported percentiles always follow from the samples.
impl<'de> Deserialize<'de> for CellResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Written {
            phase: String,
            endpoint: String,
            requests: u64,
            errors: u64,
            #[serde(default)]
            samples: Option<u64>,
            rps: f64,
            #[serde(
                default,
                deserialize_with = "benchmatrix_loadgen::result::latency_of_samples"
            )]
            latency_ms: Option<LatencyMs>,
            #[serde(default)]
            spread: Option<Spread>,
        }
        let w = Written::deserialize(d)?;
        let samples = w
            .samples
            .unwrap_or_else(|| w.requests.saturating_sub(w.errors));
        Ok(CellResult {
            phase: w.phase,
            endpoint: w.endpoint,
            requests: w.requests,
            errors: w.errors,
            samples,
            rps: w.rps,
            latency_ms: w.latency_ms.filter(|_| samples > 0),
            unsupported_percentiles: Percentile::unsupported_by(samples),
            spread: w.spread,
        })
    }
}

/// How CPU limits were put into force for a cell.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Enforcement {
    /// Mechanism for the target: "kubernetes" (pod limits), "cgroup-v2", "cgroup-v1",
    /// "affinity" (CPU pinning only: a weaker stand-in) or "none".
    pub target: String,
    /// Mechanism for the load generator, same words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loadgen: Option<String>,
    /// Details a reader needs to trust the figure, e.g. the cgroup path or why a fallback was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Comparison across the cells of a finished run.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Per phase and endpoint: the best cell by p99 latency and every cell's ratio to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<Comparison>,
    /// Per cell: how much the light endpoint suffers from the heavy one (mixed p99 over solo p99).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interference: Vec<Interference>,
    /// Streams whose p99 rests on fewer than 100 samples, so they were not ranked, each as
    /// "cell phase/endpoint: N samples; p99 needs 100" and, where the rate is known, about how
    /// long a phase would collect them. Run these phases longer to compare them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs_longer_phase: Vec<String>,
    /// In one sentence: the configuration that meets every threshold with the smallest
    /// reserved CPU (cells[].reservedCpu), equal reservations decided by the widest margin on
    /// the thresholds, and how it compares with the other cells that meet them. Without
    /// thresholds none is recommended, and the sentence lists what each cell traded. When the
    /// cells searched for their capacity (spec.capacity): the configuration holding the most
    /// requests per second at the SLO per reserved CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommendation: Option<String>,
}

/// The cells compared on one phase and endpoint.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// Phase name.
    pub phase: String,
    /// Endpoint name.
    pub endpoint: String,
    /// The cell with the lowest p99 among the ranked ones (ties: the higher throughput, then
    /// the earlier cell): the reference of the ratios. Absent when no cell could be ranked
    /// (see each cell's `excluded`). Not a winner when its `withinNoiseOf` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_cell: Option<String>,
    /// Every measured cell, in matrix order.
    pub cells: Vec<CellRatio>,
}

/// One cell's figures relative to the best cell.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellRatio {
    /// Cell name.
    pub cell: String,
    /// Samples behind this cell's percentiles (its successful requests).
    #[serde(default)]
    pub samples: u64,
    /// This cell's p99 in milliseconds; absent when no request succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<f64>,
    /// p99 over the best cell's p99 (1.0 for the best; higher is worse). Absent when this
    /// cell was not ranked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ratio: Option<f64>,
    /// This cell's throughput.
    pub rps: f64,
    /// Throughput over the best cell's throughput. Absent when this cell was not ranked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rps_ratio: Option<f64>,
    /// Why this cell was not ranked, e.g. "3 samples; p99 needs 100" or "errors 60% of 40
    /// requests": a stream is ranked only with at least one success, errors under half of
    /// its requests, at least 100 samples and, over repetitions, a stable p99. Absent when it
    /// was ranked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<String>,
    /// Only when the cells were repeated: the cell whose p99 this one's does not differ from
    /// over the repetitions (Mann-Whitney U at 0.05 and a 5% minimum change with 5 or more
    /// repetitions a side, else overlapping min-max ranges), so the two are not ranked against
    /// each other. On a cell other than the best it names the best cell; on the best cell it
    /// names the first cell within noise of it, which means the best is no clear winner (the
    /// headline then names none). Absent when the difference is real or the run repeated
    /// nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_noise_of: Option<String>,
}

/// Interference of a heavy endpoint on a light one within one cell.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Interference {
    /// Cell name.
    pub cell: String,
    /// The light endpoint (the one measured alone in `soloPhase`).
    pub endpoint: String,
    /// The phase where the endpoint ran alone.
    pub solo_phase: String,
    /// The phase where it ran alongside other endpoints.
    pub mixed_phase: String,
    /// p99 alone, milliseconds; absent when no request succeeded alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solo_p99_ms: Option<f64>,
    /// p99 mixed, milliseconds; absent when no request succeeded mixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixed_p99_ms: Option<f64>,
    /// mixed over solo (1.0 = no interference). Absent when either p99 cannot be ranked on
    /// (see `excluded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// Why there is no ratio, e.g. "solo: 30 samples; p99 needs 100". Absent when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<String>,
}

/// A candidate variant against the base in one configuration (spec.variants), over the rounds
/// in which both were measured. In each round the two ran back to back on the same nodes, and
/// the round's ratio candidate / base of each figure is one piece of evidence.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VariantComparison {
    /// The configuration.
    pub configuration: String,
    /// The base variant (the first of spec.variants).
    pub base: String,
    /// The variant compared with it.
    pub candidate: String,
    /// Rounds in which both were measured: the number of ratios behind each figure.
    pub rounds: u32,
    /// One entry per phase, endpoint and figure (p50, p99, rps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<RatioFigure>,
}

/// One figure of a candidate against the base, round by round.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RatioFigure {
    /// Phase name.
    pub phase: String,
    /// Endpoint name.
    pub endpoint: String,
    /// `p50` or `p99` (milliseconds, lower is better) or `rps` (higher is better).
    pub figure: String,
    /// The base's median over the rounds.
    pub base: f64,
    /// The candidate's median over the rounds.
    pub candidate: f64,
    /// candidate / base in each round both measured, in round order.
    pub ratios: Vec<f64>,
    /// The median ratio: above 1 the candidate's figure is higher.
    pub ratio: f64,
    /// Low end of the 95% bootstrap confidence interval of the median ratio (from 3 rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_low: Option<f64>,
    /// High end of that interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_high: Option<f64>,
    /// One-sided exact Wilcoxon signed-rank p-value, over the rounds' log ratios, that the
    /// candidate is worse (higher latency, lower throughput).
    pub p_worse: f64,
    /// The same, that the candidate is better.
    pub p_better: f64,
    /// Regression or Improvement when significant at 5% and beyond a 5% change; else
    /// WithinNoise.
    pub verdict: ChangeVerdict,
}

/// How a candidate's figure compares with the base's.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ChangeVerdict {
    /// Worse, significantly and beyond the practical change.
    Regression,
    /// Better, significantly and beyond the practical change.
    Improvement,
    /// No difference the rounds support.
    #[default]
    WithinNoise,
}

/// `source` of figures read from the kubelets.
pub const SOURCE_KUBELET: &str = "kubelet";
/// `source` of figures the target reported itself (its `/stats`).
pub const SOURCE_TARGET: &str = "target";
/// `source` of figures the local runner read from its cgroups.
pub const SOURCE_CGROUP: &str = "cgroup";

/// The key of a stream in [`CellStatus::histograms`].
pub fn histogram_key(phase: &str, endpoint: &str) -> String {
    format!("{phase}/{endpoint}")
}

/// The figures of a spread, by the names [`Spread::figures`] keys them with.
pub const FIGURES: [&str; 8] = [
    "rps",
    "errorRate",
    "p50",
    "p90",
    "p99",
    "p999",
    "max",
    "mean",
];
