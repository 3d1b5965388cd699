//! One step (a cell, or a repetition of it) of a local run, as the run engine's machine
//! commands it: start the replicas ([`launch`]) and look when they are ready, write the load
//! generator's plan ([`loadgen_setup`]) and start it, look at the load until it ends
//! ([`supervise`]), then stop everything and read what was measured ([`collect`]).
//!
//! Nothing here decides: which failure wins, how long to wait and when the step ends are the
//! machine's (`crate::engine::machine`). A [`LocalStep`] does what a command says, reports what
//! it sees as the machine's facts ([`Seen`]), and has its processes watched so that the runner
//! wakes when one ends or the replicas answer (`super::wake`).

pub mod collect;
pub mod launch;
pub mod loadgen_setup;
pub mod supervise;

use std::path::Path;
use std::time::Instant;

use benchmatrix_loadgen::request::HeaderValues;
use benchmatrix_loadgen::result::RunResult;

use super::cgroup::Backend;
use super::loadgen::Loadgen;
use super::replica_set::{Launch, Readiness, ReplicaSet};
use super::wake::{self, ReadyWatch, Waker, Watching};
use crate::engine::machine::{self, Look, Seen};
use crate::engine::{Load, Step};
use crate::frontends::progress::{Display, ProgressLine};
use crate::resource::ValidatedRun;
use crate::resource::conditions::Cause;
use crate::resource::matrix::Cell;
use crate::resource::rounding::{round2, round3};
use crate::resource::{Enforcement, TargetStats};

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
    pub step: Step,
    /// Header values the load generator gets through its environment (from `--secrets`).
    pub header_values: &'a HeaderValues,
    /// The benchmatrix program that serves as the built-in target and the load generator.
    pub program: &'a Path,
}

/// Why a part of a step failed.
#[derive(Debug)]
pub struct Failure {
    /// The cause.
    pub cause: Cause,
    /// What happened, in a sentence.
    pub message: String,
}

/// The processes and files of the step under way, and what it has to report next.
pub struct LocalStep {
    cell: Cell,
    started: Instant,
    /// The load under way (or last run), as `Command::StartLoad` gave it.
    load: Option<Load>,
    timing: loadgen_setup::LoadTiming,
    launch: Option<Launch>,
    set: Option<ReplicaSet>,
    ready: Option<launch::ReplicasReady>,
    files: Option<loadgen_setup::LoadFiles>,
    enforcement: Option<Enforcement>,
    lg: Option<Loadgen>,
    watch: Option<supervise::Watch>,
    /// A failure of the last command, for the next look.
    failed: Option<(Failed, Failure)>,
    /// The result, once collected.
    result: Option<Result<Box<crate::engine::Measured>, (Cause, String)>>,
    /// The load generator's raw result, for the charts.
    pub raw: Option<RunResult>,
    /// Wakes the runner for this step.
    waker: Waker,
    /// The threads watching this step's processes and readiness; dropping them stops them.
    watching: Vec<Watching>,
    /// The readiness probe's thread, while the replicas start.
    probing: Option<ReadyWatch>,
}

/// Which part of the step a failure comes from, so the machine weighs it in its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failed {
    Target,
    ReplicaGone,
    Loadgen,
}

impl LocalStep {
    /// The step of `cell` about to be deployed; what it watches wakes the runner through
    /// `waker`.
    pub fn new(cell: &Cell, waker: Waker) -> LocalStep {
        LocalStep {
            cell: cell.clone(),
            started: Instant::now(),
            load: None,
            timing: loadgen_setup::LoadTiming::default(),
            launch: None,
            set: None,
            ready: None,
            files: None,
            enforcement: None,
            lg: None,
            watch: None,
            failed: None,
            result: None,
            raw: None,
            waker,
            watching: Vec::new(),
            probing: None,
        }
    }

    /// Whether a command of this step failed or its result was read: news for the machine,
    /// to be looked at without waiting.
    pub fn has_news(&self) -> bool {
        self.failed.is_some() || self.result.is_some()
    }

    /// Wakes the runner when `pid` ends.
    fn watch_exit(&mut self, pid: u32) {
        self.watching.push(wake::on_exit(pid, self.waker.clone()));
    }

    /// Probes the replicas on a thread of its own until they answer, which wakes the runner.
    fn probe_readiness(&mut self) {
        if let (Some(set), Some(launch)) = (&self.set, &self.launch) {
            let probe = set.readiness_probe(launch);
            self.probing = Some(wake::on_ready(move || probe.answers(), self.waker.clone()));
        }
    }

    /// [`Command::Deploy`](crate::engine::machine::Command::Deploy): starts the replicas.
    pub fn deploy(&mut self, ctx: &mut CellContext) {
        match launch::spawn_replicas(ctx, &self.cell) {
            Ok((set, launch)) => {
                for pid in set.pids() {
                    self.watch_exit(pid);
                }
                self.set = Some(set);
                self.launch = Some(launch);
                self.probe_readiness();
            }
            Err(f) => self.failed = Some((Failed::Target, f)),
        }
    }

    /// [`Command::StartLoad`](crate::engine::machine::Command::StartLoad): writes the plan of
    /// `load`, makes the load generator's cgroup, checks the replicas still live, and starts
    /// it.
    pub fn start_load(&mut self, ctx: &mut CellContext, load: &Load) {
        self.timing = loadgen_setup::LoadTiming::of(load);
        self.load = Some(load.clone());
        if let Err((part, f)) = self.try_start_load(ctx, load) {
            self.failed = Some((part, f));
        }
    }

    fn try_start_load(
        &mut self,
        ctx: &mut CellContext,
        load: &Load,
    ) -> Result<(), (Failed, Failure)> {
        let spec = ctx.run.spec();
        let cell = &self.cell;
        let Some(set) = self.set.as_mut() else {
            return Ok(());
        };
        let files = loadgen_setup::write_plan(ctx.out, spec, load, cell, set)
            .map_err(|f| (Failed::Loadgen, f))?;
        let placement = loadgen_setup::loadgen_placement(spec, cell, cell.cpu.cpu_cores().ok());
        let cgroup =
            launch::loadgen_cgroup(ctx, cell, placement).map_err(|f| (Failed::Loadgen, f))?;
        if let Some(ready) = &self.ready {
            self.enforcement = Some(launch::enforcement(
                &ready.enforcement,
                &cgroup,
                placement.cores,
            ));
        }
        launch::alive_before_load(set).map_err(|f| (Failed::ReplicaGone, f))?;
        let descendants = set.descendant_pids();
        let lg = launch::start_loadgen(ctx, &files, cgroup, self.waker.clone())
            .map_err(|f| (Failed::Loadgen, f))?;
        for pid in descendants.into_iter().chain(lg.pid()) {
            self.watch_exit(pid);
        }
        self.files = Some(files);
        self.lg = Some(lg);
        self.watch = Some(supervise::Watch::new(&self.timing));
        Ok(())
    }

    /// [`Command::EndLoad`](crate::engine::machine::Command::EndLoad): the probe is collected
    /// and its target kept for the next; what the next load needs is made afresh, and its
    /// overhead counts from now.
    pub fn end_load(&mut self) {
        if let Some(lg) = self.lg.as_mut() {
            lg.stop();
        }
        self.lg = None;
        self.watch = None;
        self.files = None;
        self.started = Instant::now();
    }

    /// A progress line of this step's load generator: to the display.
    pub fn progress(&mut self, ctx: &mut CellContext, p: &ProgressLine) {
        if let Some(watch) = self.watch.as_mut() {
            watch.progress(ctx, &self.timing, p);
        }
    }

    /// This step's load generator's output has closed: its progress lines are all shown.
    pub fn output_closed(&mut self) {
        if let Some(watch) = self.watch.as_mut() {
            watch.output_closed();
        }
    }

    /// When this step next has a reading to take (at a phase boundary), if it has one.
    pub fn next_reading(&self) -> Option<Instant> {
        self.watch.as_ref()?.next_reading(&self.timing)
    }

    /// Takes the readings that are due.
    pub fn take_readings(&mut self) {
        if let (Some(watch), Some(set)) = (self.watch.as_mut(), self.set.as_ref()) {
            watch.take_readings(set, &self.timing);
        }
    }

    /// What the step shows now, as the machine's facts for the phase `look` names.
    pub fn look(&mut self, ctx: &mut CellContext, look: Look) -> Seen {
        let mut seen = Seen {
            overhead_seconds: Some(round2(self.started.elapsed().as_secs_f64())),
            enforcement: self.enforcement.clone(),
            ..Seen::default()
        };
        if let Some((part, f)) = self.failed.take() {
            match part {
                Failed::Target => seen.target_broken = Some((f.cause, f.message)),
                Failed::ReplicaGone => seen.replica_exited = Some(f.message),
                Failed::Loadgen => seen.loadgen_broken = Some((f.cause, f.message)),
            }
            return seen;
        }
        if let Some(result) = self.result.take() {
            seen.result = Some(result);
            return seen;
        }
        match look {
            Look::Target { .. } => self.look_at_replicas(ctx, &mut seen),
            Look::Load { .. } => {
                if let (Some(set), Some(lg), Some(watch)) =
                    (self.set.as_mut(), self.lg.as_mut(), self.watch.as_mut())
                {
                    let found = watch.look(set, lg, &self.timing);
                    seen.replica_exited = found.replica_exited;
                    seen.load_exited = found.load_exited;
                }
            }
            Look::BeforeDeploy { .. } | Look::Nothing => {}
        }
        seen
    }

    fn look_at_replicas(&mut self, ctx: &mut CellContext, seen: &mut Seen) {
        let (Some(set), Some(launch)) = (self.set.as_mut(), self.launch.as_ref()) else {
            return;
        };
        if self.ready.is_some() {
            // A target kept from the previous probe: ready unless a replica has left since.
            match set.first_exit() {
                Some(why) => seen.target_broken = Some((Cause::ReplicaExited, why)),
                None => seen.ready = Some(Ok(ready_words(set, self.cell.replicas))),
            }
            return;
        }
        let answer = self
            .probing
            .as_ref()
            .map_or_else(|| Err("not probed".to_owned()), ReadyWatch::last);
        match set.readiness(answer) {
            Readiness::NotYet(why) => seen.not_ready = format!("{why} (on {})", set.addr),
            Readiness::Failed(e) => seen.target_broken = Some((e.reason, e.message)),
            Readiness::Ready => {
                self.probing = None;
                if let Err(e) = set.finish_start(launch) {
                    seen.target_broken = Some((e.reason, e.message));
                    return;
                }
                let cpu = self.cell.cpu.cpu_cores().ok();
                let ready = launch::read_ready(ctx, set, cpu, self.started);
                seen.ready = Some(Ok(ready_words(set, self.cell.replicas)));
                self.ready = Some(ready);
            }
        }
    }

    /// [`Command::Collect`](crate::engine::machine::Command::Collect): the load generator has
    /// ended; stops everything with the last readings, and reads the result for the next look.
    /// A probe's target is read but left running ([`Load::target_may_be_kept`]): the next
    /// probe may run on it (`Command::EndLoad`), else `Command::Stop` stops it.
    pub fn collect(&mut self) {
        let keep = self.load.as_ref().is_some_and(Load::target_may_be_kept);
        let (Some(mut lg), Some(watch), Some(files)) =
            (self.lg.take(), self.watch.take(), self.files.take())
        else {
            return;
        };
        let (Some(set), Some(ready)) = (self.set.take(), self.ready.take()) else {
            return;
        };
        let end = if keep {
            let end = supervise::read_running(&set, &mut lg);
            self.set = Some(set);
            end
        } else {
            supervise::stop(set, &mut lg, true)
        };
        let Some(status) = watch.exited else {
            return;
        };
        let raw = match collect::read_result(&files.result, status, &lg) {
            Ok(r) => r,
            Err(f) => {
                self.result = Some(Err((f.cause, f.message)));
                return;
            }
        };
        let phases = &self.timing.phases;
        let target = collect::target_stats(&self.cell, phases, &raw, &ready, watch.cpu_at, &end);
        let overhead = self.started.elapsed().saturating_sub(self.timing.planned);
        let message = collect::summary(
            self.timing.planned,
            watch.wall,
            overhead,
            raw.preflight_seconds,
            &ready,
            &end,
        );
        let measured = crate::engine::Measured {
            results: crate::engine::results::cell_results(&raw),
            // No figure at all is no target section, as on a cluster.
            target: Some(target).filter(|t| *t != TargetStats::default()),
            enforcement: self.enforcement.clone(),
            overhead_seconds: Some(round2(overhead.as_secs_f64())),
            message,
            histograms: crate::engine::results::histograms(&raw),
            // One machine: no node is shared with anything the run could name.
            neighbours: Vec::new(),
            neighbours_missing: None,
            sends: crate::engine::Sends::of(&raw),
        };
        self.result = Some(Ok(Box::new(measured)));
        self.raw = Some(raw);
        if keep {
            self.ready = Some(ready);
        }
    }

    /// [`Command::Stop`](crate::engine::machine::Command::Stop): stops whatever still runs,
    /// with the usual grace (a target can still write its last words). Files and logs stay.
    pub fn stop(&mut self) {
        match (self.set.take(), self.lg.as_mut()) {
            (Some(set), Some(lg)) => {
                supervise::stop(set, lg, false);
            }
            (Some(set), None) => set.stop(),
            (None, Some(lg)) => lg.stop(),
            (None, None) => {}
        }
        self.lg = None;
    }
}

/// The ready target of `replicas` replica(s) in the machine's words.
fn ready_words(set: &ReplicaSet, replicas: u32) -> machine::Ready {
    machine::Ready {
        message: format!(
            "load generator running against http://{} ({replicas} replica(s) ready)",
            set.addr
        ),
        target_pods: Vec::new(),
    }
}
