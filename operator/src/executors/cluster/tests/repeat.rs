//! `spec.repeat` against the faked API server: every cell measured again after every other cell
//! (a b a b), each repetition with objects of its own, and the cell's figures merged from its
//! repetitions.

use serde_json::json;

use super::{Harness, healthy, sample, with_timeout};
use crate::resource::{BenchmarkRun, CellPhase, RunPhase};

#[tokio::test]
async fn repetitions_deploy_interleaved_with_objects_of_their_own_and_merge() {
    with_timeout(async {
        let h = Harness::new();
        let mut run = sample("twice", &["a", "b"]);
        run["spec"]["repeat"] = json!(2);
        h.fake.insert("benchmarkruns", run);
        let phases = h.drive("twice", &healthy).await;
        assert_eq!(
            phases,
            [RunPhase::Pending, RunPhase::Running, RunPhase::Succeeded]
        );

        // The Deployments in the order they were created, by cell and repetition label.
        let deployments: Vec<String> = h
            .fake
            .creations()
            .into_iter()
            .filter(|(resource, _)| resource == "deployments")
            .map(|(_, name)| name)
            .collect();
        assert_eq!(deployments.len(), 4, "{deployments:?}");
        let unique: std::collections::BTreeSet<&String> = deployments.iter().collect();
        assert_eq!(
            unique.len(),
            4,
            "each repetition has its own objects: {deployments:?}"
        );
        let order: Vec<(String, String)> = deployments
            .iter()
            .map(|name| {
                let cell = ["a", "b"]
                    .into_iter()
                    .find(|c| name.starts_with(&format!("twice-{c}-")))
                    .expect("a cell's child name");
                let repetition = if name.contains(&format!("twice-{cell}-r2-")) {
                    "2"
                } else {
                    "1"
                };
                (cell.to_owned(), repetition.to_owned())
            })
            .collect();
        let expected: Vec<(String, String)> = [("a", "1"), ("b", "1"), ("a", "2"), ("b", "2")]
            .iter()
            .map(|(c, r)| (c.to_string(), r.to_string()))
            .collect();
        assert_eq!(order, expected, "interleaved: {deployments:?}");
        let jobs = h
            .fake
            .creations()
            .into_iter()
            .filter(|(resource, _)| resource == "jobs")
            .count();
        assert_eq!(jobs, 4, "one load generator Job per repetition");

        let status = h.run("twice").status.unwrap();
        for cell in &status.cells {
            assert_eq!(cell.phase, CellPhase::Succeeded, "{cell:?}");
            assert_eq!(cell.repetitions.len(), 2, "{cell:?}");
            assert!(
                cell.repetitions
                    .iter()
                    .all(|r| r.phase == CellPhase::Succeeded && !r.results.is_empty())
            );
            let mixed_fast = cell
                .results
                .iter()
                .find(|r| r.phase == "mixed" && r.endpoint == "fast")
                .unwrap();
            let spread = mixed_fast.spread.as_ref().expect("a spread");
            assert_eq!(spread.repetitions, 2);
            assert_eq!(mixed_fast.requests, 1000, "500 requests in each repetition");
        }
        assert_eq!(
            status.cells[0].results[1].latency_ms.unwrap().p99,
            400.0,
            "the median of two equal repetitions"
        );
        assert!(
            h.fake.list("deployments").is_empty() && h.fake.list("jobs").is_empty(),
            "every repetition's objects are deleted"
        );
    })
    .await;
}

/// Reconciles and plays the cluster until `done` holds of the run (at most 60 rounds).
async fn until(h: &Harness, name: &str, done: impl Fn(&BenchmarkRun) -> bool) {
    for _ in 0..60 {
        h.reconcile(name).await.expect("reconcile succeeds");
        if done(&h.run(name)) {
            return;
        }
        h.simulate(&healthy);
        h.advance(1);
    }
    panic!("never reached; status: {:#?}", h.run(name).status);
}

fn cell<'a>(run: &'a BenchmarkRun, name: &str) -> &'a crate::resource::CellStatus {
    let status = run.status.as_ref().expect("a status");
    status
        .cells
        .iter()
        .find(|c| c.name == name)
        .expect("the cell")
}

/// The controller hands a reconcile the run from its cache, which can lag behind the status the
/// previous reconcile wrote: here the copy from before repetition 1 of cell a was recorded as
/// measured, while that repetition's pods, deleted after it, are still terminating. Deciding
/// from it would see them going and fail a cell that measured fine (ReplicaExited), writing
/// over the newer status.
#[tokio::test]
async fn a_reconcile_from_a_copy_older_than_the_last_status_write_changes_nothing() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.pods_terminate();
        let mut run = sample("stale", &["a", "b"]);
        run["spec"]["repeat"] = json!(2);
        h.fake.insert("benchmarkruns", run);
        until(&h, "stale", |r| cell(r, "a").phase == CellPhase::Running).await;
        h.simulate(&healthy); // the load generator finishes
        let stale = h.guard("stale");
        h.reconcile("stale").await.unwrap();
        let measured = h.run("stale");
        assert_eq!(
            cell(&measured, "a").repetitions.len(),
            1,
            "repetition 1 measured"
        );
        assert!(
            h.fake
                .list("pods")
                .iter()
                .any(|p| !p["metadata"]["deletionTimestamp"].is_null()),
            "its pods are terminating"
        );

        let reads = |h: &Harness| {
            h.fake
                .calls()
                .iter()
                .filter(|c| c.short() == "GET benchmarkruns/stale")
                .count()
        };
        let reads_before = reads(&h);
        h.reconcile_from(&stale).await.unwrap();
        assert_eq!(
            reads(&h),
            reads_before,
            "the copy one write behind is replaced by the run as written, without a read"
        );
        let after = h.run("stale");
        let a = cell(&after, "a");
        assert_ne!(a.phase, CellPhase::Failed, "{a:#?}");
        assert_eq!(a.repetitions.len(), 1, "{a:#?}");
        assert_eq!(a.repetitions[0].phase, CellPhase::Succeeded);
        let jobs = |h: &Harness| {
            h.fake
                .creations()
                .iter()
                .filter(|(r, _)| r == "jobs")
                .count()
        };
        assert_eq!(jobs(&h), 1, "no Job made again for the repetition measured");

        // The rest of the run, with the kubelet stopping each deleted pod's containers.
        for _ in 0..80 {
            h.reconcile("stale").await.unwrap();
            if h.run("stale").status.unwrap().phase.is_finished() {
                break;
            }
            h.fake.stop_terminating_pods();
            h.fake.remove_stopped_pods();
            h.simulate(&healthy);
            h.advance(1);
        }
        let status = h.run("stale").status.unwrap();
        assert_eq!(status.phase, RunPhase::Succeeded, "{status:#?}");
        for c in &status.cells {
            assert_eq!(c.phase, CellPhase::Succeeded, "{c:#?}");
            assert_eq!(c.repetitions.len(), 2);
        }
        assert_eq!(jobs(&h), 4, "one Job per repetition, never one more");
    })
    .await;
}

/// Another writer (a second operator instance, say) stored a newer status after the copy this
/// reconcile was handed, which is still the version of this operator's own last write: the
/// write made from it is refused (409), the run is read again and decided anew, and nothing
/// the old copy called for is done.
#[tokio::test]
async fn a_status_write_from_a_superseded_copy_is_refused_and_decided_again() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("raced", &["a"]));
        h.reconcile("raced").await.unwrap();
        assert_eq!(cell(&h.run("raced"), "a").phase, CellPhase::Deploying);
        h.simulate(&healthy); // the target is ready: the next decision starts the load
        let ours = h.guard("raced");
        h.fake.edit("benchmarkruns", super::NS, "raced", |r| {
            r["status"]["phase"] = json!("Failed");
            r["status"]["message"] = json!("stopped by another writer");
            r["status"]["completionTime"] = json!("2027-01-15T08:00:00Z");
            r["metadata"]["resourceVersion"] = json!("9999");
        });
        let applies_before = h
            .fake
            .calls()
            .iter()
            .filter(|c| c.method == "PATCH")
            .count();
        h.reconcile_from(&ours).await.unwrap();
        assert_eq!(
            h.fake.status_conflicts(),
            1,
            "the write from the old copy was refused"
        );
        let after = h.run("raced").status.unwrap();
        assert_eq!(after.phase, RunPhase::Failed);
        assert_eq!(after.message.as_deref(), Some("stopped by another writer"));
        let applies_after = h
            .fake
            .calls()
            .iter()
            .filter(|c| c.method == "PATCH")
            .count();
        assert_eq!(
            applies_after,
            applies_before + 1,
            "only the refused status write: {:?}",
            h.fake.calls()
        );
        assert!(
            h.fake.list("jobs").is_empty(),
            "no load started from the old copy"
        );
    })
    .await;
}

/// The next cell waits for the previous cell's containers to stop, not for its pod objects to
/// vanish, and the wait is part of the cell's overhead.
#[tokio::test]
async fn the_next_cell_starts_once_the_previous_containers_stopped() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.pods_terminate();
        h.fake
            .insert("benchmarkruns", sample("handover", &["a", "b"]));
        until(&h, "handover", |r| {
            cell(r, "a").phase == CellPhase::Succeeded
        })
        .await;
        let deployments = |h: &Harness| h.fake.list("deployments").len();
        for _ in 0..3 {
            h.advance(1);
            h.reconcile("handover").await.unwrap();
        }
        let run = h.run("handover");
        assert_eq!(cell(&run, "b").phase, CellPhase::Pending);
        assert_eq!(deployments(&h), 0, "b waits while a's containers run");
        let message = run.status.unwrap().message.unwrap_or_default();
        assert!(
            message.contains("waiting for 1 pod(s) of an earlier cell to stop")
                && message.contains("-pod0"),
            "{message}"
        );
        // The load generator's pod has ended already; the target's container still runs.
        assert_eq!(h.fake.stop_terminating_pods(), 1);
        h.reconcile("handover").await.unwrap();
        assert_eq!(cell(&h.run("handover"), "b").phase, CellPhase::Deploying);
        assert_eq!(
            deployments(&h),
            1,
            "b deploys though a's pod objects are still there"
        );

        until(&h, "handover", |r| {
            r.status.as_ref().unwrap().phase.is_finished()
        })
        .await;
        let b = cell(&h.run("handover"), "b").clone();
        assert_eq!(b.phase, CellPhase::Succeeded, "{b:#?}");
        let message = b.message.unwrap_or_default();
        assert!(
            message.contains("previous cell stopped in 3 s"),
            "{message}"
        );
    })
    .await;
}

/// A pod of the previous cell whose containers never stop fails the next cell once the ready
/// timeout has passed since the previous cell ended, naming the pod.
#[tokio::test]
async fn a_previous_pod_that_never_stops_fails_the_next_cell_naming_it() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.pods_terminate();
        h.fake
            .insert("benchmarkruns", sample("linger", &["a", "b"]));
        until(&h, "linger", |r| cell(r, "a").phase == CellPhase::Succeeded).await;
        h.advance(29);
        h.reconcile("linger").await.unwrap();
        assert_eq!(cell(&h.run("linger"), "b").phase, CellPhase::Pending);
        h.advance(1);
        h.reconcile("linger").await.unwrap();
        let b = cell(&h.run("linger"), "b").clone();
        assert_eq!(b.phase, CellPhase::Failed, "{b:#?}");
        assert_eq!(b.reason.as_deref(), Some("PreviousPodsLingering"));
        let message = b.message.unwrap_or_default();
        assert!(
            message.contains("still ran 30s after it ended") && message.contains("-pod0"),
            "{message}"
        );
        assert!(
            h.fake.list("deployments").is_empty(),
            "b was never deployed"
        );
    })
    .await;
}

/// Objects an earlier step left behind (an operator stopped between writing the status and
/// deleting them) are deleted before the next step, which waits for their pods to stop.
#[tokio::test]
async fn objects_left_behind_by_an_earlier_step_are_deleted_before_the_next() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.pods_terminate();
        h.fake
            .insert("benchmarkruns", sample("leftover", &["a", "b"]));
        until(&h, "leftover", |r| cell(r, "a").phase == CellPhase::Running).await;
        h.simulate(&healthy);
        // The deletions after the measurement fail: the status is written, the objects stay.
        h.fake.fail_next("DELETE", "jobs", 503);
        assert!(h.reconcile("leftover").await.is_err());
        assert_eq!(cell(&h.run("leftover"), "a").phase, CellPhase::Succeeded);
        assert_eq!(
            h.fake.list("deployments").len(),
            1,
            "a's Deployment is left behind"
        );
        h.reconcile("leftover").await.unwrap();
        assert!(
            h.fake.list("deployments").is_empty(),
            "deleted by the next step"
        );
        assert!(h.fake.list("jobs").is_empty());
        assert_eq!(
            cell(&h.run("leftover"), "b").phase,
            CellPhase::Pending,
            "b waits for them"
        );
        h.fake.stop_terminating_pods();
        h.reconcile("leftover").await.unwrap();
        assert_eq!(cell(&h.run("leftover"), "b").phase, CellPhase::Deploying);
    })
    .await;
}

/// The load generator has printed its result, but the kubelet has not yet reported its pod's
/// end (seconds, more after an API server outage): once the planned load is over the result is
/// read from the log; a document still being written is waited for.
#[tokio::test]
async fn a_printed_result_is_read_before_the_pod_is_reported_succeeded() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("early", &["a"]));
        until(&h, "early", |r| cell(r, "a").phase == CellPhase::Running).await;
        let job = h.fake.list("jobs")[0].clone();
        let name = job["metadata"]["name"].as_str().unwrap().to_owned();
        let pod = format!("{name}-0-abcde");
        h.fake.insert(
            "pods",
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod, "namespace": super::NS,
                             "labels": job["spec"]["template"]["metadata"]["labels"],
                             "ownerReferences": [super::owner(&job)]},
                "spec": {"containers": [{"name": "loadgen"}]},
                "status": {"phase": "Running", "containerStatuses": [{"name": "loadgen",
                    "ready": true, "restartCount": 0, "image": "x", "imageID": "",
                    "state": {"running": {}}}]},
            }),
        );
        h.fake.edit("jobs", super::NS, &name, |j| {
            j["status"] = json!({"active": 1})
        });
        let log = super::canned_log(400.0);
        // Half the document: the load generator is still writing it.
        h.fake.set_log(super::NS, &pod, &log[..log.len() / 2]);
        h.advance(11); // 1 s warm-up + 2 x 5 s phases
        h.reconcile("early").await.unwrap();
        assert_eq!(
            cell(&h.run("early"), "a").phase,
            CellPhase::Running,
            "a cut document waits"
        );
        h.fake.set_log(super::NS, &pod, &log);
        h.advance(1);
        h.reconcile("early").await.unwrap();
        let a = cell(&h.run("early"), "a").clone();
        assert_eq!(a.phase, CellPhase::Succeeded, "{a:#?}");
        assert_eq!(a.results[1].latency_ms.unwrap().p99, 400.0);
    })
    .await;
}
