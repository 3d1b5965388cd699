//! The operator's own metrics, in the Prometheus text format.
//!
//! A handful of counters and gauges behind atomics and one mutex-guarded map, rendered by hand:
//! the set is small and fixed, and a metrics crate would be a dependency for five lines of
//! text.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Counters and gauges of one operator process.
#[derive(Debug, Default)]
pub struct Metrics {
    reconciles: AtomicU64,
    reconcile_seconds_micros: AtomicU64,
    errors: Mutex<BTreeMap<&'static str, u64>>,
    active_runs: AtomicU64,
    cells: Mutex<BTreeMap<String, (u64, f64)>>,
}

impl Metrics {
    /// Starts timing one reconcile; the time is recorded when the guard drops, on every path.
    pub fn reconcile(&self) -> ReconcileTimer<'_> {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        ReconcileTimer {
            metrics: self,
            start: Instant::now(),
        }
    }

    /// Counts a failed reconcile by error kind.
    pub fn reconcile_failure(&self, label: &'static str) {
        if let Ok(mut errors) = self.errors.lock() {
            *errors.entry(label).or_default() += 1;
        }
    }

    /// Sets the number of runs in phase Running.
    pub fn set_active_runs(&self, n: usize) {
        self.active_runs.store(n as u64, Ordering::Relaxed);
    }

    /// Records a finished cell: its outcome (Succeeded/Failed) and how long it took.
    pub fn cell_finished(&self, outcome: &str, seconds: f64) {
        if let Ok(mut cells) = self.cells.lock() {
            let entry = cells.entry(outcome.to_owned()).or_default();
            entry.0 += 1;
            entry.1 += seconds.max(0.0);
        }
    }

    /// Reconciles started so far.
    pub fn reconciles(&self) -> u64 {
        self.reconciles.load(Ordering::Relaxed)
    }

    /// The metrics in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP benchmatrix_reconciles_total Reconciles started.\n\
             # TYPE benchmatrix_reconciles_total counter\n\
             benchmatrix_reconciles_total {}",
            self.reconciles()
        );
        let _ = writeln!(
            out,
            "# HELP benchmatrix_reconcile_duration_seconds_sum Time spent reconciling.\n\
             # TYPE benchmatrix_reconcile_duration_seconds_sum counter\n\
             benchmatrix_reconcile_duration_seconds_sum {}",
            self.reconcile_seconds_micros.load(Ordering::Relaxed) as f64 / 1e6
        );
        let _ = writeln!(
            out,
            "# HELP benchmatrix_reconcile_errors_total Failed reconciles by error kind.\n\
             # TYPE benchmatrix_reconcile_errors_total counter"
        );
        if let Ok(errors) = self.errors.lock() {
            for (label, n) in errors.iter() {
                let _ = writeln!(
                    out,
                    "benchmatrix_reconcile_errors_total{{error=\"{label}\"}} {n}"
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP benchmatrix_active_runs BenchmarkRuns in phase Running.\n\
             # TYPE benchmatrix_active_runs gauge\n\
             benchmatrix_active_runs {}",
            self.active_runs.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP benchmatrix_cell_duration_seconds Time from a cell's deploy to its end.\n\
             # TYPE benchmatrix_cell_duration_seconds summary"
        );
        if let Ok(cells) = self.cells.lock() {
            for (outcome, (count, sum)) in cells.iter() {
                let _ = writeln!(
                    out,
                    "benchmatrix_cell_duration_seconds_sum{{outcome=\"{outcome}\"}} {sum}\n\
                     benchmatrix_cell_duration_seconds_count{{outcome=\"{outcome}\"}} {count}"
                );
            }
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
        let micros = self.start.elapsed().as_micros() as u64;
        self.metrics
            .reconcile_seconds_micros
            .fetch_add(micros, Ordering::Relaxed);
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
    }
}
