//! The operator's step, pure: (run, observation, now) -> the next status, the objects to apply
//! or delete, the Events to publish and when to look again.
//!
//! What the cluster shows is turned into the run engine's events (`crate::engine`), which write
//! the status exactly as they do for a local run; this module adds only what is the cluster's
//! own: which objects to apply or delete, and when to look again.
//!
//! The status is the machine's only memory. Each call looks at the current step (the cell and
//! repetition not finished, see `engine::next_step`) and moves it at most one step, so a
//! restarted operator fed the same status and cluster state takes the same step, and child
//! names are deterministic, so a step repeated after a crash applies the same objects again
//! instead of creating new ones.

mod inspect;
mod previous;
mod types;

#[cfg(test)]
mod tests;

use std::time::Duration;

use benchmatrix_loadgen::result::RunResult;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::{build, images, replicas};
use crate::api::conditions::{self, Reason};
use crate::api::{
    BenchmarkRun, BenchmarkRunStatus, CellPhase, CleanupPolicy, Enforcement, RunPhase,
};
use crate::engine::{self, Ctx, Event, Measured, Step, ValidatedRun};
use crate::plan::Cell;
use crate::results;

pub use crate::api::conditions::Cause;
pub use inspect::{job_complete, job_failed};
pub use types::{
    Action, Child, ChildKind, Decision, EventNote, Observation, QUEUED_SAFETY_NET, QueueView,
    Settings,
};

use inspect::{ReadyTarget, ready_target};

/// The step the run is at, so `observe` reads only what matters: `None` unless the run is
/// Running with a cell left.
pub fn current_step(status: Option<&BenchmarkRunStatus>) -> Option<Step> {
    let status = status?;
    if status.phase != RunPhase::Running {
        return None;
    }
    engine::next_step(status)
}

/// Decides the next step for `run`.
pub fn decide(run: &BenchmarkRun, obs: &Observation, now: &Time, settings: &Settings) -> Decision {
    let old = run.status.clone().unwrap_or_default();
    let mut d = Decision {
        status: old.clone(),
        actions: Vec::new(),
        events: Vec::new(),
        requeue: None,
    };
    let generation = run.metadata.generation;

    // Finished runs only wait for their TTL.
    if old.phase.is_finished() {
        if let (Some(ttl), Some(done)) = (run.spec.ttl_after_finished, &old.completion_time) {
            let expires = conditions::secs_of(done) + ttl.get().as_secs() as i64;
            let left = expires - conditions::secs_of(now);
            if left <= 0 {
                d.actions.push(Action::DeleteRun);
            } else {
                d.requeue = Some(Duration::from_secs(left as u64));
            }
        }
        return d;
    }

    // A spec that cannot run, or names an image that is no valid reference or that the operator
    // may not run, fails the run once, with the field named; nothing is created and nothing is
    // retried until the spec changes (which re-triggers the reconcile). A run already running
    // when the operator restarts with a narrower allow-list loses its current children too: a
    // refused image must not keep going.
    let ctx = Ctx {
        generation,
        now,
        stop_on_failure: run.spec.stop_on_failure,
        repeat: run.spec.repeat.max(1),
        thresholds: &run.spec.thresholds,
    };
    let refusal = match ValidatedRun::for_cluster(run.clone()) {
        Err(err) => Err((Reason::InvalidSpec, format!("invalid spec: {err}"))),
        Ok(v) => {
            let uses = images::image_uses(run, &settings.target_image, &settings.loadgen_image);
            match settings.allowed_images.refusal(&uses) {
                Some(refused) => Err((refused.reason, refused.message)),
                None => Ok(v),
            }
        }
    };
    let v = match refusal {
        Ok(v) => v,
        Err((why, message)) => {
            if old.phase == RunPhase::Running {
                d.actions.extend(current_children_cleanup(run, &old));
            }
            let event = Event::SpecRefused {
                reason: why,
                message,
            };
            d.events = engine::apply(&mut d.status, event, &ctx);
            return d;
        }
    };

    // The spec is immutable by a CEL rule; should it change anyway (an older CRD without the
    // rule), the results of two specs must not mix: the run fails, saying so.
    if old.phase == RunPhase::Running
        && let (Some(seen), Some(current)) = (old.observed_generation, generation)
        && seen != current
    {
        let message = format!(
            "the spec changed while the run was running (generation {seen} -> {current}); \
             delete the run and apply it again"
        );
        d.actions.extend(current_children_cleanup(run, &old));
        d.events = engine::apply(&mut d.status, Event::SpecChanged { message }, &ctx);
        return d;
    }

    if old.phase == RunPhase::Pending {
        let q = obs.queue;
        if !q.admits() {
            let queued = Event::Queued {
                cells: v.cells().len(),
                position: q.ahead + 1,
                waiting: q.waiting,
                active: q.active,
                max_active: q.max_active,
            };
            d.events = engine::apply(&mut d.status, queued, &ctx);
            // A run that finishes or is deleted wakes the waiting runs at once (queue.rs);
            // this look now and then is only a safety net for a wake-up that was lost.
            d.requeue = Some(QUEUED_SAFETY_NET);
            return d;
        }
        d.events = engine::apply(&mut d.status, Event::admitted(v.cells()), &ctx);
    }

    step_cell(&v, obs, &ctx, settings, &mut d);
    d.status.progress = Some(engine::progress(&d.status, ctx.repeat));
    d
}

/// The current cell and repetition, and the decision being built.
struct At<'a> {
    v: &'a ValidatedRun,
    cell: &'a Cell,
    step: Step,
}

impl At<'_> {
    fn deployment_and_service(&self, settings: &Settings) -> [Action; 2] {
        let (v, cell, r) = (self.v, self.cell, self.step.repetition);
        [
            Action::Apply(Child::Deployment(Box::new(build::deployment(
                v,
                cell,
                r,
                &settings.target_image,
            )))),
            Action::Apply(Child::Service(Box::new(build::service(v, cell, r)))),
        ]
    }

    fn plan_and_job(&self, ready: &ReadyTarget, settings: &Settings) -> [Action; 2] {
        let (v, cell, r) = (self.v, self.cell, self.step.repetition);
        [
            Action::Apply(Child::ConfigMap(Box::new(build::plan_config_map(
                v,
                cell,
                r,
                &ready.target,
                &ready.replicas,
            )))),
            Action::Apply(Child::Job(Box::new(build::job(
                v,
                cell,
                r,
                &settings.loadgen_image,
            )))),
        ]
    }
}

/// Moves the current cell one step, or finishes the run when no cell is left.
fn step_cell(
    v: &ValidatedRun,
    obs: &Observation,
    ctx: &Ctx,
    settings: &Settings,
    d: &mut Decision,
) {
    let Some(step) = engine::next_step(&d.status) else {
        finish(v, ctx, d);
        return;
    };
    let Some(cell) = v.cells().get(step.cell) else {
        finish(v, ctx, d);
        return;
    };
    let at = At { v, cell, step };
    let index = step.cell;
    let run = v.run();
    match step.phase {
        CellPhase::Pending => {
            if wait_for_previous(&at, obs, ctx, d) {
                return;
            }
            if let Some(why) = inspect::never_fits(run, cell, obs) {
                // Nothing is created: the cell ends now instead of waiting out the ready timeout,
                // and there is nothing of it to clean up.
                let before = d.actions.len();
                fail_cell(&at, Cause::Unschedulable, why, ctx, d);
                d.actions.truncate(before);
                return;
            }
            d.actions.extend(at.deployment_and_service(settings));
            let message = format!(
                "deploying {} replica(s) with {} CPU each",
                cell.replicas, cell.cpu
            );
            let event = Event::CellDeploying {
                cell: index,
                message,
            };
            d.events.extend(engine::apply(&mut d.status, event, ctx));
            d.requeue = Some(run.spec.timeouts.ready.get());
        }
        CellPhase::Deploying => {
            if let Some((why, message)) = inspect::pod_failure(&obs.target_pods) {
                fail_cell(&at, why, message, ctx, d);
                return;
            }
            if let Some(message) = inspect::unschedulable(&obs.target_pods) {
                fail_cell(&at, Cause::Unschedulable, message, ctx, d);
                return;
            }
            let waited = seconds_since(d.status.cells[index].start_time.as_ref(), ctx.now);
            let limit = run.spec.timeouts.ready.get().as_secs() as i64;
            if obs.deployment.is_none() || obs.service.is_none() {
                // Deleted behind our back, or a crash before the first apply: apply again.
                d.actions.extend(at.deployment_and_service(settings));
            } else if let Some(ready) = ready_target(run, cell, obs) {
                match ready {
                    Ok(ready) => {
                        d.actions.extend(at.plan_and_job(&ready, settings));
                        let event = Event::LoadStarted {
                            cell: index,
                            message: format!(
                                "load generator running against {} ({} replica(s) ready)",
                                ready.target,
                                ready.replicas.len()
                            ),
                            target_pods: ready.pods,
                        };
                        d.events.extend(engine::apply(&mut d.status, event, ctx));
                        d.requeue = Some(v.load_deadline());
                    }
                    Err(message) => fail_cell(&at, Cause::ChildBroken, message, ctx, d),
                }
                return;
            }
            if waited >= limit {
                let mut detail = inspect::readiness_detail(&obs.target_pods);
                if let Some(why) = inspect::deployment_trouble(obs.deployment.as_ref()) {
                    detail = format!("{why}; {detail}");
                }
                let message = format!(
                    "the target was not ready within {}: {detail}",
                    run.spec.timeouts.ready
                );
                fail_cell(&at, Cause::NeverReady, message, ctx, d);
                return;
            }
            d.requeue = Some(Duration::from_secs((limit - waited).max(1) as u64));
        }
        CellPhase::Running => step_running(&at, obs, ctx, settings, d),
        CellPhase::Succeeded | CellPhase::Failed | CellPhase::Skipped => {}
    }
}

/// How often a step waiting for the previous one's containers to stop looks again by itself;
/// the kubelet's pod status update (a watch event) normally wakes it first.
const STOPPING_SAFETY_NET: Duration = Duration::from_secs(2);

/// Before a step is deployed: deletes what earlier steps left behind, and holds the step while
/// their containers still run (true), up to `timeouts.ready` from the end of the previous step,
/// after which the step fails naming the pods that overstayed.
fn wait_for_previous(at: &At, obs: &Observation, ctx: &Ctx, d: &mut Decision) -> bool {
    let run = at.v.run();
    let previous = previous::Previous::of(run, &d.status, at.step, &obs.run_pods);
    for name in previous.leftovers {
        d.actions.extend(delete_children(name));
    }
    if previous.stopping.is_empty() {
        return false;
    }
    let limit = run.spec.timeouts.ready.get();
    let waited = seconds_since(previous_end(&d.status), ctx.now);
    if waited >= limit.as_secs() as i64 {
        let message = format!(
            "{} pod(s) of the previous cell still ran {} after it ended, so this cell could not \
             start without sharing their CPU: {}",
            previous.stopping.len(),
            run.spec.timeouts.ready,
            previous.stopping.join(", ")
        );
        let before = d.actions.len();
        fail_cell(at, Cause::PreviousPodsLingering, message, ctx, d);
        // Nothing of this step exists to delete.
        d.actions.truncate(before);
        return true;
    }
    let mut message = format!(
        "waiting for {} pod(s) of the previous cell to stop: {}",
        previous.stopping.len(),
        previous.stopping.join(", ")
    );
    engine::bound::clip(&mut message, engine::bound::SENTENCE_MAX);
    d.status.message = Some(message);
    d.requeue = Some(STOPPING_SAFETY_NET);
    true
}

/// When the latest step of the run ended (a cell's or a repetition's completion), if any did.
fn previous_end(status: &BenchmarkRunStatus) -> Option<&Time> {
    completion_times(status).max_by_key(|t| t.0)
}

/// Every completion time in the status: each repetition's and each finished cell's.
fn completion_times(status: &BenchmarkRunStatus) -> impl Iterator<Item = &Time> {
    status.cells.iter().flat_map(|c| {
        c.repetitions
            .iter()
            .filter_map(|r| r.completion_time.as_ref())
            .chain(c.completion_time.as_ref())
    })
}

/// The load generator runs: a replica that left, a result, a failed Job, an OOM, the deadline.
fn step_running(at: &At, obs: &Observation, ctx: &Ctx, settings: &Settings, d: &mut Decision) {
    let index = at.step.cell;
    if let Some(message) = replicas::exited(&d.status.cells[index].target_pods, &obs.target_pods) {
        // Checked before the result too: a result measured across a restart has a gap or
        // errors in it, and must not be called a success.
        let (why, message) = if message.contains("reason OOMKilled") {
            (
                Cause::OomKilled,
                format!("{message}; raise the cell's memory"),
            )
        } else {
            (Cause::ReplicaExited, message)
        };
        fail_cell(at, why, message, ctx, d);
        return;
    }
    if let Some((why, said)) = inspect::pod_failure(&obs.loadgen_pods)
        && (why == Cause::ChildBroken || why == Cause::ImagePull)
    {
        // A load generator that cannot start (a Secret or key its headers name is missing, its
        // image cannot be pulled) never will: the cell fails now, not at the load deadline.
        let hint = if why == Cause::ChildBroken {
            " (create the Secrets that spec.workload.endpoints[].headers[].valueFrom name, in \
             the run's namespace)"
        } else {
            ""
        };
        fail_cell(at, why, format!("load generator {said}{hint}"), ctx, d);
        return;
    }
    if let Some(res) = &obs.result {
        match res {
            Ok(doc) => succeed_cell(at, doc, obs.kubelet.as_ref(), ctx, d),
            Err(why) => fail_cell(at, Cause::ResultUnparsable, why.clone(), ctx, d),
        }
        return;
    }
    if let Some(job) = &obs.job
        && let Some(message) = inspect::job_failure(job)
    {
        let (why, detail) = match &obs.loadgen_failure {
            Some(line) if line.contains("OOMKilled") => (Cause::OomKilled, line.clone()),
            Some(line) => (Cause::of_loadgen_failure(line), line.clone()),
            None => (Cause::LoadgenFailed, String::from("no log")),
        };
        let message = format!("load generator failed: {message}; last log line: {detail}");
        fail_cell(at, why, message, ctx, d);
        return;
    }
    if let Some(message) = inspect::target_oom(&obs.target_pods) {
        fail_cell(at, Cause::OomKilled, message, ctx, d);
        return;
    }
    let waited = seconds_since(d.status.cells[index].load_start_time.as_ref(), ctx.now);
    let limit = at.v.load_deadline().as_secs() as i64;
    let planned = at.v.planned_load().as_secs() as i64;
    if waited >= limit {
        let message = engine::timeout_message(at.v.load_deadline());
        fail_cell(at, Cause::Timeout, message, ctx, d);
        return;
    }
    if obs.job.is_none() {
        // The Job vanished (deleted by hand, or a crash before it was created): the ConfigMap
        // and Job are applied again under the same name, so never twice.
        match ready_target(at.v.run(), at.cell, obs) {
            Some(Ok(ready)) => {
                d.actions.extend(at.plan_and_job(&ready, settings));
                // The new Job measures afresh, against these pods.
                d.status.cells[index].target_pods = ready.pods;
            }
            _ => {
                // The target went away too: deploy again from the start of the cell.
                let c = &mut d.status.cells[index];
                c.phase = CellPhase::Pending;
                c.load_start_time = None;
                c.target_pods.clear();
            }
        }
    } else if d.status.cells[index].target_pods.is_empty() {
        // A cell started by an operator that kept no record: record the ready pods now, so a
        // change from here on is still caught.
        d.status.cells[index].target_pods = replicas::record(&inspect::ready_pods(obs));
    }
    // Until the deadline, look again when the planned load should be over, then every
    // RESULT_POLL: observe reads a result the load generator has printed even before the
    // kubelet reports its pod's end.
    let next = if waited < planned {
        planned - waited
    } else {
        RESULT_POLL.as_secs() as i64
    };
    d.requeue = Some(Duration::from_secs(next.min(limit - waited).max(1) as u64));
}

/// How often a cell whose planned load is over looks for the load generator's result until it
/// has it (or the deadline passes); the pods' watch events usually bring it first.
const RESULT_POLL: Duration = Duration::from_secs(1);

/// Whole seconds from `since` (now when unknown) to `now`.
fn seconds_since(since: Option<&Time>, now: &Time) -> i64 {
    let now = conditions::secs_of(now);
    now - since.map_or(now, conditions::secs_of)
}

/// Where a measured cell's time went on the cluster, in whole seconds (the resolution of the
/// times in the status): waiting for the previous step's containers to stop, until the target
/// was ready, and beyond the planned load until the result was read (the Job's pod starting,
/// running, ending, and the log read). Their sum outside the planned load is the cell's
/// overhead.
struct ClusterTiming {
    waited_secs: i64,
    ready_secs: i64,
    beyond_load_secs: i64,
}

impl ClusterTiming {
    fn of(at: &At, status: &BenchmarkRunStatus, now: &Time) -> Option<ClusterTiming> {
        let c = status.cells.get(at.step.cell)?;
        let start = conditions::secs_of(c.start_time.as_ref()?);
        let load = conditions::secs_of(c.load_start_time.as_ref()?);
        let planned = at.v.planned_load().as_secs_f64().round() as i64;
        // The step before this one ended at the latest completion up to this one's start.
        let previous = completion_times(status)
            .map(conditions::secs_of)
            .filter(|&t| t <= start)
            .max();
        Some(ClusterTiming {
            waited_secs: previous.map_or(0, |p| start - p),
            ready_secs: (load - start).max(0),
            beyond_load_secs: (conditions::secs_of(now) - load - planned).max(0),
        })
    }

    fn overhead_secs(&self) -> f64 {
        (self.waited_secs + self.ready_secs + self.beyond_load_secs) as f64
    }
}

fn succeed_cell(
    at: &At,
    doc: &RunResult,
    kubelet: Option<&crate::kubelet::ContainerFigures>,
    ctx: &Ctx,
    d: &mut Decision,
) {
    let cell = at.cell;
    let timing = ClusterTiming::of(at, &d.status, ctx.now);
    let mut message = format!(
        "measured {} phase(s) with {} load generator(s)",
        doc.phases.len(),
        doc.generators.max(1)
    );
    if let Some(t) = &timing {
        // The load generator's check that every address answers comes before its warm-up, so it
        // is part of "after the planned load": said apart, it tells a slow Service path (the
        // cluster's) from a slow result read (the operator's).
        let check = doc
            .preflight_seconds
            .filter(|s| *s >= 0.05)
            .map(|s| {
                format!(", {s:.1} s of it the load generator waiting for the target's first answer")
            })
            .unwrap_or_default();
        message.push_str(&format!(
            "; overhead {} s (previous cell stopped in {} s, target ready in {} s, result read \
             {} s after the planned load{check})",
            t.overhead_secs(),
            t.waited_secs,
            t.ready_secs,
            t.beyond_load_secs
        ));
    }
    let measured = Measured {
        results: results::cell_results(doc),
        target: results::sources::with_kubelet(results::target_stats(doc), kubelet),
        enforcement: Some(Enforcement {
            target: "kubernetes".into(),
            loadgen: Some("kubernetes".into()),
            detail: Some(format!(
                "pod resources: cpu {} and memory {} per replica, requests == limits (CFS quota by the kubelet)",
                cell.cpu, cell.memory
            )),
        }),
        overhead_seconds: timing.as_ref().map(ClusterTiming::overhead_secs),
        message,
        histograms: results::histograms(doc),
    };
    let event = Event::CellMeasured {
        cell: at.step.cell,
        measured: Box::new(measured),
    };
    d.events.extend(engine::apply(&mut d.status, event, ctx));
    d.actions.extend(after_cell(at, &d.status, false));
}

fn fail_cell(at: &At, why: Cause, message: String, ctx: &Ctx, d: &mut Decision) {
    let event = Event::CellFailed {
        cell: at.step.cell,
        cause: why,
        message,
        overhead_seconds: None,
        enforcement: None,
    };
    d.events.extend(engine::apply(&mut d.status, event, ctx));
    d.actions.extend(after_cell(at, &d.status, true));
}

/// Deletions after a repetition of a cell ended. A cell that is finished keeps what the cleanup
/// policy says; one that goes on to another repetition loses its objects in any case, as its
/// pods would take CPU from the cells measured in between.
fn after_cell(at: &At, status: &BenchmarkRunStatus, failed: bool) -> Vec<Action> {
    let name = build::cell_run(at.v, at.cell, at.step.repetition).child_name();
    let finished = status
        .cells
        .get(at.step.cell)
        .is_some_and(|c| c.phase.is_finished());
    if finished {
        cleanup(at.v.run(), name, failed)
    } else {
        delete_children(name)
    }
}

/// Deletions after a cell, per the cleanup policy.
fn cleanup(run: &BenchmarkRun, name: String, failed: bool) -> Vec<Action> {
    let keep = match run.spec.cleanup {
        CleanupPolicy::Always => false,
        CleanupPolicy::KeepFailed => failed,
        CleanupPolicy::Never => true,
    };
    if keep {
        return Vec::new();
    }
    delete_children(name)
}

fn delete_children(name: String) -> Vec<Action> {
    [
        ChildKind::Job,
        ChildKind::ConfigMap,
        ChildKind::Service,
        ChildKind::Deployment,
    ]
    .into_iter()
    .map(|k| Action::Delete(k, name.clone()))
    .collect()
}

/// Deletions of the current cell's children when the run is abandoned mid-cell.
fn current_children_cleanup(run: &BenchmarkRun, status: &BenchmarkRunStatus) -> Vec<Action> {
    let Some(step) = engine::next_step(status) else {
        return Vec::new();
    };
    if !matches!(step.phase, CellPhase::Deploying | CellPhase::Running) {
        return Vec::new();
    }
    let cell = &status.cells[step.cell].name;
    let at = build::CellRun {
        run,
        cell,
        repetition: step.repetition,
    };
    cleanup(run, at.child_name(), false)
}

fn finish(v: &ValidatedRun, ctx: &Ctx, d: &mut Decision) {
    let end = Event::Finished { interrupted: false };
    d.events.extend(engine::apply(&mut d.status, end, ctx));
    if let Some(ttl) = v.spec().ttl_after_finished {
        d.requeue = Some(ttl.get());
    }
}
