//! One reconcile, in this order: a copy of the run at least as new as the last status this
//! operator wrote (`fresh`), the reads the engine's machine names (`observe`), one engine turn
//! (`adapter::turn`), the status written, then the children applied and deleted and the
//! Events handed to `telemetry/events.rs`, which publishes them behind the reconcile; and the error
//! policy.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::ResourceExt;
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action as Requeue;
use kube::runtime::events::Recorder;
use kube::runtime::reflector::{ObjectRef, Store};
use tracing::{Instrument, field, info_span};

use super::error::Error;
use super::outage::Outage;
use super::{backoff, observe, write};
use crate::engine::machine::QueuePlace;
use crate::executors::cluster::adapter;
use crate::executors::cluster::children::child_caches::Caches;
use crate::executors::cluster::placement::queue::{self, Queue};
use crate::executors::cluster::telemetry::events::EventQueue;
use crate::executors::cluster::telemetry::kubelet::reader::KubeletReader;
use crate::executors::cluster::telemetry::metrics::{Metrics, Stages};
use crate::resource::{BenchmarkRun, BenchmarkRunStatus, CellPhase, RunPhase, conditions};

/// What every reconcile shares.
pub struct Context {
    /// The API client.
    pub client: kube::Client,
    /// Publishes Events, behind the reconciles.
    pub events: EventQueue,
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
    pub settings: adapter::Settings,
    /// The admission queue: wakes waiting runs when a run leaves phase Running.
    pub queue: Queue,
    /// The API server outage in progress, if any (logged once, with its duration); shared with
    /// the watches' backoff.
    pub outage: Arc<Outage>,
    /// The last status this operator wrote, per run UID: a reconcile whose cached copy is not
    /// that version takes the run as written, or reads it again, before deciding (see
    /// `fresh`).
    pub written: Mutex<HashMap<String, Written>>,
    /// Reads the target containers' CPU, throttling and memory from the kubelets; `None` when
    /// the operator runs with `--kubelet-metrics=false` (and in tests of the faked API).
    pub kubelet: Option<Arc<KubeletReader>>,
    /// Whether this replica may reconcile: it leads, and the installed CRD is its own
    /// (`gate.rs`). Open by default (one replica, tests).
    pub gate: Arc<super::gate::Gate>,
    /// The Controllers' caches of the runs' Deployments, Services and pods; none by default
    /// (tests), and then every read goes to the API server.
    pub children: Caches,
}

/// The last status write to one run: the version it made, the version it was decided from,
/// and the run as written until the cache has caught up with it.
#[derive(Debug, Default)]
pub struct Written {
    version: String,
    decided_from: Option<String>,
    run: Option<Box<BenchmarkRun>>,
}

/// A source of the current time.
pub type Clock =
    Arc<dyn Fn() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time + Send + Sync>;

impl Context {
    /// A context over `client` with a fresh recorder and an empty failure table; `runs` is the
    /// first cache of runs (push the others onto [`Context::runs`]). Starts the task that
    /// publishes Events, so it must be called within a Tokio runtime.
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
            events: EventQueue::start(
                Recorder::new(client.clone(), reporter),
                metrics.robustness.events_dropped.clone(),
            ),
            client,
            runs: vec![runs],
            max_active,
            metrics,
            failures: Mutex::new(HashMap::new()),
            clock: Arc::new(conditions::now),
            settings: adapter::Settings::default(),
            queue: Queue::default(),
            outage: Arc::default(),
            written: Mutex::new(HashMap::new()),
            kubelet: None,
            gate: Arc::default(),
            children: Default::default(),
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
    if !ctx.gate.is_open() {
        // A standby, or a CRD of another schema: nothing is read or written. The run is woken
        // when the gate opens (`gate.rs`).
        return Ok(Requeue::await_change());
    }
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
                if ctx.gate.may_write().await
                    && let Err(patch_err) = write::mark_malformed(&ctx.client, invalid).await
                {
                    tracing::warn!(error = %patch_err, "could not mark a malformed run Failed");
                }
                return Err(err);
            }
        };
        tracing::Span::current().record("run", run.name_any());
        tracing::Span::current().record("namespace", run.namespace().unwrap_or_default());
        // On the heap: the turn's future (its reads, writes and Events joined) is large, and a
        // debug build's test thread, which awaits a reconcile beside the plugin's run, has a
        // 2 MiB stack.
        let result = Box::pin(reconcile_run(run, &ctx)).await;
        let key = ObjectRef::from_obj(guard.as_ref());
        ctx.queue.reconciled(&key, &ctx.runs);
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

/// How many times one reconcile decides again after its status write met a newer version of the
/// run (409 Conflict). Each try reads the run anew; only a run edited that often, concurrently,
/// runs out, and then the reconcile is retried as any conflict is.
const STATUS_CONFLICT_TRIES: u32 = 3;

/// When a run whose status write the Lease fence withheld is reconciled again.
const FENCED_RETRY: Duration = Duration::from_secs(5);

async fn reconcile_run(cached: &BenchmarkRun, ctx: &Context) -> Result<Requeue, Error> {
    let phase = cached.status.as_ref().map(|s| s.phase).unwrap_or_default();
    let mut stages = ctx.metrics.stages(&phase.to_string());
    let Some(mut run) = fresh(cached, ctx, &mut stages).await? else {
        // Deleted since the event that triggered this reconcile: nothing to decide.
        ctx.forget_written(cached);
        return Ok(Requeue::await_change());
    };
    let mut tries = 1;
    loop {
        match reconcile_once(&run, ctx, &mut stages).await? {
            Decided::Done(requeue) => return Ok(requeue),
            Decided::Stale if tries < STATUS_CONFLICT_TRIES => {
                tries += 1;
                tracing::debug!(tries, "the run changed since it was read; deciding again");
                let newer = read_run(&run, ctx).await?;
                stages.lap("read-run");
                match newer {
                    Some(newer) => run = newer,
                    None => return Ok(Requeue::await_change()),
                }
            }
            Decided::Stale => {
                return Err(Error::Kube(kube::Error::Api(
                    kube::core::Status::failure(
                        "the run kept changing while its status was written",
                        "Conflict",
                    )
                    .with_code(409)
                    .boxed(),
                )));
            }
        }
    }
}

/// What one turn came to.
enum Decided {
    /// Decided and carried out; look again then.
    Done(Requeue),
    /// The status could not be written: the run is newer than the copy decided from. Nothing
    /// was changed in the cluster.
    Stale,
}

/// One observe -> turn -> status -> actions pass over `run`, a copy at least as new as the
/// last status this operator wrote.
///
/// The status is written first, conditional on the resourceVersion it was decided from, and the
/// actions follow only once it is stored. So a turn made from an old copy is refused (409)
/// before it can change anything, and the objects the operator deletes after a repetition are
/// deleted only once the status says that repetition is over: a later reconcile never sees
/// them going while its status still expects them (they would count as a replica that exited).
async fn reconcile_once(
    run: &BenchmarkRun,
    ctx: &Context,
    stages: &mut Stages<'_>,
) -> Result<Decided, Error> {
    // A run waiting for admission waits until every watched namespace's runs have been listed
    // once: with one Controller per namespace (`--namespace`), another namespace's cache may
    // still be empty at start-up, and a run active there would not be counted.
    let waiting = run
        .status
        .as_ref()
        .is_none_or(|s| s.phase == RunPhase::Pending);
    if waiting && !queue::caches_listed(&ctx.runs) {
        return Ok(Decided::Done(Requeue::requeue(Duration::from_secs(1))));
    }
    let queue = ctx.queue.view(run, &ctx.runs, ctx.max_active);
    let turn = decide(run, ctx, queue, stages).await?;
    let deleted = turn
        .actions
        .iter()
        .any(|a| matches!(a, adapter::Action::DeleteRun));
    let old = run.status.clone().unwrap_or_default();
    if !ctx.gate.is_open() {
        // The Lease was lost (or the CRD changed) while this turn was decided: another replica
        // may lead by now, and only one may write.
        return Ok(Decided::Done(Requeue::await_change()));
    }
    let writes = (!deleted && turn.status != old) || !turn.actions.is_empty();
    if writes && !ctx.gate.may_write().await {
        // The Lease is not surely this replica's (another holds it, as after a freeze the Lease
        // task has not noticed yet; it runs out; it could not be read): nothing is written,
        // neither the status nor the children. Asked again later rather than on a change, in
        // case this replica holds the Lease again by then without the gate closing.
        return Ok(Decided::Done(Requeue::requeue(FENCED_RETRY)));
    }
    if !deleted
        && turn.status != old
        && let Some(stopped) = store_status(run, ctx, &old, &turn, stages).await?
    {
        return Ok(stopped);
    }
    carry_out(run, ctx, queue.active, &old, turn, deleted, stages).await
}

/// Checks the run, reads what the turn needs and takes the turn: validation first, then the
/// reads of this turn's looks, then the engine's decision.
async fn decide(
    run: &BenchmarkRun,
    ctx: &Context,
    queue: QueuePlace,
    stages: &mut Stages<'_>,
) -> Result<adapter::Turn, Error> {
    let now = (ctx.clock)();
    // While a watch cannot reach the API server its cache stands still: the reads go to the
    // API server then, so no timeout is decided from a frozen picture.
    let no_caches = Caches::default();
    let children = if ctx.outage.ongoing() {
        &no_caches
    } else {
        &ctx.children
    };
    // Validation first: the run is checked before anything is read for it, and the reads,
    // the stage's name and the turn all work from that one check; the reads and the stage's
    // name share this turn's looks (the engine's turn works them out again, as it does
    // locally, from the same status, time and planned load).
    let checked = adapter::Checked::of(run, &ctx.settings);
    let status = run.status.clone().unwrap_or_default();
    let looks = checked.looks(&status, &now);
    let obs = observe::observe(
        &ctx.client,
        run,
        &checked,
        &looks,
        queue,
        ctx.kubelet.as_ref(),
        children,
    )
    .await?;
    stages.lap(observe::stage(status.phase, &looks, &obs));
    let turn = adapter::turn_checked(run, checked, &obs, &now, &ctx.settings);
    stages.lap("decide");
    tracing::Span::current().record("phase", turn.status.phase.to_string());
    log_turn(&turn);
    Ok(turn)
}

/// Writes the turn's status, conditional on the version it was decided from. `Some` when the
/// reconcile stops there: the run is newer than the copy decided from (nothing was changed), or
/// it was deleted meanwhile.
async fn store_status(
    run: &BenchmarkRun,
    ctx: &Context,
    old: &BenchmarkRunStatus,
    turn: &adapter::Turn,
    stages: &mut Stages<'_>,
) -> Result<Option<Decided>, Error> {
    let written = write::write_status(&ctx.client, run, &turn.status).await;
    stages.lap("status");
    match written {
        Ok(written) => {
            // At debug, each write that landed, with the version it made: what the failover
            // check (bench/cluster-failover.sh KILL=sigstop) reads to show that a thawed former
            // leader wrote nothing once another replica led.
            tracing::debug!(
                resource_version = written.metadata.resource_version.as_deref().unwrap_or(""),
                "status written"
            );
            ctx.note_written(run, written)
        }
        Err(e) if e.is_conflict() => return Ok(Some(Decided::Stale)),
        // Deleted since it was read (or since the copy it was decided from was written):
        // nothing to write, nothing to refuse.
        Err(Error::Kube(kube::Error::Api(s))) if s.code == 404 => {
            ctx.forget_written(run);
            return Ok(Some(Decided::Done(Requeue::await_change())));
        }
        Err(e) => return Err(status_refused(ctx, run, e).await),
    }
    record_cells(&ctx.metrics, old, &turn.status);
    log_transitions(old, &turn.status);
    if turn.status.phase != old.phase {
        ctx.queue.note_phase(run, turn.status.phase);
    }
    Ok(None)
}

/// After the status is stored: the metrics, the Events, the children's changes, and the
/// waiting runs this turn concerns (`active`: the other runs active, from the queue's view).
async fn carry_out(
    run: &BenchmarkRun,
    ctx: &Context,
    active: usize,
    old: &BenchmarkRunStatus,
    turn: adapter::Turn,
    deleted: bool,
    stages: &mut Stages<'_>,
) -> Result<Decided, Error> {
    let wake = WakeWaiting::after(run, old, &turn.status, deleted);
    ctx.metrics
        .set_active_runs(active + usize::from(turn.status.phase == RunPhase::Running));
    // Every finished run is reconciled when the operator starts, so its figures are exported
    // again after a restart without a read of their own.
    ctx.metrics.finished_runs().observe(
        run.metadata.namespace.as_deref(),
        &run.name_any(),
        old,
        &turn.status,
    );
    if !ctx.gate.is_open() {
        // The waiting runs are still told: their reconciles check the gate themselves.
        wake.send(run, ctx);
        return Ok(Decided::Done(Requeue::await_change()));
    }
    // The Events say what the status, written now, holds; they go out behind this reconcile,
    // whether the children's changes succeed or not.
    ctx.events.send(run, &turn.events);
    stages.skip();
    let (applied, took) = timed(write::apply_actions(&ctx.client, run, &turn.actions)).await;
    if !turn.actions.is_empty() {
        stages.record("children", took);
    }
    // The waiting runs are woken once this turn's own writes are done, so theirs do not compete
    // with them; and whether those succeeded or not, since the status already says it.
    wake.send(run, ctx);
    applied?;
    if deleted {
        ctx.forget_written(run);
    }
    Ok(Decided::Done(match turn.requeue {
        Some(after) => Requeue::requeue(after.max(Duration::from_secs(1))),
        None => Requeue::await_change(),
    }))
}

/// Which waiting runs a turn's status write concerns.
enum WakeWaiting {
    None,
    /// A slot freed (the run left phase Running): the first in line takes it now, not on a
    /// timer. The others keep their place until it starts, and then it wakes them: each
    /// waiting run's status is written once per run that starts, not twice.
    FirstWaiting,
    /// A run started or left the queue: the runs behind it moved up a place; those whose
    /// status shows their place are woken to say so.
    Behind,
    /// A new run joined the line: behind the others as a rule, but it may go ahead of some
    /// (see `Queue::wake_behind_new`).
    BehindNew,
}

impl WakeWaiting {
    fn after(
        run: &BenchmarkRun,
        old: &crate::resource::BenchmarkRunStatus,
        new: &crate::resource::BenchmarkRunStatus,
        deleted: bool,
    ) -> Self {
        if deleted || *new == *old {
            WakeWaiting::None
        } else if new.phase != old.phase {
            if old.phase == RunPhase::Running {
                WakeWaiting::FirstWaiting
            } else {
                WakeWaiting::Behind
            }
        } else if run.status.is_none() && new.phase == RunPhase::Pending {
            WakeWaiting::BehindNew
        } else {
            WakeWaiting::None
        }
    }

    fn send(self, run: &BenchmarkRun, ctx: &Context) {
        match self {
            WakeWaiting::None => {}
            WakeWaiting::FirstWaiting => {
                ctx.queue
                    .wake_first_waiting(&ctx.runs, run, ctx.max_active.max(1));
            }
            WakeWaiting::Behind => ctx.queue.wake_behind(&ctx.runs, run),
            WakeWaiting::BehindNew => ctx.queue.wake_behind_new(&ctx.runs, run),
        }
    }
}

/// A status write the API server refused is said out loud, once per try: logged with the API's
/// own words, a Warning Event on the run (Events are another resource, so they are stored when
/// the run's status is not) and a metric by cause; then the reconcile fails as a transient
/// error, retried with backoff until the write is taken (a CRD that no longer matches the
/// operator, say, until it is upgraded).
async fn status_refused(ctx: &Context, run: &BenchmarkRun, e: Error) -> Error {
    let e = e.into_status_refusal();
    if let Error::StatusRefused {
        code,
        reason,
        message,
    } = &e
    {
        ctx.metrics.robustness.status_refused(reason);
        tracing::warn!(code, reason = %reason, api_message = %message, "the API server refused the run's status");
        let mut note = format!(
            "the operator could not write this run's status ({code} {reason}): {message}. \
             It retries with backoff; if the CRD is older or newer than the operator, upgrade \
             them together (CRD first)"
        );
        // An Event's note holds at most 1 KiB.
        if note.len() > 1000 {
            let mut cut = 1000;
            while !note.is_char_boundary(cut) {
                cut -= 1;
            }
            note.truncate(cut);
        }
        let warning = crate::engine::Note {
            warning: true,
            reason: "StatusWriteFailed".into(),
            note,
        };
        ctx.events.send(run, std::slice::from_ref(&warning));
    }
    e
}

/// `cached` when it is the version of the run this operator last wrote; otherwise the run as
/// the API server has it now (`None`: deleted).
///
/// A reconcile is triggered by a watch event on any of the run's children, and the controller
/// hands it the run from its cache, which can be older than the status the previous reconcile
/// wrote a moment ago: its watch event is still on the way. Deciding from that copy would
/// replay a step already taken, e.g. see the pods of a repetition just measured terminating
/// and fail the cell. A run this operator has not written since it started (or that someone
/// else has changed since) is read once more; the usual case, the cache holding the operator's
/// own last write, costs nothing.
///
/// Most often the cache is one write behind: it still holds the version this operator's last
/// write was decided from. Then the run as that write stored it is the newer copy, and no read
/// is needed; should the run have changed again since, the next status write is refused (409)
/// and the reconcile decides again from a read.
async fn fresh(
    cached: &BenchmarkRun,
    ctx: &Context,
    stages: &mut Stages<'_>,
) -> Result<Option<BenchmarkRun>, Error> {
    if ctx.is_last_written(cached) || ctx.is_new(cached) {
        return Ok(Some(cached.clone()));
    }
    if let Some(written) = ctx.written_after(cached) {
        return Ok(Some(written));
    }
    let read = read_run(cached, ctx).await;
    stages.lap("read-run");
    read
}

/// `fut`'s output and how long it took.
async fn timed<T>(fut: impl std::future::Future<Output = T>) -> (T, Duration) {
    let start = std::time::Instant::now();
    let out = fut.await;
    (out, start.elapsed())
}

/// The run as the API server has it now (a quorum read), `None` when it is gone.
async fn read_run(run: &BenchmarkRun, ctx: &Context) -> Result<Option<BenchmarkRun>, Error> {
    let ns = run
        .namespace()
        .ok_or(Error::MissingObjectKey("namespace"))?;
    Ok(
        kube::Api::<BenchmarkRun>::namespaced(ctx.client.clone(), &ns)
            .get_opt(&run.name_any())
            .await?,
    )
}

impl Context {
    /// Whether `run` is the version this operator last wrote; the copy kept of it is then no
    /// longer needed.
    fn is_last_written(&self, run: &BenchmarkRun) -> bool {
        let (Some(uid), Some(version)) = (&run.metadata.uid, &run.metadata.resource_version) else {
            return false;
        };
        let Ok(mut written) = self.written.lock() else {
            return false;
        };
        match written.get_mut(uid) {
            Some(w) if &w.version == version => {
                w.run = None;
                true
            }
            _ => false,
        }
    }

    /// The run as this operator last wrote it, when `cached` is the version that write was
    /// decided from (the cache has not seen the write yet).
    fn written_after(&self, cached: &BenchmarkRun) -> Option<BenchmarkRun> {
        let (uid, version) = (
            cached.metadata.uid.as_ref()?,
            cached.metadata.resource_version.as_ref()?,
        );
        let written = self.written.lock().ok()?;
        let w = written.get(uid)?;
        (w.decided_from.as_ref() == Some(version))
            .then(|| w.run.as_deref().cloned())
            .flatten()
    }

    /// A run with no status that this process never wrote: nothing was decided for it yet, so
    /// there is no step to replay, and a copy older than the API server's is still refused by
    /// the status write's resourceVersion precondition. A burst of new runs then costs no read
    /// each.
    fn is_new(&self, run: &BenchmarkRun) -> bool {
        run.status.is_none()
            && run
                .metadata
                .uid
                .as_ref()
                .is_some_and(|uid| self.written.lock().is_ok_and(|w| !w.contains_key(uid)))
    }

    fn note_written(&self, run: &BenchmarkRun, written: BenchmarkRun) {
        let Some(uid) = run.metadata.uid.clone() else {
            return;
        };
        let Ok(mut w) = self.written.lock() else {
            return;
        };
        match written.metadata.resource_version.clone() {
            Some(version) => w.insert(
                uid,
                Written {
                    version,
                    decided_from: run.metadata.resource_version.clone(),
                    run: Some(Box::new(written)),
                },
            ),
            None => w.remove(&uid),
        };
    }

    /// Forgets the copy kept of a run that is gone.
    fn forget_written(&self, run: &BenchmarkRun) {
        let Some(uid) = &run.metadata.uid else {
            return;
        };
        if let Ok(mut w) = self.written.lock() {
            w.remove(uid);
        }
    }
}

/// At debug, what each reconcile decided: the phase, the step and what it does to the cluster.
fn log_turn(turn: &adapter::Turn) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let step = crate::engine::next_step(&turn.status)
        .and_then(|s| {
            let cell = turn.status.cells.get(s.cell)?;
            Some(format!("{} r{} {}", cell.name, s.repetition, cell.phase))
        })
        .unwrap_or_else(|| "-".into());
    let actions: Vec<String> = turn.actions.iter().map(adapter::Action::describe).collect();
    tracing::debug!(
        phase = %turn.status.phase,
        step = %step,
        actions = %actions.join(", "),
        requeue_secs = turn.requeue.map(|d| d.as_secs()),
        message = turn.status.message.as_deref().unwrap_or(""),
        "decided"
    );
}

/// At info, each step a cell or repetition took and the run's end, with run, cell and
/// repetition as fields (the run's own fields come from the reconcile span).
fn log_transitions(
    old: &crate::resource::BenchmarkRunStatus,
    new: &crate::resource::BenchmarkRunStatus,
) {
    for (i, cell) in new.cells.iter().enumerate() {
        let before = old.cells.get(i).filter(|c| c.name == cell.name);
        let was = before.map(|c| c.phase);
        let reps_before = before.map_or(0, |c| c.repetitions.len());
        // A repetition that ended shows as one more entry in `repetitions`; the last one ends
        // the cell too, and is logged once, as the cell's end.
        for rep in cell.repetitions.iter().skip(reps_before) {
            if cell.phase.is_finished() && Some(rep) == cell.repetitions.last() {
                continue;
            }
            match rep.phase {
                CellPhase::Failed => tracing::info!(
                    cell = %cell.name, repetition = rep.repetition,
                    reason = rep.reason.as_deref().unwrap_or(""),
                    message = rep.message.as_deref().unwrap_or(""),
                    "repetition failed"
                ),
                _ => tracing::info!(
                    cell = %cell.name, repetition = rep.repetition,
                    overhead_secs = rep.overhead_seconds,
                    "repetition measured"
                ),
            }
        }
        if was == Some(cell.phase) {
            continue;
        }
        let repetition = cell.repetitions.len().max(1);
        match cell.phase {
            CellPhase::Deploying => tracing::info!(
                cell = %cell.name, repetition = cell.repetitions.len() + 1,
                message = cell.message.as_deref().unwrap_or(""),
                "cell deploying"
            ),
            CellPhase::Running => tracing::info!(
                cell = %cell.name, repetition = cell.repetitions.len() + 1,
                message = cell.message.as_deref().unwrap_or(""),
                "load started"
            ),
            CellPhase::Succeeded => tracing::info!(
                cell = %cell.name, repetition,
                overhead_secs = cell.overhead_seconds,
                "cell measured"
            ),
            CellPhase::Failed => tracing::info!(
                cell = %cell.name, repetition,
                reason = cell.reason.as_deref().unwrap_or(""),
                message = cell.message.as_deref().unwrap_or(""),
                "cell failed"
            ),
            CellPhase::Skipped => tracing::info!(cell = %cell.name, "cell skipped"),
            CellPhase::Pending => {}
        }
    }
    if new.phase != old.phase {
        tracing::info!(
            phase = %new.phase,
            message = new.message.as_deref().unwrap_or(""),
            "run {}",
            if new.phase.is_finished() { "ended" } else { "phase changed" }
        );
    }
}

fn record_cells(
    metrics: &Metrics,
    old: &crate::resource::BenchmarkRunStatus,
    new: &crate::resource::BenchmarkRunStatus,
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
