//! The reads while a target comes up and while its load runs, from the watches' caches
//! (`children/child_caches.rs`): none goes to the API server once the caches hold the step's
//! objects (until the result is read from the load generator's log), and an object they lack
//! (applied a moment ago, its watch event still on the way) is read rather than applied again.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use serde::de::DeserializeOwned;

use super::{Harness, healthy, sample, until, with_timeout};
use crate::executors::cluster::children::child_caches::{self, Caches, TestWriters};
use crate::executors::cluster::placement::node_cache;
use crate::resource::{CellPhase, RunPhase};

/// Every object of `resource` the fake holds, typed.
fn all<K: DeserializeOwned>(h: &Harness, resource: &str) -> Vec<K> {
    h.fake
        .list(resource)
        .into_iter()
        .map(|v| serde_json::from_value(v).expect("the fake holds well-formed objects"))
        .collect()
}

/// The caches catch up with the fake: every watch relisted.
fn catch_up(h: &Harness, writers: &mut TestWriters) {
    let deployments: Vec<Deployment> = all(h, "deployments");
    let services: Vec<Service> = all(h, "services");
    let jobs: Vec<Job> = all(h, "jobs");
    let pods: Vec<Pod> = all(h, "pods");
    writers.relist(&deployments, &services, &jobs, &pods);
}

/// One reconcile of `name` and the calls it made, short ("GET deployments/x", "PATCH jobs/x").
async fn reconcile_calls(h: &Harness, name: &str) -> Vec<String> {
    let from = h.fake.calls().len();
    h.reconcile(name).await.unwrap();
    h.fake.calls()[from..].iter().map(|c| c.short()).collect()
}

#[tokio::test]
async fn a_target_coming_up_is_read_from_the_caches_and_what_they_lack_from_the_api() {
    with_timeout(async {
        let mut h = Harness::new();
        let (caches, mut writers) = child_caches::for_tests(None);
        Arc::get_mut(&mut h.ctx)
            .expect("nothing else holds the context yet")
            .children = Caches {
            scopes: vec![caches],
            nodes: None,
        };
        h.fake.insert("benchmarkruns", sample("cached", &["a"]));

        // Admitted: the Deployment and Service are applied. The caches are listed but have not
        // seen them yet.
        writers.relist(&[], &[], &[], &[]);
        h.reconcile("cached").await.unwrap();
        assert_eq!(h.phase("cached"), RunPhase::Running);
        let calls = reconcile_calls(&h, "cached").await;
        assert!(
            calls.iter().any(|c| c.starts_with("GET deployments/")),
            "a Deployment the cache lacks is read: {calls:?}"
        );
        assert!(
            !calls.iter().any(|c| c.starts_with("PATCH")),
            "and not applied again: {calls:?}"
        );

        // Once the caches hold the target's objects and pods, a look at the target reads
        // nothing from the API server.
        catch_up(&h, &mut writers);
        assert_eq!(reconcile_calls(&h, "cached").await, Vec::<String>::new());

        // The pods come up, the caches see them: the load starts from what they show.
        h.simulate(&healthy);
        catch_up(&h, &mut writers);
        let calls = reconcile_calls(&h, "cached").await;
        assert!(
            !calls
                .iter()
                .any(|c| c.starts_with("GET deployments") || c.starts_with("GET services")),
            "{calls:?}"
        );
        assert!(
            calls.iter().any(|c| c.starts_with("PATCH jobs/")),
            "{calls:?}"
        );
        let run = h.run("cached");
        let cell = &run.status.as_ref().unwrap().cells[0];
        assert_eq!(cell.phase, CellPhase::Running, "{cell:#?}");
        let cm = &h.fake.list("configmaps")[0];
        let plan = cm["data"]["plan-0.yaml"].as_str().unwrap();
        assert!(plan.contains("target: http://10.96.0.10:8080"), "{plan}");
        assert!(
            plan.contains("10.1.0.1:8080"),
            "the replica from the cache: {plan}"
        );

        // While the load runs, the Job and the pods come from the caches too...
        catch_up(&h, &mut writers);
        assert_eq!(reconcile_calls(&h, "cached").await, Vec::<String>::new());

        // ...until the load generator has ended: its result is its log's, read from the API.
        h.simulate(&healthy);
        catch_up(&h, &mut writers);
        let calls = reconcile_calls(&h, "cached").await;
        assert!(
            calls.iter().any(|c| c.ends_with("/log")),
            "the result is read: {calls:?}"
        );
        assert!(
            !calls.iter().any(|c| c.starts_with("GET jobs")),
            "{calls:?}"
        );
        let run = h.run("cached");
        let cell = &run.status.as_ref().unwrap().cells[0];
        assert_eq!(cell.phase, CellPhase::Succeeded, "measured: {cell:#?}");
        assert_eq!(
            cell.results.len(),
            3,
            "its figures, from the log: {cell:#?}"
        );
    })
    .await;
}

/// Gives `h`'s reconciles the node watch's cache, and waits until it has listed the fake's
/// nodes; the watch runs until the returned task is aborted.
async fn watch_nodes(h: &mut Harness) -> tokio::task::JoinHandle<()> {
    let (nodes, node_watch) = node_cache::watch(&h.fake.client());
    let watch = tokio::spawn(node_watch);
    Arc::get_mut(&mut h.ctx)
        .expect("nothing else holds the context yet")
        .children = Caches {
        scopes: Vec::new(),
        nodes: Some(nodes.clone()),
    };
    until("the nodes listed", || nodes.nodes().is_some()).await;
    watch
}

/// The fit check at each admission reads the nodes from the node watch's cache
/// (`placement/node_cache.rs`): no list of the nodes in the admission's reconcile, and a cell too
/// big for the cached nodes still fails at once, named, with nothing deployed.
#[tokio::test]
async fn an_admission_checks_the_fit_against_the_watched_nodes_without_listing_them() {
    with_timeout(async {
        let mut h = Harness::new();
        h.fake
            .insert_cluster_scoped("nodes", super::node("kind-control-plane", "2", "8Gi"));
        let watch = watch_nodes(&mut h).await;
        // 2 CPUs for the target plus 1 for the load generator: more than the node holds.
        let mut run = sample("fit", &["big", "small"]);
        run["spec"]["configurations"][0]["cpu"] = serde_json::json!("2");
        run["spec"]["configurations"][1]["cpu"] = serde_json::json!("500m");
        run["spec"]["loadgen"] = serde_json::json!({"cpu": "1"});
        h.fake.insert("benchmarkruns", run);
        let lists = h.fake.api_calls_of("list", "nodes");
        reconcile_calls(&h, "fit").await;
        assert_eq!(
            h.fake.api_calls_of("list", "nodes"),
            lists,
            "the nodes come from the watch"
        );
        let status = h.run("fit").status.unwrap();
        let big = &status.cells[0];
        assert_eq!(big.phase, CellPhase::Failed, "{status:#?}");
        assert_eq!(big.reason.as_deref(), Some("Unschedulable"));
        assert!(
            big.message
                .as_deref()
                .unwrap()
                .contains("the largest allocatable is 2 (node kind-control-plane)"),
            "{big:#?}"
        );
        assert!(
            !h.fake.creations().iter().any(|(r, _)| r == "deployments"),
            "{:?}",
            h.fake.creations()
        );
        // The next cell fits, and is deployed, with the nodes still read from the cache.
        let calls = reconcile_calls(&h, "fit").await;
        assert_eq!(h.fake.api_calls_of("list", "nodes"), lists);
        assert_eq!(h.fake.list("deployments").len(), 1, "{calls:?}");
        watch.abort();
    })
    .await;
}

/// A parallel run cuts its slots from the watched nodes as it would from listed ones: the cache
/// keeps each node's Ready condition, which the slots count by (`placement/slots.rs`).
#[tokio::test]
async fn a_parallel_run_cuts_its_slots_from_the_watched_nodes() {
    with_timeout(async {
        let mut h = Harness::new();
        for name in ["node-a", "node-b"] {
            let mut node = super::node(name, "2", "8Gi");
            node["status"]["conditions"] = serde_json::json!([{"type": "Ready", "status": "True"}]);
            h.fake.insert_cluster_scoped("nodes", node);
        }
        let watch = watch_nodes(&mut h).await;
        let mut run = sample("wide", &["a", "b"]);
        run["spec"]["parallelism"] = serde_json::json!(2);
        h.fake.insert("benchmarkruns", run);
        let lists = h.fake.api_calls_of("list", "nodes");
        reconcile_calls(&h, "wide").await;
        assert_eq!(
            h.fake.api_calls_of("list", "nodes"),
            lists,
            "the nodes come from the watch"
        );
        let status = h.run("wide").status.unwrap();
        let parallelism = status.parallelism.as_ref().expect("slots recorded");
        assert_eq!(parallelism.slots, 2, "{parallelism:#?}");
        assert_eq!(
            parallelism.node_sets,
            [vec!["node-a".to_owned()], vec!["node-b".to_owned()]]
        );
        // The second slot's cell is deployed in the next turn, beside the first.
        reconcile_calls(&h, "wide").await;
        assert_eq!(h.fake.api_calls_of("list", "nodes"), lists);
        assert_eq!(h.fake.list("deployments").len(), 2, "both cells at once");
        watch.abort();
    })
    .await;
}
