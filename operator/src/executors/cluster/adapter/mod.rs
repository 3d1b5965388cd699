//! The cluster's side of the run engine: one turn of it per reconcile, pure. (run,
//! observation, now) in; the next status, the objects to apply or delete, the Events to
//! publish and when to look again out.
//!
//! The engine's machine decides everything about the run (admission, refusals, every step and
//! timeout) and writes the status through its reducer, exactly as for a local run. This module
//! is the adapter between it and the cluster: `facts` turns the objects observed into the
//! machine's facts, `actions` turns its commands into objects to apply or delete.
//!
//! The status is the machine's only memory. Each turn looks at the current step (the cell and
//! repetition not finished, see `engine::next_step`) and moves it at most one step, so a
//! restarted operator fed the same status and cluster state takes the same step, and child
//! names are deterministic, so a step repeated after a crash applies the same objects again
//! instead of creating new ones.

mod actions;
mod facts;
mod inspect;

#[cfg(test)]
pub(crate) use inspect::UNSCHEDULABLE_GRACE;
mod previous;
mod types;

#[cfg(test)]
mod tests;

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::children::{images, pod_security};
use super::placement::slots;
use crate::engine::Ctx;
use crate::engine::drive::{self, Executor};
use crate::engine::machine::{Command, Look, Seen};
use crate::resource::conditions::{self, Reason};
use crate::resource::{BenchmarkRun, BenchmarkRunStatus, RunPhase, ValidatedRun};

pub use crate::resource::conditions::Cause;
pub use inspect::{job_complete, job_failed};
pub use types::{Action, Child, ChildKind, Observation, Settings, Turn};

use actions::Carried;
use inspect::ReadyTarget;

/// A run checked before anything is read for it: the [`ValidatedRun`] the reconcile reads and
/// decides from, or why the operator refuses it (a spec that cannot run, an image that is no
/// valid reference or that the operator may not run); and the load its steps plan, which the
/// machine's looks are timed by. The one check left for the turn is Pod Security's, which needs
/// the namespace's level that `observe` reads.
pub struct Checked {
    validated: Result<ValidatedRun, (Reason, String)>,
    planned_load: Duration,
}

impl Checked {
    /// `run` checked against the spec's rules and the operator's image allow-list.
    pub fn of(run: &BenchmarkRun, settings: &Settings) -> Checked {
        let validated = check_spec(run, settings);
        let planned_load = match &validated {
            Ok(v) => v.planned_load(),
            // The one read of a spec that did not validate: a run refused while it was running
            // (an operator restarted with a narrower allow-list) is ended this turn, and its
            // current step is looked at once more, timed by the spec as it is written.
            Err(_) => run.spec.planned_load(),
        };
        Checked {
            validated,
            planned_load,
        }
    }

    /// The run as validated, or `None` when it is refused.
    pub fn validated(&self) -> Option<&ValidatedRun> {
        self.validated.as_ref().ok()
    }

    /// What the machine looks at this turn in `status` at `now`: one look per step in flight
    /// (several in a parallel run) or per free slot. `observe` reads what they name, and the
    /// stage name of the reconcile's metrics is the first one's.
    pub fn looks(&self, status: &BenchmarkRunStatus, now: &Time) -> Vec<Look> {
        crate::engine::machine::looks(status, now, self.planned_load)
    }

    /// The planned load of one measurement (warm-up and phases).
    pub fn planned_load(&self) -> Duration {
        self.planned_load
    }
}

/// One turn of the engine for `run`, as the cluster shows it in `obs` at `now`: the run checked,
/// then [`turn_checked`]. The reconcile checks first and reads after ([`Checked`]); the
/// simulations and the tests, which hold an observation already, take the turn in one call.
pub fn turn(run: &BenchmarkRun, obs: &Observation, now: &Time, settings: &Settings) -> Turn {
    turn_checked(run, Checked::of(run, settings), obs, now, settings)
}

/// One turn of the engine for `run`, checked as `checked`, as the cluster shows it in `obs` at
/// `now`.
pub fn turn_checked(
    run: &BenchmarkRun,
    checked: Checked,
    obs: &Observation,
    now: &Time,
    settings: &Settings,
) -> Turn {
    let old = run.status.clone().unwrap_or_default();
    if old.phase.is_finished() {
        return after_the_end(run, old, now);
    }
    let generation = run.metadata.generation;
    let validated = checked
        .validated
        .and_then(|v| check_pod_security(v, obs, settings));
    let ctx = match &validated {
        Ok(v) => Ctx::of(v, generation, now),
        Err(_) => Ctx::unvalidated(run, generation, now),
    };
    let mut cluster = ClusterExecutor {
        run,
        validated: validated.as_ref().ok(),
        refusal: validated.as_ref().err().cloned(),
        obs,
        settings,
        ready: None,
        carried: Carried::default(),
    };
    let mut status = old;
    let advance = drive::turn(&mut status, &mut cluster, &ctx);
    Turn {
        status,
        actions: cluster.carried.actions,
        events: advance.notes,
        requeue: cluster.carried.requeue,
        commands: advance.commands,
    }
}

/// A finished run only waits for its TTL, then is deleted.
fn after_the_end(run: &BenchmarkRun, status: BenchmarkRunStatus, now: &Time) -> Turn {
    let mut turn = Turn {
        status,
        actions: Vec::new(),
        events: Vec::new(),
        requeue: None,
        commands: Vec::new(),
    };
    // The spec as written: a finished run is not validated again (one refused as invalid ends
    // too), and is deleted after its TTL all the same.
    if let (Some(ttl), Some(done)) = (run.spec.ttl_after_finished, &turn.status.completion_time) {
        let expires = conditions::secs_of(done) + ttl.get().as_secs() as i64;
        let left = expires - conditions::secs_of(now);
        if left <= 0 {
            turn.actions.push(Action::DeleteRun);
        } else {
            turn.requeue = Some(Duration::from_secs(left as u64));
        }
    }
    turn
}

/// The run as the operator may run it, or why not: a spec that cannot run, or that names an
/// image that is no valid reference or that the operator may not run. A refused run fails once,
/// with the field named; nothing is created or retried until the spec changes (which triggers
/// another reconcile). A run already running when the operator restarts with a narrower
/// allow-list is refused too: a refused pod must not keep going.
fn check_spec(run: &BenchmarkRun, settings: &Settings) -> Result<ValidatedRun, (Reason, String)> {
    let v = ValidatedRun::for_cluster(run.clone())
        .map_err(|err| (Reason::InvalidSpec, format!("invalid spec: {err}")))?;
    let uses = images::image_uses(v.spec(), &settings.target_image, &settings.loadgen_image);
    if let Some(refused) = settings.allowed_images.refusal(&uses) {
        return Err((refused.reason, refused.message));
    }
    Ok(v)
}

/// `v`, or why its pods would not meet the Pod Security level that applies in its namespace
/// (the operator's own, or the namespace's stricter label as `obs` read it). Refused as an
/// invalid template is, since the pods' fields are the spec's; a running run is refused too,
/// as for the image allow-list.
fn check_pod_security(
    v: ValidatedRun,
    obs: &Observation,
    settings: &Settings,
) -> Result<ValidatedRun, (Reason, String)> {
    let level = settings
        .pod_security
        .in_namespace(obs.namespace_pod_security.as_deref());
    let refusals =
        pod_security::refusals(&v, level, &settings.target_image, &settings.loadgen_image);
    if !refusals.is_empty() {
        let err = crate::resource::validate::SpecError { errors: refusals };
        return Err((Reason::InvalidSpec, format!("invalid spec: {err}")));
    }
    Ok(v)
}

/// The cluster as the engine's executor, for one turn: it sees what `obs` holds and collects
/// what the commands ask of the cluster.
struct ClusterExecutor<'a> {
    run: &'a BenchmarkRun,
    validated: Option<&'a ValidatedRun>,
    refusal: Option<(Reason, String)>,
    obs: &'a Observation,
    settings: &'a Settings,
    /// The ready target seen, which a command to start the load needs.
    ready: Option<ReadyTarget>,
    carried: Carried,
}

impl Executor for ClusterExecutor<'_> {
    fn look(&mut self, status: &BenchmarkRunStatus, look: Look, now: &Time) -> Seen {
        let mut seen = match self.validated {
            Some(v) => {
                let obs = look.at().map_or(self.obs, |at| self.obs.of_cell(at.cell));
                let (mut seen, ready) =
                    facts::of_step(v, status, look, obs, now, &mut self.carried);
                if status.phase == RunPhase::Pending && v.spec().parallelism.is_parallel() {
                    seen.slots = Some(slots::node_sets(
                        v,
                        self.obs.nodes.as_deref(),
                        self.obs.node_requests.as_ref(),
                    ));
                }
                self.ready = ready;
                seen
            }
            None => Seen::default(),
        };
        seen.refused = self.refusal.clone();
        seen.spec_changed = spec_changed(self.run, status);
        seen.queue = Some(self.obs.queue);
        seen
    }

    fn carry_out(&mut self, status: &BenchmarkRunStatus, command: &Command) {
        actions::carry_out(
            self.run,
            self.validated,
            status,
            command,
            self.ready.as_ref(),
            self.settings,
            &mut self.carried,
        );
    }
}

/// The spec is immutable by a CEL rule; should it change anyway (an older CRD without the
/// rule), the results of two specs must not mix: the running run fails, saying so.
fn spec_changed(run: &BenchmarkRun, status: &BenchmarkRunStatus) -> Option<String> {
    let (seen, current) = (status.observed_generation?, run.metadata.generation?);
    (status.phase == RunPhase::Running && seen != current).then(|| {
        format!(
            "the spec changed while the run was running (generation {seen} -> {current}); \
             delete the run and apply it again"
        )
    })
}
