//! The operator's real Controllers (`process::wiring::wire`, as `benchmatrix operator` builds them)
//! over the faked API server: with `--namespace a` they list and watch namespace a only and never
//! see a run in namespace b; with no namespace they watch the whole cluster; with several, the
//! admission queue (`--max-active-runs`) counts runs across all of them.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::fake::FakeApi;
use super::{sample, until, with_timeout};
use crate::executors::cluster::adapter::Settings;
use crate::executors::cluster::process::calls::{API_CALLS, is_controller_watch};
use crate::executors::cluster::process::wiring::{Wiring, drive, wire};
use crate::executors::cluster::telemetry::metrics::Metrics;

/// `sample(name)` placed in namespace `ns`.
fn run_in(ns: &str, name: &str) -> Value {
    let mut run = sample(name, &["a"]);
    run["metadata"]["namespace"] = ns.into();
    run
}

/// Starts the operator's Controllers for `namespaces` over `fake`, at most `max_active` runs at
/// once; they stop when the returned tasks are aborted (or the test's runtime ends).
fn start(
    fake: &FakeApi,
    namespaces: &[&str],
    max_active: usize,
) -> Vec<tokio::task::JoinHandle<()>> {
    let namespaces: Vec<String> = namespaces.iter().map(|ns| ns.to_string()).collect();
    let Wiring {
        controllers, ctx, ..
    } = wire(
        &fake.client(),
        &namespaces,
        max_active,
        Arc::new(Metrics::default()),
        Settings::default(),
        None,
        Arc::default(),
    );
    controllers
        .into_iter()
        .map(|c| tokio::spawn(drive(c, ctx.clone(), futures::future::pending())))
        .collect()
}

fn phase(fake: &FakeApi, ns: &str, name: &str) -> Option<String> {
    let run = fake.get("benchmarkruns", ns, name)?;
    run["status"]["phase"].as_str().map(str::to_owned)
}

#[tokio::test]
async fn an_operator_for_namespace_a_ignores_a_run_in_namespace_b() {
    with_timeout(async {
        let fake = FakeApi::default();
        fake.insert("benchmarkruns", run_in("a", "x"));
        fake.insert("benchmarkruns", run_in("b", "y"));
        let tasks = start(&fake, &["a"], 1);

        until("the run in namespace a to start", || {
            phase(&fake, "a", "x").as_deref() == Some("Running")
        })
        .await;
        assert_eq!(fake.list("deployments").len(), 1);
        // Let the Controllers run a while longer: still nothing of namespace b.
        tokio::time::sleep(Duration::from_millis(300)).await;
        for task in &tasks {
            task.abort();
        }
        assert_eq!(phase(&fake, "b", "y"), None, "the run in b was touched");
        // Nodes are cluster-scoped and only listed (the scheduling pre-check), and namespace a
        // itself is read (its Pod Security label); every other call stays in namespace a.
        for call in fake.calls() {
            if call.resource == "nodes" {
                continue;
            }
            if call.resource == "namespaces" {
                assert_eq!(call.name.as_deref(), Some("a"), "{}", call.short());
                continue;
            }
            assert_eq!(
                call.namespace.as_deref(),
                Some("a"),
                "a call outside namespace a: {}",
                call.short()
            );
        }
        for object in fake.list("deployments").iter().chain(&fake.list("events")) {
            assert_eq!(object["metadata"]["namespace"], "a", "{object}");
        }
        fake.check_calls_are_declared();
    })
    .await;
}

/// The Controllers' namespaced watch streams listed in `API_CALLS` (the calls a Role in each
/// watched namespace must allow) are the ones a namespaced operator really makes, no more: with
/// the reconciler's test (`every_listed_reconciler_call_is_made_by_a_run_with_a_ttl`) every
/// namespaced call listed is shown to be made.
#[tokio::test]
async fn scoped_controllers_make_every_listed_watch_call() {
    with_timeout(async {
        let fake = FakeApi::default();
        fake.insert("benchmarkruns", run_in("a", "x"));
        let tasks = start(&fake, &["a"], 1);
        let listed: Vec<_> = API_CALLS
            .iter()
            .filter(|c| c.namespaced && is_controller_watch(c))
            .collect();
        let made = |c: &crate::executors::cluster::ApiCall| {
            fake.api_calls().iter().any(|r| {
                r.verb == c.verb
                    && r.group == c.group
                    && r.resource == c.resource
                    && r.subresource == c.subresource
                    && r.namespaced == c.namespaced
            })
        };
        until("every listed namespaced watch call", || {
            listed.iter().all(|c| made(c))
        })
        .await;
        for task in &tasks {
            task.abort();
        }
        // Besides the nodes list and the read of a run's own namespace (its Pod Security label),
        // cluster-scoped by nature and granted by their own ClusterRole, no call spans all
        // namespaces.
        assert!(
            fake.api_calls().iter().all(|r| r.namespaced
                || (r.resource == "nodes" && r.verb == "list")
                || (r.resource == "namespaces" && r.verb == "get")),
            "a namespaced operator makes no call across all namespaces: {:?}",
            fake.api_calls()
        );
        fake.check_calls_are_declared();
    })
    .await;
}

#[tokio::test]
async fn an_operator_for_the_whole_cluster_reconciles_both() {
    with_timeout(async {
        let fake = FakeApi::default();
        fake.insert("benchmarkruns", run_in("a", "x"));
        fake.insert("benchmarkruns", run_in("b", "y"));
        let tasks = start(&fake, &[], 2);
        // Both get a status. (The fake's watches send no events, so the cache keeps x Pending
        // and y waits behind it in the queue; in a cluster, y would start too.)
        until("both runs to be reconciled", || {
            phase(&fake, "a", "x").as_deref() == Some("Running") && phase(&fake, "b", "y").is_some()
        })
        .await;
        for task in &tasks {
            task.abort();
        }
        assert!(
            fake.calls()
                .iter()
                .any(|c| c.namespace.is_none() && c.resource == "benchmarkruns"),
            "runs are listed across all namespaces"
        );
        fake.check_calls_are_declared();
    })
    .await;
}

#[tokio::test]
async fn the_queue_counts_runs_across_every_watched_namespace() {
    with_timeout(async {
        let fake = FakeApi::default();
        // x, in namespace b, is the older run, so it goes first; y, in namespace a, must wait
        // for it although a's own Controller sees no other run. (Namespace a's Controller is
        // built first: a context that knew only its cache would let y start.)
        fake.insert("benchmarkruns", run_in("b", "x"));
        fake.insert("benchmarkruns", run_in("a", "y"));
        let tasks = start(&fake, &["a", "b"], 1);
        until("both runs to be reconciled", || {
            phase(&fake, "b", "x").as_deref() == Some("Running")
                && fake.get("benchmarkruns", "a", "y").unwrap()["status"]["message"].is_string()
        })
        .await;
        for task in &tasks {
            task.abort();
        }
        let y = fake.get("benchmarkruns", "a", "y").unwrap();
        assert_eq!(y["status"]["phase"], "Pending", "{y}");
        let message = y["status"]["message"].as_str().unwrap();
        assert!(message.starts_with("queued:"), "{message}");
        let deployments = fake.list("deployments");
        assert_eq!(deployments.len(), 1, "only x deployed");
        assert_eq!(deployments[0]["metadata"]["namespace"], "b");
        fake.check_calls_are_declared();
    })
    .await;
}

#[tokio::test]
async fn a_waiting_run_is_not_admitted_before_every_namespace_has_been_listed() {
    with_timeout(async {
        let fake = FakeApi::default();
        fake.insert("benchmarkruns", run_in("b", "x"));
        fake.insert("benchmarkruns", run_in("a", "y"));
        // Namespace b's first list fails, so its cache fills only after the watcher's backoff,
        // while namespace a's Controller is already reconciling y.
        fake.fail_next_in("GET", "benchmarkruns", "b", 500);
        let tasks = start(&fake, &["a", "b"], 1);
        until("both runs to be reconciled", || {
            phase(&fake, "b", "x").as_deref() == Some("Running")
                && fake.get("benchmarkruns", "a", "y").unwrap()["status"]["message"].is_string()
        })
        .await;
        for task in &tasks {
            task.abort();
        }
        let y = fake.get("benchmarkruns", "a", "y").unwrap();
        assert_eq!(
            y["status"]["phase"], "Pending",
            "y started before x was known: {y}"
        );
        assert_eq!(fake.list("deployments").len(), 1, "only x deployed");
    })
    .await;
}
