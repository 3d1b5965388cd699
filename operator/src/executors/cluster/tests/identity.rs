//! A run's pods are its own: a run deleted and created again under the same name (as a CI job
//! does with `kubectl benchmatrix run --replace`) never reads, counts or waits on the pods of
//! the earlier run as its own steps', nor on pods made by hand with its labels. Each test runs
//! the reads from the API server and again from the watches' caches.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use serde_json::{Value, json};

use super::with_timeout;
use super::{Behaviour, Harness, NS, canned_log, healthy, owner, replica_set_of, sample};
use crate::executors::cluster::children::child_caches::{self, Caches, TestWriters};
use crate::resource::{CellPhase, RunPhase};

/// The harness, with the watches' caches when `cached` (kept up to date by [`refresh`]).
fn harness(cached: bool) -> (Harness, Option<TestWriters>) {
    let mut h = Harness::new();
    if !cached {
        return (h, None);
    }
    let (caches, writers) = child_caches::for_tests(None);
    Arc::get_mut(&mut h.ctx)
        .expect("nothing else holds the context yet")
        .children = Caches {
        scopes: vec![caches],
        nodes: None,
    };
    (h, Some(writers))
}

/// The caches, if any, catch up with the fake.
fn refresh(h: &Harness, writers: &mut Option<TestWriters>) {
    let Some(writers) = writers else { return };
    fn all<K: serde::de::DeserializeOwned>(h: &Harness, resource: &str) -> Vec<K> {
        h.fake
            .list(resource)
            .into_iter()
            .map(|v| serde_json::from_value(v).unwrap())
            .collect()
    }
    let deployments: Vec<Deployment> = all(h, "deployments");
    let services: Vec<Service> = all(h, "services");
    let jobs: Vec<Job> = all(h, "jobs");
    let pods: Vec<Pod> = all(h, "pods");
    writers.relist(&deployments, &services, &jobs, &pods);
}

/// The labels a pod of run `run` with UID `uid` carries for cell `cell`, repetition 1, role
/// `role`; `uid` None: the labels an operator before run UIDs gave (no UID, no repetition).
fn labels(run: &str, uid: Option<&str>, cell: &str, role: &str) -> Value {
    let mut labels = json!({
        "benchmatrix.dev/run": run,
        "benchmatrix.dev/cell": cell,
        "benchmatrix.dev/role": role,
        "app.kubernetes.io/managed-by": "benchmatrix",
    });
    if let Some(uid) = uid {
        labels["benchmatrix.dev/run-uid"] = json!(uid);
        labels["benchmatrix.dev/repetition"] = json!("1");
    }
    labels
}

/// A finished load generator pod with a whole result document (a fast/mixed p99 of
/// `p99` ms) as its log's last line.
fn finished_loadgen(h: &Harness, name: &str, labels: Value, owner: Option<Value>, p99: f64) {
    let mut meta = json!({"name": name, "namespace": NS, "labels": labels});
    if let Some(owner) = owner {
        meta["ownerReferences"] = json!([owner]);
    }
    h.fake.insert(
        "pods",
        json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "loadgen"}]},
            "status": {"phase": "Succeeded", "containerStatuses": [{"name": "loadgen",
                "ready": false, "restartCount": 0, "image": "x", "imageID": "",
                "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]},
        }),
    );
    h.fake.set_log(NS, name, &canned_log(p99));
}

/// A Ready, running target pod at `ip`.
fn ready_target(h: &Harness, name: &str, ip: &str, labels: Value, owner: Option<Value>) {
    let mut meta = json!({"name": name, "namespace": NS, "labels": labels});
    if let Some(owner) = owner {
        meta["ownerReferences"] = json!([owner]);
    }
    h.fake.insert(
        "pods",
        json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "target"}], "nodeName": "node-1"},
            "status": {"phase": "Running", "podIP": ip,
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "target", "ready": true, "restartCount": 0,
                    "image": "x", "imageID": "", "state": {"running": {}}}]},
        }),
    );
}

/// The fast stream's p99 in the mixed phase that the run `name`'s only cell measured.
fn measured_p99(h: &Harness, name: &str) -> f64 {
    let status = h.run(name).status.unwrap();
    let cell = &status.cells[0];
    assert_eq!(cell.phase, CellPhase::Succeeded, "{cell:#?}");
    cell.results
        .iter()
        .find(|r| r.phase == "mixed" && r.endpoint == "fast")
        .and_then(|r| r.latency_ms.as_ref())
        .map(|l| l.p99)
        .expect("a mixed/fast p99")
}

/// An earlier run of the same name left its finished load generator pods of the same cell and
/// repetition behind, their result documents still in their logs (labelled by this operator,
/// and by one from before run UIDs), and someone made a pod by hand with this very run's
/// labels: the new run reads none of them. It does not end before its own load generator has,
/// and reports its own figures.
#[tokio::test]
async fn an_earlier_runs_finished_load_generator_is_never_read_as_this_runs_result() {
    for cached in [false, true] {
        with_timeout(async {
            let (h, mut writers) = harness(cached);
            h.fake.insert("benchmarkruns", sample("again", &["b"]));
            let uid = h.fake.get("benchmarkruns", NS, "again").unwrap()["metadata"]["uid"]
                .as_str()
                .unwrap()
                .to_owned();
            let old_job = json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "again-b-0ld", "uid": "uid-of-the-old-job"}});
            let old = labels("again", Some("uid-of-the-old-run"), "b", "loadgen");
            finished_loadgen(&h, "again-b-0ld-0-aaaaa", old, Some(owner(&old_job)), 900.0);
            let before_uids = labels("again", None, "b", "loadgen");
            finished_loadgen(
                &h,
                "again-b-0lder-0-bbbbb",
                before_uids,
                Some(owner(&old_job)),
                901.0,
            );
            let by_hand = labels("again", Some(&uid), "b", "loadgen");
            finished_loadgen(&h, "again-by-hand", by_hand, None, 902.0);

            // Deployed, the target ready, the load generator started but still running.
            for _ in 0..4 {
                refresh(&h, &mut writers);
                h.reconcile("again").await.unwrap();
                h.simulate(&|_| Behaviour::Busy);
                h.advance(1);
            }
            for _ in 0..20 {
                refresh(&h, &mut writers);
                h.reconcile("again").await.unwrap();
                h.advance(1);
            }
            let status = h.run("again").status.unwrap();
            assert_eq!(
                status.phase,
                RunPhase::Running,
                "cached {cached}: {status:#?}"
            );
            assert_eq!(status.cells[0].phase, CellPhase::Running, "{status:#?}");

            // Its own load generator ends: its own figures (healthy: a p99 of 20 ms).
            h.simulate(&healthy);
            for _ in 0..5 {
                refresh(&h, &mut writers);
                h.reconcile("again").await.unwrap();
                h.advance(1);
            }
            assert_eq!(h.phase("again"), RunPhase::Succeeded);
            assert_eq!(measured_p99(&h, "again"), 20.0, "cached {cached}");
        })
        .await;
    }
}

/// An earlier run's Ready target pod (and one made by hand with this run's labels) is not
/// counted as a ready replica of the new run, even when its Deployment claims to be available:
/// the load starts only once the run's own pod is ready, and against it alone.
#[tokio::test]
async fn an_earlier_runs_ready_target_pod_is_not_counted_as_a_replica() {
    for cached in [false, true] {
        with_timeout(async {
            let (h, mut writers) = harness(cached);
            h.fake.insert("benchmarkruns", sample("again", &["a"]));
            let uid = h.fake.get("benchmarkruns", NS, "again").unwrap()["metadata"]["uid"]
                .as_str()
                .unwrap()
                .to_owned();
            refresh(&h, &mut writers);
            h.reconcile("again").await.unwrap();
            let dep = h.fake.list("deployments").remove(0);
            let old_dep = json!({"metadata": {"name": "again-a-0ld", "uid": "old-dep"}});
            let old = labels("again", Some("uid-of-the-old-run"), "a", "target");
            ready_target(
                &h,
                "old-target",
                "10.9.9.1",
                old,
                Some(replica_set_of(&old_dep)),
            );
            let before_uids = labels("again", None, "a", "target");
            ready_target(
                &h,
                "older-target",
                "10.9.9.2",
                before_uids,
                Some(replica_set_of(&old_dep)),
            );
            let by_hand = dep["spec"]["template"]["metadata"]["labels"].clone();
            assert_eq!(by_hand["benchmatrix.dev/run-uid"], json!(uid));
            ready_target(&h, "by-hand", "10.9.9.3", by_hand, None);
            let name = dep["metadata"]["name"].as_str().unwrap().to_owned();
            h.fake.edit("deployments", NS, &name, |d| {
                d["status"] = json!({"replicas": 1, "availableReplicas": 1});
            });
            h.fake.edit("services", NS, &name, |s| {
                s["spec"]["clusterIP"] = json!("10.96.0.10");
            });
            for _ in 0..3 {
                refresh(&h, &mut writers);
                h.reconcile("again").await.unwrap();
                h.advance(1);
            }
            let status = h.run("again").status.unwrap();
            assert_eq!(
                status.cells[0].phase,
                CellPhase::Deploying,
                "cached {cached}: {status:#?}"
            );
            assert!(
                h.fake.list("jobs").is_empty(),
                "no load against another's pods"
            );

            // Its own replica comes up: the load runs against it alone.
            h.simulate(&|_| Behaviour::Busy);
            refresh(&h, &mut writers);
            h.reconcile("again").await.unwrap();
            let cell = &h.run("again").status.unwrap().cells[0];
            assert_eq!(cell.phase, CellPhase::Running, "{cell:#?}");
            let recorded: Vec<&str> = cell.target_pods.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(recorded, [format!("{name}-pod0")], "{cell:#?}");
            let cm = &h.fake.list("configmaps")[0];
            let plan = cm["data"]["plan-0.yaml"].as_str().unwrap();
            assert!(plan.contains("10.1.0.1:8080"), "{plan}");
            assert!(
                !plan.contains("10.9.9."),
                "another's pod in the plan: {plan}"
            );
        })
        .await;
    }
}

/// A run created again under its old name starts while the earlier run's target pod is still
/// stopping on the node: its first step waits for that pod (it would share the CPU), naming it,
/// and deploys once the pod has stopped; the pod is never deleted by the new run.
#[tokio::test]
async fn the_first_step_waits_for_an_earlier_runs_pod_still_running_and_leaves_it_alone() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("again", &["a"]));
        let old_dep = json!({"metadata": {"name": "again-a-0ld", "uid": "old-dep"}});
        let old = labels("again", Some("uid-of-the-old-run"), "a", "target");
        ready_target(
            &h,
            "old-target",
            "10.9.9.1",
            old,
            Some(replica_set_of(&old_dep)),
        );
        h.fake.edit("pods", NS, "old-target", |p| {
            p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        });
        h.reconcile("again").await.unwrap();
        let run = h.run("again");
        let status = run.status.as_ref().unwrap();
        assert!(h.fake.list("deployments").is_empty(), "{status:#?}");
        let message = status.message.as_deref().unwrap_or_default();
        assert!(
            message.contains("waiting for 1 pod(s) of an earlier cell to stop: old-target"),
            "{message}"
        );
        assert!(
            !h.fake
                .calls()
                .iter()
                .any(|c| c.method == "DELETE" && c.resource != "events"),
            "the earlier run's objects are not the new run's to delete: {:?}",
            h.fake.calls()
        );

        // The pod's containers stop: the step deploys.
        h.fake.edit("pods", NS, "old-target", |p| {
            p["status"]["containerStatuses"][0]["state"] =
                json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
        });
        h.advance(1);
        h.reconcile("again").await.unwrap();
        assert_eq!(h.fake.list("deployments").len(), 1);
    })
    .await;
}

/// A pod made by hand with the run's labels that never stops is named in the lingering-pods
/// failure once the ready timeout has passed since the run started, and is never measured.
#[tokio::test]
async fn a_pod_made_by_hand_that_never_stops_fails_the_first_cell_lingering_naming_it() {
    with_timeout(async {
        let h = Harness::new();
        h.fake.insert("benchmarkruns", sample("again", &["a"]));
        let uid = h.fake.get("benchmarkruns", NS, "again").unwrap()["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut by_hand = labels("again", Some(&uid), "a", "target");
        by_hand["benchmatrix.dev/repetition"] = json!("7");
        ready_target(&h, "made-by-hand", "10.9.9.3", by_hand, None);
        h.reconcile("again").await.unwrap();
        assert_eq!(h.phase("again"), RunPhase::Running);
        // The sample's ready timeout is 30 s.
        h.advance(31);
        h.reconcile("again").await.unwrap();
        let cell = h.run("again").status.unwrap().cells.remove(0);
        assert_eq!(cell.phase, CellPhase::Failed, "{cell:#?}");
        assert_eq!(cell.reason.as_deref(), Some("PreviousPodsLingering"));
        assert!(
            cell.message.as_deref().unwrap().contains("made-by-hand"),
            "{cell:#?}"
        );
        assert!(h.fake.get("pods", NS, "made-by-hand").is_some());
    })
    .await;
}
