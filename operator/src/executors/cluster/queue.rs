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

use std::collections::HashMap;
use std::sync::Mutex;

use futures::FutureExt;
use futures::channel::mpsc::UnboundedSender;
use kube::ResourceExt;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::engine::machine::QueuePlace;
use crate::resource::{BenchmarkRun, Placement, RunPhase};

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
}

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

    /// Asks the Controllers to reconcile every waiting run now, oldest first, so the first in
    /// line takes a freed slot at once and the others update their place in the queue.
    pub fn wake_waiting(&self, caches: &[Store<DeserializeGuard<BenchmarkRun>>]) {
        self.wake_in_line(caches, None, usize::MAX);
    }

    /// Asks the Controllers to reconcile the first `n` waiting runs that could share nodes with
    /// `freed` now: those that may take the slots it just freed (when one starts, it wakes the
    /// rest, whose places moved). A run on nodes `freed` can never use was not waiting for it.
    pub fn wake_first_waiting(
        &self,
        caches: &[Store<DeserializeGuard<BenchmarkRun>>],
        freed: &BenchmarkRun,
        n: usize,
    ) {
        self.wake_in_line(caches, Some(&freed.spec.placement), n);
    }

    fn wake_in_line(
        &self,
        caches: &[Store<DeserializeGuard<BenchmarkRun>>],
        sharing: Option<&Placement>,
        n: usize,
    ) {
        // Entries the caches have caught up with (or whose run is gone) are dropped, so the
        // table stays small.
        if let Ok(mut written) = self.written.lock() {
            written.retain(|r, (written_uid, phase)| {
                caches.iter().filter_map(|c| c.get(r)).any(|g| {
                    g.0.as_ref()
                        .is_ok_and(|run| uid(run) == *written_uid && phase_of(run) != *phase)
                })
            });
        }
        let mut waiting: Vec<QueueKey> = caches
            .iter()
            .flat_map(Store::state)
            .filter_map(|g| {
                let run = g.0.as_ref().ok()?;
                let may_share = sharing.is_none_or(|p| p.may_share_nodes(&run.spec.placement));
                (may_share && self.phase(run) == RunPhase::Pending).then(|| queue_key(run))
            })
            .collect();
        waiting.sort();
        for key in waiting.into_iter().take(n) {
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
    /// order (creation time, then name), from the caches (no API call). Only runs that could
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
        let mut waiting = 0;
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
            } else if phase == RunPhase::Pending
                // Runs that will fail validation do not hold the queue: by the rules decide
                // refuses them with, the cluster's.
                && crate::resource::validate::validate_for_cluster(other).is_ok()
            {
                waiting += 1;
                if key < me {
                    ahead += 1;
                }
            }
        }
        QueuePlace {
            active,
            ahead,
            waiting: waiting + 1,
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
        for r in [
            run("w-b", Some(RunPhase::Pending)),
            run("w-a", None),
            run("w-c", Some(RunPhase::Pending)),
            run("measuring", Some(RunPhase::Running)),
            run("done", Some(RunPhase::Succeeded)),
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
        let freed = run("measuring", Some(RunPhase::Running)).0.unwrap();
        queue.wake_first_waiting(&caches, &freed, 1);
        assert_eq!(woken(&mut rx), ["w-a"]);
        queue.wake_first_waiting(&caches, &freed, 2);
        assert_eq!(woken(&mut rx), ["w-a", "w-b"]);
        queue.wake_waiting(&caches);
        assert_eq!(woken(&mut rx), ["w-a", "w-b", "w-c"]);
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
        assert_eq!((any.active, any.ahead, any.waiting), (1, 1, 3), "{any:?}");

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
        assert_eq!((view.ahead, view.waiting), (1, 2), "{view:?}");
    }
}
