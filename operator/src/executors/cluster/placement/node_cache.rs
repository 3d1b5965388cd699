//! The cluster's nodes, kept by a watch of their own, for the fit check before a cell is
//! deployed (`fit.rs`).
//!
//! Each admission used to list every node first: a round trip before the status write and the
//! first Deployment and Service, all in one reconcile (6.5-8 ms at the median on a two-node test
//! cluster), and on a large cluster a list of every node with every node's image list. Nodes
//! change seldom; a watch keeps them at the cost of one open request.
//!
//! The watch is not one of a Controller's: a node's change triggers no reconcile, and its
//! errors must not go through the Controllers' shared trigger backoff. It retries on its own
//! backoff; a watch that breaks off resumes from the last version it saw and misses nothing, so
//! the cache is served meanwhile (an API server outage is the reconcile's to notice: it reads no
//! cache then). The cache is not served while the nodes are listed anew (at the start, or after
//! the API server has compacted past the watch's version): until the list ends the store still
//! holds the nodes from before it, some of which may have gone. Then the fit check lists the
//! nodes from the API server, as it does when the operator may not watch them (a namespaced
//! install without the chart's node rule, or RBAC granted a moment after the operator started):
//! the watch then says so once and asks again every few minutes.
//!
//! A node is kept whole but for the list of every image it holds (often tens of kilobytes a
//! node, and read by nothing here) and its managed fields: the fit check reads labels, taints,
//! the unschedulable flag and allocatable, and a parallel run's slots the Ready condition too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::{Future, FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::Event;
use kube::runtime::{WatchStreamExt, watcher};

/// How long a watch the API server refused waits before it asks again.
const RETRY_AFTER_REFUSAL: Duration = Duration::from_secs(300);

/// The nodes as the watch last saw them, and whether they may be served.
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

/// The cache of the cluster's nodes, and the watch that keeps it (it runs until dropped).
pub fn watch(client: &kube::Client) -> (NodeCache, impl Future<Output = ()> + Send + 'static) {
    watch_retrying_after(client, RETRY_AFTER_REFUSAL)
}

/// [`watch`], asking again `retry` after the API server refused it.
fn watch_retrying_after(
    client: &kube::Client,
    retry: Duration,
) -> (NodeCache, impl Future<Output = ()> + Send + 'static) {
    let (store, mut writer) = reflector::store();
    let following = Arc::new(AtomicBool::new(false));
    let cache = NodeCache {
        store,
        following: following.clone(),
    };
    let api = Api::<Node>::all(client.clone());
    let keep = async move {
        // A watch that has stopped (its task aborted) must not leave its last nodes served.
        let _unserve = Unserve(following.clone());
        let mut refused_before = false;
        loop {
            let events = watcher(api.clone(), watcher::Config::default())
                .modify(drop_what_no_reader_needs)
                .default_backoff();
            futures::pin_mut!(events);
            while let Some(event) = events.next().await {
                match event {
                    Ok(event) => {
                        writer.apply_watcher_event(&event);
                        let relisting = matches!(event, Event::Init | Event::InitApply(_));
                        following.store(!relisting, Ordering::Relaxed);
                    }
                    Err(e) if forbidden(&e) => {
                        following.store(false, Ordering::Relaxed);
                        if refused_before {
                            tracing::debug!(error = %e, "may still not watch nodes");
                        } else {
                            tracing::info!(
                                error = %e,
                                "may not watch nodes; each cell's fit check lists them instead \
                                 (asked again every 5 minutes)"
                            );
                        }
                        refused_before = true;
                        break;
                    }
                    Err(e) => tracing::debug!(error = %e, "node watch error; it resumes"),
                }
            }
            tokio::time::sleep(retry).await;
        }
    };
    (cache, keep)
}

/// Stops the cache being served when the watch that keeps it is dropped.
struct Unserve(Arc<AtomicBool>);

impl Drop for Unserve {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
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
    use crate::executors::cluster::tests::until;
    use serde_json::json;

    /// A node as a real one comes: with taints, an annotation, a Ready condition and a list of
    /// the images it holds.
    fn node(name: &str, cpu: &str) -> serde_json::Value {
        let mut node = crate::executors::cluster::tests::node(name, cpu, "4Gi");
        node["metadata"]["annotations"] = json!({"node.alpha.kubernetes.io/ttl": "0"});
        node["spec"] =
            json!({"taints": [{"key": "dedicated", "value": "bench", "effect": "NoSchedule"}]});
        node["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
        node["status"]["images"] =
            json!([{"names": ["registry.example/big:1"], "sizeBytes": 123456789}]);
        node
    }

    /// A fake API server that sends watch events and holds one node, `n1`.
    fn fake_with_a_node() -> FakeApi {
        let fake = FakeApi::default();
        fake.serve_watch_events();
        fake.insert_cluster_scoped("nodes", node("n1", "2"));
        fake
    }

    #[tokio::test]
    async fn the_nodes_are_served_once_listed_with_what_the_fit_check_and_slots_read() {
        let fake = fake_with_a_node();
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
    async fn a_refused_list_serves_nothing_and_is_asked_again_later() {
        let fake = fake_with_a_node();
        fake.fail_next("GET", "nodes", 403);
        let (cache, keep) = watch_retrying_after(&fake.client(), Duration::from_millis(50));
        let task = tokio::spawn(keep);
        until("the refused list", || {
            fake.api_calls_of("list", "nodes") == 1
        })
        .await;
        assert!(cache.nodes().is_none());
        // RBAC granted meanwhile: the next try lists and serves them.
        until("listed again after the wait", || cache.nodes().is_some()).await;
        assert_eq!(fake.api_calls_of("list", "nodes"), 2);
        task.abort();
    }

    #[tokio::test]
    async fn nodes_listed_but_not_watchable_are_not_served() {
        let fake = fake_with_a_node();
        fake.fail_next("WATCH", "nodes", 403);
        let (cache, keep) = watch_retrying_after(&fake.client(), Duration::from_secs(3600));
        let task = tokio::spawn(keep);
        until("the refused watch", || {
            fake.api_calls_of("watch", "nodes") == 1
        })
        .await;
        until("no longer served", || cache.nodes().is_none()).await;
        // Nothing would tell the cache of a node's change: it stays unserved.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(cache.nodes().is_none());
        task.abort();
    }

    #[tokio::test]
    async fn a_stopped_watch_leaves_nothing_served() {
        let fake = fake_with_a_node();
        let (cache, keep) = watch(&fake.client());
        let task = tokio::spawn(keep);
        until("the nodes listed", || cache.nodes().is_some()).await;
        task.abort();
        let _ = task.await;
        assert!(cache.nodes().is_none());
    }
}
