//! How large a BenchmarkRun can grow, worked out from its spec before it runs.
//!
//! The status keeps every figure of every cell, stream and repetition, so it grows with
//! cells x streams x repeat; with a capacity search, every probe of every cell, so with cells x
//! maxProbes x rounds (twice maxProbes a configuration of a sizing search, which also checks
//! configurations at a fixed rate: [`SIZING_PROBE_BUDGETS`]). etcd stores an object of at most
//! 1.5 MiB (and the API server takes requests of at most 3 MiB): a status past that makes every
//! later status write fail, and the run would stall without a word. So the operator refuses,
//! before anything is deployed, a run whose object could outgrow [`OBJECT_LIMIT`] (see
//! `validate::validate_for_cluster`).
//!
//! The estimate is an upper bound, not a guess: it is the serialized size of the largest status
//! the engine can write for this spec. Every number is counted at the longest a JSON number
//! gets (24 bytes), every count at 20 digits, every optional field as present, every text at
//! the length the engine clips it to ([`bound`]), and the histograms at their whole budget.
//! It counts two moments and takes the larger: while the cells are measured (every repetition,
//! the histograms, one cell's recorded pods) and once the run has finished (every repetition,
//! the summary, the threshold verdicts). It trusts the load generator to write the document
//! its plan asks for: one result per stream of the spec, one share per replica.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::resource::bound::{
    self, EXCLUDED_MAX, NEIGHBOUR_FIGURE_MAX, NEIGHBOUR_POD_MAX, NEIGHBOUR_PODS_MAX, NODE_NAME_MAX,
    NODES_MAX, NOTE_MAX, SENTENCE_MAX, WAITING_NAMES_AT_MOST, WORD_MAX, api_len, json_len,
};
use crate::resource::conditions::{self, time_from_secs};
use crate::resource::status::{ChangeVerdict, RatioFigure, VariantComparison};
use crate::resource::status::{FIGURES, histogram_key};
use crate::resource::status::{NeighbourPod, Neighbours};
use crate::resource::status::{ParallelismStatus, Percentile, RecordedPod};
use crate::resource::{
    BenchmarkRun, BenchmarkRunSpec, BenchmarkRunStatus, CellPhase, CellPrecision, CellRatio,
    CellResult, CellStatus, Comparison, Enforcement, FigureSpread, Interference, LatencyMs,
    RepetitionStatus, ReplicaPhaseShare, ReplicaShare, RunPhase, Spread, Summary, TargetStats,
    ThresholdResult, Verdict,
};
use benchmatrix_loadgen::plan::Phase;
use benchmatrix_loadgen::strict_yaml::FieldError;

/// The most a BenchmarkRun object (spec, metadata and status) may take: 1 MiB, a third under
/// etcd's 1.5 MiB, for the fields managed by each writer and what Kubernetes adds itself.
pub const OBJECT_LIMIT: usize = 1 << 20;

/// How many times over one configuration of a sizing run may spend `spec.capacity.maxProbes`:
/// once on its search or, if the bounds ruled it out without a search, on its rule-out probe
/// (never both: a rule-out is only for a configuration not searched), and once more on its
/// confirmation at the target rate, which may follow either. Each check at a fixed rate has
/// `maxProbes` of its own (see `spec.capacity.maxProbes`), and the search asks each of a
/// configuration at most once (a check that ran out is not asked again).
pub const SIZING_PROBE_BUDGETS: u32 = 2;

/// The fewest probes spec.capacity.maxProbes allows.
const MIN_PROBES: u32 = 2;

/// The longest number serde_json writes (24 bytes), standing for every figure.
const NUMBER: f64 = -2.225_073_858_507_201_4e-308;

/// Longest name Kubernetes gives a pod of a Deployment or a Job (generateName is cut to 58
/// characters, then 5 random ones are added).
const POD_NAME: usize = 63;

/// A pod UID.
const UID: usize = 36;

/// The figures each candidate variant is compared with the base on, per stream.
const RATIO_FIGURES: usize = 3;

/// What the size of a run's status depends on, read from its spec.
#[derive(Debug, Clone)]
pub struct Shape {
    /// Each cell's name and replicas, in matrix order.
    pub cells: Vec<(String, u32)>,
    /// With spec.variants: each cell's configuration and variant names, in matrix order.
    pub variants_of: Vec<(String, String)>,
    /// With spec.variants: each configuration that is compared, and each candidate's name.
    pub comparisons: Vec<(String, Vec<String>)>,
    /// Phase names, in order.
    pub phases: Vec<String>,
    /// Every stream as (phase, endpoint), in order.
    pub streams: Vec<(String, String)>,
    /// The most times a cell is measured (spec.repeat, or its `max`).
    pub repeat: u32,
    /// spec.repeat is `{min, max, precision}`: each cell records why it stopped repeating.
    pub adaptive: bool,
    /// spec.loadgen.generators.
    pub generators: u32,
    /// With spec.parallelism other than 1: the most slots, else 0 (no status.parallelism).
    pub slots: u32,
    /// For each threshold, the indices of the cells it selects.
    pub thresholds: Vec<Vec<usize>>,
    /// Each (endpoint, solo phase, mixed phase) the summary compares in every cell.
    pub interference: Vec<(String, String, String)>,
    /// With spec.capacity: `maxProbes` (the most probes a cell's search takes in a round, and a
    /// sizing check at a fixed rate takes of its own), and the endpoint of each figure a probe
    /// records. [`Shape::probes_per_cell`] is how many a cell may hold in all.
    pub capacity: Option<(u32, Vec<String>)>,
    /// With spec.sizing: the configurations' names and env axes of the chosen one.
    pub sizing: Option<(Vec<String>, Vec<crate::resource::EnvVar>)>,
}

impl Shape {
    /// The shape of a valid spec.
    pub fn of(spec: &BenchmarkRunSpec) -> Self {
        let matrix = crate::resource::matrix::cells(spec);
        let cells: Vec<(String, u32)> = matrix
            .iter()
            .map(|c| (c.name.clone(), c.replicas))
            .collect();
        let variants_of: Vec<(String, String)> = matrix
            .iter()
            .filter_map(|c| Some((c.configuration.clone(), c.variant.as_ref()?.name.clone())))
            .collect();
        let comparisons = comparisons_of(spec, &variants_of);
        // A capacity search's measurements are probes: one phase over the mix.
        let probe = spec
            .capacity
            .as_ref()
            .map(|c| c.probe_workload(&spec.workload, c.start_rate));
        let phases = &probe.as_ref().unwrap_or(&spec.workload).phases;
        let capacity = capacity_of(spec);
        let thresholds = thresholds_of(spec, &cells);
        let interference = interference_of(phases);
        Shape {
            cells,
            variants_of,
            comparisons,
            phases: phases.iter().map(|p| p.name.clone()).collect(),
            streams: phases
                .iter()
                .flat_map(|p| p.load.iter().map(|s| (p.name.clone(), s.endpoint.clone())))
                .collect(),
            repeat: spec.repeat.max_rounds(),
            adaptive: spec.repeat.is_adaptive(),
            generators: spec.loadgen.generators(),
            slots: if spec.parallelism.is_parallel() {
                spec.parallelism.most()
            } else {
                0
            },
            thresholds,
            interference,
            capacity,
            sizing: sizing_of(spec),
        }
    }

    /// The same run with only its first `n` cells (and the thresholds' selections among them).
    fn first_cells(&self, n: usize) -> Self {
        let mut s = self.clone();
        s.cells.truncate(n);
        s.variants_of.truncate(n);
        let kept: Vec<&String> = s.variants_of.iter().map(|(c, _)| c).collect();
        s.comparisons.retain(|(c, _)| kept.contains(&c));
        for t in &mut s.thresholds {
            t.retain(|&i| i < n);
        }
        s
    }

    /// The same run whose searches take at most `max_probes` probes.
    fn with_max_probes(&self, max_probes: u32) -> Self {
        let mut s = self.clone();
        if let Some((probes, _)) = &mut s.capacity {
            *probes = max_probes;
        }
        s
    }

    /// The same sizing run with a space of `n` configurations: those with the most replicas,
    /// which a status records the most of (a share of the probe's phase and a node apiece).
    fn largest_configurations(&self, n: usize) -> Self {
        let mut s = self.clone();
        s.cells
            .sort_by_key(|(_, replicas)| std::cmp::Reverse(*replicas));
        s.cells.truncate(n);
        if let Some((names, _)) = &mut s.sizing {
            *names = s.cells.iter().map(|(name, _)| name.clone()).collect();
        }
        s
    }

    /// The most probes one cell's status holds: none without spec.capacity; `maxProbes` for
    /// each round of its search (spec.repeat); in a sizing run, `maxProbes` for each of
    /// [`SIZING_PROBE_BUDGETS`].
    pub fn probes_per_cell(&self) -> u32 {
        let Some((max_probes, _)) = &self.capacity else {
            return 0;
        };
        let budgets = if self.sizing.is_some() {
            SIZING_PROBE_BUDGETS
        } else {
            1
        };
        max_probes
            .saturating_mul(self.repeat.max(1))
            .saturating_mul(budgets)
    }

    fn with_repeat(&self, repeat: u32) -> Self {
        Shape {
            repeat,
            ..self.clone()
        }
    }

    fn longest_cell(&self) -> usize {
        self.cells
            .iter()
            .map(|(n, _)| json_len(n))
            .max()
            .unwrap_or(0)
    }

    fn room(&self) -> usize {
        bound::names_room(
            self.cells.iter().map(|(n, _)| n.as_str()),
            self.phases.iter().map(String::as_str),
            self.streams.iter().map(|(_, e)| e.as_str()),
        )
    }

    fn histogram_share(&self) -> Option<usize> {
        (self.repeat > 1)
            .then(|| bound::histogram_share(self.cells.len(), self.streams.len()))
            .flatten()
    }

    /// The cell whose recorded pods are counted: the one with the most replicas.
    fn cell_with_most_pods(&self) -> Option<usize> {
        (0..self.cells.len()).max_by_key(|&i| (self.cells[i].1, std::cmp::Reverse(i)))
    }

    /// The longest status.message: a sentence, or the operator's list of the pods it waits
    /// for (at most `WAITING_NAMES_AT_MOST` of them named, and how many more).
    fn message_max(&self) -> usize {
        let waiting = format!(
            "waiting for {} pod(s) of an earlier cell to stop: ",
            u32::MAX
        )
        .len()
            + WAITING_NAMES_AT_MOST * (POD_NAME + 2)
            + format!(" and {} more", u32::MAX).len();
        waiting.max(SENTENCE_MAX)
    }
}

/// [`Shape::comparisons`] of `spec`: each configuration of `variants_of` (each cell's
/// configuration and variant, in matrix order) once, in order of its first cell, with every
/// candidate variant (all but the first, the base). Apart from [`Shape::of`] to keep that
/// function a list of the shape's parts.
fn comparisons_of(
    spec: &BenchmarkRunSpec,
    variants_of: &[(String, String)],
) -> Vec<(String, Vec<String>)> {
    let candidates: Vec<String> = spec
        .variants
        .iter()
        .skip(1)
        .map(|v| v.name.clone())
        .collect();
    let mut comparisons: Vec<(String, Vec<String>)> = Vec::new();
    for (configuration, _) in variants_of {
        if !comparisons.iter().any(|(c, _)| c == configuration) {
            comparisons.push((configuration.clone(), candidates.clone()));
        }
    }
    comparisons
}

/// [`Shape::capacity`] of `spec`: with spec.capacity, its most probes and the endpoint of
/// each figure a probe records (a figure without an endpoint stands for every endpoint of the
/// mix in force). Apart from [`Shape::of`] to keep that function a list of the shape's parts.
fn capacity_of(spec: &BenchmarkRunSpec) -> Option<(u32, Vec<String>)> {
    spec.capacity.as_ref().map(|c| {
        let mix = c.mix_or_default(&spec.workload.endpoint_names());
        let figures = c
            .slo
            .iter()
            .flat_map(|f| match &f.endpoint {
                Some(e) => vec![e.clone()],
                None => mix.iter().map(|m| m.endpoint.clone()).collect(),
            })
            .collect();
        (c.max_probes, figures)
    })
}

/// [`Shape::thresholds`] of `spec`: for each threshold, the indices of the `cells` its `cell`
/// pattern selects (every cell when it has none). Apart from [`Shape::of`] to keep that
/// function a list of the shape's parts.
fn thresholds_of(spec: &BenchmarkRunSpec, cells: &[(String, u32)]) -> Vec<Vec<usize>> {
    spec.thresholds
        .iter()
        .map(|t| {
            (0..cells.len())
                .filter(|&i| {
                    t.cell
                        .as_deref()
                        .is_none_or(|p| crate::resource::thresholds::glob_match(p, &cells[i].0))
                })
                .collect()
        })
        .collect()
}

/// [`Shape::interference`] of a run with `phases`: each (endpoint, solo phase, mixed phase)
/// the summary compares. Apart from [`Shape::of`] to keep that function a list of the
/// shape's parts.
fn interference_of(phases: &[Phase]) -> Vec<(String, String, String)> {
    // As results::cell_interference pairs them: an endpoint alone in a phase, with the first
    // later phase that runs it alongside others.
    let mut interference = Vec::new();
    for (i, solo) in phases.iter().enumerate() {
        let [alone] = solo.load.as_slice() else {
            continue;
        };
        if let Some(mixed) = phases[i + 1..]
            .iter()
            .find(|p| p.load.len() > 1 && p.load.iter().any(|s| s.endpoint == alone.endpoint))
        {
            interference.push((
                alone.endpoint.clone(),
                solo.name.clone(),
                mixed.name.clone(),
            ));
        }
    }
    interference
}

/// [`Shape::sizing`] of `spec`: with spec.sizing, the names of its configurations and the
/// env axes at their longest values (the chosen configuration's env is one value of each).
/// Apart from [`Shape::of`] to keep that function a list of the shape's parts.
fn sizing_of(spec: &BenchmarkRunSpec) -> Option<(Vec<String>, Vec<crate::resource::EnvVar>)> {
    spec.sizing.as_ref().map(|s| {
        let env = s
            .search
            .env
            .iter()
            .map(|(k, v)| {
                let longest = v
                    .iter()
                    .max_by_key(|x| x.len())
                    .cloned()
                    .unwrap_or_default();
                crate::resource::EnvVar::new(k.clone(), longest)
            })
            .collect();
        (
            crate::resource::matrix::sizing_cells(s)
                .into_iter()
                .map(|c| c.name)
                .collect(),
            env,
        )
    })
}

/// When the status is counted: while its cells are measured, or once the run has finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// Every repetition so far, the histograms, the current cell's pods; no summary yet.
    Running,
    /// Every repetition, the summary and the thresholds; histograms and pods are gone.
    Finished,
}

fn text(n: usize) -> String {
    "x".repeat(n)
}

fn time() -> Time {
    // 9999-12-31T23:59:59Z: every time the status holds is written in these 20 characters.
    time_from_secs(253_402_300_799)
}

fn len<T: serde::Serialize>(v: &T) -> usize {
    api_len(&serde_json::to_string(v).expect("status types serialize"))
}

/// A field `"key":` with a value of `n` bytes added to an object that has other fields.
fn field(key: &str, n: usize) -> usize {
    key.len() + 4 + n
}

/// A JSON list of `count` items taking `items` bytes together.
fn list(count: usize, items: usize) -> usize {
    2 + items + count.saturating_sub(1)
}

/// A field holding a list that is left out when empty.
fn list_field(key: &str, count: usize, items: usize) -> usize {
    if count == 0 {
        0
    } else {
        field(key, list(count, items))
    }
}

fn latency() -> LatencyMs {
    LatencyMs {
        p50: NUMBER,
        p90: NUMBER,
        p99: NUMBER,
        p999: NUMBER,
        max: NUMBER,
        mean: NUMBER,
    }
}

/// The largest result of one stream: with the spread over `repeat` repetitions when given.
fn result(phase: &str, endpoint: &str, repeat: Option<u32>) -> CellResult {
    CellResult {
        phase: phase.to_owned(),
        endpoint: endpoint.to_owned(),
        requests: u64::MAX,
        errors: u64::MAX,
        samples: u64::MAX,
        rps: NUMBER,
        latency_ms: Some(latency()),
        unsupported_percentiles: vec![
            Percentile::P50,
            Percentile::P90,
            Percentile::P99,
            Percentile::P999,
        ],
        spread: repeat.map(|n| Spread {
            repetitions: u32::MAX,
            figures: FIGURES
                .iter()
                .map(|k| {
                    let spread = FigureSpread {
                        values: vec![NUMBER; n as usize],
                        median: NUMBER,
                        min: NUMBER,
                        max: NUMBER,
                        ci_low: Some(NUMBER),
                        ci_high: Some(NUMBER),
                        unstable: true,
                    };
                    ((*k).to_owned(), spread)
                })
                .collect(),
            merged_latency_ms: Some(latency()),
        }),
    }
}

/// The spread a cell's results carry: over the repetitions when the run repeats its cells.
fn spread_of(shape: &Shape) -> Option<u32> {
    (shape.repeat > 1).then_some(shape.repeat)
}

/// The most nodes a measurement of a cell of `replicas` replicas records.
fn node_count(replicas: u32) -> usize {
    bound::nodes_recorded(replicas)
}

/// The nodes a cell of `replicas` replicas can have run on, each at the longest name.
fn nodes(replicas: u32) -> Vec<String> {
    (0..node_count(replicas))
        .map(|_| text(NODE_NAME_MAX))
        .collect()
}

/// The size [`nodes`] adds to an object as its `nodes` field.
fn nodes_len(replicas: u32) -> usize {
    let n = node_count(replicas);
    list_field("nodes", n, n * (NODE_NAME_MAX + 2))
}

/// One node's neighbours at their longest: with its figures (the most pods listed, at the
/// longest names) or why they are missing, whichever is longer.
fn neighbour() -> Neighbours {
    let [figures, missing] = neighbour_forms();
    longer(figures, missing)
}

/// The two forms of [`neighbour`], with the figures and without, at their longest.
fn neighbour_forms() -> [Neighbours; 2] {
    let figures = Neighbours {
        node: text(NODE_NAME_MAX),
        foreign_cpu: Some(NEIGHBOUR_FIGURE_MAX),
        window_seconds: Some(NEIGHBOUR_FIGURE_MAX),
        busy: true,
        pods: (0..NEIGHBOUR_PODS_MAX)
            .map(|_| NeighbourPod {
                pod: text(NEIGHBOUR_POD_MAX),
                cpu: NEIGHBOUR_FIGURE_MAX,
            })
            .collect(),
        more_pods: Some(u32::MAX),
        missing: None,
    };
    let missing = Neighbours {
        node: text(NODE_NAME_MAX),
        missing: Some(text(NOTE_MAX)),
        ..Neighbours::default()
    };
    [figures, missing]
}

/// The neighbours of the nodes a measurement of a cell of `replicas` replicas records.
fn neighbours(replicas: u32) -> Vec<Neighbours> {
    (0..node_count(replicas)).map(|_| neighbour()).collect()
}

/// The size [`neighbours`] adds to an object as its `neighbours` field.
fn neighbours_len(replicas: u32) -> usize {
    let n = node_count(replicas);
    list_field("neighbours", n, n * len(&neighbour()))
}

/// What a measurement records of where it ran: its nodes and their neighbours.
fn placed_len(replicas: u32) -> usize {
    nodes_len(replicas) + neighbours_len(replicas)
}

/// A repetition, succeeded (a note about its timing, its results) or failed (a sentence, no
/// results; only a cell's last repetition can fail).
fn repetition(failed: bool, results: Vec<CellResult>) -> RepetitionStatus {
    RepetitionStatus {
        repetition: u32::MAX,
        phase: if failed {
            CellPhase::Failed
        } else {
            CellPhase::Succeeded
        },
        reason: Some(text(WORD_MAX)),
        message: Some(text(if failed { SENTENCE_MAX } else { NOTE_MAX })),
        start_time: Some(time()),
        load_start_time: Some(time()),
        completion_time: Some(time()),
        results,
        cpu_seconds_used: Some(NUMBER),
        overhead_seconds: Some(NUMBER),
        nodes: Vec::new(),
        neighbours: Vec::new(),
    }
}

fn replica_share(shape: &Shape) -> ReplicaShare {
    ReplicaShare {
        replica: text(WORD_MAX),
        phases: shape
            .phases
            .iter()
            .map(|p| ReplicaPhaseShare {
                phase: p.clone(),
                cpu_seconds_used: Some(NUMBER),
                requests_served: Some(NUMBER),
            })
            .collect(),
    }
}

fn target(per_replica: Vec<ReplicaShare>) -> TargetStats {
    TargetStats {
        replicas: Some(u32::MAX),
        host_cpus: Some(u32::MAX),
        detected_cpus: Some(u32::MAX),
        cpu_quota: Some(NUMBER),
        quota_source: Some(text(NOTE_MAX)),
        mode: Some(text(WORD_MAX)),
        pool_size: Some(u32::MAX),
        idle_rss_bytes: Some(u64::MAX),
        peak_rss_bytes: Some(u64::MAX),
        cpu_seconds_used: Some(NUMBER),
        throttled_periods: Some(u64::MAX),
        throttled_seconds: Some(NUMBER),
        cfs_periods: Some(u64::MAX),
        throttle_covered_seconds: Some(NUMBER),
        working_set_idle_bytes: Some(u64::MAX),
        working_set_peak_bytes: Some(u64::MAX),
        self_reported_cpu_seconds: Some(NUMBER),
        cpu_difference_percent: Some(NUMBER),
        source: Some(text(WORD_MAX)),
        note: Some(text(NOTE_MAX)),
        per_replica,
    }
}

fn pod() -> RecordedPod {
    RecordedPod {
        name: text(POD_NAME),
        node: Some(text(253)),
        uid: text(UID),
        restarts: i32::MIN,
    }
}

/// Replicas can be recorded twice over: a pod replaced while the load started, and its
/// replacement.
fn recorded_pods(replicas: u32) -> usize {
    2 * replicas as usize
}

/// The largest repetitions of a cell with `replicas` replicas in `shape`: none when the cell
/// is measured once, else every repetition but the last with its results, and the last as the
/// longer of one with results and one that failed; each with every replica's node and
/// neighbours. Apart from [`cell`] to keep that function a list of the cell's fields.
fn cell_repetitions(shape: &Shape, replicas: u32) -> Vec<RepetitionStatus> {
    let rep_results = || {
        shape
            .streams
            .iter()
            .map(|(p, e)| result(p, e, None))
            .collect()
    };
    let mut repetitions = Vec::new();
    if shape.repeat > 1 {
        repetitions = (1..shape.repeat)
            .map(|_| repetition(false, rep_results()))
            .collect();
        repetitions.push(longer(
            repetition(false, rep_results()),
            repetition(true, Vec::new()),
        ));
        for r in &mut repetitions {
            r.nodes = nodes(replicas);
            r.neighbours = neighbours(replicas);
        }
    }
    repetitions
}

/// The histograms a cell of `shape` holds while it is measured: each stream's at its whole
/// share of the budget, or none when the run keeps none (one repetition, or no share left).
/// Apart from [`cell`] to keep that function a list of the cell's fields.
fn cell_histograms(shape: &Shape) -> std::collections::BTreeMap<String, String> {
    match shape.histogram_share() {
        Some(share) => shape
            .streams
            .iter()
            .map(|(p, e)| (histogram_key(p, e), text(share)))
            .collect(),
        _ => Default::default(),
    }
}

/// The largest cell `i` of `shape` at `moment`, with its lists when `full` (else empty, for
/// counting them apart).
fn cell(shape: &Shape, i: usize, moment: Moment, full: bool) -> CellStatus {
    let (name, replicas) = &shape.cells[i];
    let (configuration, variant) = shape.variants_of.get(i).cloned().unzip();
    let running = moment == Moment::Running;
    let repetitions = if full {
        cell_repetitions(shape, *replicas)
    } else {
        Vec::new()
    };
    let histograms = if full && running {
        cell_histograms(shape)
    } else {
        Default::default()
    };
    let with_pods = full && running && shape.cell_with_most_pods() == Some(i);
    CellStatus {
        name: name.clone(),
        configuration,
        variant,
        reserved_cpu: Some(NUMBER),
        slot: (running && shape.slots > 0).then_some(u32::MAX),
        phase: CellPhase::Succeeded,
        reason: Some(text(WORD_MAX)),
        message: Some(text(SENTENCE_MAX)),
        start_time: Some(time()),
        step_start_time: Some(time()),
        load_start_time: Some(time()),
        completion_time: Some(time()),
        target: Some(target(if full {
            (0..*replicas).map(|_| replica_share(shape)).collect()
        } else {
            Vec::new()
        })),
        results: if full {
            shape
                .streams
                .iter()
                .map(|(p, e)| result(p, e, spread_of(shape)))
                .collect()
        } else {
            Vec::new()
        },
        enforcement: Some(Enforcement {
            target: text(WORD_MAX),
            loadgen: Some(text(WORD_MAX)),
            detail: Some(text(SENTENCE_MAX)),
        }),
        overhead_seconds: Some(NUMBER),
        nodes: if full && shape.repeat <= 1 {
            nodes(*replicas)
        } else {
            Vec::new()
        },
        neighbours: if full && shape.repeat <= 1 {
            neighbours(*replicas)
        } else {
            Vec::new()
        },
        target_pods: if with_pods {
            (0..recorded_pods(*replicas)).map(|_| pod()).collect()
        } else {
            Vec::new()
        },
        repetitions,
        histograms,
        precision: shape.adaptive.then(|| CellPrecision {
            precise: false,
            repetitions: u32::MAX,
            widest_figure: Some(text(NOTE_MAX)),
            widest_percent: Some(NUMBER),
            message: text(NOTE_MAX),
        }),
        capacity: if full { capacity(shape) } else { None },
    }
}

/// The size of [`cell`] with its lists, counted from its parts.
fn cell_len(shape: &Shape, i: usize, moment: Moment, parts: &Parts) -> usize {
    let (name, replicas) = &shape.cells[i];
    let streams = shape.streams.len();
    let running = moment == Moment::Running;
    let mut n = parts.cell_base + json_len(name);
    if let Some((configuration, variant)) = shape.variants_of.get(i) {
        n += field("configuration", json_len(configuration) + 2)
            + field("variant", json_len(variant) + 2);
    }
    n += list_field(
        "perReplica",
        *replicas as usize,
        *replicas as usize * parts.replica_share,
    );
    n += list_field("results", streams, parts.results_with_spread);
    if shape.repeat > 1 {
        let repeat = shape.repeat as usize;
        let last = parts.repetition_failed.max(parts.repetition_ok);
        n += list_field(
            "repetitions",
            repeat,
            (repeat - 1) * parts.repetition_ok + last + repeat * placed_len(*replicas),
        );
    } else {
        n += placed_len(*replicas);
    }
    if running && let Some(share) = shape.histogram_share() {
        let entries: usize = shape
            .streams
            .iter()
            .map(|(p, e)| json_len(&histogram_key(p, e)) + 2 + 1 + share + 2)
            .sum();
        n += if streams == 0 {
            0
        } else {
            field("histograms", list(streams, entries))
        };
    }
    if running && shape.cell_with_most_pods() == Some(i) {
        let pods = recorded_pods(*replicas);
        n += list_field("targetPods", pods, pods * len(&pod()));
    }
    if let Some(c) = parts.capacity {
        n += field("capacity", c);
    }
    n
}

/// A cell's largest capacity search: every probe it may hold ([`Shape::probes_per_cell`]),
/// each with every figure failed at its longest and why.
fn capacity(shape: &Shape) -> Option<crate::resource::capacity::CapacityStatus> {
    let mut search = capacity_without_probes(shape)?;
    search.probes = vec![largest_probe(shape)?; shape.probes_per_cell() as usize];
    Some(search)
}

/// The size of [`capacity`], counted from one probe: a search may hold thousands of them (40
/// probes a round, 20 rounds, of up to 512 figures each).
fn capacity_len(shape: &Shape) -> Option<usize> {
    let n = shape.probes_per_cell() as usize;
    let probe = len(&largest_probe(shape)?);
    Some(len(&capacity_without_probes(shape)?) + list_field("probes", n, n * probe))
}

/// The largest probe of a search: every figure failed at its longest, and why.
fn largest_probe(shape: &Shape) -> Option<crate::resource::capacity::ProbeStatus> {
    use crate::resource::capacity::{CheckPurpose, ProbeFigure, ProbeStatus, ProbeVerdict};
    let (_, figures) = shape.capacity.as_ref()?;
    Some(ProbeStatus {
        probe: u32::MAX,
        round: (shape.repeat > 1).then_some(u32::MAX),
        rate: NUMBER,
        achieved: NUMBER,
        sent_on_time: Some(NUMBER),
        backlog: Some(NUMBER),
        figures: figures
            .iter()
            .map(|e| ProbeFigure {
                endpoint: e.clone(),
                figure: "errorRate".into(),
                measured: Some(NUMBER),
                limit: NUMBER,
                pass: false,
            })
            .collect(),
        verdict: ProbeVerdict::LoadgenBound,
        close: true,
        check: Some(CheckPurpose::RuleOut),
        why: Some(text(NOTE_MAX)),
        settle_seconds: Some(u32::MAX),
    })
}

/// A cell's largest capacity search without its probes: its outcome, each round's, and its
/// check at a fixed rate, at their longest.
fn capacity_without_probes(shape: &Shape) -> Option<crate::resource::capacity::CapacityStatus> {
    use crate::resource::capacity::{
        CapacityRound, CapacityStatus, CheckPurpose, RateCheck, SearchEnding,
    };
    shape.capacity.as_ref()?;
    let rounds = shape.repeat.max(1);
    Some(CapacityStatus {
        found: false,
        ending: Some(SearchEnding::LoadGeneratorBound),
        held_rate: Some(NUMBER),
        failed_rate: Some(NUMBER),
        limiting: Some(text(NOTE_MAX)),
        message: text(SENTENCE_MAX),
        probes: Vec::new(),
        rounds: if rounds > 1 {
            vec![
                CapacityRound {
                    round: u32::MAX,
                    found: false,
                    ending: Some(SearchEnding::LoadGeneratorBound),
                    held_rate: Some(NUMBER),
                    failed_rate: Some(NUMBER),
                    limiting: Some(text(NOTE_MAX)),
                    message: text(SENTENCE_MAX),
                };
                rounds as usize
            ]
        } else {
            Vec::new()
        },
        held_rate_low: Some(NUMBER),
        held_rate_high: Some(NUMBER),
        start_time: Some(time()),
        check: Some(RateCheck {
            purpose: CheckPurpose::RuleOut,
            rate: NUMBER,
            wanted: u32::MAX,
            done: true,
            message: text(SENTENCE_MAX),
        }),
        targets: u32::MAX,
        settle_seconds: Some(u32::MAX),
        fresh_target_seconds: Some(u32::MAX),
    })
}

/// Sizes shared by every cell, worked out once.
struct Parts {
    /// A cell with an empty name and no lists.
    cell_base: usize,
    replica_share: usize,
    /// Every stream's result with its spread, together.
    results_with_spread: usize,
    repetition_ok: usize,
    repetition_failed: usize,
    /// A cell's capacity search, with every probe.
    capacity: Option<usize>,
}

impl Parts {
    fn of(shape: &Shape, moment: Moment) -> Self {
        let result_len = |spread: Option<u32>| {
            let base = len(&result("", "", spread));
            shape
                .streams
                .iter()
                .map(|(p, e)| base + json_len(p) + json_len(e))
                .sum::<usize>()
        };
        let mut probe = shape.clone();
        probe.cells = vec![(String::new(), 1)];
        probe.variants_of.clear();
        let ok_base = len(&repetition(false, Vec::new()));
        Parts {
            cell_base: len(&cell(&probe, 0, moment, false)),
            replica_share: len(&replica_share(shape)),
            results_with_spread: result_len(spread_of(shape)),
            repetition_ok: ok_base + list_field("results", shape.streams.len(), result_len(None)),
            repetition_failed: len(&repetition(true, Vec::new())),
            capacity: capacity_len(shape),
        }
    }
}

fn condition(type_: &str) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: conditions::status::FALSE.to_owned(),
        reason: text(WORD_MAX),
        message: text(SENTENCE_MAX),
        observed_generation: Some(i64::MIN),
        last_transition_time: time(),
    }
}

fn comparison(shape: &Shape, phase: &str, endpoint: &str, full: bool) -> Comparison {
    Comparison {
        phase: phase.to_owned(),
        endpoint: endpoint.to_owned(),
        best_cell: Some(text(shape.longest_cell())),
        cells: if full {
            shape
                .cells
                .iter()
                .map(|(name, _)| cell_ratio(shape, name))
                .collect()
        } else {
            Vec::new()
        },
    }
}

/// A cell's entry in a comparison: ranked (its ratios, perhaps within noise of another cell)
/// or excluded (why), never both, whichever is longer.
fn cell_ratio(shape: &Shape, name: &str) -> CellRatio {
    let [ranked, excluded] = cell_ratios(shape, name);
    longer(ranked, excluded)
}

/// The two forms of [`cell_ratio`], ranked and excluded, at their longest.
fn cell_ratios(shape: &Shape, name: &str) -> [CellRatio; 2] {
    let ranked = CellRatio {
        cell: name.to_owned(),
        samples: u64::MAX,
        p99_ms: Some(NUMBER),
        p99_ratio: Some(NUMBER),
        rps: NUMBER,
        rps_ratio: Some(NUMBER),
        excluded: None,
        within_noise_of: Some(text(shape.longest_cell())),
    };
    let excluded = CellRatio {
        p99_ratio: None,
        rps_ratio: None,
        within_noise_of: None,
        excluded: Some(text(EXCLUDED_MAX)),
        ..ranked.clone()
    };
    [ranked, excluded]
}

fn longer<T: serde::Serialize>(a: T, b: T) -> T {
    if len(&b) > len(&a) { b } else { a }
}

/// An interference entry: a ratio or why there is none, whichever is longer.
fn interference(cell: &str, endpoint: &str, solo: &str, mixed: &str) -> Interference {
    let [ratio, excluded] = interferences(cell, endpoint, solo, mixed);
    longer(ratio, excluded)
}

/// The two forms of [`interference`], with a ratio and without, at their longest.
fn interferences(cell: &str, endpoint: &str, solo: &str, mixed: &str) -> [Interference; 2] {
    let ratio = Interference {
        cell: cell.to_owned(),
        endpoint: endpoint.to_owned(),
        solo_phase: solo.to_owned(),
        mixed_phase: mixed.to_owned(),
        solo_p99_ms: Some(NUMBER),
        mixed_p99_ms: Some(NUMBER),
        ratio: Some(NUMBER),
        excluded: None,
    };
    let excluded = Interference {
        ratio: None,
        excluded: Some(text(EXCLUDED_MAX)),
        ..ratio.clone()
    };
    [ratio, excluded]
}

/// A threshold's verdict on `cell`: its phase and endpoint are names of the spec, or "?".
fn threshold_result(shape: &Shape, cell: &str) -> ThresholdResult {
    let line = bound::line_max(shape.room());
    let longest = |names: &mut dyn Iterator<Item = &String>| {
        names.map(|n| json_len(n)).max().unwrap_or(0).max(1)
    };
    ThresholdResult {
        index: u32::MAX,
        threshold: text(line),
        figure: text(WORD_MAX),
        cell: cell.to_owned(),
        phase: text(longest(&mut shape.phases.iter())),
        endpoint: text(longest(&mut shape.streams.iter().map(|(_, e)| e))),
        measured: Some(NUMBER),
        limit: Some(NUMBER),
        ratio: Some(NUMBER),
        verdict: Verdict::Fail,
        message: text(line),
        unstable: true,
    }
}

/// A candidate's comparison with the base in one configuration, at its longest: a ratio per
/// round for every figure of every stream.
fn variant_comparison(shape: &Shape, configuration: &str, candidate: &str) -> VariantComparison {
    let base = shape
        .variants_of
        .first()
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    VariantComparison {
        configuration: configuration.to_owned(),
        base,
        candidate: candidate.to_owned(),
        rounds: u32::MAX,
        figures: shape
            .streams
            .iter()
            .flat_map(|(p, e)| {
                (0..RATIO_FIGURES).map(move |_| RatioFigure {
                    phase: p.clone(),
                    endpoint: e.clone(),
                    figure: text(4),
                    base: NUMBER,
                    candidate: NUMBER,
                    ratios: vec![NUMBER; shape.repeat as usize],
                    ratio: NUMBER,
                    ratio_low: Some(NUMBER),
                    ratio_high: Some(NUMBER),
                    p_worse: NUMBER,
                    p_better: NUMBER,
                    verdict: ChangeVerdict::WithinNoise,
                })
            })
            .collect(),
    }
}

/// Every candidate's comparison in every configuration.
fn variant_comparisons(shape: &Shape) -> Vec<VariantComparison> {
    shape
        .comparisons
        .iter()
        .flat_map(|(configuration, candidates)| {
            candidates
                .iter()
                .map(|c| variant_comparison(shape, configuration, c))
        })
        .collect()
}

/// The run-level fields of the largest status at `moment`, without cells, summary lists or
/// verdicts.
fn status_base(shape: &Shape, moment: Moment) -> BenchmarkRunStatus {
    let finished = moment == Moment::Finished;
    let total = shape.cells.len() * shape.repeat as usize;
    BenchmarkRunStatus {
        phase: RunPhase::Succeeded,
        message: Some(text(shape.message_max())),
        observed_generation: Some(i64::MIN),
        start_time: Some(time()),
        completion_time: Some(time()),
        progress: Some(format!("{total}/{total}")),
        headline: finished.then(|| text(SENTENCE_MAX)),
        conditions: [
            conditions::SPEC_VALID,
            conditions::PROGRESSING,
            conditions::COMPLETE,
            conditions::CELL_FAILED,
            conditions::THRESHOLDS_MET,
        ]
        .into_iter()
        .map(condition)
        .collect(),
        cells: Vec::new(),
        summary: finished.then(|| Summary {
            recommendation: Some(text(SENTENCE_MAX)),
            ..Summary::default()
        }),
        thresholds: Vec::new(),
        parallelism: (shape.slots > 0).then(|| ParallelismStatus {
            asked: text(WORD_MAX),
            slots: u32::MAX,
            node_sets: (0..shape.slots)
                .map(|_| (0..NODES_MAX).map(|_| text(NODE_NAME_MAX)).collect())
                .collect(),
            message: text(SENTENCE_MAX),
        }),
        variants: Vec::new(),
        sizing: shape.sizing.as_ref().map(sizing),
    }
}

/// The largest sizing status: every configuration with every figure and its longest reason,
/// every note, and the chosen one with its autoscaler target.
fn sizing(
    (names, env): &(Vec<String>, Vec<crate::resource::EnvVar>),
) -> crate::resource::sizing::SizingStatus {
    use crate::resource::sizing::{
        ChosenConfiguration, HpaTarget, SizedConfiguration, SizedState, SizingOutcome, SizingStatus,
    };
    let longest = names
        .iter()
        .max_by_key(|n| n.len())
        .cloned()
        .unwrap_or_default();
    SizingStatus {
        traffic: NUMBER,
        target_rate: NUMBER,
        outcome: SizingOutcome::NothingHolds,
        message: text(SENTENCE_MAX),
        next: vec![longest.clone(); shape_next(names.len())],
        searched: u32::MAX,
        chosen: Some(ChosenConfiguration {
            configuration: longest.clone(),
            mode: text(WORD_MAX),
            replicas: u32::MAX,
            cpu: text(WORD_MAX),
            memory: text(WORD_MAX),
            env: env.clone(),
            reserved_cpu: NUMBER,
            held_rate: NUMBER,
            headroom: NUMBER,
            confirmed: text(NOTE_MAX),
            hpa: Some(HpaTarget {
                utilization_at_held: NUMBER,
                target_utilization: u32::MAX,
                min_replicas: u32::MAX,
                max_replicas: u32::MAX,
            }),
        }),
        configurations: names
            .iter()
            .map(|n| SizedConfiguration {
                name: n.clone(),
                reserved_cpu: NUMBER,
                state: SizedState::Unmeasured,
                held_rate: Some(NUMBER),
                failed_rate: Some(NUMBER),
                bound: Some(NUMBER),
                predicted: Some(NUMBER),
                why: Some(text(NOTE_MAX)),
            })
            .collect(),
        notes: vec![text(NOTE_MAX); bound::SIZING_NOTES_MAX],
    }
}

/// The most configurations a sizing search names as next: one per slot, at most all.
fn shape_next(configurations: usize) -> usize {
    configurations.min(crate::resource::parallelism::MAX_PARALLELISM as usize)
}

/// The largest status the engine can write for `shape` at `moment`, built in full (what
/// [`status_bound`] counts without building it).
pub fn worst_status(shape: &Shape, moment: Moment) -> BenchmarkRunStatus {
    let mut status = status_base(shape, moment);
    status.cells = (0..shape.cells.len())
        .map(|i| cell(shape, i, moment, true))
        .collect();
    if let Some(summary) = &mut status.summary {
        let line = text(bound::line_max(shape.room()));
        summary.comparisons = shape
            .streams
            .iter()
            .map(|(p, e)| comparison(shape, p, e, true))
            .collect();
        for (name, _) in &shape.cells {
            for (e, solo, mixed) in &shape.interference {
                summary
                    .interference
                    .push(interference(name, e, solo, mixed));
            }
            for _ in &shape.streams {
                summary.needs_longer_phase.push(line.clone());
            }
        }
        status.thresholds = shape
            .thresholds
            .iter()
            .flat_map(|selected| {
                selected
                    .iter()
                    .map(|&i| threshold_result(shape, &shape.cells[i].0))
            })
            .collect();
        status.variants = variant_comparisons(shape);
    }
    status
}

/// The serialized size of [`worst_status`] at `moment`, as the API server writes it.
pub fn status_bound(shape: &Shape, moment: Moment) -> usize {
    let parts = Parts::of(shape, moment);
    let cells: usize = (0..shape.cells.len())
        .map(|i| cell_len(shape, i, moment, &parts))
        .sum();
    let mut n = len(&status_base(shape, moment)) + list_field("cells", shape.cells.len(), cells);
    if moment == Moment::Finished {
        let (streams, count) = (&shape.streams, shape.cells.len());
        let ratio_base = len(&cell_ratio(shape, ""));
        let ratios: usize = shape
            .cells
            .iter()
            .map(|(name, _)| ratio_base + json_len(name))
            .sum();
        let comparison_base = len(&comparison(shape, "", "", false)) - 2 + list(count, ratios);
        let comparisons: usize = streams
            .iter()
            .map(|(p, e)| comparison_base + json_len(p) + json_len(e))
            .sum();
        n += list_field("comparisons", streams.len(), comparisons);
        let per_cell: usize = shape
            .interference
            .iter()
            .map(|(e, solo, mixed)| len(&interference("", e, solo, mixed)))
            .sum();
        let names: usize = shape.cells.iter().map(|(name, _)| json_len(name)).sum();
        let pairs = shape.interference.len();
        n += list_field(
            "interference",
            count * pairs,
            count * per_cell + pairs * names,
        );
        let line = 2 + bound::line_max(shape.room());
        n += list_field(
            "needsLongerPhase",
            count * streams.len(),
            count * streams.len() * line,
        );
        let verdict_base = len(&threshold_result(shape, ""));
        let (mut verdicts, mut verdict_bytes) = (0, 0);
        for &i in shape.thresholds.iter().flatten() {
            verdicts += 1;
            verdict_bytes += verdict_base + json_len(&shape.cells[i].0);
        }
        n += list_field("thresholds", verdicts, verdict_bytes);
        let comparisons = variant_comparisons(shape);
        let bytes: usize = comparisons.iter().map(len).sum();
        n += list_field("variants", comparisons.len(), bytes);
    }
    n
}

/// The largest the status can be at any moment of the run.
pub fn largest_status(shape: &Shape) -> usize {
    status_bound(shape, Moment::Running).max(status_bound(shape, Moment::Finished))
}

/// The largest the whole object can be: `run` as applied (spec and metadata) with its largest
/// status.
pub fn largest_object(run: &BenchmarkRun, shape: &Shape) -> usize {
    applied_len(run) + field("status", largest_status(shape))
}

/// The run as applied: spec and metadata, without a status.
fn applied_len(run: &BenchmarkRun) -> usize {
    let mut applied = run.clone();
    applied.status = None;
    len(&applied)
}

/// The way to measure each cell at most `r` times that the spec's form of `repeat` allows: a
/// lower count, or a lower `max` (with `min` lowered too when it is above `r`, and the plain
/// count when `r` is below what the adaptive form needs).
fn fewer_repetitions(repeat: &crate::resource::Repeat, r: u32) -> String {
    use crate::resource::Repeat;
    use crate::resource::repeat::MIN_ADAPTIVE_ROUNDS;
    match *repeat {
        Repeat::Times(n) => format!("spec.repeat {r} (now {n})"),
        Repeat::UntilPrecise { min, max, .. } if r >= min => {
            format!("spec.repeat.max {r} (now {max})")
        }
        Repeat::UntilPrecise { min, max, .. } if r >= MIN_ADAPTIVE_ROUNDS => {
            format!("spec.repeat.min and spec.repeat.max {r} (now {min} and {max})")
        }
        Repeat::UntilPrecise { min, max, .. } => {
            format!("spec.repeat {r}, a plain count (now {{min: {min}, max: {max}}})")
        }
    }
}

fn mib(bytes: usize) -> String {
    format!("{:.2} MiB", bytes as f64 / (1 << 20) as f64)
}

/// Why `run` cannot run on a cluster because its object could outgrow [`OBJECT_LIMIT`], with
/// what would make it fit; `None` when it fits.
pub fn refusal(run: &BenchmarkRun) -> Option<FieldError> {
    let shape = Shape::of(&run.spec);
    // The spec as applied stands for the smaller ones suggested too (it is not rewritten).
    let applied = applied_len(run);
    let object = |s: &Shape| applied + field("status", largest_status(s));
    let size = object(&shape);
    if size <= OBJECT_LIMIT {
        return None;
    }
    let ways = ways_to_fit(&run.spec, &shape, &|s: &Shape| object(s) <= OBJECT_LIMIT);
    // Each replica has its share of every phase in the status.
    let replicas = if shape.cells.iter().any(|c| c.1 > 1) {
        ", or fewer replicas"
    } else {
        ""
    };
    let (holds, others) = match &shape.capacity {
        None => (
            format!(
                "{} cells x {} repetitions x {} streams",
                shape.cells.len(),
                shape.repeat,
                shape.streams.len()
            ),
            "fewer streams in spec.workload.phases[].load",
        ),
        // A probe records each figure of the service level for each endpoint it names.
        Some((_, figures)) => (
            format!(
                "{} cells x {} probes x {} SLO figures",
                shape.cells.len(),
                shape.probes_per_cell(),
                figures.len()
            ),
            "fewer figures in spec.capacity.slo or endpoints in spec.capacity.mix",
        ),
    };
    let fix = if ways.is_empty() {
        format!("{others}{replicas}")
    } else {
        format!(
            "it fits with {}; or {others}{replicas}",
            ways.join(", or with ")
        )
    };
    Some(FieldError::new(
        "spec",
        format!(
            "the run's object could grow to {} once its status holds every figure ({holds}), \
             more than the {} a BenchmarkRun may take (etcd keeps objects under 1.5 MiB; past \
             that every status write fails); {fix}",
            mib(size),
            "1 MiB",
        ),
    ))
}

/// The smaller runs of `spec` (whose shape is `shape`) that `fits` admits, each the largest of
/// its kind, in words: fewer repetitions (or rounds of a search), fewer probes a search, and
/// fewer cells (the first ones), or with spec.sizing a smaller space (whose cells cannot be
/// picked).
fn ways_to_fit(
    spec: &BenchmarkRunSpec,
    shape: &Shape,
    fits: &dyn Fn(&Shape) -> bool,
) -> Vec<String> {
    let mut ways = Vec::new();
    if let Some(r) = (1..shape.repeat)
        .rev()
        .find(|&r| fits(&shape.with_repeat(r)))
    {
        ways.push(fewer_repetitions(&spec.repeat, r));
    }
    if let Some((max_probes, _)) = shape.capacity
        && let Some(m) = (MIN_PROBES..max_probes)
            .rev()
            .find(|&m| fits(&shape.with_max_probes(m)))
    {
        ways.push(format!("spec.capacity.maxProbes {m} (now {max_probes})"));
    }
    let total = shape.cells.len();
    if shape.sizing.is_some() {
        if let Some(n) = (1..total)
            .rev()
            .find(|&n| fits(&shape.largest_configurations(n)))
        {
            ways.push(format!(
                "a space of at most {n} configurations in spec.sizing.search (now {total})"
            ));
        }
    } else if let Some(n) = (1..total).rev().find(|&n| fits(&shape.first_cells(n))) {
        ways.push(match n {
            1 => format!("only the first of its {total} cells"),
            n => format!("only the first {n} of its {total} cells"),
        });
    }
    ways
}

#[cfg(test)]
mod tests;
