//! What the machine's commands are on the cluster: the objects to apply or delete, and when to
//! look again. The objects themselves are `build`'s.

use super::inspect::ReadyTarget;
use super::types::{Action, Child, ChildKind, Settings};
use crate::engine::Step;
use crate::engine::machine::Command;
use crate::executors::cluster::children::build;
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
        Command::StartLoad { at, ref load } => {
            if let (Some((v, cell)), Some(ready)) = (cell(at), ready) {
                let r = at.repetition;
                let plan = build::plan_config_map(v, load, cell, r, &ready.target, &ready.replicas);
                let mut job = build::job(v, cell, r, &settings.loadgen_image);
                // In a parallel run the load generators share their step's nodes with nobody
                // but its targets.
                let slot = status.cells.get(at.cell).and_then(|c| c.slot);
                let nodes = crate::engine::schedule::slot_nodes(status, slot);
                if !nodes.is_empty()
                    && let Some(pod) = job.spec.as_mut().and_then(|s| s.template.spec.as_mut())
                {
                    crate::executors::cluster::children::template::pin(pod, nodes.to_vec());
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
        Command::EndLoad(at) => {
            if let Some(name) = step_child_name(run, status, at) {
                out.actions.extend(delete_load(name));
            }
        }
        Command::Stop { at, keep } => {
            if !keep && let Some(name) = step_child_name(run, status, at) {
                out.actions.extend(delete_children(name));
            }
        }
        Command::WakeIn(after) => out.look_again_within(after),
        Command::Ended => {
            // Read from the spec as written: a run refused as invalid ends too, and is
            // deleted after its TTL like any other.
            if let Some(ttl) = run.spec.ttl_after_finished {
                out.requeue = Some(ttl.get());
            }
        }
    }
}

/// The name of step `at`'s objects, from the status: a run whose spec no longer validates can
/// still delete what its step made.
fn step_child_name(run: &BenchmarkRun, status: &BenchmarkRunStatus, at: Step) -> Option<String> {
    let c = status.cells.get(at.cell)?;
    let cell = build::CellRun {
        run,
        cell: &c.name,
        repetition: at.repetition,
    };
    Some(cell.child_name())
}

/// The deletions of a step's load generator objects (its Job and its plan), named `name`: the
/// next load of the step, on the same target, makes them again once they are gone.
pub fn delete_load(name: String) -> Vec<Action> {
    [ChildKind::Job, ChildKind::ConfigMap]
        .into_iter()
        .map(|k| Action::Delete(k, name.clone()))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Ctx, Event, reduce};
    use crate::resource::conditions::time_from_secs;

    /// A capacity run on a cluster with two load generators, fast 19 : slow 1.
    fn capacity_run() -> ValidatedRun {
        let run = crate::resource::validate::parse_benchmark_run(
            r#"
apiVersion: benchmatrix.dev/v1alpha1
kind: BenchmarkRun
metadata: {name: cap, namespace: default, uid: u-1}
spec:
  configurations: [{name: a, cpu: "1"}]
  workload:
    endpoints: [{name: fast, path: /fast}, {name: slow, path: /slow}]
    warmup: 2s
  capacity:
    slo: [{endpoint: fast, p99: {below: 100ms}}]
    mix: [{endpoint: fast, weight: 19}, {endpoint: slow, weight: 1}]
    startRate: 40
    probeDuration: 7s
  loadgen: {parallelism: 2}
"#,
        )
        .unwrap();
        ValidatedRun::for_cluster(run).unwrap()
    }

    /// The plans and the Job's deadline of StartLoad at `at` in `status`.
    fn start_load(v: &ValidatedRun, status: &BenchmarkRunStatus, at: Step) -> (Vec<String>, i64) {
        let ready = ReadyTarget {
            target: "http://10.96.0.10:8080".into(),
            replicas: vec!["10.1.0.5:8080".into()],
            pods: Vec::new(),
        };
        let mut out = Carried::default();
        carry_out(
            v.run(),
            Some(v),
            status,
            &Command::StartLoad {
                at,
                load: crate::engine::Load::of(v.measure(), status, at),
            },
            Some(&ready),
            &Settings::default(),
            &mut out,
        );
        let mut plans = Vec::new();
        let mut deadline = 0;
        for a in out.actions {
            match a {
                Action::Apply(Child::ConfigMap(cm)) => {
                    plans.extend(cm.data.unwrap().into_values());
                }
                Action::Apply(Child::Job(job)) => {
                    deadline = job.spec.unwrap().active_deadline_seconds.unwrap();
                }
                _ => {}
            }
        }
        (plans, deadline)
    }

    fn rates(plan: &str) -> Vec<(String, f64)> {
        let plan: benchmatrix_loadgen::plan::PlanFile = serde_yaml::from_str(plan).unwrap();
        let [phase] = plan.workload.phases.as_slice() else {
            panic!("one phase: {plan:?}")
        };
        assert_eq!(phase.name, "probe");
        assert_eq!(phase.duration.get(), std::time::Duration::from_secs(7));
        phase
            .load
            .iter()
            .map(|s| {
                assert_eq!(s.connections, None, "open loop");
                (s.endpoint.clone(), s.rate.unwrap())
            })
            .collect()
    }

    #[test]
    fn a_capacity_probe_on_a_cluster_loads_the_mix_at_the_searched_rate_over_the_load_generators() {
        let v = capacity_run();
        let now = time_from_secs(1_800_000_000);
        let ctx = Ctx::of(&v, Some(1), &now);
        let mut status = BenchmarkRunStatus::default();
        reduce(&mut status, Event::admitted(v.cells()), &ctx);
        let at = Step {
            cell: 0,
            repetition: 1,
        };
        // The first probe: the start rate, 40 rps, split 19 : 1 and over two load generators.
        let (plans, deadline) = start_load(&v, &status, at);
        assert_eq!(plans.len(), 2);
        for plan in &plans {
            assert_eq!(
                rates(plan),
                [("fast".to_owned(), 19.0), ("slow".to_owned(), 1.0)]
            );
        }
        // The Job may run the probe's warm-up and phase (9 s) beyond its readiness check and
        // slack, not more.
        assert_eq!(deadline, 300 + 9 + 120);
        // Once the first probe held, the search asks for 80 rps: the next step's plans carry
        // it.
        status.cells[0].capacity = Some(crate::resource::capacity::CapacityStatus {
            probes: vec![crate::resource::capacity::ProbeStatus {
                probe: 1,
                rate: 40.0,
                verdict: crate::resource::capacity::ProbeVerdict::Held,
                ..Default::default()
            }],
            ..Default::default()
        });
        let (plans, _) = start_load(&v, &status, at);
        assert_eq!(
            rates(&plans[0]),
            [("fast".to_owned(), 38.0), ("slow".to_owned(), 2.0)]
        );
    }
}
