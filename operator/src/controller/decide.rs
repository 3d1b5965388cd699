//! The reconcile state machine, pure: (run, observation, now) -> the next status, the objects to
//! apply or delete, the Events to publish and when to look again.
//!
//! The status is the machine's only memory. Each call looks at the current cell (the first one
//! not finished) and moves it at most one step, so a restarted operator fed the same status and
//! cluster state takes the same step, and child names are deterministic, so a step repeated
//! after a crash applies the same objects again instead of creating new ones.

use std::time::Duration;

use benchmatrix_loadgen::result::RunResult;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use super::fit::{self, CellRequests};
use super::{build, images, replicas};
use crate::api::conditions::{self, reason, set_condition, status as cs};
use crate::api::status::RecordedPod;
use crate::api::{
    BenchmarkRun, BenchmarkRunStatus, CellPhase, CellStatus, CleanupPolicy, Enforcement, RunPhase,
};
use crate::plan::{self, Cell};
use crate::results;
use crate::run_end::{RunEnd, finish_run};
use crate::validate;

/// What the operator saw of the current cell's children.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// The cell's target Deployment, when it exists (read while deploying).
    pub deployment: Option<Deployment>,
    /// The cell's Service, when it exists (read while deploying).
    pub service: Option<Service>,
    /// The cell's load generator Job, when it exists (read while running).
    pub job: Option<Job>,
    /// The cell's target pods.
    pub target_pods: Vec<Pod>,
    /// The result document (merged over load generators) or why it could not be had; read once
    /// the Job has completed.
    pub result: Option<Result<RunResult, String>>,
    /// The last log line of a failed load generator pod.
    pub loadgen_failure: Option<String>,
    /// The admission queue, from the operator's cache of all runs.
    pub queue: QueueView,
    /// Pods of this run still terminating (read before a cell after the first starts).
    pub terminating_pods: Vec<String>,
    /// The cluster's nodes, read before a cell is deployed; `None` when not read (or the
    /// operator may not list them), so no fit check is made.
    pub nodes: Option<Vec<Node>>,
}

/// Where this run stands among all runs of the cluster.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueView {
    /// Runs other than this one that are Running.
    pub active: usize,
    /// Pending runs created before this one (they go first).
    pub ahead: usize,
    /// Pending runs in the queue, this one included (0 when not computed).
    pub waiting: usize,
    /// The most runs allowed to be Running at once.
    pub max_active: usize,
}

impl QueueView {
    /// Whether a Pending run may start now: a free slot, and no older run waiting.
    pub fn admits(&self) -> bool {
        self.active < self.max_active.max(1) && self.ahead == 0
    }
}

/// One change to the cluster.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Server-side apply of a child object.
    Apply(Child),
    /// Delete a child object of this kind and name (gone already is fine).
    Delete(ChildKind, String),
    /// Delete the BenchmarkRun itself (its TTL has passed).
    DeleteRun,
}

/// A child object to apply.
#[derive(Debug, Clone, PartialEq)]
pub enum Child {
    /// The target Deployment.
    Deployment(Box<Deployment>),
    /// The target Service.
    Service(Box<Service>),
    /// The load plan.
    ConfigMap(Box<ConfigMap>),
    /// The load generator Job.
    Job(Box<Job>),
}

/// Kinds of child objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildKind {
    /// apps/v1 Deployment.
    Deployment,
    /// v1 Service.
    Service,
    /// v1 ConfigMap.
    ConfigMap,
    /// batch/v1 Job.
    Job,
}

/// An Event to publish on the run (only on transitions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventNote {
    /// True for a Warning, false for Normal.
    pub warning: bool,
    /// CamelCase reason.
    pub reason: String,
    /// Human sentence.
    pub note: String,
}

/// The outcome of one decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The status to write (written only when it differs from the current one).
    pub status: BenchmarkRunStatus,
    /// Changes to the cluster, in order.
    pub actions: Vec<Action>,
    /// Events to publish.
    pub events: Vec<EventNote>,
    /// When to look again even if nothing is watched to change (a safety net for timeouts).
    pub requeue: Option<Duration>,
}

/// Which phase of its life the current cell is in, so `observe` reads only what matters.
pub fn current_cell(status: Option<&BenchmarkRunStatus>) -> Option<(usize, CellPhase)> {
    let status = status?;
    if status.phase != RunPhase::Running {
        return None;
    }
    status
        .cells
        .iter()
        .enumerate()
        .find(|(_, c)| !c.phase.is_finished())
        .map(|(i, c)| (i, c.phase))
}

pub use crate::api::conditions::cause;

/// How often a waiting run looks at the queue by itself. Runs leaving phase Running wake the
/// waiting ones at once; this only bounds the wait should such a wake-up be lost.
pub const QUEUED_SAFETY_NET: Duration = Duration::from_secs(60);

/// Operator-wide settings that shape the objects it builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Target image for runs that do not name one.
    pub target_image: String,
    /// Load generator image for runs that do not name one.
    pub loadgen_image: String,
    /// The images runs may use (`--allowed-images`); the default allows every image.
    pub allowed_images: images::ImagePolicy,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            target_image: crate::api::spec::DEFAULT_TARGET_IMAGE.into(),
            loadgen_image: crate::api::spec::DEFAULT_LOADGEN_IMAGE.into(),
            allowed_images: images::ImagePolicy::default(),
        }
    }
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

    // A spec that cannot run, or names an image the operator may not run, fails the run once,
    // with the field named; nothing is created and nothing is retried until the spec changes
    // (which re-triggers the reconcile). A run already running when the operator restarts with
    // a narrower allow-list loses its current children too: a refused image must not keep going.
    let refusal = match validate::validate_for_cluster(run) {
        Err(err) => Some((reason::INVALID_SPEC, format!("invalid spec: {err}"))),
        Ok(()) => settings
            .allowed_images
            .refusal(run, &settings.target_image, &settings.loadgen_image)
            .map(|message| (images::IMAGE_NOT_ALLOWED, message)),
    };
    if let Some((why, message)) = refusal {
        if old.phase == RunPhase::Running {
            d.actions.extend(current_children_cleanup(run, &old));
        }
        let st = &mut d.status;
        st.phase = RunPhase::Failed;
        st.message = Some(message.clone());
        st.observed_generation = generation;
        st.completion_time.get_or_insert_with(|| now.clone());
        set_condition(
            &mut st.conditions,
            conditions::SPEC_VALID,
            cs::FALSE,
            why,
            message.clone(),
            generation,
            now,
        );
        set_condition(
            &mut st.conditions,
            conditions::PROGRESSING,
            cs::FALSE,
            why,
            if old.phase == RunPhase::Running {
                "the run was stopped and its current cell's objects deleted"
            } else {
                "the run cannot start"
            },
            generation,
            now,
        );
        d.events.push(EventNote {
            warning: true,
            reason: why.into(),
            note: message,
        });
        return d;
    }

    let cells = plan::cells(&run.spec);

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
        let st = &mut d.status;
        st.phase = RunPhase::Failed;
        st.message = Some(message.clone());
        st.completion_time = Some(now.clone());
        set_condition(
            &mut st.conditions,
            conditions::PROGRESSING,
            cs::FALSE,
            reason::SPEC_CHANGED,
            message.clone(),
            generation,
            now,
        );
        d.events.push(EventNote {
            warning: true,
            reason: reason::SPEC_CHANGED.into(),
            note: message,
        });
        return d;
    }

    if old.phase == RunPhase::Pending {
        let q = obs.queue;
        if !q.admits() {
            let message = format!(
                "queued: position {} of {}; {} run(s) active, at most {} at once",
                q.ahead + 1,
                q.waiting.max(q.ahead + 1),
                q.active,
                q.max_active.max(1),
            );
            let st = &mut d.status;
            st.message = Some(message.clone());
            st.observed_generation = generation;
            st.progress = Some(format!("0/{}", cells.len()));
            set_condition(
                &mut st.conditions,
                conditions::SPEC_VALID,
                cs::TRUE,
                reason::VALID,
                "",
                generation,
                now,
            );
            set_condition(
                &mut st.conditions,
                conditions::PROGRESSING,
                cs::FALSE,
                reason::QUEUED,
                message,
                generation,
                now,
            );
            // A run that finishes or is deleted wakes the waiting runs at once (queue.rs);
            // this look now and then is only a safety net for a wake-up that was lost.
            d.requeue = Some(QUEUED_SAFETY_NET);
            return d;
        }
        let st = &mut d.status;
        st.phase = RunPhase::Running;
        st.start_time = Some(now.clone());
        st.observed_generation = generation;
        st.cells = cells
            .iter()
            .map(|c| CellStatus {
                name: c.name.clone(),
                ..CellStatus::default()
            })
            .collect();
        set_condition(
            &mut st.conditions,
            conditions::SPEC_VALID,
            cs::TRUE,
            reason::VALID,
            "",
            generation,
            now,
        );
        set_condition(
            &mut st.conditions,
            conditions::CELL_FAILED,
            cs::FALSE,
            reason::NO_FAILURES,
            "",
            generation,
            now,
        );
    }

    step_cell(run, &cells, obs, now, settings, &mut d);
    d.status.progress = Some(results::progress(&d.status));
    d
}

/// Moves the current cell one step, or finishes the run when no cell is left.
fn step_cell(
    run: &BenchmarkRun,
    cells: &[Cell],
    obs: &Observation,
    now: &Time,
    settings: &Settings,
    d: &mut Decision,
) {
    let generation = run.metadata.generation;
    let Some(index) = d.status.cells.iter().position(|c| !c.phase.is_finished()) else {
        finish(run, now, d);
        return;
    };
    let Some(cell) = cells.get(index) else {
        finish(run, now, d);
        return;
    };
    let phase = d.status.cells[index].phase;
    match phase {
        CellPhase::Pending if !obs.terminating_pods.is_empty() => {
            // The previous cell's pods still hold CPU; starting now would measure interference.
            d.status.message = Some(format!(
                "waiting for {} pod(s) of the previous cell to terminate: {}",
                obs.terminating_pods.len(),
                obs.terminating_pods.join(", ")
            ));
            d.requeue = Some(Duration::from_secs(5));
        }
        CellPhase::Pending => {
            if let Some(why) = never_fits(run, cell, obs) {
                // Nothing is created: the cell ends now instead of waiting out the ready timeout,
                // and there is nothing of it to clean up.
                d.status.cells[index].start_time = Some(now.clone());
                let before = d.actions.len();
                fail_cell(run, index, cause::UNSCHEDULABLE, why, now, d);
                d.actions.truncate(before);
                return;
            }
            d.actions.push(Action::Apply(Child::Deployment(Box::new(
                build::deployment(run, cell, &settings.target_image),
            ))));
            d.actions
                .push(Action::Apply(Child::Service(Box::new(build::service(
                    run, cell,
                )))));
            let c = &mut d.status.cells[index];
            c.phase = CellPhase::Deploying;
            c.start_time = Some(now.clone());
            c.message = Some(format!(
                "deploying {} replica(s) with {} CPU each",
                cell.replicas, cell.cpu
            ));
            let message = format!("cell {} ({}/{})", cell.name, index + 1, cells.len());
            d.status.message = Some(format!("running {message}"));
            set_condition(
                &mut d.status.conditions,
                conditions::PROGRESSING,
                cs::TRUE,
                reason::CELL_RUNNING,
                message,
                generation,
                now,
            );
            d.events.push(EventNote {
                warning: false,
                reason: "CellStarted".into(),
                note: format!("deploying cell {}", cell.name),
            });
            d.requeue = Some(run.spec.timeouts.ready.get());
        }
        CellPhase::Deploying => {
            if let Some((why, message)) = pod_failure(&obs.target_pods) {
                fail_cell(run, index, why, message, now, d);
                return;
            }
            if let Some(message) = unschedulable(&obs.target_pods) {
                fail_cell(run, index, cause::UNSCHEDULABLE, message, now, d);
                return;
            }
            let started = d.status.cells[index]
                .start_time
                .as_ref()
                .map_or(conditions::secs_of(now), conditions::secs_of);
            let waited = conditions::secs_of(now) - started;
            let limit = run.spec.timeouts.ready.get().as_secs() as i64;
            if obs.deployment.is_none() || obs.service.is_none() {
                // Deleted behind our back, or a crash before the first apply: apply again.
                d.actions.push(Action::Apply(Child::Deployment(Box::new(
                    build::deployment(run, cell, &settings.target_image),
                ))));
                d.actions
                    .push(Action::Apply(Child::Service(Box::new(build::service(
                        run, cell,
                    )))));
            } else if let Some(ready) = ready_target(run, cell, obs) {
                match ready {
                    Ok(ReadyTarget {
                        target,
                        replicas,
                        pods,
                    }) => {
                        d.actions.push(Action::Apply(Child::ConfigMap(Box::new(
                            build::plan_config_map(run, cell, &target, &replicas),
                        ))));
                        d.actions.push(Action::Apply(Child::Job(Box::new(build::job(
                            run,
                            cell,
                            &settings.loadgen_image,
                        )))));
                        let c = &mut d.status.cells[index];
                        c.phase = CellPhase::Running;
                        c.load_start_time = Some(now.clone());
                        c.target_pods = pods;
                        c.message = Some(format!(
                            "load generator running against {target} ({} replica(s) ready)",
                            replicas.len()
                        ));
                        d.requeue = Some(load_deadline(run));
                    }
                    Err(message) => fail_cell(run, index, cause::CHILD_BROKEN, message, now, d),
                }
                return;
            }
            if waited >= limit {
                let mut detail = readiness_detail(&obs.target_pods);
                if let Some(why) = deployment_trouble(obs.deployment.as_ref()) {
                    detail = format!("{why}; {detail}");
                }
                fail_cell(
                    run,
                    index,
                    cause::NEVER_READY,
                    format!(
                        "the target was not ready within {}: {detail}",
                        run.spec.timeouts.ready
                    ),
                    now,
                    d,
                );
                return;
            }
            d.requeue = Some(Duration::from_secs((limit - waited).max(1) as u64));
        }
        CellPhase::Running => {
            if let Some(message) =
                replicas::exited(&d.status.cells[index].target_pods, &obs.target_pods)
            {
                // Checked before the result too: a result measured across a restart has a gap or
                // errors in it, and must not be called a success.
                let (why, message) = if message.contains("reason OOMKilled") {
                    (
                        cause::OOM_KILLED,
                        format!("{message}; raise the cell's memory"),
                    )
                } else {
                    (cause::REPLICA_EXITED, message)
                };
                fail_cell(run, index, why, message, now, d);
                return;
            }
            if let Some(res) = &obs.result {
                match res {
                    Ok(doc) => succeed_cell(run, index, cell, doc, now, d),
                    Err(why) => {
                        fail_cell(run, index, cause::RESULT_UNPARSABLE, why.clone(), now, d)
                    }
                }
                return;
            }
            if let Some(job) = &obs.job
                && let Some(message) = job_failure(job)
            {
                let (why, detail) = match &obs.loadgen_failure {
                    Some(line) if line.contains("OOMKilled") => (cause::OOM_KILLED, line.clone()),
                    Some(line) => (cause::LOADGEN_FAILED, line.clone()),
                    None => (cause::LOADGEN_FAILED, String::from("no log")),
                };
                fail_cell(
                    run,
                    index,
                    why,
                    format!("load generator failed: {message}; last log line: {detail}"),
                    now,
                    d,
                );
                return;
            }
            if let Some(message) = target_oom(&obs.target_pods) {
                fail_cell(run, index, cause::OOM_KILLED, message, now, d);
                return;
            }
            let started = d.status.cells[index]
                .load_start_time
                .as_ref()
                .map_or(conditions::secs_of(now), conditions::secs_of);
            let waited = conditions::secs_of(now) - started;
            let limit = load_deadline(run).as_secs() as i64;
            if waited >= limit {
                fail_cell(
                    run,
                    index,
                    cause::TIMEOUT,
                    format!(
                        "the load generator did not finish within {limit}s (warm-up, phases and timeouts.runSlack)"
                    ),
                    now,
                    d,
                );
                return;
            }
            if obs.job.is_none() {
                // The Job vanished (deleted by hand, or a crash before it was created): the
                // ConfigMap and Job are applied again under the same name, so never twice.
                match ready_target(run, cell, obs) {
                    Some(Ok(ReadyTarget {
                        target,
                        replicas,
                        pods,
                    })) => {
                        d.actions.push(Action::Apply(Child::ConfigMap(Box::new(
                            build::plan_config_map(run, cell, &target, &replicas),
                        ))));
                        d.actions.push(Action::Apply(Child::Job(Box::new(build::job(
                            run,
                            cell,
                            &settings.loadgen_image,
                        )))));
                        // The new Job measures afresh, against these pods.
                        d.status.cells[index].target_pods = pods;
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
                // A cell started by an operator that kept no record: record the ready pods now,
                // so a change from here on is still caught.
                d.status.cells[index].target_pods = replicas::record(&ready_pods(obs));
            }
            d.requeue = Some(Duration::from_secs((limit - waited).max(1) as u64));
        }
        CellPhase::Succeeded | CellPhase::Failed | CellPhase::Skipped => {}
    }
}

/// How long the load generator may run: warm-up + phases + slack.
fn load_deadline(run: &BenchmarkRun) -> Duration {
    Duration::from_secs(build::planned_load_secs(run)) + run.spec.timeouts.run_slack.get()
}

/// A target every replica of which is available.
struct ReadyTarget {
    /// The Service address, e.g. "http://10.96.0.10:8080".
    target: String,
    /// Each ready replica's own address.
    replicas: Vec<String>,
    /// The ready replicas, as recorded when the load starts.
    pods: Vec<RecordedPod>,
}

/// The Service address and the ready replicas, once every replica is available. `None` while
/// waiting; `Some(Err)` when the objects are unusable.
fn ready_target(
    run: &BenchmarkRun,
    cell: &Cell,
    obs: &Observation,
) -> Option<Result<ReadyTarget, String>> {
    let port = run.spec.target.port;
    let ready: Vec<(&Pod, String)> = ready_pods(obs)
        .into_iter()
        .filter_map(|p| Some((p, p.status.as_ref()?.pod_ip.clone()?)))
        .collect();
    let ready_ips: Vec<String> = ready
        .iter()
        .map(|(_, ip)| join_host_port(ip, port))
        .collect();
    let available = obs
        .deployment
        .as_ref()
        .and_then(|d| d.status.as_ref())
        .and_then(|s| s.available_replicas)
        .unwrap_or(0);
    if available < cell.replicas as i32 || ready_ips.len() < cell.replicas as usize {
        return None;
    }
    let cluster_ip = obs
        .service
        .as_ref()
        .and_then(|s| s.spec.as_ref())
        .and_then(|s| s.cluster_ip.clone())
        .filter(|ip| !ip.is_empty() && ip != "None");
    let pods: Vec<&Pod> = ready.iter().map(|(p, _)| *p).collect();
    Some(match cluster_ip {
        Some(ip) => Ok(ReadyTarget {
            target: format!("http://{}", join_host_port(&ip, port)),
            replicas: ready_ips,
            pods: replicas::record(&pods),
        }),
        None => Err("the target Service has no ClusterIP".into()),
    })
}

/// The cell's target pods that are ready and not being deleted.
fn ready_pods(obs: &Observation) -> Vec<&Pod> {
    obs.target_pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none() && pod_ready(p))
        .collect()
}

/// Why the cell can never be scheduled on the nodes observed, if it cannot.
fn never_fits(run: &BenchmarkRun, cell: &Cell, obs: &Observation) -> Option<String> {
    let nodes = obs.nodes.as_ref()?;
    let requests = CellRequests::of(run, cell)?;
    fit::fits(&requests, nodes).err()
}

/// A target pod the scheduler cannot place (PodScheduled=False, reason Unschedulable), in the
/// scheduler's words, e.g. "0/1 nodes are available: 1 Insufficient cpu".
fn unschedulable(pods: &[Pod]) -> Option<String> {
    pods.iter().find_map(|pod| {
        let c = pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        })?;
        Some(format!(
            "target pod {} cannot be scheduled: {}",
            pod.name_any(),
            c.message.as_deref().unwrap_or("no message")
        ))
    })
}

fn join_host_port(ip: &str, port: u16) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A target pod stuck in a state that will not fix itself: image pull errors, bad config,
/// crash loops (OOMKilled named as such).
fn pod_failure(pods: &[Pod]) -> Option<(&'static str, String)> {
    for pod in pods {
        for cs in pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
        {
            let waiting = cs.state.as_ref().and_then(|s| s.waiting.as_ref());
            let Some(w) = waiting else { continue };
            let reason = w.reason.as_deref().unwrap_or("");
            let msg = w.message.as_deref().unwrap_or("");
            let said = format!(
                "pod {} container {}: {reason}{}{msg}",
                pod.name_any(),
                cs.name,
                if msg.is_empty() { "" } else { ": " }
            );
            match reason {
                "ImagePullBackOff" | "ErrImagePull" | "InvalidImageName" | "ErrImageNeverPull" => {
                    return Some((cause::IMAGE_PULL, said));
                }
                "CreateContainerConfigError" | "CreateContainerError" => {
                    return Some((cause::CHILD_BROKEN, said));
                }
                "CrashLoopBackOff" => {
                    let oom = cs
                        .last_state
                        .as_ref()
                        .and_then(|s| s.terminated.as_ref())
                        .is_some_and(|t| t.reason.as_deref() == Some("OOMKilled"));
                    return Some(if oom {
                        (
                            cause::OOM_KILLED,
                            format!("{said} (last exit: OOMKilled; raise the cell's memory)"),
                        )
                    } else {
                        (cause::CRASH_LOOP, said)
                    });
                }
                _ => {}
            }
        }
    }
    None
}

/// A target container that was OOMKilled while under load.
fn target_oom(pods: &[Pod]) -> Option<String> {
    pods.iter().find_map(|pod| {
        pod.status
            .as_ref()?
            .container_statuses
            .as_ref()?
            .iter()
            .find(|cs| {
                cs.last_state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .is_some_and(|t| t.reason.as_deref() == Some("OOMKilled"))
            })
            .map(|cs| {
                format!(
                    "target pod {} container {} was OOMKilled under load; raise the cell's memory",
                    pod.name_any(),
                    cs.name
                )
            })
    })
}

/// Why the target pods are not ready, in the pods' own words.
fn readiness_detail(pods: &[Pod]) -> String {
    if pods.is_empty() {
        return "no target pod exists (check the Deployment's events: quota, scheduling)".into();
    }
    let mut parts = Vec::new();
    for pod in pods {
        let status = pod.status.as_ref();
        let waiting = status
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .find_map(|cs| cs.state.as_ref()?.waiting.as_ref()?.reason.clone());
        let unscheduled = status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")
            .map(|c| c.message.clone().unwrap_or_else(|| "unschedulable".into()));
        let phase = status.and_then(|s| s.phase.clone()).unwrap_or_default();
        let why = waiting
            .map(|w| format!("waiting: {w}"))
            .or(unscheduled.map(|u| format!("not scheduled: {u}")))
            .unwrap_or_else(|| format!("phase {phase}, readiness probe not passing"));
        parts.push(format!("pod {} {why}", pod.name_any()));
    }
    parts.join("; ")
}

/// A Deployment condition that explains missing pods (quota, admission), e.g.
/// `ReplicaFailure: pods "x" is forbidden: exceeded quota`.
fn deployment_trouble(deployment: Option<&Deployment>) -> Option<String> {
    deployment?
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| {
            (c.type_.as_deref() == Some("ReplicaFailure") && c.status.as_deref() == Some("True"))
                || (c.type_.as_deref() == Some("Progressing")
                    && c.reason.as_deref() == Some("ProgressDeadlineExceeded"))
        })
        .map(|c| {
            format!(
                "Deployment {}: {}",
                c.reason
                    .as_deref()
                    .or(c.type_.as_deref())
                    .unwrap_or("condition"),
                c.message.as_deref().unwrap_or("")
            )
        })
}

/// The Job's Failed condition message, if it failed.
fn job_failure(job: &Job) -> Option<String> {
    let status = job.status.as_ref()?;
    if let Some(c) = status
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Failed" && c.status == "True")
    {
        return Some(format!(
            "{}: {}",
            c.reason.as_deref().unwrap_or("Failed"),
            c.message.as_deref().unwrap_or("")
        ));
    }
    None
}

/// True when every completion of the Job succeeded.
pub fn job_complete(job: &Job) -> bool {
    let want = job.spec.as_ref().and_then(|s| s.completions).unwrap_or(1);
    job.status
        .as_ref()
        .is_some_and(|s| s.succeeded.unwrap_or(0) >= want)
}

/// True when the Job has failed.
pub fn job_failed(job: &Job) -> bool {
    job_failure(job).is_some()
}

fn succeed_cell(
    run: &BenchmarkRun,
    index: usize,
    cell: &Cell,
    doc: &RunResult,
    now: &Time,
    d: &mut Decision,
) {
    let c = &mut d.status.cells[index];
    c.phase = CellPhase::Succeeded;
    c.reason = None;
    c.message = Some(format!(
        "measured {} phase(s) with {} load generator(s)",
        doc.phases.len(),
        doc.generators.max(1)
    ));
    c.completion_time = Some(now.clone());
    c.results = results::cell_results(doc);
    c.target = results::target_stats(doc);
    c.enforcement = Some(Enforcement {
        target: "kubernetes".into(),
        loadgen: Some("kubernetes".into()),
        detail: Some(format!(
            "pod resources: cpu {} and memory {} per replica, requests == limits (CFS quota by the kubelet)",
            cell.cpu, cell.memory
        )),
    });
    d.events.push(EventNote {
        warning: false,
        reason: "CellSucceeded".into(),
        note: format!("cell {} measured", cell.name),
    });
    d.actions.extend(cleanup(run, &cell.name, false));
}

fn fail_cell(
    run: &BenchmarkRun,
    index: usize,
    why: &str,
    message: String,
    now: &Time,
    d: &mut Decision,
) {
    let generation = run.metadata.generation;
    let name = d.status.cells[index].name.clone();
    let c = &mut d.status.cells[index];
    c.phase = CellPhase::Failed;
    c.reason = Some(why.to_owned());
    c.message = Some(message.clone());
    c.completion_time = Some(now.clone());
    set_condition(
        &mut d.status.conditions,
        conditions::CELL_FAILED,
        cs::TRUE,
        why,
        format!("cell {name}: {message}"),
        generation,
        now,
    );
    d.events.push(EventNote {
        warning: true,
        reason: "CellFailed".into(),
        note: format!("cell {name}: {why}: {message}"),
    });
    d.actions.extend(cleanup(run, &name, true));
    if run.spec.stop_on_failure {
        for later in d.status.cells.iter_mut().skip(index + 1) {
            later.phase = CellPhase::Skipped;
            later.message = Some(format!(
                "skipped: cell {name} failed and stopOnFailure is set"
            ));
        }
    }
}

/// Deletions after a cell, per the cleanup policy.
fn cleanup(run: &BenchmarkRun, cell: &str, failed: bool) -> Vec<Action> {
    let keep = match run.spec.cleanup {
        CleanupPolicy::Always => false,
        CleanupPolicy::KeepFailed => failed,
        CleanupPolicy::Never => true,
    };
    if keep {
        return Vec::new();
    }
    let name = build::cell_child_name(run, cell);
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
    status
        .cells
        .iter()
        .find(|c| matches!(c.phase, CellPhase::Deploying | CellPhase::Running))
        .map(|c| cleanup(run, &c.name, false))
        .unwrap_or_default()
}

fn finish(run: &BenchmarkRun, now: &Time, d: &mut Decision) {
    let RunEnd { phase, message, .. } =
        finish_run(&mut d.status, false, run.metadata.generation, now);
    d.events.push(EventNote {
        warning: phase == RunPhase::Failed,
        reason: if phase == RunPhase::Failed {
            "RunFailed".into()
        } else {
            "RunSucceeded".into()
        },
        note: message,
    });
    if let Some(ttl) = run.spec.ttl_after_finished {
        d.requeue = Some(ttl.get());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::JobStatus;

    fn run_with(status: Option<BenchmarkRunStatus>) -> BenchmarkRun {
        let mut run = crate::validate::parse_benchmark_run(
            r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: r, namespace: ns, uid: u1, generation: 1}
spec:
  configurations:
    - {name: a, cpu: "1"}
    - {name: b, cpu: "1"}
  workload:
    endpoints: [{name: fast, path: /fast}]
    phases: [{name: p, duration: 5s, load: [{endpoint: fast, connections: 1}]}]
"#,
        )
        .unwrap();
        run.status = status;
        run
    }

    fn mid_run() -> BenchmarkRunStatus {
        BenchmarkRunStatus {
            phase: RunPhase::Running,
            observed_generation: Some(1),
            cells: vec![
                CellStatus {
                    name: "a".into(),
                    phase: CellPhase::Succeeded,
                    ..CellStatus::default()
                },
                CellStatus {
                    name: "b".into(),
                    phase: CellPhase::Running,
                    load_start_time: Some(conditions::time_from_secs(100)),
                    ..CellStatus::default()
                },
            ],
            ..BenchmarkRunStatus::default()
        }
    }

    fn running_job() -> Job {
        Job {
            status: Some(JobStatus {
                active: Some(1),
                ..JobStatus::default()
            }),
            ..Job::default()
        }
    }

    #[test]
    fn a_restart_mid_cell_with_the_job_running_changes_nothing() {
        let run = run_with(Some(mid_run()));
        let obs = Observation {
            job: Some(running_job()),
            ..Observation::default()
        };
        let d = decide(
            &run,
            &obs,
            &conditions::time_from_secs(110),
            &Settings::default(),
        );
        assert!(d.actions.is_empty(), "{:?}", d.actions);
        assert!(d.events.is_empty());
        let mut expected = mid_run();
        expected.progress = Some("1/2".into());
        assert_eq!(d.status, expected);
        assert!(
            d.requeue.is_some(),
            "a safety-net requeue for the run timeout"
        );
    }

    #[test]
    fn a_pending_cell_gets_its_deployment_and_service_and_an_event() {
        let run = run_with(None);
        let d = decide(
            &run,
            &Observation::default(),
            &conditions::time_from_secs(1),
            &Settings::default(),
        );
        assert_eq!(d.status.phase, RunPhase::Running);
        assert_eq!(d.status.cells[0].phase, CellPhase::Deploying);
        assert!(matches!(d.actions[0], Action::Apply(Child::Deployment(_))));
        assert!(matches!(d.actions[1], Action::Apply(Child::Service(_))));
        assert_eq!(d.events[0].reason, "CellStarted");
    }

    #[test]
    fn a_run_past_its_deadline_fails_the_cell_with_timeout() {
        let run = run_with(Some(mid_run()));
        let obs = Observation {
            job: Some(running_job()),
            ..Observation::default()
        };
        // 5 s of phases + the default 2 m slack.
        let d = decide(
            &run,
            &obs,
            &conditions::time_from_secs(100 + 126),
            &Settings::default(),
        );
        assert_eq!(d.status.cells[1].phase, CellPhase::Failed);
        assert_eq!(d.status.cells[1].reason.as_deref(), Some(cause::TIMEOUT));
        assert!(
            d.actions
                .iter()
                .any(|a| matches!(a, Action::Delete(ChildKind::Job, _)))
        );
    }

    #[test]
    fn stop_on_failure_skips_the_rest_and_fails_the_run() {
        let mut run = run_with(None);
        run.spec.stop_on_failure = true;
        let mut status = mid_run();
        status.cells[0].phase = CellPhase::Running;
        status.cells[0].load_start_time = Some(conditions::time_from_secs(100));
        status.cells[1].phase = CellPhase::Pending;
        run.status = Some(status);
        let mut job = running_job();
        job.status = Some(JobStatus {
            failed: Some(1),
            conditions: Some(vec![k8s_openapi::api::batch::v1::JobCondition {
                type_: "Failed".into(),
                status: "True".into(),
                reason: Some("BackoffLimitExceeded".into()),
                ..Default::default()
            }]),
            ..JobStatus::default()
        });
        let obs = Observation {
            job: Some(job),
            loadgen_failure: Some("boom".into()),
            ..Observation::default()
        };
        let now = conditions::time_from_secs(101);
        let d = decide(&run, &obs, &now, &Settings::default());
        assert_eq!(d.status.cells[1].phase, CellPhase::Skipped);
        run.status = Some(d.status);
        let d = decide(&run, &Observation::default(), &now, &Settings::default());
        assert_eq!(d.status.phase, RunPhase::Failed);
        assert!(
            d.status
                .message
                .unwrap()
                .contains("stopped at failed cell a")
        );
    }

    fn target_pod(uid: &str, restarts: i32) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "r-b-pod0", "uid": uid},
            "status": {"phase": "Running", "podIP": "10.1.0.1",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "target", "ready": true, "restartCount": restarts,
                    "image": "x", "imageID": "",
                    "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]},
        }))
        .unwrap()
    }

    #[test]
    fn a_running_cell_without_a_record_records_its_pods_and_then_holds_them_to_it() {
        // A cell started by an operator that kept no record (mid_run has none).
        let run = run_with(Some(mid_run()));
        let obs = Observation {
            job: Some(running_job()),
            target_pods: vec![target_pod("u1", 0)],
            ..Observation::default()
        };
        let now = conditions::time_from_secs(110);
        let d = decide(&run, &obs, &now, &Settings::default());
        let record = &d.status.cells[1].target_pods;
        assert_eq!(record.len(), 1, "{record:?}");
        assert_eq!((record[0].uid.as_str(), record[0].restarts), ("u1", 0));
        // The same pod, restarted: the cell fails.
        let run = run_with(Some(d.status));
        let obs = Observation {
            target_pods: vec![target_pod("u1", 1)],
            ..obs
        };
        let d = decide(&run, &obs, &now, &Settings::default());
        assert_eq!(d.status.cells[1].phase, CellPhase::Failed);
        assert_eq!(
            d.status.cells[1].reason.as_deref(),
            Some(cause::REPLICA_EXITED)
        );
        // Killed for memory instead: named OOMKilled, as while the target starts.
        let mut oom = target_pod("u1", 1);
        oom.status
            .as_mut()
            .unwrap()
            .container_statuses
            .as_mut()
            .unwrap()[0]
            .last_state
            .as_mut()
            .unwrap()
            .terminated
            .as_mut()
            .unwrap()
            .reason = Some("OOMKilled".into());
        let oom_obs = Observation {
            target_pods: vec![oom],
            ..Observation::default()
        };
        let e = decide(&run, &oom_obs, &now, &Settings::default());
        assert_eq!(e.status.cells[1].reason.as_deref(), Some(cause::OOM_KILLED));
        assert!(
            e.status.cells[1]
                .message
                .as_deref()
                .unwrap()
                .contains("exit code 1; raise the cell's memory"),
            "{:?}",
            e.status.cells[1].message
        );
        assert!(
            d.actions
                .iter()
                .any(|a| matches!(a, Action::Delete(ChildKind::Job, _))),
            "the failed cell is cleaned up"
        );
    }

    #[test]
    fn a_run_whose_every_cell_failed_ends_failed_not_succeeded() {
        let mut status = mid_run();
        for (cell, why) in status
            .cells
            .iter_mut()
            .zip(["Unschedulable", "ReplicaExited"])
        {
            cell.phase = CellPhase::Failed;
            cell.reason = Some(why.into());
        }
        let run = run_with(Some(status));
        let d = decide(
            &run,
            &Observation::default(),
            &conditions::time_from_secs(200),
            &Settings::default(),
        );
        assert_eq!(d.status.phase, RunPhase::Failed);
        let complete = conditions::find(&d.status.conditions, conditions::COMPLETE).unwrap();
        assert_eq!(complete.reason, reason::NO_CELL_MEASURED);
        assert!(
            d.events
                .iter()
                .any(|e| e.reason == "RunFailed" && e.warning)
        );
    }

    #[test]
    fn a_spec_change_while_running_fails_the_run_instead_of_mixing_results() {
        let mut run = run_with(Some(mid_run()));
        run.metadata.generation = Some(2);
        let d = decide(
            &run,
            &Observation::default(),
            &conditions::time_from_secs(110),
            &Settings::default(),
        );
        assert_eq!(d.status.phase, RunPhase::Failed);
        assert!(d.status.message.unwrap().contains("generation 1 -> 2"));
        assert!(
            d.actions
                .iter()
                .any(|a| matches!(a, Action::Delete(ChildKind::Deployment, _)))
        );
    }
}

#[cfg(test)]
mod trouble_tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentStatus};

    #[test]
    fn a_quota_refusal_is_named_when_the_target_never_becomes_ready() {
        let dep = Deployment {
            status: Some(DeploymentStatus {
                conditions: Some(vec![DeploymentCondition {
                    type_: Some("ReplicaFailure".into()),
                    status: Some("True".into()),
                    reason: Some("FailedCreate".into()),
                    message: Some("pods \"x\" is forbidden: exceeded quota".into()),
                    ..DeploymentCondition::default()
                }]),
                ..DeploymentStatus::default()
            }),
            ..Deployment::default()
        };
        let why = deployment_trouble(Some(&dep)).unwrap();
        assert!(
            why.contains("FailedCreate") && why.contains("exceeded quota"),
            "{why}"
        );
        assert_eq!(deployment_trouble(None), None);
    }
}
