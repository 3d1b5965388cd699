//! The target pods a load was started against, and whether they are still the same pods.
//!
//! A target container that crashes and restarts, or a pod deleted or evicted and replaced by its
//! Deployment while the load runs, leaves a gap or a burst of errors in the figures while every
//! request still gets an answer in the end. So when the load starts the cell's status records
//! each target pod's name, UID and restart count (the status is the state machine's only memory:
//! a restarted operator compares against the same record), and until the result is in, any
//! change to them fails the cell. Pure.

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use kube::ResourceExt;

use crate::resource::status::RecordedPod;

/// The record of `pods` (the ready target pods the load generator was given).
pub fn recorded(pods: &[&Pod]) -> Vec<RecordedPod> {
    pods.iter()
        .map(|p| RecordedPod {
            name: p.name_any(),
            node: p.spec.as_ref().and_then(|s| s.node_name.clone()),
            uid: p.metadata.uid.clone().unwrap_or_default(),
            restarts: restarts(p),
        })
        .collect()
}

/// Container restarts of `pod`, summed over its containers.
fn restarts(pod: &Pod) -> i32 {
    statuses(pod).map(|c| c.restart_count).sum()
}

fn statuses(pod: &Pod) -> impl Iterator<Item = &ContainerStatus> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
}

/// What happened to the recorded pods, judged from the cell's target pods now: `None` when each
/// is still there with the same UID, not deleted or failed, and no more restarts. Otherwise one
/// sentence per changed pod naming the pod, the container, its last state and exit code.
pub fn exited(recorded: &[RecordedPod], now: &[Pod]) -> Option<String> {
    let mut said = Vec::new();
    for r in recorded {
        let current = now.iter().find(|p| p.name_any() == r.name);
        match current {
            None => said.push(format!(
                "target pod {} is gone (deleted or evicted){}",
                r.name,
                newcomers(recorded, now)
            )),
            Some(p) if p.metadata.uid.as_deref().unwrap_or_default() != r.uid => {
                said.push(format!(
                    "target pod {} was replaced (uid {} -> {})",
                    r.name,
                    r.uid,
                    p.metadata.uid.as_deref().unwrap_or("?")
                ))
            }
            Some(p) if p.metadata.deletion_timestamp.is_some() => said.push(format!(
                "target pod {} is being deleted (evicted or deleted during the load)",
                r.name
            )),
            Some(p) if pod_phase(p) == Some("Failed") => {
                let status = p.status.as_ref();
                said.push(format!(
                    "target pod {} failed: {}{}",
                    r.name,
                    status.and_then(|s| s.reason.as_deref()).unwrap_or("Failed"),
                    status
                        .and_then(|s| s.message.as_deref())
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                ));
            }
            Some(p) if restarts(p) > r.restarts => said.push(restart_note(p, r.restarts)),
            Some(_) => {}
        }
    }
    (!said.is_empty()).then(|| said.join("; "))
}

fn pod_phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref()?.phase.as_deref()
}

/// The cell's pods that were not there when the load started (a Deployment's replacements).
fn newcomers(recorded: &[RecordedPod], now: &[Pod]) -> String {
    let new: Vec<String> = now
        .iter()
        .filter(|p| {
            let uid = p.metadata.uid.as_deref().unwrap_or_default();
            !recorded.iter().any(|r| r.uid == uid)
        })
        .map(|p| p.name_any())
        .collect();
    if new.is_empty() {
        String::new()
    } else {
        format!(", replaced by {}", new.join(", "))
    }
}

/// "target pod P container C restarted during the load (restarts 0 -> 1); last state:
/// terminated, reason Error, exit code 137 (signal 9)".
fn restart_note(pod: &Pod, before: i32) -> String {
    // The container that restarted: the one whose count is above zero and whose last
    // termination is the latest (with one container, that one).
    let container = statuses(pod)
        .filter(|c| c.restart_count > 0)
        .max_by_key(|c| {
            c.last_state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .and_then(|t| t.finished_at.as_ref())
                .map(|t| t.0)
        });
    let Some(c) = container else {
        return format!(
            "target pod {} restarted during the load (restarts {before} -> {})",
            pod.name_any(),
            restarts(pod)
        );
    };
    let last = match c.last_state.as_ref().and_then(|s| s.terminated.as_ref()) {
        Some(t) => format!(
            "terminated, reason {}, exit code {}{}",
            t.reason.as_deref().unwrap_or("unknown"),
            t.exit_code,
            t.signal
                .map(|s| format!(" (signal {s})"))
                .unwrap_or_default()
        ),
        None => "unknown".into(),
    };
    format!(
        "target pod {} container {} restarted during the load (restarts {before} -> {}); last state: {last}",
        pod.name_any(),
        c.name,
        restarts(pod)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, uid: &str, restarts: i32, last: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "uid": uid},
            "status": {"phase": "Running", "containerStatuses": [{
                "name": "target", "ready": true, "restartCount": restarts, "image": "x",
                "imageID": "", "lastState": last,
            }]},
        }))
        .unwrap()
    }

    fn recorded(pods: &[Pod]) -> Vec<RecordedPod> {
        super::recorded(&pods.iter().collect::<Vec<_>>())
    }

    #[test]
    fn unchanged_pods_are_fine() {
        let pods = [pod("a", "u1", 2, json!({})), pod("b", "u2", 0, json!({}))];
        let rec = recorded(&pods);
        assert_eq!(
            rec[0].restarts, 2,
            "restarts before the load are not held against it"
        );
        assert_eq!(exited(&rec, &pods), None);
    }

    #[test]
    fn a_restart_names_the_container_the_reason_and_the_exit_code() {
        let rec = recorded(&[pod("a", "u1", 0, json!({}))]);
        let now = [pod(
            "a",
            "u1",
            1,
            json!({"terminated": {"exitCode": 139, "reason": "Error", "signal": 11}}),
        )];
        let why = exited(&rec, &now).unwrap();
        assert_eq!(
            why,
            "target pod a container target restarted during the load (restarts 0 -> 1); \
             last state: terminated, reason Error, exit code 139 (signal 11)"
        );
    }

    #[test]
    fn a_pod_gone_replaced_deleted_or_failed_is_named() {
        let rec = recorded(&[pod("a", "u1", 0, json!({}))]);
        let why = exited(&rec, &[pod("a-2", "u9", 0, json!({}))]).unwrap();
        assert_eq!(
            why,
            "target pod a is gone (deleted or evicted), replaced by a-2"
        );
        let why = exited(&rec, &[pod("a", "u9", 0, json!({}))]).unwrap();
        assert!(why.contains("was replaced (uid u1 -> u9)"), "{why}");
        let mut deleting = pod("a", "u1", 0, json!({}));
        deleting.metadata.deletion_timestamp = Some(crate::resource::conditions::time_from_secs(5));
        assert!(exited(&rec, &[deleting]).unwrap().contains("being deleted"));
        let mut evicted = pod("a", "u1", 0, json!({}));
        let status = evicted.status.as_mut().unwrap();
        status.phase = Some("Failed".into());
        status.reason = Some("Evicted".into());
        status.message = Some("The node was low on resource: memory.".into());
        let why = exited(&rec, &[evicted]).unwrap();
        assert!(why.contains("failed: Evicted: The node was low"), "{why}");
    }
}
