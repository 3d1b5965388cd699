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

use super::{build, images, target_pods};
use crate::engine::Step;
use crate::engine::machine::{self, Command, Look, Ready, Seen};
use crate::engine::results;
use crate::engine::{self, Ctx, Event, Measured};
use crate::resource::ValidatedRun;
use crate::resource::conditions::{self, Reason};
use crate::resource::matrix::Cell;
use crate::resource::{BenchmarkRun, BenchmarkRunStatus, CellPhase, Enforcement, RunPhase};

pub use crate::resource::conditions::Cause;
pub use inspect::{job_complete, job_failed};
pub use types::{
    Action, Child, ChildKind, Decision, Observation, QUEUED_SAFETY_NET, QueueView, Settings,
};

use inspect::{ReadyTarget, ready_target};

/// Decides the next step for `run`.
pub fn decide(run: &BenchmarkRun, obs: &Observation, now: &Time, settings: &Settings) -> Decision {
    let old = run.status.clone().unwrap_or_default();
    let mut d = Decision {
        status: old.clone(),
        actions: Vec::new(),
        events: Vec::new(),
        requeue: None,
        commands: Vec::new(),
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
            let ctx = Ctx::unvalidated(run, generation, now);
            if old.phase == RunPhase::Running {
                d.actions.extend(current_children_cleanup(run, &old));
            }
            let event = Event::SpecRefused {
                reason: why,
                message,
            };
            d.events = engine::reduce(&mut d.status, event, &ctx);
            return d;
        }
    };

    let ctx = Ctx::of(&v, generation, now);

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
        d.events = engine::reduce(&mut d.status, Event::SpecChanged { message }, &ctx);
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
            d.events = engine::reduce(&mut d.status, queued, &ctx);
            // A run that finishes or is deleted wakes the waiting runs at once (queue.rs);
            // this look now and then is only a safety net for a wake-up that was lost.
            d.requeue = Some(QUEUED_SAFETY_NET);
            return d;
        }
        d.events = engine::reduce(&mut d.status, Event::admitted(v.cells()), &ctx);
    }

    let look = machine::look(&d.status, now, ctx.limits.planned_load);
    let (seen, ready) = seen(&v, &d.status, look, obs, now, &mut d.actions);
    let advance = machine::advance(&mut d.status, seen, &ctx);
    d.events.extend(advance.notes);
    for command in &advance.commands {
        carry_out(&v, command.clone(), ready.as_ref(), settings, &mut d);
    }
    d.commands = advance.commands;
    d
}

/// The cluster's objects as the machine's facts about the step `look` names; with the ready
/// target, which a command to start the load needs. Leftovers of earlier steps, which the
/// machine does not know of, are deleted here (the executor's own housekeeping).
fn seen(
    v: &ValidatedRun,
    status: &BenchmarkRunStatus,
    look: Look,
    obs: &Observation,
    now: &Time,
    actions: &mut Vec<Action>,
) -> (Seen, Option<ReadyTarget>) {
    let Some((at, cell)) = look.at().and_then(|at| Some((at, v.cells().get(at.cell)?))) else {
        return (Seen::default(), None);
    };
    match look {
        Look::Nothing => (Seen::default(), None),
        Look::BeforeDeploy { .. } => (
            seen_before_deploy(v.run(), cell, at, status, obs, actions),
            None,
        ),
        Look::Target(_) => seen_target(v.run(), cell, obs),
        Look::Load { .. } => seen_load(v, cell, at, status, obs, now),
    }
}

/// Before a step's target is deployed: whether the previous step's pods are still stopping
/// (their leftovers are deleted) and whether the cell could ever fit on a node.
fn seen_before_deploy(
    run: &BenchmarkRun,
    cell: &Cell,
    at: Step,
    status: &BenchmarkRunStatus,
    obs: &Observation,
    actions: &mut Vec<Action>,
) -> Seen {
    let previous = previous::Previous::of(run, status, at, &obs.run_pods);
    for name in previous.leftovers {
        actions.extend(delete_children(name));
    }
    Seen {
        previous_running: previous.stopping,
        never_fits: inspect::never_fits(run, cell, obs),
        ..Seen::default()
    }
}

/// While the target starts: its pods' failures and readiness, and the target the load needs.
fn seen_target(run: &BenchmarkRun, cell: &Cell, obs: &Observation) -> (Seen, Option<ReadyTarget>) {
    let ready = ready_target(run, cell, obs);
    let mut not_ready = inspect::readiness_detail(&obs.target_pods);
    if let Some(why) = inspect::deployment_trouble(obs.deployment.as_ref()) {
        not_ready = format!("{why}; {not_ready}");
    }
    let seen = Seen {
        target_broken: inspect::pod_failure(&obs.target_pods),
        unschedulable: inspect::unschedulable(&obs.target_pods),
        target_missing: obs.deployment.is_none() || obs.service.is_none(),
        ready: ready.as_ref().map(|r| match r {
            Ok(ready) => Ok(Ready {
                message: format!(
                    "load generator running against {} ({} replica(s) ready)",
                    ready.target,
                    ready.replicas.len()
                ),
                target_pods: ready.pods.clone(),
            }),
            Err(why) => Err(why.clone()),
        }),
        not_ready,
        ..Seen::default()
    };
    (seen, ready.and_then(Result::ok))
}

/// While the load runs: the replicas and the load generator, its result, and what it takes
/// to make a missing Job again.
fn seen_load(
    v: &ValidatedRun,
    cell: &Cell,
    at: Step,
    status: &BenchmarkRunStatus,
    obs: &Observation,
    now: &Time,
) -> (Seen, Option<ReadyTarget>) {
    let recorded = &status.cells[at.cell].target_pods;
    let mut seen = Seen {
        replica_exited: target_pods::exited(recorded, &obs.target_pods),
        loadgen_broken: loadgen_cannot_start(obs),
        result: obs.result.as_ref().map(|res| match res {
            Ok(doc) => Ok(Box::new(measured(
                v,
                at,
                cell,
                doc,
                obs.kubelet.as_ref(),
                status,
                now,
            ))),
            Err(why) => Err((Cause::ResultUnparsable, why.clone())),
        }),
        load_failed: loadgen_failed(obs),
        target_oom: inspect::target_oom(&obs.target_pods),
        load_missing: obs.job.is_none(),
        ..Seen::default()
    };
    if seen.load_missing {
        // A missing Job is made again from the Service address and the pod IPs.
        let ready = ready_target(v.run(), cell, obs);
        seen.ready = ready.as_ref().map(|r| {
            r.as_ref()
                .map(|ready| Ready {
                    message: format!(
                        "load generator made again (its Job had vanished) against {} ({} \
                         replica(s) ready)",
                        ready.target,
                        ready.replicas.len()
                    ),
                    target_pods: ready.pods.clone(),
                })
                .map_err(Clone::clone)
        });
        return (seen, ready.and_then(Result::ok));
    }
    // For a step whose pods were never recorded (an operator that kept no record).
    seen.ready = Some(Ok(Ready {
        message: String::new(),
        target_pods: target_pods::recorded(&inspect::ready_pods(obs)),
    }));
    (seen, None)
}

/// A load generator that cannot start (a Secret or key its headers name is missing, its image
/// cannot be pulled) never will: the cell fails now, not at the load deadline.
fn loadgen_cannot_start(obs: &Observation) -> Option<(Cause, String)> {
    let (why, said) = inspect::pod_failure(&obs.loadgen_pods)
        .filter(|(why, _)| matches!(why, Cause::ChildBroken | Cause::ImagePull))?;
    let hint = if why == Cause::ChildBroken {
        " (create the Secrets that spec.workload.endpoints[].headers[].valueFrom name, in the \
         run's namespace)"
    } else {
        ""
    };
    Some((why, format!("load generator {said}{hint}")))
}

/// The load generator's Job failed: why, from its last log line.
fn loadgen_failed(obs: &Observation) -> Option<(Cause, String)> {
    let message = inspect::job_failure(obs.job.as_ref()?)?;
    let (why, detail) = match &obs.loadgen_failure {
        Some(line) if line.contains("OOMKilled") => (Cause::OomKilled, line.clone()),
        Some(line) => (Cause::of_loadgen_failure(line), line.clone()),
        None => (Cause::LoadgenFailed, String::from("no log")),
    };
    Some((
        why,
        format!("load generator failed: {message}; last log line: {detail}"),
    ))
}

/// Does what the machine said, on the cluster: objects to apply or delete, when to look again.
fn carry_out(
    v: &ValidatedRun,
    command: Command,
    ready: Option<&ReadyTarget>,
    settings: &Settings,
    d: &mut Decision,
) {
    match command {
        Command::Deploy(at) => {
            if let Some(cell) = v.cells().get(at.cell) {
                d.actions
                    .extend(deployment_and_service(v, cell, at, settings));
            }
        }
        Command::StartLoad(at) => {
            if let (Some(cell), Some(ready)) = (v.cells().get(at.cell), ready) {
                d.actions.extend(plan_and_job(v, cell, at, ready, settings));
            }
        }
        // The operator reads a result as soon as the load generator has ended (observe), so
        // there is nothing to collect apart.
        Command::Collect(_) => {}
        Command::Stop { at, keep } => {
            if !keep && let Some(cell) = v.cells().get(at.cell) {
                let name = build::cell_run(v, cell, at.repetition).child_name();
                d.actions.extend(delete_children(name));
            }
        }
        Command::WakeIn(after) => d.requeue = Some(after),
        Command::Ended => {
            if let Some(ttl) = v.spec().ttl_after_finished {
                d.requeue = Some(ttl.get());
            }
        }
    }
}

fn deployment_and_service(
    v: &ValidatedRun,
    cell: &Cell,
    at: Step,
    settings: &Settings,
) -> [Action; 2] {
    let r = at.repetition;
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

fn plan_and_job(
    v: &ValidatedRun,
    cell: &Cell,
    at: Step,
    ready: &ReadyTarget,
    settings: &Settings,
) -> [Action; 2] {
    let r = at.repetition;
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
    fn of(
        v: &ValidatedRun,
        at: Step,
        status: &BenchmarkRunStatus,
        now: &Time,
    ) -> Option<ClusterTiming> {
        let c = status.cells.get(at.cell)?;
        let start = conditions::secs_of(c.start_time.as_ref()?);
        let load = conditions::secs_of(c.load_start_time.as_ref()?);
        let planned = v.planned_load().as_secs_f64().round() as i64;
        // The step before this one ended at the latest completion up to this one's start.
        let previous = machine::completion_times(status)
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

/// What a repetition measured on the cluster: the result document's figures, the kubelet's,
/// how the limits were enforced, and where the time went.
fn measured(
    v: &ValidatedRun,
    at: Step,
    cell: &Cell,
    doc: &RunResult,
    kubelet: Option<&crate::executors::cluster::kubelet::ContainerFigures>,
    status: &BenchmarkRunStatus,
    now: &Time,
) -> Measured {
    let timing = ClusterTiming::of(v, at, status, now);
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
    Measured {
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
    }
}

/// Deletions after a cell, per the cleanup policy.
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

/// Deletions of the current cell's children when the run is abandoned mid-cell (its spec
/// changed, or its image is no longer allowed): whatever `spec.cleanup` says, for it keeps
/// what a finished step leaves, while these are still running what must not go on.
fn current_children_cleanup(run: &BenchmarkRun, status: &BenchmarkRunStatus) -> Vec<Action> {
    let Some(step) = engine::next_step(status) else {
        return Vec::new();
    };
    if !matches!(
        step.phase(status),
        CellPhase::Deploying | CellPhase::Running
    ) {
        return Vec::new();
    }
    let cell = &status.cells[step.cell].name;
    let at = build::CellRun {
        run,
        cell,
        repetition: step.repetition,
    };
    delete_children(at.child_name())
}
