//! The cluster's nodes, kept by a watch of their own, for the fit check before a cell is
//! deployed (`fit.rs`).
//!
//! Each admission used to list every node first: a round trip before the status write and the
//! first Deployment and Service, all in one reconcile, which with 50 runs queued made the
//! admissions the slowest reconciles (on a two-node test cluster the list took 6.5-11 ms at the
//! median of 50). Nodes change seldom; a watch keeps them at the cost of one open request.
//!
//! The watch is not one of a Controller's: a node's change triggers no reconcile, and its
//! errors must not go through the Controllers' shared trigger backoff. It retries on its own
//! backoff. An operator that may not list or watch nodes (a namespaced install without the
//! chart's node rule) stops the watch, and the fit check lists the nodes as before, which
//! fails the same way and skips the check (`observe::list_nodes`). So does any moment the watch
//! is not following: before its first list, after an error until the next event.
//!
//! A node is kept whole but for the list of every image it holds (often tens of kilobytes a
//! node, and read by nothing here) and its managed fields: the fit check reads labels, taints,
//! the unschedulable flag and allocatable, and a parallel run's slots the Ready condition too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::{Future, FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};

/// The nodes as the watch last saw them, and whether it still follows them.
#[derive(Clone)]
pub struct NodeCache {
    store: Store<Node>,
    following: Arc<AtomicBool>,
}

impl NodeCache {
    /// Every node, if the watch has listed them and follows them still.
    pub fn nodes(&self) -> Option<Vec<Node>> {
        let listed = matches!(self.store.wait_until_ready().now_or_never(), Some(Ok(())));
        (listed && self.following.load(Ordering::Relaxed))
            .then(|| self.store.state().iter().map(|n| (**n).clone()).collect())
    }
}

/// The cache of the cluster's nodes, and the watch that keeps it: it ends only when the
/// operator may not list or watch nodes.
pub fn watch(client: &kube::Client) -> (NodeCache, impl Future<Output = ()> + Send + 'static) {
    let (store, writer) = reflector::store();
    let following = Arc::new(AtomicBool::new(false));
    let cache = NodeCache {
        store,
        following: following.clone(),
    };
    let events = reflector::reflector(
        writer,
        watcher(Api::<Node>::all(client.clone()), watcher::Config::default())
            .modify(drop_what_no_reader_needs)
            .default_backoff(),
    );
    let keep = async move {
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            match event {
                Ok(_) => following.store(true, Ordering::Relaxed),
                Err(e) if forbidden(&e) => {
                    following.store(false, Ordering::Relaxed);
                    tracing::info!(
                        error = %e,
                        "may not watch nodes; each cell's fit check lists them instead"
                    );
                    return;
                }
                Err(e) => {
                    following.store(false, Ordering::Relaxed);
                    tracing::debug!(error = %e, "node watch error; it retries");
                }
            }
        }
    };
    (cache, keep)
}

/// Whether the API server refused the operator the nodes (RBAC), which retrying cannot mend.
fn forbidden(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.code == 403,
        watcher::Error::WatchError(status) => status.code == 403,
        _ => false,
    }
}

/// Drops the bulk of a node that neither `fit.rs` nor `slots.rs` reads, so a large cluster's
/// nodes cost little memory.
fn drop_what_no_reader_needs(node: &mut Node) {
    node.metadata.managed_fields = None;
    if let Some(status) = node.status.as_mut() {
        status.images = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executors::cluster::tests::fake::FakeApi;
    use serde_json::json;
    use std::time::Duration;

    fn node(name: &str, cpu: &str) -> serde_json::Value {
        json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name},
                "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            },
            "spec": {"taints": [{"key": "dedicated", "value": "bench", "effect": "NoSchedule"}]},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "4Gi"},
                "capacity": {"cpu": cpu, "memory": "4Gi"},
                "conditions": [{"type": "Ready", "status": "True"}],
                "images": [{"names": ["registry.example/big:1"], "sizeBytes": 123456789}],
            },
        })
    }

    async fn until(what: &str, mut done: impl FnMut() -> bool) {
        for _ in 0..500 {
            if done() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("not within 5 s: {what}");
    }

    #[tokio::test]
    async fn the_nodes_are_served_once_listed_with_what_the_fit_check_and_slots_read() {
        let fake = FakeApi::default();
        fake.serve_watch_events();
        fake.insert_cluster_scoped("nodes", node("n1", "2"));
        let (cache, keep) = watch(&fake.client());
        assert!(cache.nodes().is_none(), "nothing before the first list");
        let task = tokio::spawn(keep);
        until("the nodes listed", || cache.nodes().is_some()).await;
        let nodes = cache.nodes().unwrap();
        assert_eq!(nodes.len(), 1);
        let n1 = &nodes[0];
        assert_eq!(
            n1.metadata.labels.as_ref().unwrap()["kubernetes.io/hostname"],
            "n1"
        );
        assert_eq!(n1.spec.as_ref().unwrap().taints.as_ref().unwrap().len(), 1);
        let status = n1.status.as_ref().unwrap();
        assert_eq!(status.allocatable.as_ref().unwrap()["cpu"].0, "2");
        // slots.rs counts only Ready nodes.
        let ready = &status.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (ready.type_.as_str(), ready.status.as_str()),
            ("Ready", "True")
        );
        assert!(status.images.is_none(), "the images are not kept");

        // A node that joins later is seen through the watch.
        fake.insert_cluster_scoped("nodes", node("n2", "1"));
        until("the second node seen", || {
            cache.nodes().is_some_and(|n| n.len() == 2)
        })
        .await;
        task.abort();
        fake.check_calls_are_declared();
    }

    #[tokio::test]
    async fn a_watch_the_operator_may_not_make_ends_and_serves_nothing() {
        let fake = FakeApi::default();
        fake.serve_watch_events();
        fake.insert_cluster_scoped("nodes", node("n1", "2"));
        fake.fail_next("GET", "nodes", 403);
        let (cache, keep) = watch(&fake.client());
        tokio::time::timeout(Duration::from_secs(5), keep)
            .await
            .expect("a refused node watch ends instead of retrying");
        assert!(cache.nodes().is_none());
    }
}
