//! Before a cell or repetition after the first is deployed: the run's pods of earlier steps,
//! sorted into those whose containers still run (the next step waits for them, as they would
//! take CPU from it) and those left behind (their objects are deleted again). Pure.
//!
//! The wait ends when the containers have stopped, not when the pod objects are gone: the
//! kubelet keeps a stopped pod's object for some seconds more (volumes, sandbox, its final
//! status), and that holds no CPU.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::engine::Step;
use crate::executors::cluster::build;
use crate::resource::labels::{CELL_LABEL, REPETITION_LABEL};
use crate::resource::{BenchmarkRun, BenchmarkRunStatus, CellPhase, CleanupPolicy};

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
        run: &BenchmarkRun,
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
        for pod in pods {
            let Some((cell, repetition)) = step_of(pod) else {
                continue;
            };
            if flying.contains(&(cell.as_str(), repetition)) {
                continue;
            }
            let current = status.cells.get(step.cell).is_some_and(|c| c.name == cell)
                && repetition == step.repetition;
            if !current && kept(run, status, &cell) {
                continue;
            }
            let elsewhere = !nodes.is_empty()
                && pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_ref())
                    .is_none_or(|n| !nodes.contains(n));
            if !containers_stopped(pod) && !elsewhere {
                out.stopping.push(pod.name_any());
            }
            if !current && pod.metadata.deletion_timestamp.is_none() {
                let name = build::CellRun {
                    run,
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

/// The cell and repetition a pod of the run belongs to, from its labels (no repetition label:
/// the first).
fn step_of(pod: &Pod) -> Option<(String, u32)> {
    let labels = pod.labels();
    let cell = labels.get(CELL_LABEL)?.clone();
    let repetition = match labels.get(REPETITION_LABEL) {
        Some(r) => r.parse().ok()?,
        None => 1,
    };
    Some((cell, repetition))
}

/// Whether the cleanup policy keeps the objects of `cell`: only a finished cell's, as one with
/// repetitions still to come loses each repetition's objects in any case.
fn kept(run: &BenchmarkRun, status: &BenchmarkRunStatus, cell: &str) -> bool {
    let Some(c) = status.cells.iter().find(|c| c.name == cell) else {
        return false;
    };
    match run.spec.cleanup {
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
