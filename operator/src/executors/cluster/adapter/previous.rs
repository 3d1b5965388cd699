//! Before a step is deployed: the pods labelled with the run's name, sorted into those whose
//! containers still run (the next step waits for them, as they would take CPU from it) and, of
//! the run's own, those left behind (their objects are deleted again). Pure.
//!
//! A pod of another run of the same name (deleted and created again, as a CI job does with
//! `--replace`) or one nobody owns (made by hand with the run's labels) is waited for only while
//! it still runs on the step's nodes; it is never taken for one of this run's steps, nor
//! deleted: an earlier run's go with their owners, and a pod made by hand is its maker's.
//!
//! The wait ends when the containers have stopped, not when the pod objects are gone: the
//! kubelet keeps a stopped pod's object for some seconds more (volumes, sandbox, its final
//! status), and that holds no CPU.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::engine::Step;
use crate::executors::cluster::children::build;
use crate::resource::labels::{CELL_LABEL, REPETITION_LABEL, RUN_UID_LABEL};
use crate::resource::{BenchmarkRunStatus, CellPhase, CleanupPolicy, ValidatedRun};

/// The run's pods of other steps than `step`, as the next step sees them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Previous {
    /// Pods whose containers have not all stopped, by name (pods kept by the cleanup policy
    /// excepted).
    pub stopping: Vec<String>,
    /// Child names of earlier steps whose pods are still there, not being deleted, though the
    /// cleanup policy says their objects go: the deletion after their step never happened (an
    /// operator that stopped between writing the status and deleting).
    pub leftovers: Vec<String>,
}

impl Previous {
    /// Sorts `pods` (every pod of `run`) for the step `step` of `status`. In a parallel run
    /// the pods of the other steps in flight are theirs, not left behind, and only pods on
    /// `nodes` (the step's slot) would take CPU from it; `nodes` empty: every node.
    pub fn of(
        v: &ValidatedRun,
        status: &BenchmarkRunStatus,
        step: Step,
        nodes: &[String],
        pods: &[Pod],
    ) -> Self {
        let mut out = Previous::default();
        let flying: Vec<(&str, u32)> = crate::engine::schedule::in_flight(status)
            .into_iter()
            .filter(|p| p.step != step)
            .map(|p| (status.cells[p.step.cell].name.as_str(), p.step.repetition))
            .collect();
        let uid = v.run().metadata.uid.as_deref().unwrap_or_default();
        for pod in pods {
            let elsewhere = !nodes.is_empty()
                && pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_ref())
                    .is_none_or(|n| !nodes.contains(n));
            let ours = pod.labels().get(RUN_UID_LABEL).map(String::as_str) == Some(uid)
                && build::controller_of(pod).is_some();
            if !ours {
                if !containers_stopped(pod) && !elsewhere {
                    out.stopping.push(pod.name_any());
                }
                continue;
            }
            let Some((cell, repetition)) = step_of(pod) else {
                continue;
            };
            if flying.contains(&(cell.as_str(), repetition)) {
                continue;
            }
            let current = status.cells.get(step.cell).is_some_and(|c| c.name == cell)
                && repetition == step.repetition;
            if !current && kept(v, status, &cell) {
                continue;
            }
            if !containers_stopped(pod) && !elsewhere {
                out.stopping.push(pod.name_any());
            }
            if !current && pod.metadata.deletion_timestamp.is_none() {
                let name = build::CellRun {
                    run: v.run(),
                    cell: &cell,
                    repetition,
                }
                .child_name();
                if !out.leftovers.contains(&name) {
                    out.leftovers.push(name);
                }
            }
        }
        out
    }
}

/// The cell and repetition a pod of the run belongs to, from its labels.
fn step_of(pod: &Pod) -> Option<(String, u32)> {
    let labels = pod.labels();
    let cell = labels.get(CELL_LABEL)?.clone();
    let repetition = labels.get(REPETITION_LABEL)?.parse().ok()?;
    Some((cell, repetition))
}

/// Whether the cleanup policy keeps the objects of `cell`: only a finished cell's, as one with
/// repetitions still to come loses each repetition's objects in any case.
fn kept(v: &ValidatedRun, status: &BenchmarkRunStatus, cell: &str) -> bool {
    let Some(c) = status.cells.iter().find(|c| c.name == cell) else {
        return false;
    };
    match v.spec().cleanup {
        CleanupPolicy::Never => c.phase.is_finished(),
        CleanupPolicy::KeepFailed => c.phase == CellPhase::Failed,
        CleanupPolicy::Always => false,
    }
}

/// True when no container of the pod runs any more: each has terminated or never started, or
/// the pod has reached a terminal phase.
pub fn containers_stopped(pod: &Pod) -> bool {
    let Some(status) = pod.status.as_ref() else {
        return true;
    };
    if matches!(status.phase.as_deref(), Some("Succeeded" | "Failed")) {
        return true;
    }
    status
        .container_statuses
        .iter()
        .flatten()
        .chain(status.init_container_statuses.iter().flatten())
        .all(|c| c.state.as_ref().is_none_or(|s| s.running.is_none()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{BenchmarkRun, Configuration};
    use serde_json::json;

    /// A run of two cells, "a" measured, "b" next.
    fn run_and_status() -> (BenchmarkRun, BenchmarkRunStatus) {
        let run = BenchmarkRun::sample()
            .with_uid("uid-now")
            .with_cell(Configuration::named("a"))
            .with_cell(Configuration::named("b"));
        let mut status = BenchmarkRunStatus::default();
        for name in ["a", "b"] {
            status.cells.push(crate::resource::CellStatus {
                name: name.into(),
                ..Default::default()
            });
        }
        status.cells[0].phase = CellPhase::Succeeded;
        (run, status)
    }

    /// A pod of cell `cell`, repetition 1, labelled with run UID `uid`, owned when `owned`, its
    /// container running when `running`, on node-1.
    fn pod(name: &str, uid: &str, cell: &str, owned: bool, running: bool) -> Pod {
        let state = if running {
            json!({"running": {}})
        } else {
            json!({"terminated": {"exitCode": 0}})
        };
        let owners = if owned {
            json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j",
                "controller": true}])
        } else {
            json!([])
        };
        serde_json::from_value(json!({
            "metadata": {"name": name, "ownerReferences": owners, "labels": {
                "benchmatrix.dev/run": "r", "benchmatrix.dev/run-uid": uid,
                "benchmatrix.dev/cell": cell, "benchmatrix.dev/repetition": "1"}},
            "spec": {"containers": [{"name": "c"}], "nodeName": "node-1"},
            "status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": true,
                "restartCount": 0, "image": "x", "imageID": "", "state": state}]},
        }))
        .unwrap()
    }

    fn sort(pods: &[Pod], nodes: &[&str]) -> Previous {
        let (run, status) = run_and_status();
        let nodes: Vec<String> = nodes.iter().map(|n| (*n).to_owned()).collect();
        let next = Step {
            cell: 1,
            repetition: 1,
        };
        let v = ValidatedRun::for_cluster(run).unwrap();
        Previous::of(&v, &status, next, &nodes, pods)
    }

    #[test]
    fn the_runs_own_earlier_pods_are_waited_for_and_their_leftovers_deleted() {
        let previous = sort(&[pod("a-1", "uid-now", "a", true, true)], &[]);
        assert_eq!(previous.stopping, ["a-1"]);
        assert_eq!(previous.leftovers.len(), 1, "{previous:?}");
    }

    #[test]
    fn an_earlier_runs_pod_is_waited_for_while_it_runs_and_never_deleted() {
        let theirs = pod("old-a-1", "uid-before", "a", true, true);
        let previous = sort(std::slice::from_ref(&theirs), &[]);
        assert_eq!(previous.stopping, ["old-a-1"]);
        assert!(previous.leftovers.is_empty(), "{previous:?}");
        // Stopped, or on a node the step does not use: nothing to wait for.
        let stopped = pod("old-a-1", "uid-before", "a", true, false);
        assert_eq!(sort(&[stopped], &[]), Previous::default());
        assert_eq!(sort(&[theirs], &["node-2"]), Previous::default());
    }

    #[test]
    fn a_pod_nobody_owns_with_the_runs_labels_is_waited_for_and_never_deleted() {
        let by_hand = pod("by-hand", "uid-now", "a", false, true);
        let previous = sort(&[by_hand], &[]);
        assert_eq!(previous.stopping, ["by-hand"]);
        assert!(previous.leftovers.is_empty(), "{previous:?}");
    }
}
