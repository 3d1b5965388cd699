//! The run engine: the one state machine of a BenchmarkRun, shared by both executors.
//!
//! Two halves, both pure (the time comes in with the [`Ctx`]; nothing is read or written
//! outside the status given):
//!
//! - [`machine`] decides: fed what an executor saw of the current step ([`machine::Seen`]),
//!   it picks what happens next (which failure wins, every timeout, when to read the result,
//!   when to clean up) and returns [`machine::Command`]s: deploy, start the load (with the
//!   [`Load`] to run, worked out here once), collect, end a probe's load, stop, wake up later.
//! - [`reduce`](fn@reduce) writes: each [`Event`] the machine (or an executor, for the run's
//!   start and refusals) reports becomes the next status: cell and run phases, failure causes,
//!   conditions, messages, repetitions and when to stop repeating, the summary and the end.
//!   What differs between the kinds of run (the run's [`Measure`]: a fixed load, a capacity
//!   search, a sizing search) is left to the kind's recorder (`record`), chosen once.
//!
//! The operator (`executors::cluster::adapter`, `executors::cluster::reconciler::observe`) and the
//! local runner (`local::runner`, `local::cell`) only look and do: neither writes those fields
//! itself, so a run on a cluster and the same run on one machine give the same commands and end in
//! the same status document (tested scenario by scenario, with the real processes of a local run,
//! in `operator/tests/agreement.rs`).

pub mod capacity;
pub mod drive;
pub mod load;
pub mod machine;
mod record;
mod reduce;
pub mod results;
pub mod schedule;
pub mod sends;
pub mod sizing;
pub mod verdict;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::resource::conditions::Reason;
use crate::resource::status::RecordedPod;
use crate::resource::thresholds::Threshold;
use crate::resource::{
    BenchmarkRunStatus, CellPhase, CellResult, Enforcement, Measure, Repeat, TargetStats,
    ValidatedRun,
};

pub use crate::resource::conditions::Cause;
pub use load::{Load, Probe};
pub use reduce::reduce;
pub use schedule::next_step;
pub use sends::Sends;

/// What an event is recorded (and a step advanced) with: the run's fixed settings and the
/// time it happened.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The spec generation the status describes (`None` locally).
    pub generation: Option<i64>,
    /// When the event happened.
    pub now: &'a Time,
    /// spec.stopOnFailure.
    pub stop_on_failure: bool,
    /// spec.repeat: how many times each cell is measured.
    pub repeat: Repeat,
    /// spec.thresholds, judged when the run ends.
    pub thresholds: &'a [Threshold],
    /// The run's timeouts and cleanup policy, which the machine keeps.
    pub limits: Limits,
    /// The matrix's cells (for the words of a deployment).
    pub cells: &'a [crate::resource::matrix::Cell],
    /// spec.parallelism.
    pub parallelism: crate::resource::parallelism::Parallelism,
    /// What the run measures: how each kind records a measurement is its recorder's
    /// (`record`), and what a step loads is [`Load::of`] it.
    pub measure: &'a Measure,
    /// Fields the spec sets under an old name (`path: what to write instead`): the SpecValid
    /// condition says them, and the run's admission warns of them once.
    pub deprecations: &'a [String],
}

impl<'a> Ctx<'a> {
    /// The context of `run` at `now`; `generation` is the spec's (`None` locally).
    pub fn of(run: &'a ValidatedRun, generation: Option<i64>, now: &'a Time) -> Ctx<'a> {
        let spec = run.spec();
        Ctx {
            generation,
            now,
            stop_on_failure: spec.stop_on_failure,
            repeat: run.repeat(),
            thresholds: run.measure().thresholds(),
            limits: Limits::of(run),
            cells: run.cells(),
            parallelism: spec.parallelism,
            measure: run.measure(),
            deprecations: run.deprecations(),
        }
    }
}

impl Ctx<'static> {
    /// The context of a run whose spec did not validate: enough to record its refusal, with
    /// no cell and the default limits.
    pub fn unvalidated<'b>(
        run: &'b crate::resource::BenchmarkRun,
        generation: Option<i64>,
        now: &'b Time,
    ) -> Ctx<'b> {
        Ctx {
            generation,
            now,
            stop_on_failure: run.spec.stop_on_failure,
            repeat: run.spec.repeat,
            thresholds: &run.spec.thresholds,
            limits: Limits::default(),
            cells: &[],
            parallelism: run.spec.parallelism,
            measure: &REFUSED,
            deprecations: &[],
        }
    }
}

/// What the context of a refused spec says the run measures: a fixed load of no phases. A
/// refusal records no measurement, and a spec that did not validate has no kind to trust.
static REFUSED: std::sync::LazyLock<Measure> = std::sync::LazyLock::new(|| {
    Measure::FixedLoad(crate::resource::measure::FixedLoad {
        workload: crate::resource::Workload::default(),
        thresholds: Vec::new(),
        repeat: Repeat::default(),
    })
});

/// What bounds a step, from the spec: the machine's timeouts and what a finished cell keeps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// spec.timeouts.ready: for the target to become ready, and for the previous step's
    /// processes to stop.
    pub ready: std::time::Duration,
    /// How long the load may run ([`ValidatedRun::load_deadline`]).
    pub load_deadline: std::time::Duration,
    /// Warm-up and phases.
    pub planned_load: std::time::Duration,
    /// spec.cleanup.
    pub cleanup: crate::resource::CleanupPolicy,
}

impl Limits {
    /// The limits of `run`.
    pub fn of(run: &ValidatedRun) -> Limits {
        Limits {
            ready: run.spec().timeouts.ready.get(),
            load_deadline: run.load_deadline(),
            planned_load: run.planned_load(),
            cleanup: run.spec().cleanup,
        }
    }
}

impl Default for Limits {
    /// The spec's defaults for a 10 s load (tests of events that need no timeout).
    fn default() -> Self {
        Limits {
            ready: std::time::Duration::from_secs(120),
            load_deadline: std::time::Duration::from_secs(190),
            planned_load: std::time::Duration::from_secs(10),
            cleanup: crate::resource::CleanupPolicy::default(),
        }
    }
}

/// What a cell measured: the figures and how the measurement went.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measured {
    /// One entry per phase and endpoint.
    pub results: Vec<CellResult>,
    /// What the target saw and used.
    pub target: Option<TargetStats>,
    /// How the CPU limits were enforced.
    pub enforcement: Option<Enforcement>,
    /// Seconds spent outside warm-up and phases, where the executor measured them.
    pub overhead_seconds: Option<f64>,
    /// A sentence about the measurement (how long it took, with how many load generators).
    pub message: String,
    /// Each stream's latency histogram as the load generator wrote it (base64 HDR), keyed
    /// "phase/endpoint": added to the cell's so that its repetitions merge exactly.
    pub histograms: BTreeMap<String, String>,
    /// What else used the CPU of the measurement's nodes, flagged busy against
    /// spec.placement.neighbourCpuLimit (cluster only; by node).
    pub neighbours: Vec<crate::resource::status::Neighbours>,
    /// Why the nodes of the measurement that `neighbours` has no entry for have none (the
    /// operator does not read kubelets, sampled nothing).
    pub neighbours_missing: Option<String>,
    /// What the load generator did with its open-loop schedule (a capacity probe is judged on
    /// it); `None` without open-loop streams.
    pub sends: Option<Sends>,
}

/// A cell as the run starts with it: what its status records before anything is measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    /// The cell's name.
    pub name: String,
    /// With variants: the cell's configuration and variant.
    pub variant_of: Option<(String, String)>,
    /// Its CPU limit times its replicas, in cores (`CellStatus.reservedCpu`).
    pub reserved_cpu: Option<f64>,
}

impl Event {
    /// The start of a run with the matrix `cells`; both executors start a run through this,
    /// so their statuses record the cells alike.
    pub fn admitted(cells: &[crate::resource::matrix::Cell]) -> Event {
        Event::Admitted {
            cells: cells
                .iter()
                .map(|c| Admission {
                    name: c.name.clone(),
                    variant_of: c
                        .variant
                        .as_ref()
                        .map(|v| (c.configuration.clone(), v.name.clone())),
                    reserved_cpu: c.reserved_cpu(),
                })
                .collect(),
        }
    }
}

/// Something that happened to a run, as an executor saw it.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The spec cannot run (invalid, or an image the operator may not run); nothing starts, and
    /// a run that was running stops.
    SpecRefused {
        /// `Reason::InvalidSpec` or another CamelCase word.
        reason: Reason,
        /// The field or rule at fault.
        message: String,
    },
    /// The spec changed while the run was running: the results of two specs must not mix.
    SpecChanged {
        /// Which generations.
        message: String,
    },
    /// The run waits for a free slot.
    Queued {
        /// Cells in the matrix.
        cells: usize,
        /// 1-based place in the queue (shown only up to [`QUEUE_PLACES_SHOWN`]).
        position: usize,
        /// Runs running now.
        active: usize,
        /// Most runs running at once.
        max_active: usize,
    },
    /// The run starts with these cells (in matrix order); build it with [`Event::admitted`].
    Admitted {
        /// Each cell's name and reserved CPU.
        cells: Vec<Admission>,
    },
    /// The executor deploys the current cell's target (for the next repetition).
    CellDeploying {
        /// Index of the cell.
        cell: usize,
        /// What is deployed, e.g. "deploying 2 replica(s) with 1 CPU each".
        message: String,
    },
    /// The target is ready and the load generator has started.
    LoadStarted {
        /// Index of the cell.
        cell: usize,
        /// Against what, e.g. "load generator running against http://10.0.0.1:8080".
        message: String,
        /// The target pods the load runs against (cluster only).
        target_pods: Vec<RecordedPod>,
    },
    /// The current repetition of a cell measured.
    CellMeasured {
        /// Index of the cell.
        cell: usize,
        /// The figures.
        measured: Box<Measured>,
    },
    /// The current repetition of a cell failed: the cell fails.
    CellFailed {
        /// Index of the cell.
        cell: usize,
        /// The [`Cause`].
        cause: Cause,
        /// The cause in a sentence, with the failing part's own words.
        message: String,
        /// Seconds spent on the cell, where measured.
        overhead_seconds: Option<f64>,
        /// How the CPU limits were enforced, where the executor got that far.
        enforcement: Option<Enforcement>,
    },
    /// The current step waits for the previous step's processes to stop.
    Waiting {
        /// Which, e.g. "waiting for 2 pod(s) of an earlier cell to stop: a-1, a-2".
        message: String,
    },
    /// The load runs against these target pods: recorded when the load is started again
    /// (its objects vanished) or by an executor that had kept no record of them.
    TargetPodsRecorded {
        /// Index of the cell.
        cell: usize,
        /// The pods a change among which fails the measurement.
        target_pods: Vec<RecordedPod>,
    },
    /// A parallel run's slots, as it starts: the executor's node sets (none: one at a time).
    Slots {
        /// spec.parallelism.
        asked: crate::resource::parallelism::Parallelism,
        /// The nodes of each slot.
        node_sets: Vec<Vec<String>>,
        /// How the sets came about.
        message: String,
    },
    /// The step about to be deployed runs in this slot of a parallel run.
    Placed {
        /// Index of the cell.
        cell: usize,
        /// The slot (`None`: unpinned).
        slot: Option<u32>,
    },
    /// The step's objects all vanished while its load ran: it starts again from its
    /// deployment, measuring nothing of the lost load.
    StepLost {
        /// Index of the cell.
        cell: usize,
    },
    /// No cell is left, or the run was interrupted (local runs): the run ends.
    Finished {
        /// Stopped by SIGINT/SIGTERM.
        interrupted: bool,
    },
}

/// A Kubernetes Event to publish (or a line to print) about a transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// True for a Warning, false for Normal.
    pub warning: bool,
    /// CamelCase reason.
    pub reason: String,
    /// Human sentence.
    pub note: String,
}

impl Note {
    fn normal(reason: impl AsRef<str>, note: String) -> Self {
        Note {
            warning: false,
            reason: reason.as_ref().into(),
            note,
        }
    }

    fn warning(reason: impl AsRef<str>, note: String) -> Self {
        Note {
            warning: true,
            reason: reason.as_ref().into(),
            note,
        }
    }
}

/// Why a load generator that ran past its deadline failed its cell, in the same words on a
/// cluster and locally.
pub fn timeout_message(deadline: std::time::Duration) -> String {
    format!(
        "the load generator did not finish within {:.0}s (its check that the target answers, \
         warm-up, phases and timeouts.runSlack)",
        deadline.as_secs_f64()
    )
}

/// How many places at the head of a queue a waiting run's status shows exactly ("queued:
/// position 3 in line"); a run further back says only that it is further back, and its status
/// is not rewritten as the queue moves until it comes within this many of the head. Every start
/// moves every waiting run up a place: were every place shown, each start would rewrite every
/// waiting run's status (50 runs queued at once: 1,225 writes, each one more reconcile), so the
/// writes per start are bounded by this instead.
pub const QUEUE_PLACES_SHOWN: usize = 10;

/// One step of a run: a cell, and the repetition of it about to be (or being) measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Index of the cell in the matrix.
    pub cell: usize,
    /// 1-based repetition of that cell.
    pub repetition: u32,
}

impl Step {
    /// The step's cell's phase in `status`: Pending (to deploy), Deploying or Running while it
    /// is current.
    pub fn phase(self, status: &BenchmarkRunStatus) -> CellPhase {
        status
            .cells
            .get(self.cell)
            .map_or(CellPhase::Pending, |c| c.phase)
    }

    /// The measurement this step is, as progress shows it: a capacity probe by its number in
    /// its cell's search (every probe of a search is the same step), anything else itself.
    pub fn shown_as(self, status: &BenchmarkRunStatus) -> Step {
        match status
            .cells
            .get(self.cell)
            .and_then(|c| c.capacity.as_ref())
        {
            Some(search) => Step {
                cell: self.cell,
                repetition: search.probes.len() as u32 + 1,
            },
            None => self,
        }
    }
}
