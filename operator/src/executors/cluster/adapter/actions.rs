//! What the machine's commands are on the cluster: the objects to apply or delete, and when to
//! look again. The objects themselves are `build`'s.

use super::inspect::ReadyTarget;
use super::types::{Action, Child, ChildKind, Settings};
use crate::engine::Step;
use crate::engine::machine::Command;
use crate::executors::cluster::build;
use crate::resource::{BenchmarkRun, BenchmarkRunStatus, ValidatedRun};

/// What one turn asks of the cluster.
#[derive(Debug, Default)]
pub struct Carried {
    /// Changes to the cluster, in order.
    pub actions: Vec<Action>,
    /// When to look again even if nothing watched changes.
    pub requeue: Option<std::time::Duration>,
}

impl Carried {
    /// Looks again within `after` at the latest, whatever else asks for a later look.
    pub fn look_again_within(&mut self, after: std::time::Duration) {
        self.requeue = Some(self.requeue.map_or(after, |r| r.min(after)));
    }
}

/// Does `command` on the cluster. `v` is the run when its spec validated (a refused run has
/// only its objects to delete), `ready` the target a load starts against.
pub fn carry_out(
    run: &BenchmarkRun,
    v: Option<&ValidatedRun>,
    status: &BenchmarkRunStatus,
    command: &Command,
    ready: Option<&ReadyTarget>,
    settings: &Settings,
    out: &mut Carried,
) {
    let cell = |at: Step| v.and_then(|v| Some((v, v.cells().get(at.cell)?)));
    match *command {
        Command::Deploy(at) => {
            if let Some((v, cell)) = cell(at) {
                let r = at.repetition;
                // A parallel step goes to its slot's nodes; a round's variants share the nodes
                // its first one ran on.
                let slot = status.cells.get(at.cell).and_then(|c| c.slot);
                let mut pin = crate::engine::schedule::slot_nodes(status, slot).to_vec();
                if pin.is_empty() {
                    pin = crate::engine::schedule::round_nodes(status, at);
                }
                let deployment = build::deployment(v, cell, r, &settings.target_image, pin);
                out.actions.extend([
                    Action::Apply(Child::Deployment(Box::new(deployment))),
                    Action::Apply(Child::Service(Box::new(build::service(v, cell, r)))),
                ]);
            }
        }
        Command::StartLoad(at) => {
            if let (Some((v, cell)), Some(ready)) = (cell(at), ready) {
                let r = at.repetition;
                let plan = build::plan_config_map(v, cell, r, &ready.target, &ready.replicas);
                let mut job = build::job(v, cell, r, &settings.loadgen_image);
                // In a parallel run the load generators share their step's nodes with nobody
                // but its targets.
                let slot = status.cells.get(at.cell).and_then(|c| c.slot);
                let nodes = crate::engine::schedule::slot_nodes(status, slot);
                if !nodes.is_empty()
                    && let Some(pod) = job.spec.as_mut().and_then(|s| s.template.spec.as_mut())
                {
                    crate::executors::cluster::template::pin(pod, nodes.to_vec());
                }
                out.actions.extend([
                    Action::Apply(Child::ConfigMap(Box::new(plan))),
                    Action::Apply(Child::Job(Box::new(job))),
                ]);
            }
        }
        // The operator reads a result as soon as the load generator has ended (observe), so
        // there is nothing to collect apart.
        Command::Collect(_) => {}
        Command::Stop { at, keep } => {
            // Named from the status, so that a run whose spec no longer validates can still
            // delete what its step made.
            if !keep && let Some(c) = status.cells.get(at.cell) {
                let name = build::CellRun {
                    run,
                    cell: &c.name,
                    repetition: at.repetition,
                }
                .child_name();
                out.actions.extend(delete_children(name));
            }
        }
        Command::WakeIn(after) => out.look_again_within(after),
        Command::Ended => {
            if let Some(ttl) = run.spec.ttl_after_finished {
                out.requeue = Some(ttl.get());
            }
        }
    }
}

/// The deletions of a step's objects, all named `name`.
pub fn delete_children(name: String) -> Vec<Action> {
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
