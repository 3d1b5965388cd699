//! The figures of finished runs, for Prometheus: latency percentiles, throughput, requests and
//! errors per cell, phase and endpoint; the target's CPU and CFS throttling per cell; and per
//! run when it ended and with which verdict. Served beside the operator's own metrics on
//! `/metrics` (a [`Collector`] in the registry of `executors/cluster/telemetry/metrics.rs`), and by
//! `benchmatrix metrics` (`frontends/metrics.rs`) for statuses saved by the local runner. Pure
//! (statuses in, text out), so both can use it; [`dashboard`] builds the Grafana dashboard on
//! the same families.
//!
//! Cardinality is bounded: only the [`RunMetrics::limit`] runs that finished last are kept (one
//! per namespace and name: a run created again under its name replaces the earlier one), and
//! no label takes a value from outside the run's own spec (namespace, run, cell, phase,
//! endpoint, configuration and variant, a percentile of four, a figure of three, a verdict of
//! two or three). Repetitions are not a label: a cell's figures are the medians over its
//! repetitions, the figures the report, the ranking and the thresholds use, and a label per
//! repetition would multiply every series by up to 20 for values that status.yaml and
//! report.md already show with their spread. Variants are a label (`variant`, with the cell's
//! `configuration`): a variant is a cell of its own, so the label adds no series, it only lets
//! a query put a configuration's variants side by side. Each candidate's ratios to the base
//! (status.variants) are families of their own, labelled by configuration, base, candidate,
//! phase, endpoint and figure.
//!
//! Names follow the Prometheus conventions: base units (seconds), `_total` for counts (the
//! requests of a finished measurement never go down), `_per_second` for a rate.

pub mod dashboard;

use std::collections::BTreeMap;
use std::sync::Mutex;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

use crate::engine::verdict::outcome::Outcome;
use crate::resource::conditions::secs_of;
use crate::resource::status::{ChangeVerdict, Percentile, VariantComparison};
use crate::resource::{BenchmarkRunStatus, CellPhase, CellResult, CellStatus, Verdict};

/// The Content-Type of the OpenMetrics text that [`RunMetrics::render`] and the operator's own
/// metrics write.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Runs kept by default (`benchmatrix operator --exported-runs`).
pub const DEFAULT_EXPORTED_RUNS: usize = 10;

/// Most runs `--exported-runs` may ask for: a run of the largest matrix the spec allows writes
/// tens of thousands of series, so the bound must stay a bound.
pub const MAX_EXPORTED_RUNS: usize = 100;

/// `--exported-runs`: a whole number from 0 to [`MAX_EXPORTED_RUNS`].
pub fn parse_limit(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n <= MAX_EXPORTED_RUNS => Ok(n),
        _ => Err(format!(
            "{s:?} is not a number of runs from 0 to {MAX_EXPORTED_RUNS}"
        )),
    }
}

/// Gauge or counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A value that may go up and down.
    Gauge,
    /// A count; its samples end in `_total`.
    Counter,
}

/// One metric family this module writes.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// The name without unit and `_total`.
    pub base: &'static str,
    /// Seconds, or none.
    pub seconds: bool,
    /// Gauge or counter.
    pub kind: Kind,
    /// The HELP text.
    pub help: &'static str,
}

impl Family {
    /// The name a PromQL query uses: the base, `_seconds` for a time, `_total` for a counter.
    pub fn sample_name(&self) -> String {
        let unit = if self.seconds { "_seconds" } else { "" };
        let total = if self.kind == Kind::Counter {
            "_total"
        } else {
            ""
        };
        format!("{}{unit}{total}", self.base)
    }
}

macro_rules! families {
    ($($id:ident = $base:literal, $seconds:literal, $kind:ident, $help:literal;)*) => {
        /// Index of each family in [`FAMILIES`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[allow(non_camel_case_types, missing_docs)]
        pub enum F { $($id),* }

        /// Every family, in the order written.
        pub const FAMILIES: &[Family] = &[
            $(Family { base: $base, seconds: $seconds, kind: Kind::$kind, help: $help }),*
        ];
    };
}

families! {
    Latency = "benchmatrix_run_latency", true, Gauge,
        "Latency percentile (p50, p90, p99, p999) of a finished run's stream, the median over repetitions; a percentile its samples cannot support is left out";
    LatencyMax = "benchmatrix_run_latency_max", true, Gauge,
        "Largest latency of a finished run's stream, the median over repetitions";
    Rps = "benchmatrix_run_requests_per_second", false, Gauge,
        "Successful requests per second of a finished run's stream";
    Requests = "benchmatrix_run_requests", false, Counter,
        "Requests a finished run's stream completed, successfully or not";
    Errors = "benchmatrix_run_errors", false, Counter,
        "Requests of a finished run's stream that failed (connect, timeout, non-2xx)";
    CpuUsed = "benchmatrix_run_target_cpu", true, Counter,
        "CPU the target of a finished run's cell used over the measured phases, summed over replicas";
    Throttled = "benchmatrix_run_target_cfs_throttled", true, Counter,
        "Time the target of a finished run's cell was throttled by its CPU quota, summed over replicas";
    ThrottledPeriods = "benchmatrix_run_target_cfs_throttled_periods", false, Counter,
        "CFS periods in which the target of a finished run's cell was throttled, summed over replicas";
    Periods = "benchmatrix_run_target_cfs_periods", false, Counter,
        "CFS periods in which the target of a finished run's cell ran, summed over replicas";
    Measured = "benchmatrix_run_cell_measured", false, Gauge,
        "1 when the cell of a finished run was measured, 0 when it failed or was skipped";
    Repetitions = "benchmatrix_run_cell_repetitions", false, Gauge,
        "Measurements the figures of a finished run's cell are the median of";
    Capacity = "benchmatrix_run_cell_capacity_requests_per_second", false, Gauge,
        "With spec.capacity: the highest total rate a finished run's cell held at the SLO, where its search found one";
    Completed = "benchmatrix_run_completion_timestamp", true, Gauge,
        "When a finished run ended, in seconds since the epoch";
    Duration = "benchmatrix_run_duration", true, Gauge,
        "How long a finished run took, first deploy to end";
    ExitCode = "benchmatrix_run_exit_code", false, Gauge,
        "The exit code benchmatrix run and kubectl benchmatrix run give a finished run: 0 all measured, 1 a cell failed, 2 refused, 3 a threshold failed, 130 interrupted";
    Thresholds = "benchmatrix_run_thresholds", false, Gauge,
        "Threshold verdicts of a finished run, by verdict";
    Finished = "benchmatrix_runs_finished", false, Counter,
        "Runs this process saw finish, by outcome (runs finished before it started are not counted)";
    Exported = "benchmatrix_exported_runs", false, Gauge,
        "Finished runs whose figures are exported now (at most --exported-runs)";
    VariantRounds = "benchmatrix_run_variant_rounds", false, Gauge,
        "Rounds in which a candidate variant and the base were both measured: the ratios behind each of its figures";
    VariantRatio = "benchmatrix_run_variant_ratio", false, Gauge,
        "Median over the rounds of a candidate variant's figure divided by the base's (p50, p99: above 1 is slower; rps: above 1 is faster)";
    VariantRatioLow = "benchmatrix_run_variant_ratio_interval_low", false, Gauge,
        "Low end of the 95% bootstrap confidence interval of the median ratio (from 3 rounds)";
    VariantRatioHigh = "benchmatrix_run_variant_ratio_interval_high", false, Gauge,
        "High end of the 95% bootstrap confidence interval of the median ratio (from 3 rounds)";
    VariantPWorse = "benchmatrix_run_variant_p_worse", false, Gauge,
        "One-sided exact Wilcoxon signed-rank p-value over the rounds' log ratios that the candidate's figure is worse than the base's";
    VariantPBetter = "benchmatrix_run_variant_p_better", false, Gauge,
        "One-sided exact Wilcoxon signed-rank p-value over the rounds' log ratios that the candidate's figure is better than the base's";
    VariantVerdict = "benchmatrix_run_variant_verdict", false, Gauge,
        "1 for the verdict a candidate variant's figure got against the base (regression, improvement, within_noise), 0 for the others";
}

/// Labels of one sample: fixed names, values from the run.
type Labels = Vec<(&'static str, String)>;

/// One sample of a finished run.
#[derive(Debug, Clone, PartialEq)]
struct RunSample {
    family: F,
    labels: Labels,
    value: f64,
}

/// The samples of one finished run.
#[derive(Debug, Clone)]
struct FinishedRun {
    namespace: Option<String>,
    name: String,
    completed: i64,
    samples: Vec<RunSample>,
}

/// The figures of the runs that finished last, and the count of runs seen finishing.
#[derive(Debug)]
pub struct RunMetrics {
    limit: usize,
    /// Newest first; at most `limit`.
    runs: Mutex<Vec<FinishedRun>>,
    /// Runs seen finishing, by outcome.
    finished: Mutex<BTreeMap<&'static str, u64>>,
}

impl Default for RunMetrics {
    fn default() -> Self {
        RunMetrics::new(DEFAULT_EXPORTED_RUNS)
    }
}

impl RunMetrics {
    /// Keeps the figures of the `limit` runs that finished last.
    pub fn new(limit: usize) -> Self {
        RunMetrics {
            limit,
            runs: Mutex::new(Vec::new()),
            finished: Mutex::new(BTreeMap::new()),
        }
    }

    /// How many runs are kept at most.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Looks at a run's status after a reconcile: `new` is what the run has now, `old` what it
    /// had before this reconcile. A finished run's figures are kept (or replace its earlier
    /// ones); a run that has just finished is counted by outcome.
    pub fn observe(
        &self,
        namespace: Option<&str>,
        name: &str,
        old: &BenchmarkRunStatus,
        new: &BenchmarkRunStatus,
    ) {
        if !new.phase.is_finished() {
            return;
        }
        if !old.phase.is_finished()
            && let Ok(mut finished) = self.finished.lock()
        {
            *finished.entry(outcome_label(Outcome::of(new))).or_default() += 1;
        }
        self.record(namespace, name, new);
    }

    /// Keeps the figures of the finished run `namespace/name`, unless `limit` runs that ended
    /// later are kept already. Unfinished statuses are ignored.
    pub fn record(&self, namespace: Option<&str>, name: &str, status: &BenchmarkRunStatus) {
        if !status.phase.is_finished() || self.limit == 0 {
            return;
        }
        let run = FinishedRun {
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
            completed: status.completion_time.as_ref().map_or(0, secs_of),
            samples: samples(namespace, name, status),
        };
        let Ok(mut runs) = self.runs.lock() else {
            return;
        };
        runs.retain(|r| (r.namespace.as_deref(), r.name.as_str()) != (namespace, name));
        // Newest first; equal times by name, so the order (and what is dropped) is stable.
        let at = runs.partition_point(|r| {
            (r.completed, std::cmp::Reverse(&r.name))
                > (run.completed, std::cmp::Reverse(&run.name))
        });
        runs.insert(at, run);
        runs.truncate(self.limit);
    }

    /// The runs kept, newest first, as "namespace/name" (or "name").
    pub fn kept(&self) -> Vec<String> {
        self.runs.lock().map_or_else(
            |_| Vec::new(),
            |runs| {
                runs.iter()
                    .map(|r| match &r.namespace {
                        Some(ns) => format!("{ns}/{}", r.name),
                        None => r.name.clone(),
                    })
                    .collect()
            },
        )
    }

    /// The metrics alone in the OpenMetrics text format (what `benchmatrix metrics` serves).
    pub fn render(self: &std::sync::Arc<Self>) -> String {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(self.clone()));
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
            tracing::error!(error = %e, "cannot encode the figures of finished runs");
        }
        out
    }
}

/// The `outcome` label of [`F::Finished`].
fn outcome_label(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::AllSucceeded => "all_measured",
        Outcome::SomeFailed => "cell_failed",
        Outcome::NoAnswer => "no_answer",
        Outcome::ThresholdsFailed => "thresholds_failed",
        Outcome::Refused => "refused",
        Outcome::Interrupted => "interrupted",
        Outcome::Regressed => "regressed",
    }
}

/// The labels of a run: its namespace (where it has one) and name.
fn run_labels(namespace: Option<&str>, name: &str) -> Labels {
    let mut labels = Labels::new();
    if let Some(ns) = namespace {
        labels.push(("namespace", ns.to_owned()));
    }
    labels.push(("run", name.to_owned()));
    labels
}

/// The labels of a cell of the run labelled `run`. A cell of a run with variants (a
/// configuration x variant) adds its `configuration` and `variant` labels here, and only where
/// it has them: every family of a cell, its streams' included, takes its labels from this one
/// place.
fn cell_labels(run: &Labels, cell: &CellStatus) -> Labels {
    let mut labels = run.clone();
    labels.push(("cell", cell.name.clone()));
    if let (Some(configuration), Some(variant)) = (&cell.configuration, &cell.variant) {
        labels.push(("configuration", configuration.clone()));
        labels.push(("variant", variant.clone()));
    }
    labels
}

/// The labels of one stream of a cell.
fn stream_labels(cell: &Labels, result: &CellResult) -> Labels {
    let mut labels = cell.clone();
    labels.push(("phase", result.phase.clone()));
    labels.push(("endpoint", result.endpoint.clone()));
    labels
}

fn with(labels: &Labels, name: &'static str, value: impl Into<String>) -> Labels {
    let mut labels = labels.clone();
    labels.push((name, value.into()));
    labels
}

/// Every sample of a finished run.
fn samples(namespace: Option<&str>, name: &str, status: &BenchmarkRunStatus) -> Vec<RunSample> {
    let run = run_labels(namespace, name);
    let mut out = Vec::new();
    let mut push = |family, labels: &Labels, value: f64| {
        out.push(RunSample {
            family,
            labels: labels.clone(),
            value,
        });
    };
    if let Some(end) = &status.completion_time {
        push(F::Completed, &run, secs_of(end) as f64);
        if let Some(start) = &status.start_time {
            push(F::Duration, &run, (secs_of(end) - secs_of(start)) as f64);
        }
    }
    push(F::ExitCode, &run, f64::from(Outcome::of(status).code()));
    for verdict in [Verdict::Pass, Verdict::Fail] {
        let n = status
            .thresholds
            .iter()
            .filter(|t| t.verdict == verdict)
            .count();
        if !status.thresholds.is_empty() {
            let word = verdict.to_string().to_lowercase();
            push(F::Thresholds, &with(&run, "verdict", word), n as f64);
        }
    }
    for cell in &status.cells {
        let labels = cell_labels(&run, cell);
        let measured = cell.phase == CellPhase::Succeeded;
        push(F::Measured, &labels, if measured { 1.0 } else { 0.0 });
        let repetitions = cell.measured_repetitions().max(u32::from(measured));
        push(F::Repetitions, &labels, f64::from(repetitions));
        if let Some(held) = cell
            .capacity
            .as_ref()
            .filter(|c| c.found)
            .and_then(|c| c.held_rate)
        {
            push(F::Capacity, &labels, held);
        }
        if let Some(t) = &cell.target {
            let figures = [
                (F::CpuUsed, t.cpu_seconds_used),
                (F::Throttled, t.throttled_seconds),
                (F::ThrottledPeriods, t.throttled_periods.map(|p| p as f64)),
                (F::Periods, t.cfs_periods.map(|p| p as f64)),
            ];
            for (family, value) in figures {
                if let Some(v) = value {
                    push(family, &labels, v);
                }
            }
        }
        for result in &cell.results {
            let stream = stream_labels(&labels, result);
            push(F::Rps, &stream, result.rps);
            push(F::Requests, &stream, result.requests as f64);
            push(F::Errors, &stream, result.errors as f64);
            let Some(latency) = &result.latency_ms else {
                continue;
            };
            for (p, key) in PERCENTILES {
                if result.supports(p) {
                    let labels = with(&stream, "percentile", key);
                    push(F::Latency, &labels, latency.get(p) / 1000.0);
                }
            }
            push(F::LatencyMax, &stream, latency.max / 1000.0);
        }
    }
    for comparison in &status.variants {
        variant_samples(&run, comparison, &mut push);
    }
    out
}

/// The samples of one candidate against the base (status.variants): its rounds, and per
/// figure the median ratio, its interval where it has one, both p-values and the verdict.
fn variant_samples(run: &Labels, c: &VariantComparison, push: &mut impl FnMut(F, &Labels, f64)) {
    let mut pair = run.clone();
    pair.push(("configuration", c.configuration.clone()));
    pair.push(("base", c.base.clone()));
    pair.push(("candidate", c.candidate.clone()));
    push(F::VariantRounds, &pair, f64::from(c.rounds));
    for figure in &c.figures {
        let mut labels = pair.clone();
        labels.push(("phase", figure.phase.clone()));
        labels.push(("endpoint", figure.endpoint.clone()));
        labels.push(("figure", figure.figure.clone()));
        push(F::VariantRatio, &labels, figure.ratio);
        if let Some(low) = figure.ratio_low {
            push(F::VariantRatioLow, &labels, low);
        }
        if let Some(high) = figure.ratio_high {
            push(F::VariantRatioHigh, &labels, high);
        }
        push(F::VariantPWorse, &labels, figure.p_worse);
        push(F::VariantPBetter, &labels, figure.p_better);
        for (verdict, word) in VERDICTS {
            let held = if figure.verdict == verdict { 1.0 } else { 0.0 };
            push(F::VariantVerdict, &with(&labels, "verdict", word), held);
        }
    }
}

/// The verdicts of a ratio figure, with their `verdict` label: all three are written, 1 for
/// the one held (the OpenMetrics state set), so a query can count regressions with `sum`.
const VERDICTS: [(ChangeVerdict, &str); 3] = [
    (ChangeVerdict::Regression, "regression"),
    (ChangeVerdict::Improvement, "improvement"),
    (ChangeVerdict::WithinNoise, "within_noise"),
];

/// The percentiles exported, with their `percentile` label: the names the spec's thresholds
/// and the report use. Not `quantile`, which Prometheus keeps for the summary type.
const PERCENTILES: [(Percentile, &str); 4] = [
    (Percentile::P50, "p50"),
    (Percentile::P90, "p90"),
    (Percentile::P99, "p99"),
    (Percentile::P999, "p999"),
];

impl Collector for RunMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let runs = self.runs.lock().map(|r| r.clone()).unwrap_or_default();
        let seconds = Unit::Seconds;
        for (i, family) in FAMILIES.iter().enumerate() {
            let samples: Vec<(&Labels, f64)> = runs
                .iter()
                .flat_map(|r| &r.samples)
                .filter(|s| s.family as usize == i)
                .map(|s| (&s.labels, s.value))
                .collect();
            let own = own_samples(self, i);
            if samples.is_empty() && own.is_empty() {
                continue;
            }
            let (metric_type, unit) = match family.kind {
                Kind::Gauge => (MetricType::Gauge, None),
                Kind::Counter => (MetricType::Counter, None),
            };
            let unit = if family.seconds { Some(&seconds) } else { unit };
            let mut metric =
                encoder.encode_descriptor(family.base, family.help, unit, metric_type)?;
            for (labels, value) in samples.into_iter().chain(own.iter().map(|(l, v)| (l, *v))) {
                let sample = metric.encode_family(labels)?;
                match family.kind {
                    Kind::Gauge => ConstGauge::new(value).encode(sample)?,
                    Kind::Counter => ConstCounter::new(value).encode(sample)?,
                }
            }
        }
        Ok(())
    }
}

/// The samples of the families about this process rather than a run.
fn own_samples(metrics: &RunMetrics, family: usize) -> Vec<(Labels, f64)> {
    if family == F::Finished as usize {
        metrics
            .finished
            .lock()
            .map(|f| {
                f.iter()
                    .map(|(outcome, n)| (vec![("outcome", (*outcome).to_owned())], *n as f64))
                    .collect()
            })
            .unwrap_or_default()
    } else if family == F::Exported as usize {
        let n = metrics.runs.lock().map_or(0, |r| r.len());
        vec![(Labels::new(), n as f64)]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests;
