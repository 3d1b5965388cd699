//! The run engine: the one state machine of a BenchmarkRun, shared by both executors.
//!
//! The operator (`controller::decide`) and the local runner (`local::runner`) each watch their
//! own world (the Kubernetes API; processes and cgroups) and tell the engine what happened as
//! an [`Event`]. [`apply`] turns the event into the next status: cell and run phases, failure
//! causes, conditions, messages, repetitions, the summary and the end of the run. Neither
//! executor writes those fields itself, so a run on a cluster and the same run on one machine
//! end in the same status document (tested field by field in `tests.rs`).
//!
//! The engine is pure: the time comes in with the event's [`Ctx`], and nothing is read or
//! written outside the status it is given.

pub mod bound;
pub mod end;
pub mod machine;
pub mod step;
mod validated;

#[cfg(test)]
mod agreement;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::conditions::{self, Reason, set_condition, status as cs};
use crate::api::status::RecordedPod;
use crate::api::thresholds::Threshold;
use crate::api::{
    BenchmarkRunStatus, CellPhase, CellPrecision, CellResult, CellStatus, Enforcement, Repeat,
    RepetitionStatus, RunPhase, TargetStats,
};
use crate::results;

pub use crate::api::conditions::Cause;
pub use end::{RunEnd, run_end};
pub use step::{Step, next_step};
pub use validated::{ValidatedRun, preflight};

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
    pub cells: &'a [crate::matrix::Cell],
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
            thresholds: &spec.thresholds,
            limits: Limits::of(run),
            cells: run.cells(),
        }
    }
}

impl Ctx<'static> {
    /// The context of a run whose spec did not validate: enough to record its refusal, with
    /// no cell and the default limits.
    pub fn unvalidated<'b>(
        run: &'b crate::api::BenchmarkRun,
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
        }
    }
}

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
    pub cleanup: crate::api::CleanupPolicy,
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
            cleanup: crate::api::CleanupPolicy::default(),
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
}

/// A cell as the run starts with it: what its status records before anything is measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    /// The cell's name.
    pub name: String,
    /// Its CPU limit times its replicas, in cores (`CellStatus.reservedCpu`).
    pub reserved_cpu: Option<f64>,
}

impl Event {
    /// The start of a run with the matrix `cells`; both executors start a run through this,
    /// so their statuses record the cells alike.
    pub fn admitted(cells: &[crate::matrix::Cell]) -> Event {
        Event::Admitted {
            cells: cells
                .iter()
                .map(|c| Admission {
                    name: c.name.clone(),
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
        /// 1-based place in the queue.
        position: usize,
        /// Runs waiting, this one included.
        waiting: usize,
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
        /// One of [`cause`].
        cause: Cause,
        /// The cause in a sentence, with the failing part's own words.
        message: String,
        /// Seconds spent on the cell, where measured.
        overhead_seconds: Option<f64>,
        /// How the CPU limits were enforced, where the executor got that far.
        enforcement: Option<Enforcement>,
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

/// Records `event` in `status`; returns the notes worth publishing. Every text of the status
/// is then within its [`bound`], whatever the executor reported.
pub fn record(status: &mut BenchmarkRunStatus, event: Event, ctx: &Ctx) -> Vec<Note> {
    let notes = record_event(status, event, ctx);
    bound::clip_status(status);
    notes
}

fn record_event(status: &mut BenchmarkRunStatus, event: Event, ctx: &Ctx) -> Vec<Note> {
    let g = ctx.generation;
    let now = ctx.now;
    match event {
        Event::SpecRefused { reason, message } => {
            let was_running = status.phase == RunPhase::Running;
            status.phase = RunPhase::Failed;
            status.message = Some(message.clone());
            status.observed_generation = g;
            status.completion_time.get_or_insert_with(|| now.clone());
            let c = &mut status.conditions;
            set_condition(
                c,
                conditions::SPEC_VALID,
                cs::FALSE,
                reason,
                &message,
                g,
                now,
            );
            let progressing = if was_running {
                "the run was stopped and its current cell's objects deleted"
            } else {
                "the run cannot start"
            };
            set_condition(
                c,
                conditions::PROGRESSING,
                cs::FALSE,
                reason,
                progressing,
                g,
                now,
            );
            vec![Note::warning(reason, message)]
        }
        Event::SpecChanged { message } => {
            status.phase = RunPhase::Failed;
            status.message = Some(message.clone());
            status.completion_time = Some(now.clone());
            let why = Reason::SpecChanged;
            set_condition(
                &mut status.conditions,
                conditions::PROGRESSING,
                cs::FALSE,
                why,
                &message,
                g,
                now,
            );
            vec![Note::warning(why, message)]
        }
        Event::Queued {
            cells,
            position,
            waiting,
            active,
            max_active,
        } => {
            let message = format!(
                "queued: position {position} of {}; {active} run(s) active, at most {} at once",
                waiting.max(position),
                max_active.max(1),
            );
            status.message = Some(message.clone());
            status.observed_generation = g;
            status.progress = Some(format!("0/{}", cells * ctx.repeat.max_rounds() as usize));
            spec_valid(status, ctx);
            set_condition(
                &mut status.conditions,
                conditions::PROGRESSING,
                cs::FALSE,
                Reason::Queued,
                message,
                g,
                now,
            );
            Vec::new()
        }
        Event::Admitted { cells } => {
            status.phase = RunPhase::Running;
            status.start_time = Some(now.clone());
            status.observed_generation = g;
            status.cells = cells
                .into_iter()
                .map(|a| CellStatus {
                    name: a.name,
                    reserved_cpu: a.reserved_cpu,
                    ..CellStatus::default()
                })
                .collect();
            status.progress = Some(progress(status, ctx.repeat));
            spec_valid(status, ctx);
            set_condition(
                &mut status.conditions,
                conditions::CELL_FAILED,
                cs::FALSE,
                Reason::NoFailures,
                "",
                g,
                now,
            );
            Vec::new()
        }
        Event::CellDeploying { cell, message } => {
            let total = status.cells.len();
            let Some(c) = status.cells.get_mut(cell) else {
                return Vec::new();
            };
            let repetition = repetitions_done(c) + 1;
            c.phase = CellPhase::Deploying;
            // While a repeated cell runs, its start is the current repetition's (each kept in
            // its repetition's entry); once it ends, the first repetition's again.
            if ctx.repeat.is_repeated() {
                c.start_time = Some(now.clone());
            } else {
                c.start_time.get_or_insert_with(|| now.clone());
            }
            c.message = Some(message);
            let name = c.name.clone();
            let mut what = format!("cell {name} ({}/{total})", cell + 1);
            if ctx.repeat.is_repeated() {
                what.push_str(&format!(", repetition {}", ctx.repeat.round(repetition)));
            }
            status.message = Some(format!("running {what}"));
            set_condition(
                &mut status.conditions,
                conditions::PROGRESSING,
                cs::TRUE,
                Reason::CellRunning,
                what,
                g,
                now,
            );
            let note = if ctx.repeat.is_repeated() {
                format!("deploying cell {name} for repetition {repetition}")
            } else {
                format!("deploying cell {name}")
            };
            vec![Note::normal("CellStarted", note)]
        }
        Event::LoadStarted {
            cell,
            message,
            target_pods,
        } => {
            if let Some(c) = status.cells.get_mut(cell) {
                c.phase = CellPhase::Running;
                c.load_start_time = Some(now.clone());
                c.target_pods = target_pods;
                c.message = Some(message);
            }
            Vec::new()
        }
        Event::CellMeasured { cell, measured } => {
            let notes = measure_cell(status, cell, *measured, ctx);
            status.progress = Some(progress(status, ctx.repeat));
            notes
        }
        Event::CellFailed {
            cell,
            cause,
            message,
            overhead_seconds,
            enforcement,
        } => {
            if let Some(c) = status.cells.get_mut(cell)
                && enforcement.is_some()
            {
                c.enforcement = enforcement;
            }
            let notes = fail_cell(status, cell, cause, message, overhead_seconds, ctx);
            status.progress = Some(progress(status, ctx.repeat));
            notes
        }
        Event::Finished { interrupted } => {
            // A cell cut short by an interruption merges nothing more and checks no pod.
            for c in &mut status.cells {
                c.histograms.clear();
                c.target_pods.clear();
            }
            let end = end::finish_run(status, interrupted, ctx.thresholds, g, now);
            status.progress = Some(progress(status, ctx.repeat));
            let failed = end.phase == RunPhase::Failed;
            vec![Note {
                warning: failed,
                reason: if failed { "RunFailed" } else { "RunSucceeded" }.into(),
                note: end.message,
            }]
        }
    }
}

/// Condition SpecValid True: the spec passed validation (a queued run says so too).
fn spec_valid(status: &mut BenchmarkRunStatus, ctx: &Ctx) {
    set_condition(
        &mut status.conditions,
        conditions::SPEC_VALID,
        cs::TRUE,
        Reason::Valid,
        "",
        ctx.generation,
        ctx.now,
    );
}

/// Measurements done out of measurements planned, e.g. "2/4" (a printer column): cells, or
/// when cells repeat, repetitions of cells. A finished cell counts as many as it is done with
/// (all planned for a fixed count, the ones it took when it stopped on its precision); an
/// unfinished one plans the most it may take, so the total shrinks as cells stop early.
pub fn progress(status: &BenchmarkRunStatus, repeat: Repeat) -> String {
    if !repeat.is_repeated() {
        return results::progress(status);
    }
    let planned = |c: &CellStatus| match (repeat, c.phase.is_finished()) {
        (Repeat::UntilPrecise { .. }, true) if c.phase == CellPhase::Succeeded => {
            c.repetitions.len()
        }
        _ => repeat.max_rounds() as usize,
    };
    let done: usize = status
        .cells
        .iter()
        .map(|c| {
            if c.phase.is_finished() {
                planned(c)
            } else {
                c.repetitions.len()
            }
        })
        .sum();
    let total: usize = status.cells.iter().map(planned).sum();
    format!("{done}/{total}")
}

/// Repetitions of a cell measured so far (0 when the run does not repeat).
fn repetitions_done(c: &CellStatus) -> u32 {
    c.repetitions
        .iter()
        .filter(|r| r.phase == CellPhase::Succeeded)
        .count() as u32
}

fn measure_cell(
    status: &mut BenchmarkRunStatus,
    cell: usize,
    measured: Measured,
    ctx: &Ctx,
) -> Vec<Note> {
    let share = bound::histogram_share(status.cells.len(), measured.results.len());
    let Some(c) = status.cells.get_mut(cell) else {
        return Vec::new();
    };
    let name = c.name.clone();
    // The pods were recorded to check the measurement; it is over.
    c.target_pods.clear();
    if !ctx.repeat.is_repeated() {
        c.phase = CellPhase::Succeeded;
        c.reason = None;
        c.message = Some(measured.message);
        c.completion_time = Some(ctx.now.clone());
        c.results = measured.results;
        c.target = measured.target;
        c.enforcement = measured.enforcement;
        c.overhead_seconds = measured.overhead_seconds;
        return vec![Note::normal(
            "CellSucceeded",
            format!("cell {name} measured"),
        )];
    }
    let repetition = repetitions_done(c) + 1;
    match share {
        Some(cap) => results::repeat::fold_histograms(
            &mut c.histograms,
            &measured.histograms,
            repetition == 1,
            cap,
        ),
        None => c.histograms.clear(),
    }
    c.repetitions.push(RepetitionStatus {
        repetition,
        phase: CellPhase::Succeeded,
        reason: None,
        message: Some(measured.message.clone()),
        start_time: c.start_time.clone(),
        load_start_time: c.load_start_time.clone(),
        completion_time: Some(ctx.now.clone()),
        cpu_seconds_used: measured.target.as_ref().and_then(|t| t.cpu_seconds_used),
        overhead_seconds: measured.overhead_seconds,
        results: measured.results,
    });
    c.target = results::repeat::add_target(c.target.take(), measured.target);
    c.enforcement = measured.enforcement;
    c.overhead_seconds = Some(round2(
        c.repetitions
            .iter()
            .filter_map(|r| r.overhead_seconds)
            .sum(),
    ));
    let merged = results::repeat::merge(&c.repetitions, &c.histograms);
    let (again, precision) = repeat_again(ctx, &c.name, repetition, &merged);
    if again {
        // Back in line: the other cells measure their repetition before this one's next.
        c.phase = CellPhase::Pending;
        let why = precision
            .map(|p| format!(" ({})", p.message))
            .unwrap_or_default();
        c.message = Some(format!(
            "repetition {} measured{why}: {}",
            ctx.repeat.round(repetition),
            measured.message
        ));
        return vec![Note::normal(
            "RepetitionMeasured",
            format!(
                "cell {name} repetition {} measured",
                ctx.repeat.round(repetition)
            ),
        )];
    }
    c.results = merged;
    // Merged into the results: the status keeps the figures, not the histograms.
    c.histograms.clear();
    c.start_time = c.repetitions.first().and_then(|r| r.start_time.clone());
    c.phase = CellPhase::Succeeded;
    c.reason = None;
    c.completion_time = Some(ctx.now.clone());
    c.message = Some(match &precision {
        Some(p) => format!(
            "measured {repetition} repetitions, {}; figures are their medians, with the spread \
             beside them",
            p.message
        ),
        None => format!(
            "measured {repetition} repetitions; figures are their medians, with the spread \
             beside them"
        ),
    });
    c.precision = precision;
    vec![Note::normal(
        "CellSucceeded",
        format!("cell {name} measured {repetition} times"),
    )]
}

/// Whether a repeated cell is measured again after `done` successful repetitions whose
/// figures merge into `merged`; with `repeat: {min, max, precision}`, how precise they are.
/// A fixed count repeats until it is reached. The adaptive rule repeats until `min`, then
/// while a ranked or judged figure's 95% confidence interval is wider than `precision`
/// percent of it (`results::precision`), and never beyond `max`.
fn repeat_again(
    ctx: &Ctx,
    cell: &str,
    done: u32,
    merged: &[CellResult],
) -> (bool, Option<CellPrecision>) {
    let Repeat::UntilPrecise { precision, .. } = ctx.repeat else {
        return (done < ctx.repeat.max_rounds(), None);
    };
    let judged = crate::thresholds::figures_judged(ctx.thresholds, cell, merged);
    let assessment = results::precision::assess(merged, &judged);
    let precise = assessment.within(precision);
    let widest = assessment.widest();
    let widest_text = match widest {
        Some(w) => match w.width_percent {
            Some(pct) => format!("widest {} at {pct:.1}%", w.figure),
            None => format!("{} has no interval (a value of 0)", w.figure),
        },
        None => "no figure is ranked or judged".into(),
    };
    let (again, message) = if done < ctx.repeat.min_rounds() {
        (
            true,
            format!(
                "{widest_text} after {done}; every cell runs {} first",
                ctx.repeat.min_rounds()
            ),
        )
    } else if precise {
        let message = if widest.is_some() {
            format!(
                "precise after {done}: every ranked or judged figure's 95% CI within \
                 {precision}% ({widest_text})"
            )
        } else {
            format!("stopped after {done}: {widest_text}, so more repetitions decide nothing")
        };
        (false, message)
    } else if done >= ctx.repeat.max_rounds() {
        (
            false,
            format!("max of {done} reached and still spread: {widest_text}, wanted {precision}%"),
        )
    } else {
        (
            true,
            format!("not yet precise: {widest_text}, wanted {precision}%"),
        )
    };
    let status = CellPrecision {
        precise: precise && done >= ctx.repeat.min_rounds(),
        repetitions: done,
        widest_figure: widest.map(|w| w.figure.clone()),
        widest_percent: widest.and_then(|w| w.width_percent).map(round2),
        message,
    };
    (again, Some(status))
}

fn fail_cell(
    status: &mut BenchmarkRunStatus,
    cell: usize,
    cause: Cause,
    message: String,
    overhead_seconds: Option<f64>,
    ctx: &Ctx,
) -> Vec<Note> {
    let Some(c) = status.cells.get_mut(cell) else {
        return Vec::new();
    };
    let name = c.name.clone();
    c.target_pods.clear();
    c.histograms.clear();
    let message = if ctx.repeat.is_repeated() {
        let repetition = repetitions_done(c) + 1;
        c.repetitions.push(RepetitionStatus {
            repetition,
            phase: CellPhase::Failed,
            reason: Some(cause.to_string()),
            message: Some(message.clone()),
            start_time: c.start_time.clone(),
            load_start_time: c.load_start_time.clone(),
            completion_time: Some(ctx.now.clone()),
            overhead_seconds,
            ..RepetitionStatus::default()
        });
        c.start_time = c.repetitions.first().and_then(|r| r.start_time.clone());
        format!("repetition {}: {message}", ctx.repeat.round(repetition))
    } else {
        message
    };
    c.phase = CellPhase::Failed;
    c.reason = Some(cause.to_string());
    c.message = Some(message.clone());
    c.start_time.get_or_insert_with(|| ctx.now.clone());
    c.completion_time = Some(ctx.now.clone());
    if overhead_seconds.is_some() {
        c.overhead_seconds = overhead_seconds;
    }
    set_condition(
        &mut status.conditions,
        conditions::CELL_FAILED,
        cs::TRUE,
        cause.as_str(),
        format!("cell {name}: {message}"),
        ctx.generation,
        ctx.now,
    );
    if ctx.stop_on_failure {
        for later in status.cells.iter_mut().filter(|c| !c.phase.is_finished()) {
            later.phase = CellPhase::Skipped;
            later.message = Some(format!(
                "skipped: cell {name} failed and stopOnFailure is set"
            ));
        }
    }
    vec![Note::warning(
        "CellFailed",
        format!("cell {name}: {cause}: {message}"),
    )]
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

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}
