//! What the cluster shows, as the machine's facts ([`Seen`]): the objects of the step the
//! machine names, turned into what it weighs (a pod that cannot start, a target that is ready,
//! a load generator's result or failure), and what a repetition measured on the cluster.

use benchmatrix_loadgen::result::RunResult;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::actions::{Carried, delete_children};
use super::inspect::{self, ReadyTarget, Unplaced, ready_target};
use super::previous;
use super::types::{Action, Observation};
use crate::engine::machine::{self, Look, Ready, Seen};
use crate::engine::{Measured, Step, results};
use crate::executors::cluster::placement::target_pods;
use crate::executors::cluster::telemetry::kubelet;
use crate::resource::conditions::{self, Cause};
use crate::resource::matrix::Cell;
use crate::resource::status::Neighbours;
use crate::resource::{BenchmarkRunStatus, Enforcement, ValidatedRun};

/// The cluster's objects as the machine's facts about the step `look` names; with the ready
/// target, which a command to start the load needs. Leftovers of earlier steps, which the
/// machine does not know of, are deleted here (the executor's own housekeeping).
pub fn of_step(
    v: &ValidatedRun,
    status: &BenchmarkRunStatus,
    look: Look,
    obs: &Observation,
    now: &Time,
    carried: &mut Carried,
) -> (Seen, Option<ReadyTarget>) {
    let Some((at, cell)) = look.at().and_then(|at| Some((at, v.cells().get(at.cell)?))) else {
        return (Seen::default(), None);
    };
    match look {
        Look::Nothing => (Seen::default(), None),
        Look::BeforeDeploy { slot, .. } => (
            seen_before_deploy(v, cell, at, slot, status, obs, &mut carried.actions),
            None,
        ),
        Look::Target { .. } => {
            let (mut seen, ready) = seen_target(v, cell, obs, now, carried);
            seen.load_left = load_left(obs, &mut carried.actions);
            (seen, ready)
        }
        Look::Load { .. } => seen_load(v, cell, at, status, obs, now, carried),
    }
}

/// Before a step's target is deployed: whether the previous step's pods are still stopping
/// (their leftovers are deleted) and whether the cell could ever fit on a node.
fn seen_before_deploy(
    v: &ValidatedRun,
    cell: &Cell,
    at: Step,
    slot: Option<u32>,
    status: &BenchmarkRunStatus,
    obs: &Observation,
    actions: &mut Vec<Action>,
) -> Seen {
    let nodes = crate::engine::schedule::slot_nodes(status, slot);
    let previous = previous::Previous::of(v, status, at, nodes, &obs.run_pods);
    for name in previous.leftovers {
        actions.extend(delete_children(name));
    }
    Seen {
        previous_running: previous.stopping,
        never_fits: inspect::never_fits(v, cell, obs),
        ..Seen::default()
    }
}

/// When this operator process first looked at a step's target: about when it started, or took
/// the lead. A missing target's ready clock runs from here at the earliest (`Seen::target_since`):
/// time the operator was down, or not leading, is not held against the cell.
fn watching_since(now: &Time) -> Time {
    static SINCE: std::sync::OnceLock<Time> = std::sync::OnceLock::new();
    SINCE.get_or_init(|| now.clone()).clone()
}

/// While the target starts: its pods' failures and readiness, and the target the load needs.
fn seen_target(
    v: &ValidatedRun,
    cell: &Cell,
    obs: &Observation,
    now: &Time,
    carried: &mut Carried,
) -> (Seen, Option<ReadyTarget>) {
    let ready = ready_target(v, cell, obs);
    let mut not_ready = inspect::readiness_detail(&obs.target_pods);
    if let Some(why) = inspect::deployment_trouble(obs.deployment.as_ref()) {
        not_ready = format!("{why}; {not_ready}");
    }
    let seen = Seen {
        target_broken: inspect::pod_failure(&obs.target_pods),
        unschedulable: settled(
            inspect::unschedulable(&obs.target_pods, "target", now),
            carried,
        ),
        target_missing: obs.deployment.is_none() || obs.service.is_none(),
        target_since: match &obs.deployment {
            Some(d) => d.metadata.creation_timestamp.clone(),
            None => Some(watching_since(now)),
        },
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

/// A load generator Job of the step while its target is deployed or kept: an earlier probe's,
/// which the next load (its Job has the same name) waits for, in words. One not yet being
/// deleted (its deletion after its probe never happened: an operator that stopped between
/// writing the status and deleting) is deleted again.
fn load_left(obs: &Observation, actions: &mut Vec<Action>) -> Option<String> {
    use kube::ResourceExt;
    let job = obs.job.as_ref()?;
    if job.metadata.deletion_timestamp.is_none() {
        actions.extend(super::actions::delete_load(job.name_any()));
    }
    Some(format!(
        "the previous probe's load generator Job {} is still being deleted",
        job.name_any()
    ))
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
    carried: &mut Carried,
) -> (Seen, Option<ReadyTarget>) {
    let recorded = &status.cells[at.cell].target_pods;
    let mut seen = Seen {
        replica_exited: target_pods::exited(recorded, &obs.target_pods),
        loadgen_broken: loadgen_cannot_start(obs, now, carried),
        result: obs.result.as_ref().map(|res| match res {
            Ok(doc) => Ok(Box::new(measured(
                v,
                at,
                cell,
                doc,
                obs.kubelet.as_ref(),
                status,
                now,
                neighbours(v, obs),
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
        let ready = ready_target(v, cell, obs);
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
/// cannot be pulled, the scheduler cannot place it) never will: the cell fails now, not at the
/// load deadline.
fn loadgen_cannot_start(
    obs: &Observation,
    now: &Time,
    carried: &mut Carried,
) -> Option<(Cause, String)> {
    // As with the target's replicas: a load generator the scheduler cannot place would only
    // wait out the run's deadline (the nodes it may use are full of other pods' requests).
    let unplaced = inspect::unschedulable(&obs.loadgen_pods, "load generator", now);
    if let Some(said) = settled(unplaced, carried) {
        return Some((Cause::Unschedulable, said));
    }
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

/// A pod unplaced long enough to fail its cell, in words; one unplaced for less asks to be
/// looked at again when it will have been (a placed pod's watch event may come sooner).
fn settled(unplaced: Option<Unplaced>, carried: &mut Carried) -> Option<String> {
    match unplaced? {
        Unplaced::Settled(said) => Some(said),
        Unplaced::Young(left) => {
            carried.look_again_within(left);
            None
        }
    }
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
        let start = conditions::secs_of(c.step_started()?);
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

/// What else used the CPU of a measurement's nodes, each flagged busy above
/// spec.placement.neighbourCpuLimit; or why nothing was read.
fn neighbours(v: &ValidatedRun, obs: &Observation) -> (Vec<Neighbours>, Option<String>) {
    let mut list = obs.neighbours.clone();
    // Validated: the limit parses.
    let limit = v
        .spec()
        .placement
        .neighbour_cpu_limit
        .cpu_cores()
        .unwrap_or(f64::INFINITY);
    kubelet::neighbours::flag(&mut list, limit);
    (list, obs.neighbours_missing.clone())
}

/// What a repetition measured on the cluster: the result document's figures, the kubelet's,
/// what else ran on its nodes, how the limits were enforced, and where the time went.
#[allow(clippy::too_many_arguments)]
fn measured(
    v: &ValidatedRun,
    at: Step,
    cell: &Cell,
    doc: &RunResult,
    kubelet: Option<&crate::executors::cluster::telemetry::kubelet::ContainerFigures>,
    status: &BenchmarkRunStatus,
    now: &Time,
    (neighbours, neighbours_missing): (Vec<Neighbours>, Option<String>),
) -> Measured {
    let timing = ClusterTiming::of(v, at, status, now);
    // A busy neighbour comes first: the sentence is clipped at its end.
    let busy: Vec<String> = neighbours
        .iter()
        .filter(|n| n.busy)
        .map(Neighbours::busy_words)
        .collect();
    let mut message = if busy.is_empty() {
        String::new()
    } else {
        format!(
            "busy neighbours ({}, above spec.placement.neighbourCpuLimit {}); ",
            busy.join("; "),
            v.spec().placement.neighbour_cpu_limit
        )
    };
    message.push_str(&format!(
        "measured {} phase(s) with {} load generator(s)",
        doc.phases.len(),
        doc.generators.max(1)
    ));
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
        target: kubelet::join::with_kubelet(results::target_stats(doc), kubelet),
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
        neighbours,
        neighbours_missing,
        sends: crate::engine::Sends::of(doc),
    }
}
