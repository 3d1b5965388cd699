//! The admission queue: which runs are active, where a waiting run stands, and waking the
//! waiting runs the moment a slot may have freed up.
//!
//! A waiting (Pending) run is admitted by its own reconcile. Nothing about the run itself
//! changes when another run finishes or is deleted, so without a nudge it would only look again
//! on a timer. [`Queue::wake_waiting`] is that nudge: called when a run leaves phase Running (it
//! finished, failed or was deleted), it asks each Controller to reconcile its waiting runs now,
//! in queue order. Each Controller takes these requests through `reconcile_on`.
//!
//! The Controllers' caches learn of a status change only when its watch event arrives, a moment
//! after the reconcile that wrote it. A run woken in between would still see the finished run as
//! Running and stay queued; so the phase this process last wrote for each run is remembered
//! ([`Queue::note_phase`]) and counts over an older cached one.
//!
//! What a burst costs (50 runs applied at once): each waiting run's reconcile looks at every
//! other run, so whether a run holds a place (the cluster's validation rules) is decided once per
//! run and generation (`Queue::holds_place`), not once per look. And a waiting run's status
//! shows its exact place only among the first [`QUEUE_PLACES_SHOWN`] in line
//! (`engine::reduce::queue_message`): when a run starts, only those runs' words change, so only
//! they are woken ([`Queue::wake_behind`]) and rewritten, not every waiting run. And they are
//! woken one after another, not all at once ([`Queue::reconciled`]): ten status writes sent
//! together wait on each other at the API server (a waiting run's write took 56 ms at the
//! median on the real cluster, a running run's 7 ms), and the running run's own writes wait
//! with them. Only the words are paced; the first in line still starts the moment a slot frees.
//!
//! The queue reads other runs' specs as the Controllers' caches hold them (`run.spec.placement`),
//! not a `ValidatedRun`: it weighs every run in line, which this reconcile has not validated, and
//! needs only whether two runs' placements may share nodes, which any spec that parses can say.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::channel::mpsc::UnboundedSender;
use kube::ResourceExt;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::engine::QUEUE_PLACES_SHOWN;
use crate::engine::machine::QueuePlace;
use crate::resource::{BenchmarkRun, RunPhase};

/// A reference to a run, as the Controllers key them.
pub type RunRef = ObjectRef<DeserializeGuard<BenchmarkRun>>;

/// Where reconcile requests for waiting runs go, and what this process knows that the caches
/// may not yet.
#[derive(Debug, Default)]
pub struct Queue {
    /// One channel per Controller, with its scope: `None` for the whole cluster, or its
    /// namespace.
    wakers: Vec<(Option<String>, UnboundedSender<RunRef>)>,
    /// The phase this process last wrote for a run (by its uid), until the caches show it.
    written: Mutex<HashMap<RunRef, (String, RunPhase)>>,
    /// Whether a run holds a place in the queue (the cluster's rules accept its spec), by uid,
    /// for the generation it was decided at.
    valid: Mutex<HashMap<String, (Option<i64>, bool)>>,
    /// Waiting runs to wake so that they show their new place, one at a time.
    place_wakes: Mutex<PlaceWakes>,
}

/// The waiting runs due a wake to show their place, and the one woken last, until its
/// reconcile ends.
#[derive(Debug, Default)]
struct PlaceWakes {
    due: VecDeque<RunRef>,
    in_flight: Option<(RunRef, Instant)>,
}

/// How long the next place wake waits for the reconcile of the one before it: one whose
/// reconcile hangs on the API server holds up the rest no longer than this (they go on at the
/// next reconcile of any run). A run deleted meanwhile holds up nothing: the line goes on at once.
const PLACE_WAKE_PATIENCE: Duration = Duration::from_secs(2);

impl PlaceWakes {
    /// The next run to wake, if none is in flight (or the one in flight has had its time).
    /// Runs no cache holds any more are passed over.
    fn next(&mut self, caches: &[Store<DeserializeGuard<BenchmarkRun>>]) -> Option<RunRef> {
        let held = |run: &RunRef| caches.iter().any(|c| c.get(run).is_some());
        if let Some((run, since)) = &self.in_flight
            && since.elapsed() < PLACE_WAKE_PATIENCE
            && held(run)
        {
            return None;
        }
        self.in_flight = None;
        while let Some(run) = self.due.pop_front() {
            if held(&run) {
                self.in_flight = Some((run.clone(), Instant::now()));
                return Some(run);
            }
        }
        None
    }
}

/// A run waiting in line, as the caches (and this process's own writes) show it.
type InLine = (QueueKey, std::sync::Arc<DeserializeGuard<BenchmarkRun>>);

impl Queue {
    /// Adds the channel of the Controller over `scope` (`None`: every namespace).
    pub fn add_waker(&mut self, scope: Option<String>, waker: UnboundedSender<RunRef>) {
        self.wakers.push((scope, waker));
    }

    /// Records the phase this process just wrote into `run`'s status.
    pub fn note_phase(&self, run: &BenchmarkRun, phase: RunPhase) {
        if let Ok(mut written) = self.written.lock() {
            written.insert(queue_key(run).reference(), (uid(run), phase));
        }
    }

    /// `run`'s phase: the one this process last wrote, if the cache has not caught up with it.
    fn phase(&self, run: &BenchmarkRun) -> RunPhase {
        let cached = phase_of(run);
        self.written
            .lock()
            .ok()
            .and_then(|w| w.get(&queue_key(run).reference()).cloned())
            .filter(|(written_uid, _)| *written_uid == uid(run))
            .map_or(cached, |(_, phase)| phase)
    }

    /// Whether `run`, waiting, holds a place in the queue: runs that will fail validation do not
    /// hold the queue (by the rules decide refuses them with, the cluster's). Decided once per
    /// uid and generation: the rules read the spec and the name only, and a waiting run's
    /// reconcile asks it of every other waiting run.
    fn holds_place(&self, run: &BenchmarkRun) -> bool {
        let uid = uid(run);
        let generation = run.metadata.generation;
        if uid.is_empty() {
            return crate::resource::validate::validate_for_cluster(run).is_ok();
        }
        if let Ok(valid) = self.valid.lock()
            && let Some((decided_at, holds)) = valid.get(&uid)
            && *decided_at == generation
        {
            return *holds;
        }
        let holds = crate::resource::validate::validate_for_cluster(run).is_ok();
        if let Ok(mut valid) = self.valid.lock() {
            valid.insert(uid, (generation, holds));
        }
        holds
    }

    /// Forgets what the caches have caught up with, or whose run is gone, so the tables stay
    /// small.
    fn prune(&self, caches: &[Store<DeserializeGuard<BenchmarkRun>>]) {
        if let Ok(mut written) = self.written.lock() {
            written.retain(|r, (written_uid, phase)| {
                caches.iter().filter_map(|c| c.get(r)).any(|g| {
                    g.0.as_ref()
                        .is_ok_and(|run| uid(run) == *written_uid && phase_of(run) != *phase)
                })
            });
        }
        if let Ok(mut valid) = self.valid.lock()
            && !valid.is_empty()
        {
            let known: std::collections::HashSet<String> = caches
                .iter()
                .flat_map(Store::state)
                .filter_map(|g| g.0.as_ref().ok().map(uid))
                .collect();
            valid.retain(|u, _| known.contains(u));
        }
    }

    /// The runs waiting in line (Pending, and holding a place), oldest first.
    fn in_line(&self, caches: &[Store<DeserializeGuard<BenchmarkRun>>]) -> Vec<InLine> {
        let mut line: Vec<InLine> = caches
            .iter()
            .flat_map(Store::state)
            .filter_map(|g| {
                let run = g.0.as_ref().ok()?;
                (self.phase(run) == RunPhase::Pending && self.holds_place(run))
                    .then(|| (queue_key(run), g.clone()))
            })
            .collect();
        line.sort_by(|a, b| a.0.cmp(&b.0));
        line
    }

    /// Asks the Controllers to reconcile every waiting run whose status shows its exact place
    /// (the first [`QUEUE_PLACES_SHOWN`] in each line), oldest first: after a run the caches
    /// no longer hold (deleted) left, whatever it was, the first in line may start and those
    /// behind it moved up. Runs further back keep the same words.
    pub fn wake_waiting(&self, caches: &[Store<DeserializeGuard<BenchmarkRun>>]) {
        self.wake_places(caches, None, false);
    }

    /// Asks the Controllers to reconcile the waiting runs whose shown place `changed` moved: those
    /// behind it in line that could share nodes with it and are among the first
    /// [`QUEUE_PLACES_SHOWN`] of their line. Called when `changed` left the queue (it started,
    /// or failed while waiting), and when a new run joins the line ahead of waiting ones. A run
    /// further back says only that it is, so its words stay the same and it is not woken: a
    /// start costs at most that many status writes, not one per waiting run.
    pub fn wake_behind(
        &self,
        caches: &[Store<DeserializeGuard<BenchmarkRun>>],
        changed: &BenchmarkRun,
    ) {
        self.wake_places(caches, Some(changed), false);
    }

    /// Asks the Controllers to reconcile the waiting runs whose shown place `new`, a run that
    /// just joined the line, moved: as [`Queue::wake_behind`], but only runs that have shown a
    /// place already (a run with no status yet finds its place at its own first reconcile).
    /// Runs join at the end as a rule, and then none is woken; one created in the same second
    /// as waiting runs, with a name that sorts first, goes ahead of them.
    pub fn wake_behind_new(
        &self,
        caches: &[Store<DeserializeGuard<BenchmarkRun>>],
        new: &BenchmarkRun,
    ) {
        self.wake_places(caches, Some(new), true);
    }

    fn wake_places(
        &self,
        caches: &[Store<DeserializeGuard<BenchmarkRun>>],
        changed: Option<&BenchmarkRun>,
        placed_only: bool,
    ) {
        self.prune(caches);
        let line = self.in_line(caches);
        let after = changed.map(queue_key);
        let mut due = Vec::new();
        for (i, (key, guard)) in line.iter().enumerate() {
            let Ok(run) = &guard.0 else { continue };
            if placed_only && run.status.is_none() {
                continue;
            }
            if let (Some(changed), Some(after)) = (changed, &after)
                && (key <= after || !changed.spec.placement.may_share_nodes(&run.spec.placement))
            {
                continue;
            }
            // Its place: the runs ahead of it that could share its nodes (counted up to the
            // first that is not shown).
            let ahead = line[..i]
                .iter()
                .filter_map(|(_, g)| g.0.as_ref().ok())
                .filter(|other| run.spec.placement.may_share_nodes(&other.spec.placement))
                .take(QUEUE_PLACES_SHOWN)
                .count();
            if ahead < QUEUE_PLACES_SHOWN {
                due.push(key.reference());
            }
        }
        if changed.is_none() {
            // A run the caches no longer hold left (deleted), whatever it was: it may have
            // freed a slot, and the first in line must start now, not behind paced wakes.
            for run in due {
                self.wake(run);
            }
            return;
        }
        let next = self.place_wakes.lock().ok().and_then(|mut wakes| {
            for run in due {
                if !wakes.due.contains(&run) {
                    wakes.due.push_back(run);
                }
            }
            wakes.next(caches)
        });
        if let Some(run) = next {
            self.wake(run);
        }
    }

    /// Says that a reconcile of `run` ended (whatever it came to): if it was the run woken last
    /// to show its place, the next one due is woken now.
    pub fn reconciled(&self, run: &RunRef, caches: &[Store<DeserializeGuard<BenchmarkRun>>]) {
        let next = self.place_wakes.lock().ok().and_then(|mut wakes| {
            if wakes.in_flight.as_ref().is_some_and(|(r, _)| r == run) {
                wakes.in_flight = None;
            }
            wakes.next(caches)
        });
        if let Some(run) = next {
            self.wake(run);
        }
    }

    /// Asks the Controllers to reconcile the first `n` waiting runs that could share nodes with
    /// `freed` now: those that may take the slots it just freed (when one starts, it wakes the
    /// runs behind it whose shown place moved). A run on nodes `freed` can never use was not
    /// waiting for it.
    pub fn wake_first_waiting(
        &self,
        caches: &[Store<DeserializeGuard<BenchmarkRun>>],
        freed: &BenchmarkRun,
        n: usize,
    ) {
        self.prune(caches);
        let first = self
            .in_line(caches)
            .into_iter()
            .filter(|(_, g)| {
                g.0.as_ref()
                    .is_ok_and(|run| freed.spec.placement.may_share_nodes(&run.spec.placement))
            })
            .take(n);
        for (key, _) in first {
            self.wake(key.reference());
        }
    }

    /// Asks the Controllers to reconcile every run that has not finished, now: after an API
    /// server outage, a run whose load ended meanwhile is looked at the moment the API answers
    /// again, not when a watch event or a retry timer gets round to it.
    pub fn wake_unfinished(&self, caches: &[Store<DeserializeGuard<BenchmarkRun>>]) {
        let unfinished: Vec<RunRef> = caches
            .iter()
            .flat_map(Store::state)
            .filter_map(|g| {
                let run = g.0.as_ref().ok()?;
                (!self.phase(run).is_finished()).then(|| queue_key(run).reference())
            })
            .collect();
        for run in unfinished {
            self.wake(run);
        }
    }

    /// Asks the Controllers to reconcile every run they hold, now: when this replica's gate
    /// opens (it took the leader Lease, or the CRD was upgraded), the runs its closed gate
    /// turned away are looked at at once, finished ones too (a TTL may be due).
    pub fn wake_all(&self, caches: &[Store<DeserializeGuard<BenchmarkRun>>]) {
        let all: Vec<RunRef> = caches
            .iter()
            .flat_map(Store::state)
            .map(|g| ObjectRef::from_obj(g.as_ref()))
            .collect();
        for run in all {
            self.wake(run);
        }
    }

    fn wake(&self, run: RunRef) {
        let waker = self
            .wakers
            .iter()
            .find(|(scope, _)| scope.is_none() || scope.as_deref() == run.namespace.as_deref());
        if let Some((_, waker)) = waker {
            // A closed channel means the Controller is shutting down: nothing to wake.
            let _ = waker.unbounded_send(run);
        }
    }

    /// Where `run` stands: the other active runs, and the waiting runs ahead of it in queue
    /// order (creation time, then name), from the caches (no API call; whether a run holds a
    /// place is decided once per generation, `Queue::holds_place`). Only runs that could
    /// share a node with it count: runs whose `placement` selects disjoint nodes cannot distort
    /// each other's numbers, so each such group of nodes has its own `max_active` slots.
    pub fn view(
        &self,
        run: &BenchmarkRun,
        caches: &[Store<DeserializeGuard<BenchmarkRun>>],
        max_active: usize,
    ) -> QueuePlace {
        let me = queue_key(run);
        let mut active = 0;
        let mut ahead = 0;
        for other in caches.iter().flat_map(Store::state) {
            let Ok(other) = &other.0 else { continue };
            let key = queue_key(other);
            if (&key.name, &key.namespace) == (&me.name, &me.namespace)
                || !run.spec.placement.may_share_nodes(&other.spec.placement)
            {
                continue;
            }
            let phase = self.phase(other);
            if phase == RunPhase::Running {
                active += 1;
            } else if phase == RunPhase::Pending && key < me && self.holds_place(other) {
                ahead += 1;
            }
        }
        QueuePlace {
            active,
            ahead,
            max_active,
        }
    }
}

/// Whether every cache of runs has been listed once (or never will be: its watch has ended,
/// the operator is stopping).
///
/// Checked without waiting: a store's readiness is a one-shot channel that wakes only the last
/// task that waited on it, and each Controller's runner waits on it. Checking never takes that
/// wake-up away for good: a store turns ready while its Controller polls its watch stream, and
/// the Controller polls its runner right after.
pub fn caches_listed(caches: &[Store<DeserializeGuard<BenchmarkRun>>]) -> bool {
    caches
        .iter()
        .all(|c| c.wait_until_ready().now_or_never().is_some())
}

/// A run's place in the queue. Ordered by creation time, then name, then namespace, so the
/// order is total and the same in every reconcile.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct QueueKey {
    created: Option<i64>,
    name: String,
    namespace: String,
}

impl QueueKey {
    fn reference(&self) -> RunRef {
        RunRef::new(&self.name).within(&self.namespace)
    }
}

fn queue_key(run: &BenchmarkRun) -> QueueKey {
    QueueKey {
        created: run
            .metadata
            .creation_timestamp
            .as_ref()
            .map(crate::resource::conditions::secs_of),
        name: run.name_any(),
        namespace: run.namespace().unwrap_or_default(),
    }
}

fn uid(run: &BenchmarkRun) -> String {
    run.metadata.uid.clone().unwrap_or_default()
}

fn phase_of(run: &BenchmarkRun) -> RunPhase {
    run.status.as_ref().map(|s| s.phase).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector::store::Writer;
    use kube::runtime::watcher::Event;

    /// Run `name` as the cache holds it: new (no status yet) or in `phase`.
    fn run(name: &str, phase: Option<RunPhase>) -> DeserializeGuard<BenchmarkRun> {
        let mut run = BenchmarkRun::sample()
            .named(name)
            .in_namespace("bench")
            .with_uid(&format!("uid-{name}"));
        if let Some(phase) = phase {
            run = run.with_run_phase(phase);
        }
        DeserializeGuard(Ok(run))
    }

    #[test]
    fn after_an_outage_every_unfinished_run_is_woken_and_no_finished_one() {
        let mut writer = Writer::<DeserializeGuard<BenchmarkRun>>::default();
        for r in [
            run("new", None),
            run("queued", Some(RunPhase::Pending)),
            run("measuring", Some(RunPhase::Running)),
            run("done", Some(RunPhase::Succeeded)),
            run("broken", Some(RunPhase::Failed)),
        ] {
            writer.apply_watcher_event(&Event::Apply(r));
        }
        let (tx, mut rx) = futures::channel::mpsc::unbounded();
        let mut queue = Queue::default();
        queue.add_waker(None, tx);
        queue.wake_unfinished(&[writer.as_reader()]);
        let mut woken = Vec::new();
        while let Ok(r) = rx.try_recv() {
            woken.push(r.name);
        }
        woken.sort();
        assert_eq!(woken, ["measuring", "new", "queued"]);
    }

    /// A freed slot wakes the first in line only (its start then wakes the others, whose places
    /// moved); an opened gate wakes every run, finished ones too.
    #[test]
    fn a_freed_slot_wakes_the_first_in_line_and_an_opened_gate_wakes_every_run() {
        let mut writer = Writer::<DeserializeGuard<BenchmarkRun>>::default();
        let valid = |name: &str, phase| DeserializeGuard(Ok(in_pool(name, phase, None)));
        for r in [
            valid("w-b", Some(RunPhase::Pending)),
            valid("w-a", None),
            valid("w-c", Some(RunPhase::Pending)),
            valid("measuring", Some(RunPhase::Running)),
            valid("done", Some(RunPhase::Succeeded)),
        ] {
            writer.apply_watcher_event(&Event::Apply(r));
        }
        let (tx, mut rx) = futures::channel::mpsc::unbounded();
        let mut queue = Queue::default();
        queue.add_waker(None, tx);
        let woken = |rx: &mut futures::channel::mpsc::UnboundedReceiver<RunRef>| {
            let mut names = Vec::new();
            while let Ok(r) = rx.try_recv() {
                names.push(r.name);
            }
            names
        };
        let caches = [writer.as_reader()];
        let freed = in_pool("measuring", Some(RunPhase::Running), None);
        queue.wake_first_waiting(&caches, &freed, 1);
        assert_eq!(woken(&mut rx), ["w-a"]);
        queue.wake_first_waiting(&caches, &freed, 2);
        assert_eq!(woken(&mut rx), ["w-a", "w-b"]);
        queue.wake_waiting(&caches);
        assert_eq!(reconciling(&queue, &caches, &mut rx), ["w-a", "w-b", "w-c"]);
        queue.wake_all(&caches);
        let mut all = woken(&mut rx);
        all.sort();
        assert_eq!(all, ["done", "measuring", "w-a", "w-b", "w-c"]);
    }

    /// A run the cluster's rules accept, named `name`, in `phase` (`None`: no status yet), with
    /// `placement.nodeSelector` set to `pool: {pool}` (no pool: no selector).
    fn in_pool(name: &str, phase: Option<RunPhase>, pool: Option<&str>) -> BenchmarkRun {
        let placement = pool.map_or(String::new(), |p| {
            format!("  placement: {{nodeSelector: {{pool: {p}}}}}\n")
        });
        let status = phase.map_or(String::new(), |p| format!("status: {{phase: {p}}}\n"));
        let yaml = format!(
            "apiVersion: benchmatrix.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {{name: {name}, \
             namespace: bench, uid: uid-{name}}}\nspec:\n  configurations: [{{name: a, cpu: \"1\"}}]\n  \
             workload:\n    endpoints: [{{name: fast, path: /fast}}]\n    phases: [{{name: p, \
             duration: 5s, load: [{{endpoint: fast, connections: 1}}]}}]\n{placement}{status}"
        );
        crate::resource::validate::parse_benchmark_run(&yaml).unwrap()
    }

    /// Runs on disjoint node pools do not queue behind each other; a run that may land on any
    /// node queues behind both, and both behind it.
    #[test]
    fn runs_on_disjoint_nodes_hold_separate_queues() {
        let mut writer = Writer::<DeserializeGuard<BenchmarkRun>>::default();
        let runs = [
            in_pool("a-measuring", Some(RunPhase::Running), Some("a")),
            in_pool("a-waiting", Some(RunPhase::Pending), Some("a")),
            in_pool("b-new", None, Some("b")),
            in_pool("anywhere", Some(RunPhase::Pending), None),
        ];
        for r in &runs {
            writer.apply_watcher_event(&Event::Apply(DeserializeGuard(Ok(r.clone()))));
        }
        let caches = [writer.as_reader()];
        let queue = Queue::default();
        let place = |r: &BenchmarkRun| queue.view(r, &caches, 1);

        // The pool-b run sees neither pool-a run: it starts although one is measuring and one
        // was queued before it.
        let b = place(&runs[2]);
        assert_eq!((b.active, b.ahead), (0, 1), "{b:?}"); // "anywhere" is older: it goes first
        let only_b = Queue::default().view(&runs[2], &[reader_of(&runs[..3])], 1);
        assert!(only_b.admits(), "{only_b:?}");
        // The pool-a waiter still waits for the pool-a run.
        let a = place(&runs[1]);
        assert_eq!((a.active, a.admits()), (1, false), "{a:?}");
        // The run with no selector could share a node with every other: it counts them all.
        let any = place(&runs[3]);
        assert_eq!((any.active, any.ahead), (1, 1), "{any:?}");

        // When the pool-a run ends, the first waiting run that could use its nodes is woken,
        // not the pool-b one.
        let (tx, mut rx) = futures::channel::mpsc::unbounded();
        let mut queue = Queue::default();
        queue.add_waker(None, tx);
        queue.wake_first_waiting(&caches, &runs[0], 1);
        assert_eq!(
            rx.try_recv().map(|r| r.name).ok().as_deref(),
            Some("a-waiting")
        );
        assert!(rx.try_recv().is_err());
    }

    fn reader_of(runs: &[BenchmarkRun]) -> Store<DeserializeGuard<BenchmarkRun>> {
        let mut writer = Writer::<DeserializeGuard<BenchmarkRun>>::default();
        for r in runs {
            writer.apply_watcher_event(&Event::Apply(DeserializeGuard(Ok(r.clone()))));
        }
        writer.as_reader()
    }

    /// A waiting run that the cluster's rules refuse (here a name too long for a label value,
    /// which a local run would accept) will fail at its first reconcile: it holds no place.
    #[test]
    fn a_waiting_run_the_cluster_would_refuse_holds_no_place_in_the_queue() {
        let valid = |name: &str| DeserializeGuard(Ok(in_pool(name, Some(RunPhase::Pending), None)));
        let too_long = format!("a{}", "x".repeat(63));
        let mut writer = Writer::<DeserializeGuard<BenchmarkRun>>::default();
        for r in [valid("a-ok"), valid(&too_long), valid("me")] {
            writer.apply_watcher_event(&Event::Apply(r));
        }
        let me = valid("me").0.unwrap();
        assert!(crate::resource::validate::validate_run(&valid(&too_long).0.unwrap()).is_ok());
        let view = Queue::default().view(&me, &[writer.as_reader()], 1);
        assert_eq!(view.ahead, 1, "{view:?}");
    }

    /// Drains the names woken so far.
    fn drain(rx: &mut futures::channel::mpsc::UnboundedReceiver<RunRef>) -> Vec<String> {
        let mut names = Vec::new();
        while let Ok(r) = rx.try_recv() {
            names.push(r.name);
        }
        names
    }

    /// Drains the names woken so far, reconciling each as it comes (so the next place wake
    /// goes).
    fn reconciling(
        queue: &Queue,
        caches: &[Store<DeserializeGuard<BenchmarkRun>>],
        rx: &mut futures::channel::mpsc::UnboundedReceiver<RunRef>,
    ) -> Vec<String> {
        let mut names = Vec::new();
        while let Ok(r) = rx.try_recv() {
            names.push(r.name.clone());
            queue.reconciled(&r, caches);
        }
        names
    }

    /// A start wakes only the runs behind it whose shown place moved: the first
    /// QUEUE_PLACES_SHOWN waiting in its line, not the runs further back (their words stay the
    /// same), nor runs on nodes it cannot share, nor runs ahead of it.
    #[test]
    fn a_start_wakes_only_the_runs_whose_shown_place_moved() {
        let name = |i: usize| format!("w-{i:02}");
        let mut writer = Writer::<DeserializeGuard<BenchmarkRun>>::default();
        let started = in_pool("started", Some(RunPhase::Running), Some("a"));
        writer.apply_watcher_event(&Event::Apply(DeserializeGuard(Ok(started.clone()))));
        for i in 0..QUEUE_PLACES_SHOWN + 5 {
            let run = in_pool(&name(i), Some(RunPhase::Pending), Some("a"));
            writer.apply_watcher_event(&Event::Apply(DeserializeGuard(Ok(run))));
        }
        let other_pool = in_pool("b-waiting", Some(RunPhase::Pending), Some("b"));
        writer.apply_watcher_event(&Event::Apply(DeserializeGuard(Ok(other_pool))));
        let (tx, mut rx) = futures::channel::mpsc::unbounded();
        let mut queue = Queue::default();
        queue.add_waker(None, tx);
        let caches = [writer.as_reader()];

        queue.wake_behind(&caches, &started);
        // One at a time: the next once the one before it has been reconciled.
        assert_eq!(drain(&mut rx), [name(0)]);
        queue.reconciled(&RunRef::new(&name(0)).within("bench"), &caches);
        let expected: Vec<String> = (1..QUEUE_PLACES_SHOWN).map(name).collect();
        assert_eq!(reconciling(&queue, &caches, &mut rx), expected);

        // A run that left the line from the middle wakes the shown runs behind it only.
        let middle = in_pool(&name(3), Some(RunPhase::Pending), Some("a"));
        queue.note_phase(&middle, RunPhase::Failed);
        queue.wake_behind(&caches, &middle);
        let expected: Vec<String> = (4..=QUEUE_PLACES_SHOWN).map(name).collect();
        assert_eq!(reconciling(&queue, &caches, &mut rx), expected);

        // A deleted run (nothing left to compare with): every shown run of every line, at once
        // (the first in line may take the slot it freed).
        queue.wake_waiting(&caches);
        let mut expected: Vec<String> = (0..=QUEUE_PLACES_SHOWN)
            .filter(|i| *i != 3)
            .map(name)
            .collect();
        expected.insert(0, "b-waiting".into());
        let mut woken = drain(&mut rx);
        woken.sort();
        expected.sort();
        assert_eq!(woken, expected);
    }

    /// A run woken to show its place whose reconcile never comes (deleted meanwhile) holds the
    /// others back only for PLACE_WAKE_PATIENCE; a run the caches no longer hold is passed over.
    #[test]
    fn a_place_wake_that_is_never_reconciled_holds_the_rest_back_for_a_while_only() {
        let mut writer = Writer::<DeserializeGuard<BenchmarkRun>>::default();
        let started = in_pool("started", Some(RunPhase::Running), None);
        writer.apply_watcher_event(&Event::Apply(DeserializeGuard(Ok(started.clone()))));
        let waiting: Vec<BenchmarkRun> = ["w-0", "w-1", "w-2"]
            .iter()
            .map(|n| in_pool(n, Some(RunPhase::Pending), None))
            .collect();
        for run in &waiting {
            writer.apply_watcher_event(&Event::Apply(DeserializeGuard(Ok(run.clone()))));
        }
        let (tx, mut rx) = futures::channel::mpsc::unbounded();
        let mut queue = Queue::default();
        queue.add_waker(None, tx);
        let caches = [writer.as_reader()];
        queue.wake_behind(&caches, &started);
        assert_eq!(drain(&mut rx), ["w-0"]);
        // w-0 is never reconciled: other reconciles do not move the line on at once...
        queue.reconciled(&RunRef::new("started").within("bench"), &caches);
        assert!(drain(&mut rx).is_empty());
        // ...but once its time is up, the next reconcile of any run does; w-1 is deleted
        // meanwhile, so w-2 is next.
        if let Some((_, since)) = &mut queue.place_wakes.lock().unwrap().in_flight {
            *since -= PLACE_WAKE_PATIENCE;
        }
        writer.apply_watcher_event(&Event::Delete(DeserializeGuard(Ok(waiting[1].clone()))));
        queue.reconciled(&RunRef::new("started").within("bench"), &caches);
        assert_eq!(drain(&mut rx), ["w-2"]);
    }

    /// Whether a run holds a place is decided once per generation: a spec the cluster refuses
    /// holds none, and once edited into one it accepts (a new generation), it does.
    #[test]
    fn a_runs_place_follows_its_generation() {
        let too_long = format!("a{}", "x".repeat(63));
        let mut refused = in_pool(&too_long, Some(RunPhase::Pending), None);
        refused.metadata.generation = Some(1);
        let me = in_pool("me", Some(RunPhase::Pending), None);
        let queue = Queue::default();
        let view = queue.view(&me, &[reader_of(&[refused.clone(), me.clone()])], 1);
        assert_eq!(view.ahead, 0, "{view:?}");
        // Asked again, the same answer (now from what was decided).
        let view = queue.view(&me, &[reader_of(&[refused.clone(), me.clone()])], 1);
        assert_eq!(view.ahead, 0, "{view:?}");
        assert!(queue.holds_place(&me));
        assert!(!queue.holds_place(&refused));
        // The same uid at a new generation is decided again. (The name cannot change; a spec
        // that validation refuses stands in for an edit here: a new generation that is valid.)
        let mut edited = refused.clone();
        edited.metadata.generation = Some(2);
        edited.metadata.name = Some("a-short-name".into());
        assert!(queue.holds_place(&edited));
    }
}
