//! A run whose spec passed validation, with everything derived from it once.
//!
//! Parse, don't validate: the executors and the object builders take a [`ValidatedRun`], which
//! can only be had through validation, instead of a raw spec they would each re-check and
//! re-expand. The matrix's cells, their child object names and the load's deadline are worked
//! out here and nowhere else.

use std::time::Duration;

use benchmatrix_loadgen::plan::Preflight;

use crate::resource::matrix::{self, Cell};
use crate::resource::measure::Measure;
use crate::resource::validate::{self, SpecError};
use crate::resource::{BenchmarkRun, BenchmarkRunSpec, Repeat};

/// A validated run and what follows from its spec.
#[derive(Debug, Clone)]
pub struct ValidatedRun {
    run: BenchmarkRun,
    measure: Measure,
    cells: Vec<Cell>,
    planned_load: Duration,
    deprecations: Vec<String>,
}

impl ValidatedRun {
    /// Validates `run` for a run on one machine.
    pub fn new(run: BenchmarkRun) -> Result<Self, SpecError> {
        validate::validate_run(&run)?;
        Ok(Self::derive(run))
    }

    /// Parses and validates a BenchmarkRun document (as `benchmatrix run` reads one): every
    /// problem is reported with its field path, line and column.
    pub fn parse(yaml: &str) -> Result<Self, SpecError> {
        validate::parse_benchmark_run(yaml).map(Self::derive)
    }

    /// Validates `run` for a cluster: the same rules, and what only a cluster needs.
    pub fn for_cluster(run: BenchmarkRun) -> Result<Self, SpecError> {
        validate::validate_for_cluster(&run)?;
        Ok(Self::derive(run))
    }

    fn derive(run: BenchmarkRun) -> Self {
        let cells = matrix::cells(&run.spec);
        let planned_load = run.spec.planned_load();
        let deprecations = validate::deprecations(&run.spec)
            .iter()
            .map(ToString::to_string)
            .collect();
        ValidatedRun {
            measure: Measure::of(&run.spec),
            run,
            cells,
            planned_load,
            deprecations,
        }
    }

    /// The fields it sets under an old name, each as `path: what to write instead`.
    pub fn deprecations(&self) -> &[String] {
        &self.deprecations
    }

    /// The run as applied.
    pub fn run(&self) -> &BenchmarkRun {
        &self.run
    }

    /// Its spec.
    pub fn spec(&self) -> &BenchmarkRunSpec {
        &self.run.spec
    }

    /// The matrix, expanded: one cell per configuration, in order.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// What the run measures: a fixed load, a capacity search or a sizing search, with what
    /// that kind needs.
    pub fn measure(&self) -> &Measure {
        &self.measure
    }

    /// How many times each cell is measured.
    pub fn repeat(&self) -> Repeat {
        self.measure.repeat()
    }

    /// How long the load is planned to take: warm-up plus every phase (with capacity: one
    /// probe).
    pub fn planned_load(&self) -> Duration {
        self.planned_load
    }

    /// How long the load generator may run before its cell fails with a timeout: its check
    /// that the target answers (at most `timeouts.ready`, see [`preflight`]), the planned load
    /// and `timeouts.runSlack`. The one definition for both executors and the Job's
    /// `activeDeadlineSeconds`; it leaves room for the check, so a target that never answers
    /// fails as `TargetUnreachable`, not as a timeout.
    pub fn load_deadline(&self) -> Duration {
        let t = &self.run.spec.timeouts;
        t.ready.get() + self.planned_load + t.run_slack.get()
    }
}

/// The check the load generator makes before the warm-up, the same from both executors: every
/// address it will load (the Service or local port, or each replica's with `roundRobin`)
/// must answer `GET spec.target.readinessPath` within `spec.timeouts.ready`. A readiness probe
/// passing on the pod says nothing of the path through a ClusterIP whose rules kube-proxy has
/// not programmed yet.
pub fn preflight(spec: &BenchmarkRunSpec) -> Preflight {
    Preflight {
        path: spec.target.readiness_path.clone(),
        timeout: spec.timeouts.ready,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{connections, phase};

    /// A run with a 2 s warm-up and phases of 3 s and 4 s.
    fn run() -> BenchmarkRun {
        BenchmarkRun::sample()
            .with_cell(crate::resource::Configuration::named("a"))
            .with_warmup("2s")
            .with_phases([
                phase("first", "3s", [connections("fast", 1)]),
                phase("second", "4s", [connections("fast", 1)]),
            ])
    }

    #[test]
    fn the_load_deadline_is_the_target_check_plus_warmup_plus_phases_plus_run_slack() {
        let timed = ValidatedRun::new(run().with_ready_timeout("7s").with_run_slack("5s")).unwrap();
        assert_eq!(timed.planned_load(), Duration::from_secs(2 + 3 + 4));
        assert_eq!(
            timed.load_deadline(),
            Duration::from_secs(7 + 2 + 3 + 4 + 5)
        );
        // Without them the defaults apply: five minutes to be ready, two of slack.
        let default = ValidatedRun::new(run()).unwrap();
        assert_eq!(
            default.load_deadline(),
            Duration::from_secs(300 + 2 + 3 + 4 + 120)
        );
    }
}
