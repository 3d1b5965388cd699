//! The operator's own metrics, exposed at `/metrics` in the OpenMetrics text format.
//!
//! Kept in a `prometheus-client` registry, so names, types, label escaping and histogram buckets
//! follow the exposition format by construction instead of by hand-written text. The figures of
//! finished runs are written by `crate::run_metrics` into the same registry.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

pub use crate::run_metrics::CONTENT_TYPE;
use crate::run_metrics::RunMetrics;

/// Label of a failed reconcile: the error kind.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabel {
    error: String,
}

/// Label of a part of a reconcile: which part, and the run's phase when the reconcile began.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabel {
    stage: String,
    phase: String,
}

/// Label of a finished cell: Succeeded or Failed.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: String,
}

/// Buckets of the reconcile duration (and of its parts): 1 ms to 50 s, in steps of 1, 2.5 and 5.
/// A reconcile is a few API calls; the upper buckets catch an API server that stalls. 50 ms is
/// an edge because it is the goal for the p99 with 50 runs queued (BENCHMARKS.md): the share of
/// reconciles over it is read exactly, not interpolated within a bucket.
fn reconcile_buckets() -> Histogram {
    const EDGES: [f64; 15] = [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0,
    ];
    Histogram::new(EDGES)
}

/// Buckets of a cell's duration, deploy to end: 1 s to about 68 min, wide enough for the
/// seeds' two-minute phases with warm-up and for long custom matrices.
fn cell_buckets() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 2.0, 13))
}

/// The metrics of one operator process.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reconciles: Counter,
    reconcile_duration: Histogram,
    errors: Family<ErrorLabel, Counter>,
    active_runs: Gauge,
    cells: Family<OutcomeLabel, Histogram, fn() -> Histogram>,
    stages: Family<StageLabel, Histogram, fn() -> Histogram>,
    /// Reconciles started, readable without encoding (the counter's own value is not).
    started: AtomicU64,
    /// Robustness against what clusters do (issue 31): refused status writes, the CRD check,
    /// leadership, API requests. Kept in one struct of its own so other metrics merge beside it.
    pub robustness: super::robustness_metrics::RobustnessMetrics,
    /// The figures of the runs that finished last.
    finished_runs: Arc<RunMetrics>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::exporting(RunMetrics::default())
    }
}

impl Metrics {
    /// The operator's metrics, with the figures of finished runs kept by `finished_runs`.
    pub fn exporting(finished_runs: RunMetrics) -> Self {
        let mut registry = Registry::default();
        let reconciles = Counter::default();
        registry.register(
            "benchmatrix_reconciles",
            "Reconciles started",
            reconciles.clone(),
        );
        let reconcile_duration = reconcile_buckets();
        registry.register(
            "benchmatrix_reconcile_duration_seconds",
            "Time one reconcile took",
            reconcile_duration.clone(),
        );
        let errors = Family::<ErrorLabel, Counter>::default();
        registry.register(
            "benchmatrix_reconcile_errors",
            "Failed reconciles by error kind",
            errors.clone(),
        );
        let active_runs = Gauge::default();
        registry.register(
            "benchmatrix_active_runs",
            "BenchmarkRuns in phase Running",
            active_runs.clone(),
        );
        let cells = Family::<OutcomeLabel, Histogram, fn() -> Histogram>::new_with_constructor(
            cell_buckets,
        );
        registry.register(
            "benchmatrix_cell_duration_seconds",
            "Time from a cell's deploy to its end, by outcome",
            cells.clone(),
        );
        let stages = Family::<StageLabel, Histogram, fn() -> Histogram>::new_with_constructor(
            reconcile_buckets,
        );
        registry.register(
            "benchmatrix_reconcile_stage_duration_seconds",
            "Time one part of a reconcile took (read-run; observe, observe-deploy, \
             observe-target, observe-load or observe-result; decide, status or children), \
             by the run's phase when it began; a part a reconcile skips is not counted",
            stages.clone(),
        );
        let robustness = super::robustness_metrics::RobustnessMetrics::register(&mut registry);
        let finished_runs = Arc::new(finished_runs);
        registry.register_collector(Box::new(finished_runs.clone()));
        Metrics {
            robustness,
            registry,
            reconciles,
            reconcile_duration,
            errors,
            active_runs,
            cells,
            stages,
            started: AtomicU64::new(0),
            finished_runs,
        }
    }

    /// The figures of finished runs (`crate::run_metrics`).
    pub fn finished_runs(&self) -> &RunMetrics {
        &self.finished_runs
    }
}

impl Metrics {
    /// Starts timing one reconcile; the time is recorded when the guard drops, on every path.
    pub fn reconcile(&self) -> ReconcileTimer<'_> {
        self.reconciles.inc();
        self.started.fetch_add(1, Ordering::Relaxed);
        ReconcileTimer {
            metrics: self,
            start: Instant::now(),
        }
    }

    /// Starts timing the parts of one reconcile of a run in `phase` (see [`Stages::lap`]).
    pub fn stages(&self, phase: &str) -> Stages<'_> {
        Stages {
            metrics: self,
            phase: phase.to_owned(),
            since: Instant::now(),
        }
    }

    /// Counts a failed reconcile by error kind.
    pub fn reconcile_failure(&self, label: &'static str) {
        self.errors
            .get_or_create(&ErrorLabel {
                error: label.to_owned(),
            })
            .inc();
    }

    /// Sets the number of runs in phase Running.
    pub fn set_active_runs(&self, n: usize) {
        self.active_runs.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Records a finished cell: its outcome (Succeeded/Failed) and how long it took.
    pub fn cell_finished(&self, outcome: &str, seconds: f64) {
        self.cells
            .get_or_create(&OutcomeLabel {
                outcome: outcome.to_owned(),
            })
            .observe(seconds.max(0.0));
    }

    /// Reconciles started so far.
    pub fn reconciles(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// The metrics in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail; an encoding error would be a bug in a metric.
        if let Err(e) = encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "cannot encode the operator's metrics");
        }
        out
    }
}

/// Records a reconcile's duration when dropped.
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    start: Instant,
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        self.metrics
            .reconcile_duration
            .observe(self.start.elapsed().as_secs_f64());
    }
}

/// The parts of one reconcile, timed one after another: each [`Stages::lap`] records the time
/// since the previous one (or the start) under its stage's name. It says where a slow
/// reconcile's time went: reading the run again, the reads of its step, the engine's turn, the
/// status write, the children's applies and deletes, or its Events.
pub struct Stages<'a> {
    metrics: &'a Metrics,
    phase: String,
    since: Instant,
}

impl Stages<'_> {
    /// Records the time since the last lap as `stage`.
    pub fn lap(&mut self, stage: &str) {
        self.record(stage, self.since.elapsed());
    }

    /// Records `took` as `stage`, for a part timed apart from the laps (the laps go on from now).
    pub fn record(&mut self, stage: &str, took: std::time::Duration) {
        self.metrics
            .stages
            .get_or_create(&StageLabel {
                stage: stage.to_owned(),
                phase: self.phase.clone(),
            })
            .observe(took.as_secs_f64());
        self.since = Instant::now();
    }

    /// Starts the next lap now, leaving the time since the last one uncounted.
    pub fn skip(&mut self) {
        self.since = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_lists_every_family_with_labels() {
        let m = Metrics::default();
        drop(m.reconcile());
        m.reconcile_failure("conflict");
        m.set_active_runs(1);
        m.cell_finished("Succeeded", 12.5);
        let text = m.render();
        assert!(text.contains("benchmatrix_reconciles_total 1"), "{text}");
        assert!(text.contains("benchmatrix_reconcile_errors_total{error=\"conflict\"} 1"));
        assert!(text.contains("benchmatrix_active_runs 1"));
        assert!(text.contains("benchmatrix_cell_duration_seconds_count{outcome=\"Succeeded\"} 1"));
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert_eq!(m.reconciles(), 1);
    }

    #[test]
    fn each_lap_is_counted_under_its_stage_and_the_runs_phase() {
        let m = Metrics::default();
        let mut stages = m.stages("Running");
        std::thread::sleep(std::time::Duration::from_millis(3));
        stages.lap("observe");
        stages.lap("status");
        let text = m.render();
        let observe = "benchmatrix_reconcile_stage_duration_seconds_bucket{le=\"0.0025\",stage=\"observe\",phase=\"Running\"} 0";
        assert!(text.contains(observe), "{text}");
        // The status lap began when the observe lap ended, not at the start.
        let status = "benchmatrix_reconcile_stage_duration_seconds_bucket{le=\"0.0025\",stage=\"status\",phase=\"Running\"} 1";
        assert!(text.contains(status), "{text}");
    }

    #[test]
    fn reconcile_duration_is_a_histogram_with_buckets() {
        let m = Metrics::default();
        {
            let _timer = m.reconcile();
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        let text = m.render();
        assert!(
            text.contains("# TYPE benchmatrix_reconcile_duration_seconds histogram"),
            "{text}"
        );
        assert!(text.contains("benchmatrix_reconcile_duration_seconds_count 1"));
        // A sleep of 3 ms lasts at least that, so the reconcile is above the 1 ms and 2.5 ms
        // buckets; how far above depends on the machine's load, so the upper buckets are only
        // checked to exist, and +Inf (below) to count it.
        assert!(
            text.contains("benchmatrix_reconcile_duration_seconds_bucket{le=\"0.0025\"} 0"),
            "{text}"
        );
        // The goal's 50 ms is an edge of its own.
        assert!(
            text.contains("benchmatrix_reconcile_duration_seconds_bucket{le=\"0.05\"} "),
            "{text}"
        );
        assert!(
            text.contains("benchmatrix_reconcile_duration_seconds_bucket{le=\"+Inf\"} 1"),
            "{text}"
        );
    }
}
