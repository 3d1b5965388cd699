//! The cell state machine: the one place that decides what happens next to a run's current
//! step (a cell, or a repetition of it), for both executors.
//!
//! An executor tells the machine what it saw of the step as [`Seen`] facts (pods, processes,
//! a result) and gets back [`Command`]s (deploy, start the load, collect, stop, wake up later),
//! while the machine moves the status through the engine's events ([`super::reduce()`]). Which
//! failure wins over which, every timeout, when to read the result and when to clean up are
//! decided here and nowhere else; the executors only do what they are told.
//!
//! The machine is pure and keeps no memory of its own: the status is its state. So the
//! operator, which looks at the cluster afresh on every reconcile and may restart at any time,
//! and the local runner, which watches its processes as they run, drive the same machine: fed
//! the same status and the same facts, it gives the same commands.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::schedule::{self, Placed};
use super::{Ctx, Event, Load, Measured, Note, Step, reduce};
use crate::resource::conditions::{self, Cause, Reason};
use crate::resource::status::RecordedPod;
use crate::resource::{BenchmarkRunStatus, CellPhase, CleanupPolicy, RunPhase};

/// What an executor should look at before it next calls [`advance`], by the step's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// Nothing: the run is not running, or has no step left.
    Nothing,
    /// The step is about to be deployed: whether it fits, and whether the processes of an
    /// earlier step (or, on a cluster, of an earlier run of the same name) have stopped.
    BeforeDeploy {
        /// The step.
        at: Step,
        /// In a parallel run, the slot the step goes to (its nodes are
        /// `status.parallelism.nodeSets[slot]`): only earlier steps' pods on those nodes
        /// delay it.
        slot: Option<u32>,
    },
    /// The target is being deployed: its replicas and whether they are ready.
    Target {
        /// The step.
        at: Step,
        /// The target is the one the step's previous load ran on, kept for this one (a
        /// capacity probe's, settling for the next probe): that load's generator may still be
        /// on its way out, and is looked for too ([`Seen::load_left`]).
        kept: bool,
    },
    /// The load runs: the replicas, the load generator and, once it has ended (or the planned
    /// load is over, `load_over`), its result.
    Load {
        /// The step.
        at: Step,
        /// The planned load has had time to end: a result the load generator has printed may
        /// be read even before it is reported ended.
        load_over: bool,
    },
}

impl Look {
    /// The step looked at; `None` for [`Look::Nothing`].
    pub fn at(self) -> Option<Step> {
        match self {
            Look::Nothing => None,
            Look::BeforeDeploy { at, .. } | Look::Target { at, .. } | Look::Load { at, .. } => {
                Some(at)
            }
        }
    }
}

/// What the executor should look at for `status` at `now`, for a run whose warm-up and phases
/// take `planned_load`: the first of [`looks`].
pub fn look(status: &BenchmarkRunStatus, now: &Time, planned_load: Duration) -> Look {
    looks(status, now, planned_load)[0]
}

/// What the executor should look at, one look per step of this turn (several in a parallel
/// run: every step in flight and one for each free slot, see `schedule::plan`); at least one.
/// A run that has not started is looked at as its first step about to be deployed.
pub fn looks(status: &BenchmarkRunStatus, now: &Time, planned_load: Duration) -> Vec<Look> {
    match status.phase {
        // Should the run be admitted now, it deploys its first step in the same advance.
        RunPhase::Pending => {
            return vec![Look::BeforeDeploy {
                at: Step {
                    cell: 0,
                    repetition: 1,
                },
                slot: None,
            }];
        }
        RunPhase::Running => {}
        _ => return vec![Look::Nothing],
    }
    let looks: Vec<Look> = schedule::plan(status)
        .into_iter()
        .map(|p| look_at(status, p, now, planned_load))
        .collect();
    if looks.is_empty() {
        vec![Look::Nothing]
    } else {
        looks
    }
}

/// The look at one placed step of a running run.
fn look_at(
    status: &BenchmarkRunStatus,
    placed: Placed,
    now: &Time,
    planned_load: Duration,
) -> Look {
    let at = placed.step;
    let step = at;
    match step.phase(status) {
        CellPhase::Pending => Look::BeforeDeploy {
            at,
            slot: placed.slot,
        },
        CellPhase::Deploying => Look::Target {
            at,
            kept: kept_target(status, at),
        },
        CellPhase::Running => {
            let started = status.cells[step.cell].load_start_time.as_ref();
            Look::Load {
                at,
                load_over: seconds_since(started, now) >= planned_load.as_secs() as i64,
            }
        }
        _ => Look::Nothing,
    }
}

/// The target of a step, ready for load.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ready {
    /// Against what the load runs, e.g. "load generator running against http://10.0.0.1:8080
    /// (2 replica(s) ready)".
    pub message: String,
    /// The target pods the load runs against (cluster only): a change among them fails the
    /// measurement.
    pub target_pods: Vec<RecordedPod>,
}

/// Where a run stands in an executor's admission queue (the operator's: at most
/// `--max-active-runs` runs at once, oldest first).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueuePlace {
    /// Runs other than this one that are Running.
    pub active: usize,
    /// Pending runs created before this one (they go first).
    pub ahead: usize,
    /// The most runs allowed to be Running at once.
    pub max_active: usize,
}

impl QueuePlace {
    /// Whether a Pending run may start now: a free slot, and no older run waiting.
    pub fn admits(&self) -> bool {
        self.active < self.max_active.max(1) && self.ahead == 0
    }
}

/// What an executor saw at `ctx.now`: facts, each `None`/empty/false when not seen. The run's
/// own facts (a refusal, a changed spec, its place in a queue) whatever the step; then what it
/// can see of the current step in the step's phase ([`look`]). Which fact matters, and which
/// wins when several are seen at once, is the machine's to decide.
#[derive(Debug, Default)]
pub struct Seen {
    /// The spec cannot run (invalid, or naming an image the executor may not run): the reason
    /// (`Reason::InvalidSpec` or another CamelCase word) and the field or rule at fault.
    pub refused: Option<(Reason, String)>,
    /// The spec changed while the run was running, in words (which generations).
    pub spec_changed: Option<String>,
    /// Where a run that has not started stands in the executor's admission queue; `None` when
    /// the executor has none (the run starts at once).
    pub queue: Option<QueuePlace>,
    /// The run was stopped by a signal (local runs).
    pub interrupted: bool,
    /// Processes of an earlier step still running (pod names): they would take CPU from this
    /// step, so it waits for them.
    pub previous_running: Vec<String>,
    /// Why the step's target can never be placed (it is larger than any node it may use).
    pub never_fits: Option<String>,
    /// The step's target objects are gone (deleted behind the executor's back, or never made).
    pub target_missing: bool,
    /// Since when the executor has known the step's target: when its objects were made (a
    /// Deployment's creation time) or, while they are missing, when this executor began to
    /// watch (an operator that was down saw no time pass). The ready clock runs from the later
    /// of this and the step's start, so an operator down between writing the step and making
    /// its target does not fail the cell for its own absence, while a target that cannot be
    /// made under a watching executor still fails within `timeouts.ready`.
    pub target_since: Option<Time>,
    /// A target replica failed in a way that will not mend by waiting: the cause and what it
    /// said.
    pub target_broken: Option<(Cause, String)>,
    /// The scheduler reported a target replica unschedulable.
    pub unschedulable: Option<String>,
    /// Every replica is ready (`Ok`), or the target is in a state the load cannot use (`Err`).
    pub ready: Option<Result<Ready, String>>,
    /// Why the target is not ready yet, for the message should the ready timeout pass.
    pub not_ready: String,
    /// A load generator of an earlier load of the step is still there (a capacity probe's on
    /// a kept target, being deleted): the next load waits for it to go, in words.
    pub load_left: Option<String>,
    /// A replica that was ready exited, restarted or was replaced while the load ran.
    pub replica_exited: Option<String>,
    /// The load generator cannot start (its Secret or image is missing): cause and words.
    pub loadgen_broken: Option<(Cause, String)>,
    /// The load generator has ended, its result not yet read (local runs collect it then).
    pub load_exited: bool,
    /// The load generator's result, read: the figures, or why it could not be used.
    pub result: Option<Result<Box<Measured>, (Cause, String)>>,
    /// The load generator failed: cause and message.
    pub load_failed: Option<(Cause, String)>,
    /// A target container was killed for memory while the load ran.
    pub target_oom: Option<String>,
    /// The load generator's objects are gone while the load should run.
    pub load_missing: bool,
    /// Before a parallel run's first step: the executor's node sets, one per slot it can hold
    /// (empty where it has no separate nodes, as one machine), and how they came about.
    pub slots: Option<SlotsSeen>,
    /// Seconds the executor has spent on the step so far, where it measures them (local runs):
    /// a failed step records them.
    pub overhead_seconds: Option<f64>,
    /// How the CPU limits are enforced, once the executor knows (local runs).
    pub enforcement: Option<crate::resource::Enforcement>,
}

/// The node sets an executor can measure in at once, as it saw them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SlotsSeen {
    /// The nodes of each set, sets apart (at most as many as the run asked for).
    pub node_sets: Vec<Vec<String>>,
    /// How the sets came about, e.g. "2 Ready node(s) match spec.placement; a measurement
    /// needs up to 1.5 CPU and 192Mi".
    pub message: String,
}

/// What the executor is to do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Make the step's target (again: a repeated deploy of the same step names the same
    /// objects).
    Deploy(Step),
    /// Start the load generator against the ready target (again, if its objects vanished),
    /// running `load`: what the engine worked out the step loads (a capacity probe's, at its
    /// rate), for the executor to write into the load generator's plan as it is.
    StartLoad {
        /// The step.
        at: Step,
        /// What the load generator runs.
        load: Load,
    },
    /// The load generator has ended: stop the step's processes with their last readings and
    /// read its result, then report it as [`Seen::result`].
    Collect(Step),
    /// A capacity probe was measured and the target is kept: the cell's next probe runs on it,
    /// after its settle. Remove the load generator (its objects, on a cluster) and leave the
    /// target running.
    EndLoad(Step),
    /// The step ended and its target goes with it (a probe's too, when its cell's next probe
    /// gets a fresh target): stop what it runs and delete its objects, unless `keep` (the
    /// cleanup policy keeps a finished cell's objects for a look).
    Stop {
        /// The step.
        at: Step,
        /// Keep the objects (their processes stop in any case when the executor is local).
        keep: bool,
    },
    /// Look again after this long, even if nothing is seen to change (a safety net for every
    /// timeout the machine keeps).
    WakeIn(Duration),
    /// No step is left: the run has ended.
    Ended,
}

/// What one [`advance`] did: the commands, and the notes worth publishing.
#[derive(Debug, Default, PartialEq)]
pub struct Advance {
    /// What to do, in order.
    pub commands: Vec<Command>,
    /// Kubernetes Events to publish. The local runner prints none of them: its progress
    /// display says the same as it happens.
    pub notes: Vec<Note>,
    // What a failed step records of the executor's own (from `Seen`).
    overhead_seconds: Option<f64>,
    enforcement: Option<crate::resource::Enforcement>,
}

impl Advance {
    /// When the machine asks to be looked at again ([`Command::WakeIn`]), if it does.
    pub fn wake_in(&self) -> Option<Duration> {
        self.commands.iter().rev().find_map(|c| match c {
            Command::WakeIn(after) => Some(*after),
            _ => None,
        })
    }

    /// Whether the executor was told to do something (more than to look again later): then
    /// the next look should come at once, to see what it did.
    pub fn acted(&self) -> bool {
        self.commands
            .iter()
            .any(|c| !matches!(c, Command::WakeIn(_)))
    }

    /// Whether the run has ended ([`Command::Ended`]).
    pub fn ended(&self) -> bool {
        self.commands.contains(&Command::Ended)
    }

    /// Writes `event` into `status` through the reducer, keeping its notes.
    fn happened(&mut self, status: &mut BenchmarkRunStatus, event: Event, ctx: &Ctx) {
        self.notes.extend(reduce(status, event, ctx));
    }
}

/// How often a step waiting for the previous one's processes to stop looks again by itself;
/// the kubelet's pod status update (a watch event) normally wakes it first.
pub const STOPPING_SAFETY_NET: Duration = Duration::from_secs(2);

/// How often a step whose planned load is over looks for the load generator's result until it
/// has it (or the deadline passes); the pods' watch events usually bring it first.
pub const RESULT_POLL: Duration = Duration::from_secs(1);

/// How often a queued run looks at the queue by itself. Runs leaving phase Running wake the
/// waiting ones at once (the operator's queue); this only bounds the wait should such a
/// wake-up be lost.
pub const QUEUED_SAFETY_NET: Duration = Duration::from_secs(60);

/// Moves the run by what was `seen`, at most one step: the status changes through the
/// engine's events, and the commands say what the executor does next. In order: a refused
/// spec fails the run, a spec that changed under a running run fails it, a run that has not
/// started waits in the queue or is admitted; then its current step moves. A run with no step
/// left ends ([`Command::Ended`]).
pub fn advance(status: &mut BenchmarkRunStatus, seen: Seen, ctx: &Ctx) -> Advance {
    let look = look(status, ctx.now, ctx.limits.planned_load);
    advance_at(status, look, seen, ctx)
}

/// [`advance`] for the step `look` names: one of the [`looks`] of this turn (an earlier step
/// of the same turn may have moved the run since, which this one then sees).
pub fn advance_at(
    status: &mut BenchmarkRunStatus,
    look: Look,
    mut seen: Seen,
    ctx: &Ctx,
) -> Advance {
    let mut out = Advance {
        overhead_seconds: seen.overhead_seconds.take(),
        enforcement: seen.enforcement.take(),
        ..Advance::default()
    };
    if status.phase.is_finished() {
        return out;
    }
    if let Some((reason, message)) = seen.refused.take() {
        abandon(
            status,
            Event::SpecRefused { reason, message },
            ctx,
            &mut out,
        );
        return out;
    }
    if status.phase == RunPhase::Running
        && let Some(message) = seen.spec_changed.take()
    {
        abandon(status, Event::SpecChanged { message }, ctx, &mut out);
        return out;
    }
    let mut slot = match look {
        Look::BeforeDeploy { slot, .. } => slot,
        _ => None,
    };
    let step = if status.phase == RunPhase::Pending {
        if !admit(status, seen.queue, ctx, &mut out) {
            return out;
        }
        record_slots(status, seen.slots.take(), ctx, &mut out);
        let first = schedule::plan(status).into_iter().next();
        slot = first.and_then(|p| p.slot);
        first.map(|p| p.step)
    } else {
        look.at()
    };
    let Some(step) = step else {
        if schedule::plan(status).is_empty() {
            out.happened(status, Event::Finished { interrupted: false }, ctx);
            out.commands.push(Command::Ended);
        }
        return out;
    };
    if status.phase != RunPhase::Running
        || status
            .cells
            .get(step.cell)
            .is_none_or(|c| c.phase.is_finished())
    {
        // An earlier step of this turn ended the run, or this step's cell (stopOnFailure).
        return out;
    }
    if seen.interrupted {
        interrupt(status, step, ctx, &mut out);
        return out;
    }
    match step.phase(status) {
        CellPhase::Pending => before_deploy(status, step, slot, seen, ctx, &mut out),
        CellPhase::Deploying => deploying(status, step, seen, ctx, &mut out),
        CellPhase::Running => running(status, step, seen, ctx, &mut out),
        CellPhase::Succeeded | CellPhase::Failed | CellPhase::Skipped => {}
    }
    out
}

/// SIGINT or SIGTERM: the step under way fails as interrupted (one not deployed yet is left
/// Pending), and the run ends.
fn interrupt(status: &mut BenchmarkRunStatus, step: Step, ctx: &Ctx, out: &mut Advance) {
    if step.phase(status) != CellPhase::Pending {
        fail(
            status,
            step,
            Cause::Interrupted,
            "interrupted by SIGINT/SIGTERM",
            ctx,
            out,
        );
    }
    out.happened(status, Event::Finished { interrupted: true }, ctx);
    out.commands.push(Command::Ended);
}

/// The run fails as `event` says (a refused or changed spec). A step that was deployed is
/// stopped and its objects deleted whatever `spec.cleanup` says: it keeps what a finished step
/// leaves, while these would go on running what must not.
fn abandon(status: &mut BenchmarkRunStatus, event: Event, ctx: &Ctx, out: &mut Advance) {
    let deployed: Vec<Step> = if status.phase == RunPhase::Running {
        schedule::in_flight(status)
            .into_iter()
            .map(|p| p.step)
            .collect()
    } else {
        Vec::new()
    };
    out.happened(status, event, ctx);
    for at in deployed {
        out.commands.push(Command::Stop { at, keep: false });
    }
}

/// A parallel run records its slots as it starts: the executor's node sets, at most as many
/// as asked; one slot and no node set where the executor has none (one machine).
fn record_slots(
    status: &mut BenchmarkRunStatus,
    seen: Option<SlotsSeen>,
    ctx: &Ctx,
    out: &mut Advance,
) {
    if !ctx.parallelism.is_parallel() {
        return;
    }
    let seen = seen.unwrap_or_else(|| SlotsSeen {
        node_sets: Vec::new(),
        message: "one machine has no separate nodes: the cells are measured one at a time".into(),
    });
    out.happened(
        status,
        Event::Slots {
            asked: ctx.parallelism,
            node_sets: seen.node_sets,
            message: seen.message,
        },
        ctx,
    );
}

/// A run that has not started: it starts with its cells when the queue (if the executor has
/// one) admits it, else waits its turn. True when it started.
fn admit(
    status: &mut BenchmarkRunStatus,
    queue: Option<QueuePlace>,
    ctx: &Ctx,
    out: &mut Advance,
) -> bool {
    if let Some(q) = queue.filter(|q| !q.admits()) {
        let queued = Event::Queued {
            cells: ctx.cells.len(),
            position: q.ahead + 1,
            active: q.active,
            max_active: q.max_active,
        };
        out.happened(status, queued, ctx);
        out.commands.push(Command::WakeIn(QUEUED_SAFETY_NET));
        return false;
    }
    out.happened(status, Event::admitted(ctx.cells), ctx);
    true
}

/// "a, b, c, d and 3 more": the first [`WAITING_NAMES_AT_MOST`] names. Pods labelled with the
/// run's name can be any number (an earlier run's, or made by hand), and the message must keep
/// the status's size bound.
fn some_of(names: &[String]) -> String {
    use crate::resource::bound::WAITING_NAMES_AT_MOST;
    let shown = names[..names.len().min(WAITING_NAMES_AT_MOST)].join(", ");
    match names.len().saturating_sub(WAITING_NAMES_AT_MOST) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// A step about to be deployed: it waits for the processes of earlier steps (or of an earlier
/// run of the same name) to stop, up to `timeouts.ready` from the previous step's end (the
/// run's start for its first step), fails at once when it can never fit, else deploys.
fn before_deploy(
    status: &mut BenchmarkRunStatus,
    at: Step,
    slot: Option<u32>,
    seen: Seen,
    ctx: &Ctx,
    out: &mut Advance,
) {
    if !seen.previous_running.is_empty() {
        let waiting = &seen.previous_running;
        let since = previous_end(status).or(status.start_time.as_ref());
        let waited = seconds_since(since, ctx.now);
        if waited >= ctx.limits.ready.as_secs() as i64 {
            let message = format!(
                "{} pod(s) of an earlier cell still ran {} after it ended, so this cell could \
                 not start without sharing their CPU: {}",
                waiting.len(),
                humantime(ctx.limits.ready),
                some_of(waiting)
            );
            // Nothing of this step exists to stop.
            fail_unstarted(status, at, Cause::PreviousPodsLingering, message, ctx, out);
            return;
        }
        let message = format!(
            "waiting for {} pod(s) of an earlier cell to stop: {}",
            waiting.len(),
            some_of(waiting)
        );
        out.happened(status, Event::Waiting { message }, ctx);
        out.commands.push(Command::WakeIn(STOPPING_SAFETY_NET));
        return;
    }
    if let Some(why) = seen.never_fits {
        // Nothing is made: the cell ends now instead of waiting out the ready timeout.
        fail_unstarted(status, at, Cause::Unschedulable, why, ctx, out);
        return;
    }
    if slot.is_some() {
        out.happened(
            status,
            Event::Placed {
                cell: at.cell,
                slot,
            },
            ctx,
        );
    }
    out.commands.push(Command::Deploy(at));
    let mut message = deploy_message(ctx, at.cell);
    let nodes = schedule::slot_nodes(status, slot);
    if !nodes.is_empty() {
        message.push_str(&format!(" on node(s) {}", nodes.join(", ")));
    }
    out.happened(
        status,
        Event::CellDeploying {
            cell: at.cell,
            message,
        },
        ctx,
    );
    out.commands.push(Command::WakeIn(ctx.limits.ready));
}

/// "deploying 2 x pool replica(s), cpu 1 each": the same words from both executors.
fn deploy_message(ctx: &Ctx, cell: usize) -> String {
    match ctx.cells.get(cell) {
        Some(c) => format!(
            "deploying {} x {} replica(s), cpu {} each",
            c.replicas,
            c.mode,
            c.cpu.as_str()
        ),
        None => "deploying".into(),
    }
}

/// The target is being deployed: a broken or unschedulable replica fails the step, missing
/// objects are made again, a ready target gets its load, and `timeouts.ready` bounds the wait.
fn deploying(status: &mut BenchmarkRunStatus, at: Step, seen: Seen, ctx: &Ctx, out: &mut Advance) {
    if let Some((cause, message)) = seen.target_broken {
        fail(status, at, cause, message, ctx, out);
        return;
    }
    if let Some(message) = seen.unschedulable {
        fail(status, at, Cause::Unschedulable, message, ctx, out);
        return;
    }
    let limit = ctx.limits.ready.as_secs() as i64;
    let mut not_ready = seen.not_ready;
    let mut load_leaving = false;
    if seen.target_missing {
        out.commands.push(Command::Deploy(at));
    } else if let Some(ready) = seen.ready {
        match ready {
            Ok(ready) => {
                if let Some(left) = settling(status, at, ctx.now) {
                    out.commands.push(Command::WakeIn(left));
                    return;
                }
                match seen.load_left {
                    Some(why) => (not_ready, load_leaving) = (why, true),
                    None => return start_load(status, at, ready, ctx, out),
                }
            }
            Err(message) => return fail(status, at, Cause::ChildBroken, message, ctx, out),
        }
    }
    // The later of the step's start and `Seen::target_since`: a target made late (the operator
    // was down, or it was deleted and made again) gets the whole ready timeout.
    let started = status.cells[at.cell].step_started();
    let since = match (started, seen.target_since.as_ref()) {
        (Some(s), Some(t)) => Some(if t.0 > s.0 { t } else { s }),
        (s, t) => s.or(t),
    };
    let waited = seconds_since(since, ctx.now);
    if waited >= limit {
        let message = format!(
            "the target was not ready within {}: {not_ready}",
            humantime(ctx.limits.ready),
        );
        fail(status, at, Cause::NeverReady, message, ctx, out);
        return;
    }
    let wait = Duration::from_secs((limit - waited).max(1) as u64);
    // A load generator on its way out is looked at again soon; its deletion's watch event
    // may not come to a step that watches its target.
    let wait = if load_leaving {
        wait.min(STOPPING_SAFETY_NET)
    } else {
        wait
    };
    out.commands.push(Command::WakeIn(wait));
}

/// How long the kept target of a capacity probe still settles before its load starts; `None`
/// when it does not (the settle is over, or the target is not a kept one).
fn settling(status: &BenchmarkRunStatus, at: Step, now: &Time) -> Option<Duration> {
    let until = crate::engine::capacity::settle::settled_at(status.cells.get(at.cell)?)?;
    let left = until - conditions::secs_of(now);
    (left > 0).then(|| Duration::from_secs(left as u64))
}

/// Whether step `at`'s target is the one its previous load ran on: a capacity probe's kept
/// target, settling (or settled) for the cell's next probe.
fn kept_target(status: &BenchmarkRunStatus, at: Step) -> bool {
    status
        .cells
        .get(at.cell)
        .and_then(|c| c.capacity.as_ref())
        .is_some_and(|c| c.settle_seconds.is_some())
}

/// The load runs. In this order, because the first that holds decides: a replica that left
/// (a result measured across a restart has a gap in it and must not count), a load generator
/// that cannot start, the result, the load generator's failure, a target killed for memory,
/// the deadline; then objects that vanished are made again.
fn running(status: &mut BenchmarkRunStatus, at: Step, seen: Seen, ctx: &Ctx, out: &mut Advance) {
    if let Some(message) = seen.replica_exited {
        let (cause, message) = if message.contains("reason OOMKilled") {
            (
                Cause::OomKilled,
                format!("{message}; raise the cell's memory"),
            )
        } else {
            (Cause::ReplicaExited, message)
        };
        fail(status, at, cause, message, ctx, out);
        return;
    }
    if let Some((cause, message)) = seen.loadgen_broken {
        fail(status, at, cause, message, ctx, out);
        return;
    }
    if let Some(result) = seen.result {
        match result {
            Ok(measured) => {
                let event = Event::CellMeasured {
                    cell: at.cell,
                    measured,
                };
                out.happened(status, event, ctx);
                // A capacity cell kept deployed settles on its target for its next probe.
                if status.cells[at.cell].phase == CellPhase::Deploying {
                    out.commands.push(Command::EndLoad(at));
                    let left = settling(status, at, ctx.now).unwrap_or(Duration::from_secs(1));
                    out.commands.push(Command::WakeIn(left));
                } else {
                    out.commands.push(stop(status, at, false, ctx));
                }
            }
            Err((cause, message)) => fail(status, at, cause, message, ctx, out),
        }
        return;
    }
    let failure = seen
        .load_failed
        .or_else(|| seen.target_oom.map(|m| (Cause::OomKilled, m)));
    if let Some((cause, message)) = failure {
        fail(status, at, cause, message, ctx, out);
        return;
    }
    if seen.load_exited {
        out.commands.push(Command::Collect(at));
        return;
    }
    load_goes_on(status, at, seen.load_missing, seen.ready, ctx, out);
}

/// The load runs on with no result yet: it fails at its deadline; a load generator whose
/// objects vanished is made again (or, the target gone too, the step starts over); pods not
/// yet recorded are; and the machine looks again when the load should be over, then every
/// [`RESULT_POLL`].
fn load_goes_on(
    status: &mut BenchmarkRunStatus,
    at: Step,
    load_missing: bool,
    ready: Option<Result<Ready, String>>,
    ctx: &Ctx,
    out: &mut Advance,
) {
    let waited = seconds_since(status.cells[at.cell].load_start_time.as_ref(), ctx.now);
    let limit = ctx.limits.load_deadline.as_secs() as i64;
    if waited >= limit {
        let message = super::timeout_message(ctx.limits.load_deadline);
        fail(status, at, Cause::Timeout, message, ctx, out);
        return;
    }
    if load_missing {
        match ready {
            // The load generator's objects are made again under the same names, so never
            // twice; the new load measures afresh, against these pods, and has its own
            // deadline from now.
            Some(Ok(ready)) => start_load(status, at, ready, ctx, out),
            // The target went away too: the step starts again from its deployment.
            _ => {
                out.happened(status, Event::StepLost { cell: at.cell }, ctx);
                out.commands.push(Command::WakeIn(Duration::from_secs(1)));
            }
        }
        return;
    }
    if let Some(Ok(ready)) = ready
        && status.cells[at.cell].target_pods.is_empty()
    {
        // A step started by an executor that kept no record of its pods: record them now, so
        // a change from here on is still caught.
        let event = Event::TargetPodsRecorded {
            cell: at.cell,
            target_pods: ready.target_pods,
        };
        out.happened(status, event, ctx);
    }
    let planned = ctx.limits.planned_load.as_secs() as i64;
    let next = if waited < planned {
        planned - waited
    } else {
        RESULT_POLL.as_secs() as i64
    };
    out.commands.push(Command::WakeIn(Duration::from_secs(
        next.min(limit - waited).max(1) as u64,
    )));
}

/// The load starts against the ready target: until its deadline, counted from now.
fn start_load(
    status: &mut BenchmarkRunStatus,
    at: Step,
    ready: Ready,
    ctx: &Ctx,
    out: &mut Advance,
) {
    let load = Load::of(ctx.measure, status, at);
    out.commands.push(Command::StartLoad { at, load });
    let event = Event::LoadStarted {
        cell: at.cell,
        message: ready.message,
        target_pods: ready.target_pods,
    };
    out.happened(status, event, ctx);
    out.commands.push(Command::WakeIn(ctx.limits.load_deadline));
}

/// The step failed: the status says why, and what the step made is stopped.
fn fail(
    status: &mut BenchmarkRunStatus,
    at: Step,
    cause: Cause,
    message: impl Into<String>,
    ctx: &Ctx,
    out: &mut Advance,
) {
    let event = Event::CellFailed {
        cell: at.cell,
        cause,
        message: message.into(),
        overhead_seconds: out.overhead_seconds,
        enforcement: out.enforcement.clone(),
    };
    out.happened(status, event, ctx);
    out.commands.push(stop(status, at, true, ctx));
}

/// The step failed before anything of it was made: there is nothing to stop.
fn fail_unstarted(
    status: &mut BenchmarkRunStatus,
    at: Step,
    cause: Cause,
    message: String,
    ctx: &Ctx,
    out: &mut Advance,
) {
    let event = Event::CellFailed {
        cell: at.cell,
        cause,
        message,
        overhead_seconds: None,
        enforcement: None,
    };
    out.happened(status, event, ctx);
}

/// The stop after a step ended. A cell that is finished keeps what the cleanup policy says;
/// one that goes on to another repetition loses its objects in any case, as its pods would
/// take CPU from the cells measured in between.
fn stop(status: &BenchmarkRunStatus, at: Step, failed: bool, ctx: &Ctx) -> Command {
    let finished = status
        .cells
        .get(at.cell)
        .is_some_and(|c| c.phase.is_finished());
    let keep = finished
        && match ctx.limits.cleanup {
            CleanupPolicy::Always => false,
            CleanupPolicy::KeepFailed => failed,
            CleanupPolicy::Never => true,
        };
    Command::Stop { at, keep }
}

/// When the latest step of the run ended (a cell's or a repetition's completion), if any did.
pub fn previous_end(status: &BenchmarkRunStatus) -> Option<&Time> {
    completion_times(status).max_by_key(|t| t.0)
}

/// Every completion time in the status: each repetition's and each finished cell's.
pub fn completion_times(status: &BenchmarkRunStatus) -> impl Iterator<Item = &Time> {
    status.cells.iter().flat_map(|c| {
        c.repetitions
            .iter()
            .filter_map(|r| r.completion_time.as_ref())
            .chain(c.completion_time.as_ref())
    })
}

/// Whole seconds from `since` (now when unknown) to `now`: the resolution of the status's
/// times, so a restarted executor reading them back decides alike.
pub fn seconds_since(since: Option<&Time>, now: &Time) -> i64 {
    let now = conditions::secs_of(now);
    now - since.map_or(now, conditions::secs_of)
}

/// "2m", "90s": a timeout as the spec writes durations.
fn humantime(d: Duration) -> String {
    crate::resource::Duration(d).to_string()
}
