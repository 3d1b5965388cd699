//! The runs' Events go out behind the reconciles, as client-go's recorder sends them: a reconcile
//! hands its Events to a queue and goes on, and one task publishes them, in the order given.
//!
//! Why: an Event is an API write of its own (an admission's took 10 ms at the median and 88 ms
//! at its p99 during a 50-run burst on a two-node test cluster: BENCHMARKS.md), for people to
//! read, never the record (the status is). A reconcile that waited for it waited for nothing it
//! needs. Events are still handed over only
//! once the status they describe is stored, so none tells of a status that was refused.
//!
//! A full queue drops the Event, with a warning, rather than hold up a reconcile; at shutdown
//! what is queued is published within the shutdown's deadline ([`EventQueue::flush`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder};
use tokio::sync::{Mutex, Notify, mpsc};
use tokio::task::JoinHandle;

use super::robustness_metrics::EventsDropped;
use crate::engine::Note;
use crate::resource::BenchmarkRun;

/// How many Events may wait to be published. A burst of 50 runs hands over about 150; a queue
/// this long is full only when the API server refuses or holds every Event for minutes.
const CAPACITY: usize = 1024;

/// Hands Events to the task that publishes them.
#[derive(Debug)]
pub struct EventQueue {
    tx: mpsc::Sender<(ObjectReference, Note)>,
    closing: Arc<Notify>,
    /// Events handed over and not yet published (or given up on), and a wake-up when that
    /// comes to none.
    pending: Arc<Pending>,
    task: Mutex<Option<JoinHandle<()>>>,
    /// `benchmatrix_events_dropped`: what a warning line alone would hide from alerting.
    dropped: EventsDropped,
}

impl EventQueue {
    /// Starts the publishing task on the current Tokio runtime; every Event lost is counted in
    /// `dropped`.
    pub fn start(recorder: Recorder, dropped: EventsDropped) -> Self {
        Self::with_capacity(recorder, dropped, CAPACITY)
    }

    fn with_capacity(recorder: Recorder, dropped: EventsDropped, capacity: usize) -> Self {
        let (tx, rx) = mpsc::channel(capacity);
        let closing = Arc::new(Notify::new());
        let pending = Arc::new(Pending::default());
        let task = tokio::spawn(publish_all(
            recorder,
            rx,
            closing.clone(),
            pending.clone(),
            dropped.clone(),
        ));
        Self {
            tx,
            closing,
            pending,
            task: Mutex::new(Some(task)),
            dropped,
        }
    }

    /// Queues `notes` as Events on `run`, at once: a full queue drops them, with a warning.
    pub fn send(&self, run: &BenchmarkRun, notes: &[Note]) {
        if notes.is_empty() {
            return;
        }
        let reference = run.object_ref(&());
        for note in notes {
            self.pending.count.fetch_add(1, Ordering::SeqCst);
            if let Err(err) = self.tx.try_send((reference.clone(), note.clone())) {
                self.pending.done();
                let (reason, why) = match err {
                    mpsc::error::TrySendError::Full(_) => {
                        ("the queue of Events is full", "queue_full")
                    }
                    mpsc::error::TrySendError::Closed(_) => {
                        ("Events are no longer published", "closed")
                    }
                };
                self.dropped.inc(why);
                tracing::warn!(reason = %note.reason, note = %note.note, "event dropped: {reason}");
            }
        }
    }

    /// Returns once every Event handed over so far has been published or given up on.
    pub async fn published(&self) {
        loop {
            let drained = self.pending.drained.notified();
            if self.pending.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            drained.await;
        }
    }

    /// Publishes what is queued, then stops; gives up after `deadline`. Events handed over
    /// later are dropped.
    pub async fn flush(&self, deadline: Duration) {
        let Some(task) = self.task.lock().await.take() else {
            return;
        };
        self.closing.notify_one();
        if tokio::time::timeout(deadline, task).await.is_err() {
            tracing::warn!(
                ?deadline,
                "events still queued at shutdown were not all published"
            );
        }
    }
}

/// Publishes each Event as it comes, one after another; once `closing` is notified, what is
/// queued, then ends.
async fn publish_all(
    recorder: Recorder,
    mut rx: mpsc::Receiver<(ObjectReference, Note)>,
    closing: Arc<Notify>,
    pending: Arc<Pending>,
    dropped: EventsDropped,
) {
    loop {
        tokio::select! {
            next = rx.recv() => match next {
                Some((reference, note)) => {
                    publish(&recorder, &reference, &note, &dropped).await;
                    pending.done();
                }
                None => return,
            },
            () = closing.notified() => break,
        }
    }
    rx.close();
    while let Some((reference, note)) = rx.recv().await {
        publish(&recorder, &reference, &note, &dropped).await;
        pending.done();
    }
}

/// A count of Events on their way, and who waits for it to come to none.
#[derive(Debug, Default)]
struct Pending {
    count: AtomicUsize,
    drained: Notify,
}

impl Pending {
    fn done(&self) {
        if self.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.drained.notify_waiters();
        }
    }
}

/// One Event; a refused one is logged, never fatal: Events are for people, the status is the
/// record.
async fn publish(
    recorder: &Recorder,
    reference: &ObjectReference,
    note: &Note,
    dropped: &EventsDropped,
) {
    let event = Event {
        type_: if note.warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: note.reason.clone(),
        note: Some(note.note.clone()),
        action: "Reconcile".into(),
        secondary: None,
    };
    if let Err(err) = recorder.publish(&event, reference).await {
        dropped.inc("refused");
        tracing::warn!(error = %err, reason = %note.reason, "could not publish an event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executors::cluster::tests::fake::FakeApi;
    use crate::executors::cluster::tests::sample;

    fn queue(fake: &FakeApi, capacity: usize) -> (EventQueue, EventsDropped) {
        let reporter = kube::runtime::events::Reporter {
            controller: "benchmatrix-operator".into(),
            instance: None,
        };
        let dropped = EventsDropped::default();
        let recorder = Recorder::new(fake.client(), reporter);
        (
            EventQueue::with_capacity(recorder, dropped.clone(), capacity),
            dropped,
        )
    }

    fn note(reason: &str) -> Note {
        Note {
            warning: false,
            reason: reason.into(),
            note: format!("{reason} happened"),
        }
    }

    fn reasons(fake: &FakeApi) -> Vec<String> {
        fake.list("events")
            .iter()
            .map(|e| e["reason"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    #[tokio::test]
    async fn events_are_published_in_the_order_handed_over_and_a_refused_one_stops_none_after_it() {
        let fake = FakeApi::default();
        let run: BenchmarkRun = serde_json::from_value(sample("r", &["a"])).unwrap();
        let (events, dropped) = queue(&fake, CAPACITY);
        fake.fail_next("POST", "events", 500);
        events.send(&run, &[note("First"), note("Second")]);
        events.send(&run, &[note("Third")]);
        events.published().await;
        assert_eq!(reasons(&fake), ["Second", "Third"]);
        assert_eq!(dropped.get("refused"), 1, "the refused Event is counted");
    }

    #[tokio::test]
    async fn what_is_queued_at_shutdown_is_published_and_later_events_are_dropped() {
        let fake = FakeApi::default();
        let run: BenchmarkRun = serde_json::from_value(sample("r", &["a"])).unwrap();
        let (events, dropped) = queue(&fake, CAPACITY);
        let many: Vec<Note> = (0..20).map(|i| note(&format!("Step{i}"))).collect();
        events.send(&run, &many);
        events.flush(Duration::from_secs(10)).await;
        assert_eq!(reasons(&fake).len(), 20);
        events.send(&run, &[note("Late")]);
        events.published().await;
        assert!(!reasons(&fake).contains(&"Late".to_owned()));
        assert_eq!(dropped.get("closed"), 1);
    }

    /// Events handed over faster than they can be published overflow the queue: each one
    /// dropped is counted, so an alert can see what the log's warnings say one by one.
    #[tokio::test]
    async fn events_beyond_a_full_queue_are_dropped_and_counted() {
        let fake = FakeApi::default();
        let run: BenchmarkRun = serde_json::from_value(sample("r", &["a"])).unwrap();
        let (events, dropped) = queue(&fake, 4);
        // On this single-threaded runtime the publishing task cannot run between the sends.
        let many: Vec<Note> = (0..10).map(|i| note(&format!("Step{i}"))).collect();
        events.send(&run, &many);
        events.published().await;
        assert_eq!(dropped.get("queue_full"), 6);
        assert_eq!(reasons(&fake).len(), 4);
    }
}
