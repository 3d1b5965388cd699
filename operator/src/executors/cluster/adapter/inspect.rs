//! Reading the cluster's objects: when a target is ready, why a pod or a Job is failing, in
//! the objects' own words. Pure functions over the observed objects.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use super::types::Observation;
use crate::executors::cluster::placement::fit::{self, CellRequests};
use crate::executors::cluster::placement::target_pods;
use crate::resource::ValidatedRun;
use crate::resource::conditions::{self, Cause};
use crate::resource::matrix::Cell;
use crate::resource::status::RecordedPod;

/// A target every replica of which is available.
pub struct ReadyTarget {
    /// The Service address, e.g. "http://10.96.0.10:8080".
    pub target: String,
    /// Each ready replica's own address.
    pub replicas: Vec<String>,
    /// The ready replicas, as recorded when the load starts.
    pub pods: Vec<RecordedPod>,
}

/// The Service address and the ready replicas, once every replica is available. `None` while
/// waiting; `Some(Err)` when the objects are unusable.
pub fn ready_target(
    v: &ValidatedRun,
    cell: &Cell,
    obs: &Observation,
) -> Option<Result<ReadyTarget, String>> {
    let port = v.spec().target.port;
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
            pods: target_pods::recorded(&pods),
        }),
        None => Err("the target Service has no ClusterIP".into()),
    })
}

/// The cell's target pods that are ready and not being deleted.
pub fn ready_pods(obs: &Observation) -> Vec<&Pod> {
    obs.target_pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none() && pod_ready(p))
        .collect()
}

/// Why the cell can never be scheduled on the nodes observed, if it cannot.
pub fn never_fits(v: &ValidatedRun, cell: &Cell, obs: &Observation) -> Option<String> {
    let nodes = obs.nodes.as_ref()?;
    let requests = CellRequests::of(v.spec(), cell)?;
    fit::fits(&requests, nodes).err()
}

/// How long a pod may stay unplaceable before its cell fails `Unschedulable`. The scheduler
/// counts the requests of pods whose containers have stopped until their objects are gone, so
/// the next step's pods can be turned away for a second or two on a node that is about to free
/// up (seen on a real two-node cluster: a load generator refused for "Insufficient cpu" while
/// the previous repetition's pod was being deleted, placed a second later). A pod that stays
/// unplaceable this long is waiting for a node that will not come (larger than any free one).
pub const UNSCHEDULABLE_GRACE: Duration = Duration::from_secs(30);

/// A pod the scheduler cannot place (PodScheduled=False, reason Unschedulable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unplaced {
    /// For at least [`UNSCHEDULABLE_GRACE`] (or since a time not given): in the scheduler's
    /// words, e.g. "target pod x cannot be scheduled: 0/1 nodes are available: 1 Insufficient
    /// cpu".
    Settled(String),
    /// For less: look again after this long, when it will have settled unless placed.
    Young(Duration),
}

/// The first pod of `pods` the scheduler cannot place, and for how long; `what` names the
/// pods' role ("target", "load generator").
pub fn unschedulable(pods: &[Pod], what: &str, now: &Time) -> Option<Unplaced> {
    pods.iter().find_map(|pod| {
        let c = pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        })?;
        let grace = UNSCHEDULABLE_GRACE.as_secs() as i64;
        let held = c
            .last_transition_time
            .as_ref()
            .map(|since| conditions::secs_of(now) - conditions::secs_of(since));
        if let Some(held) = held.filter(|held| *held < grace) {
            return Some(Unplaced::Young(Duration::from_secs((grace - held) as u64)));
        }
        Some(Unplaced::Settled(format!(
            "{what} pod {} cannot be scheduled: {}",
            pod.name_any(),
            c.message.as_deref().unwrap_or("no message")
        )))
    })
}

/// `ip:port`, with an IPv6 address in brackets.
pub fn join_host_port(ip: &str, port: u16) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

/// True when the pod's Ready condition is True.
pub fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A target pod stuck in a state that will not fix itself: image pull errors, bad config,
/// crash loops (OOMKilled named as such).
pub fn pod_failure(pods: &[Pod]) -> Option<(Cause, String)> {
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
                    return Some((Cause::ImagePull, said));
                }
                "CreateContainerConfigError" | "CreateContainerError" => {
                    return Some((Cause::ChildBroken, said));
                }
                "CrashLoopBackOff" => {
                    let oom = cs
                        .last_state
                        .as_ref()
                        .and_then(|s| s.terminated.as_ref())
                        .is_some_and(|t| t.reason.as_deref() == Some("OOMKilled"));
                    return Some(if oom {
                        (
                            Cause::OomKilled,
                            format!("{said} (last exit: OOMKilled; raise the cell's memory)"),
                        )
                    } else {
                        (Cause::CrashLoop, said)
                    });
                }
                _ => {}
            }
        }
    }
    None
}

/// A target container that was OOMKilled while under load.
pub fn target_oom(pods: &[Pod]) -> Option<String> {
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
pub fn readiness_detail(pods: &[Pod]) -> String {
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
pub fn deployment_trouble(deployment: Option<&Deployment>) -> Option<String> {
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
pub fn job_failure(job: &Job) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn turned_away(since: Option<i64>) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "lg-0-x"},
            "status": {"conditions": [{"type": "PodScheduled", "status": "False",
                "reason": "Unschedulable", "message": "0/2 nodes are available",
                "lastTransitionTime": since.map(conditions::time_from_secs)}]},
        }))
        .unwrap()
    }

    #[test]
    fn a_pod_turned_away_counts_only_once_it_has_been_for_the_grace() {
        let at = |secs: i64| conditions::time_from_secs(1_000 + secs);
        let pods = [turned_away(Some(1_000))];
        assert_eq!(
            unschedulable(&pods, "load generator", &at(2)),
            Some(Unplaced::Young(Duration::from_secs(28)))
        );
        assert_eq!(
            unschedulable(&pods, "load generator", &at(30)),
            Some(Unplaced::Settled(
                "load generator pod lg-0-x cannot be scheduled: 0/2 nodes are available".into()
            ))
        );
        // A condition without its time (no real API server omits it) counts at once.
        let untimed = [turned_away(None)];
        assert!(matches!(
            unschedulable(&untimed, "target", &at(0)),
            Some(Unplaced::Settled(_))
        ));
    }
}
