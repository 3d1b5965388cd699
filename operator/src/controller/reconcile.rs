//! One reconcile: observe -> decide -> apply -> status, and the error policy.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::ResourceExt;
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action as Requeue;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::{ObjectRef, Store};
use tracing::{Instrument, field, info_span};

use super::decide;
use super::error::Error;
use super::outage::Outage;
use super::queue::{self, Queue};
use super::{apply, backoff, observe};
use crate::api::{BenchmarkRun, CellPhase, RunPhase, conditions};
use crate::metrics::Metrics;

/// What every reconcile shares.
pub struct Context {
    /// The API client.
    pub client: kube::Client,
    /// Publishes Events.
    pub recorder: Recorder,
    /// The controllers' caches of every watched BenchmarkRun (for the admission queue): one,
    /// or one per namespace when the operator watches a set of namespaces (`--namespace`), so
    /// `max_active` counts runs across all of them.
    pub runs: Vec<Store<DeserializeGuard<BenchmarkRun>>>,
    /// Most runs active at once.
    pub max_active: usize,
    /// The operator's metrics.
    pub metrics: Arc<Metrics>,
    /// Consecutive failures per object, for the error backoff.
    pub failures: Mutex<HashMap<ObjectRef<DeserializeGuard<BenchmarkRun>>, u32>>,
    /// The clock (tests substitute one they can advance).
    pub clock: Clock,
    /// Default images and other operator-wide settings.
    pub settings: decide::Settings,
    /// The admission queue: wakes waiting runs when a run leaves phase Running.
    pub queue: Queue,
    /// The API server outage in progress, if any (logged once, with its duration); shared with
    /// the watches' backoff.
    pub outage: Arc<Outage>,
}

/// A source of the current time.
pub type Clock =
    Arc<dyn Fn() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time + Send + Sync>;

impl Context {
    /// A context over `client` with a fresh recorder and an empty failure table; `runs` is the
    /// first cache of runs (push the others onto [`Context::runs`]).
    pub fn new(
        client: kube::Client,
        runs: Store<DeserializeGuard<BenchmarkRun>>,
        max_active: usize,
        metrics: Arc<Metrics>,
    ) -> Self {
        let reporter = kube::runtime::events::Reporter {
            controller: "benchmatrix-operator".into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            runs: vec![runs],
            max_active,
            metrics,
            failures: Mutex::new(HashMap::new()),
            clock: Arc::new(conditions::now),
            settings: decide::Settings::default(),
            queue: Queue::default(),
            outage: Arc::default(),
        }
    }
}

impl Context {
    /// Forgets the consecutive failures of every object: after an API server outage, retry
    /// counts that grew while nothing could be reached start over.
    pub fn forget_failures(&self) {
        if let Ok(mut failures) = self.failures.lock() {
            failures.clear();
        }
    }
}

/// Reconciles one BenchmarkRun.
pub async fn reconcile(
    guard: Arc<DeserializeGuard<BenchmarkRun>>,
    ctx: Arc<Context>,
) -> Result<Requeue, Error> {
    let metrics = ctx.metrics.clone();
    let _timer = metrics.reconcile();
    let span = info_span!(
        "reconcile",
        run = field::Empty,
        namespace = field::Empty,
        phase = field::Empty
    );
    async move {
        let run = match &guard.0 {
            Ok(run) => run,
            Err(invalid) => {
                // The object does not even match the types. It is marked Failed with the
                // decoder's words (through the untyped API, since the typed one cannot read
                // it) and left alone until it changes.
                let err = Error::Malformed(format!(
                    "{}/{}: {}",
                    invalid.metadata.namespace.as_deref().unwrap_or(""),
                    invalid.metadata.name.as_deref().unwrap_or(""),
                    invalid.error
                ));
                if let Err(patch_err) = apply::mark_malformed(&ctx.client, invalid).await {
                    tracing::warn!(error = %patch_err, "could not mark a malformed run Failed");
                }
                return Err(err);
            }
        };
        tracing::Span::current().record("run", run.name_any());
        tracing::Span::current().record("namespace", run.namespace().unwrap_or_default());
        let result = reconcile_run(run, &ctx).await;
        let key = ObjectRef::from_obj(guard.as_ref());
        if result.is_ok()
            && let Ok(mut failures) = ctx.failures.lock()
        {
            failures.remove(&key);
        }
        result
    }
    .instrument(span)
    .await
}

async fn reconcile_run(run: &BenchmarkRun, ctx: &Context) -> Result<Requeue, Error> {
    // A run waiting for admission waits until every watched namespace's runs have been listed
    // once: with one Controller per namespace (`--namespace`), another namespace's cache may
    // still be empty at start-up, and a run active there would not be counted.
    let waiting = run
        .status
        .as_ref()
        .is_none_or(|s| s.phase == RunPhase::Pending);
    if waiting && !queue::caches_listed(&ctx.runs) {
        return Ok(Requeue::requeue(Duration::from_secs(1)));
    }
    let queue = ctx.queue.view(run, &ctx.runs, ctx.max_active);
    let obs = observe::observe(&ctx.client, run, queue).await?;
    let now = (ctx.clock)();
    let decision = decide::decide(run, &obs, &now, &ctx.settings);
    tracing::Span::current().record("phase", decision.status.phase.to_string());
    ctx.metrics
        .set_active_runs(queue.active + usize::from(decision.status.phase == RunPhase::Running));

    apply::apply_actions(&ctx.client, run, &decision.actions).await?;
    let deleted = decision
        .actions
        .iter()
        .any(|a| matches!(a, decide::Action::DeleteRun));
    let old = run.status.clone().unwrap_or_default();
    if !deleted && decision.status != old {
        apply::patch_status(&ctx.client, run, &decision.status).await?;
        record_cells(&ctx.metrics, &old, &decision.status);
        if decision.status.phase != old.phase {
            // A run that leaves phase Running frees a slot; one that starts moves the others
            // up a place. Either way the waiting runs look again now, not on a timer.
            ctx.queue.note_phase(run, decision.status.phase);
            ctx.queue.wake_waiting(&ctx.runs);
        }
    }
    apply::publish_events(&ctx.recorder, run, &decision.events).await;
    Ok(match decision.requeue {
        Some(after) => Requeue::requeue(after.max(Duration::from_secs(1))),
        None => Requeue::await_change(),
    })
}

fn record_cells(
    metrics: &Metrics,
    old: &crate::api::BenchmarkRunStatus,
    new: &crate::api::BenchmarkRunStatus,
) {
    for cell in &new.cells {
        let was = old
            .cells
            .iter()
            .find(|c| c.name == cell.name)
            .map(|c| c.phase);
        if matches!(cell.phase, CellPhase::Succeeded | CellPhase::Failed)
            && was != Some(cell.phase)
            && let (Some(start), Some(end)) = (&cell.start_time, &cell.completion_time)
        {
            metrics.cell_finished(
                &cell.phase.to_string(),
                (conditions::secs_of(end) - conditions::secs_of(start)) as f64,
            );
        }
    }
}

/// Permanent errors wait for the object to change (no hot loop); transient ones back off
/// exponentially per object, from 1 s to 5 minutes, or to a few seconds when the API server
/// could not be reached (see [`backoff::reconcile_retry`]).
pub fn error_policy(
    guard: Arc<DeserializeGuard<BenchmarkRun>>,
    error: &Error,
    ctx: Arc<Context>,
) -> Requeue {
    ctx.metrics.reconcile_failure(error.metric_label());
    if error.is_permanent() {
        tracing::warn!(%error, "reconcile failed permanently; waiting for the object to change");
        return Requeue::await_change();
    }
    let key = ObjectRef::from_obj(guard.as_ref());
    let attempt = ctx
        .failures
        .lock()
        .map(|mut f| {
            let n = f.entry(key).or_insert(0);
            *n += 1;
            *n
        })
        .unwrap_or(1);
    let lost_connection = error.lost_connection();
    let delay = backoff::reconcile_retry(attempt, lost_connection);
    if lost_connection {
        // An outage is reported once, by the watches (outage.rs); each object's retry is noise.
        tracing::debug!(%error, attempt, delay_secs = delay.as_secs(), "reconcile failed; retrying");
    } else {
        tracing::warn!(%error, attempt, delay_secs = delay.as_secs(), "reconcile failed; retrying");
    }
    Requeue::requeue(delay)
}
