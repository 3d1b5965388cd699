//! One cell of a local run, in the order it happens: start the replicas and read what the
//! target says of itself ([`launch`]), write the load generator's plan ([`plan`]), start it and
//! watch the load until it ends, then stop everything ([`supervise`]), and read what was
//! measured ([`collect`]).
//!
//! The cell code never touches the run's status: it says how the cell ended as a
//! [`CellOutcome`], which the runner records.

pub mod collect;
pub mod launch;
pub mod plan;
pub mod supervise;

use std::path::Path;
use std::time::Instant;

use benchmatrix_loadgen::request::HeaderValues;
use benchmatrix_loadgen::result::RunResult;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::cgroup::Backend;
use super::progress::{Display, Step};
use crate::api::conditions::{Cause, now};
use crate::api::{CellResult, Enforcement, TargetStats};
use crate::engine::ValidatedRun;
use crate::plan::Cell;

/// What a cell needs of the run: the spec, the output folder, the CPU-limit backend, and the
/// display its progress goes to with the measurement it is.
pub struct CellContext<'a> {
    /// The validated run.
    pub run: &'a ValidatedRun,
    /// The output folder (with its `logs`, `results` and `plans` folders made).
    pub out: &'a Path,
    /// How CPU limits are enforced on this machine.
    pub backend: &'a Backend,
    /// Where progress goes.
    pub display: &'a mut Display,
    /// The measurement (cell and repetition) under way.
    pub step: &'a Step,
    /// Header values the load generator gets through its environment (from `--secrets`).
    pub header_values: &'a HeaderValues,
}

/// How a cell ended.
#[derive(Debug)]
pub enum CellOutcome {
    /// The load ran to its end with every replica alive, and its result was read.
    Measured(Box<Measured>),
    /// The cell failed (or was interrupted: cause `Interrupted`).
    Failed {
        /// Why, one of [`crate::api::conditions::cause`].
        cause: Cause,
        /// What happened, in a sentence.
        message: String,
        /// Seconds the runner spent on the cell, rounded to hundredths.
        overhead_seconds: f64,
        /// When the cell started.
        start_time: Time,
        /// When the load generator was started, if it was.
        load_start_time: Option<Time>,
        /// How the CPU limits were enforced, if the load generator's cgroup was made.
        enforcement: Option<Enforcement>,
    },
}

/// A measured cell.
#[derive(Debug)]
pub struct Measured {
    /// One entry per measured phase and endpoint.
    pub results: Vec<CellResult>,
    /// What the target saw and used.
    pub target: TargetStats,
    /// How the CPU limits were enforced.
    pub enforcement: Enforcement,
    /// Seconds the runner spent on the cell outside warm-up and phases, rounded to hundredths.
    pub overhead_seconds: f64,
    /// How long the load took and where the runner's time went.
    pub message: String,
    /// When the cell started.
    pub start_time: Time,
    /// When the load generator was started.
    pub load_start_time: Time,
    /// The load generator's result document, for the report.
    pub raw: RunResult,
}

/// Why a step of a cell failed.
#[derive(Debug)]
pub struct Failure {
    /// One of [`crate::api::conditions::cause`].
    pub cause: Cause,
    /// What happened, in a sentence.
    pub message: String,
}

/// What is known of a cell so far, for the outcome should it fail.
struct SoFar {
    started: Instant,
    start_time: Time,
    load_start_time: Option<Time>,
    enforcement: Option<Enforcement>,
}

impl SoFar {
    /// The cell failed now. Called before anything still running is dropped (and so stopped),
    /// so an early failure's overhead does not include stopping the replicas.
    fn failed(&self, failure: Failure) -> CellOutcome {
        CellOutcome::Failed {
            cause: failure.cause,
            message: failure.message,
            overhead_seconds: round2(self.started.elapsed().as_secs_f64()),
            start_time: self.start_time.clone(),
            load_start_time: self.load_start_time.clone(),
            enforcement: self.enforcement.clone(),
        }
    }
}

/// Runs `cell` from its replicas' start to its last reading, with everything it started
/// stopped by the time it returns.
pub fn run_cell(ctx: &mut CellContext, cell: &Cell) -> CellOutcome {
    let mut so_far = SoFar {
        started: Instant::now(),
        start_time: now(),
        load_start_time: None,
        enforcement: None,
    };
    let spec = ctx.run.spec();
    let timing = plan::LoadTiming::of(ctx.run);
    let (mut set, ready) = match launch::start_replicas(ctx, cell, so_far.started) {
        Ok(r) => r,
        Err(f) => return so_far.failed(f),
    };
    let files = match plan::write_plan(ctx.out, spec, cell, &set) {
        Ok(f) => f,
        Err(f) => return so_far.failed(f),
    };
    let placement = plan::loadgen_placement(spec, cell, cell.cpu.cpu_cores().ok());
    let lg_cgroup = match launch::loadgen_cgroup(ctx, cell, placement) {
        Ok(c) => c,
        Err(f) => return so_far.failed(f),
    };
    let enforcement = launch::enforcement(&ready.enforcement, &lg_cgroup, placement.cores);
    so_far.enforcement = Some(enforcement.clone());
    if let Err(f) = launch::alive_before_load(&mut set) {
        return so_far.failed(f);
    }
    let mut lg = match launch::start_loadgen(&files, lg_cgroup, ctx.header_values) {
        Ok(l) => l,
        Err(f) => return so_far.failed(f),
    };
    let load_start_time = now();
    so_far.load_start_time = Some(load_start_time.clone());
    let load = supervise::supervise(ctx, &mut set, &mut lg, &timing);
    let end = supervise::stop(set, &mut lg, load.ended.is_ok());
    let status = match load.ended {
        Ok(s) => s,
        Err(f) => return so_far.failed(f),
    };
    supervise::last_progress(ctx, &lg);
    let raw = match collect::read_result(&files.result, status, &lg) {
        Ok(r) => r,
        Err(f) => return so_far.failed(f),
    };
    let target = collect::target_stats(spec, cell, &raw, &ready, load.cpu_at, &end);
    let overhead = so_far.started.elapsed().saturating_sub(timing.planned);
    let message = collect::summary(
        timing.planned,
        load.wall,
        overhead,
        raw.preflight_seconds,
        &ready,
        &end,
    );
    CellOutcome::Measured(Box::new(Measured {
        results: crate::results::cell_results(&raw),
        target,
        enforcement,
        overhead_seconds: round2(overhead.as_secs_f64()),
        message,
        start_time: so_far.start_time,
        load_start_time,
        raw,
    }))
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}
