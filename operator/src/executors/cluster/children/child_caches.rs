//! The Controllers' caches of the runs' children: the Deployments, Services, Jobs and pods the
//! operator labels, kept by the same watches that trigger reconciles.
//!
//! While a target comes up, each of its pods' changes triggers a reconcile, and each of those
//! read the Deployment, the Service and the pods from the API server: three reads per reconcile,
//! at the moment the node and the API server are busiest starting the pods. On a two-node test
//! cluster these reconciles were the slow ones of a 50-run burst (`observe-target`: p50 24 ms,
//! 58 of 429 over 64 ms). They read the caches now, as a controller-runtime operator's client
//! does by default. So do the reconciles while a load runs (the Job and the pods), apart from
//! the reads that take its result: the load generators' logs.
//!
//! A cache is at least as new as the watch event that triggered the reconcile, but can be behind
//! the operator's own writes: a Deployment or Service applied a moment ago may not be in it yet.
//! So an object the cache lacks is read from the API server before the turn takes it for missing
//! (which would apply it again). The caches are used only once every one of them has been
//! listed; until then, and in the reads that take a measurement's result, the API server is read.

use std::collections::BTreeMap;

use futures::FutureExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::runtime::reflector::{ObjectRef, Store};

use crate::executors::cluster::placement::node_cache::NodeCache;

/// The caches of one Controller's scope: the whole cluster, or one namespace.
#[derive(Clone)]
pub struct ChildCaches {
    /// The scope: `None` for every namespace.
    pub scope: Option<String>,
    /// Deployments labelled as the operator's.
    pub deployments: Store<Deployment>,
    /// Services labelled as the operator's.
    pub services: Store<Service>,
    /// Jobs labelled as the operator's.
    pub jobs: Store<Job>,
    /// Pods labelled as the operator's.
    pub pods: Store<Pod>,
}

impl ChildCaches {
    /// Whether every cache has been listed once, and is still kept (its watch has not ended).
    fn listed(&self) -> bool {
        let ready = |r: Option<Result<(), _>>| matches!(r, Some(Ok(())));
        ready(self.deployments.wait_until_ready().now_or_never())
            && ready(self.services.wait_until_ready().now_or_never())
            && ready(self.jobs.wait_until_ready().now_or_never())
            && ready(self.pods.wait_until_ready().now_or_never())
    }

    /// The Deployment `ns/name`, if the cache holds it.
    pub fn deployment(&self, ns: &str, name: &str) -> Option<Deployment> {
        let key = ObjectRef::new(name).within(ns);
        self.deployments.get(&key).map(|d| (*d).clone())
    }

    /// The Service `ns/name`, if the cache holds it.
    pub fn service(&self, ns: &str, name: &str) -> Option<Service> {
        let key = ObjectRef::new(name).within(ns);
        self.services.get(&key).map(|s| (*s).clone())
    }

    /// The Job `ns/name`, if the cache holds it.
    pub fn job(&self, ns: &str, name: &str) -> Option<Job> {
        let key = ObjectRef::new(name).within(ns);
        self.jobs.get(&key).map(|j| (*j).clone())
    }

    /// The pods of `ns` that `selects` picks by their labels, by name (the order a list has).
    pub fn pods(&self, ns: &str, selects: impl Fn(&BTreeMap<String, String>) -> bool) -> Vec<Pod> {
        let none = BTreeMap::new();
        let mut pods: Vec<Pod> = self
            .pods
            .state()
            .into_iter()
            .filter(|p| p.metadata.namespace.as_deref() == Some(ns))
            .filter(|p| selects(p.metadata.labels.as_ref().unwrap_or(&none)))
            .map(|p| (*p).clone())
            .collect();
        pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        pods
    }
}

/// The caches of every Controller, each over its scope, and the cluster's nodes.
#[derive(Clone, Default)]
pub struct Caches {
    /// One per Controller.
    pub scopes: Vec<ChildCaches>,
    /// The nodes, when a watch keeps them (`placement/node_cache.rs`).
    pub nodes: Option<NodeCache>,
}

impl Caches {
    /// The caches that hold namespace `ns`, once they have been listed.
    pub fn of(&self, ns: &str) -> Option<&ChildCaches> {
        self.scopes
            .iter()
            .find(|c| c.scope.as_deref().is_none_or(|s| s == ns))
            .filter(|c| c.listed())
    }

    /// Every node, when the node watch has listed them and follows them still.
    pub fn nodes(&self) -> Option<Vec<k8s_openapi::api::core::v1::Node>> {
        self.nodes.as_ref()?.nodes()
    }
}

/// Caches whose writers a test holds and fills: nothing listed yet.
#[cfg(test)]
pub(crate) fn for_tests(scope: Option<&str>) -> (ChildCaches, TestWriters) {
    use kube::runtime::reflector::store::Writer;
    let (deployments, services, jobs, pods) = (
        Writer::<Deployment>::default(),
        Writer::<Service>::default(),
        Writer::<Job>::default(),
        Writer::<Pod>::default(),
    );
    let caches = ChildCaches {
        scope: scope.map(Into::into),
        deployments: deployments.as_reader(),
        services: services.as_reader(),
        jobs: jobs.as_reader(),
        pods: pods.as_reader(),
    };
    (caches, TestWriters(deployments, services, jobs, pods))
}

/// The writers behind [`for_tests`]' caches.
#[cfg(test)]
pub(crate) struct TestWriters(
    pub kube::runtime::reflector::store::Writer<Deployment>,
    pub kube::runtime::reflector::store::Writer<Service>,
    pub kube::runtime::reflector::store::Writer<Job>,
    pub kube::runtime::reflector::store::Writer<Pod>,
);

#[cfg(test)]
impl TestWriters {
    /// Lists every object anew into the caches, as a watch's relist does.
    pub fn relist(
        &mut self,
        deployments: &[Deployment],
        services: &[Service],
        jobs: &[Job],
        pods: &[Pod],
    ) {
        use kube::runtime::watcher::Event;
        fn relist<K: kube::Resource<DynamicType = ()> + Clone>(
            writer: &mut kube::runtime::reflector::store::Writer<K>,
            objects: &[K],
        ) {
            writer.apply_watcher_event(&Event::Init);
            for o in objects {
                writer.apply_watcher_event(&Event::InitApply(o.clone()));
            }
            writer.apply_watcher_event(&Event::InitDone);
        }
        relist(&mut self.0, deployments);
        relist(&mut self.1, services);
        relist(&mut self.2, jobs);
        relist(&mut self.3, pods);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;
    use kube::runtime::watcher::Event;

    fn pod(ns: &str, name: &str, labels: &[(&str, &str)]) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(ns.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).into(), (*v).into()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn caches(scope: Option<&str>, pods: &[Pod], listed: bool) -> (ChildCaches, TestWriters) {
        let (caches, mut writers) = for_tests(scope);
        if listed {
            writers.relist(&[], &[], &[], pods);
        } else {
            for p in pods {
                writers.3.apply_watcher_event(&Event::Apply(p.clone()));
            }
        }
        (caches, writers)
    }

    #[test]
    fn the_pods_of_a_namespace_are_picked_by_their_labels_in_name_order() {
        let (c, _writers) = caches(
            None,
            &[
                pod("a", "p2", &[("role", "target")]),
                pod("a", "p1", &[("role", "target")]),
                pod("a", "lg", &[("role", "loadgen")]),
                pod("b", "p0", &[("role", "target")]),
            ],
            true,
        );
        let targets = c.pods("a", |l| l.get("role").map(String::as_str) == Some("target"));
        let names: Vec<_> = targets
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        assert_eq!(names, ["p1", "p2"]);
    }

    #[test]
    fn caches_serve_their_own_scope_once_listed() {
        let (a, _a) = caches(Some("a"), &[], true);
        let (everywhere, everywhere_writers) = caches(None, &[], false);
        let all = Caches {
            scopes: vec![a, everywhere],
            nodes: None,
        };
        assert_eq!(all.of("a").and_then(|c| c.scope.as_deref()), Some("a"));
        // The cluster-wide caches hold "b" but have not been listed yet: the API server is read.
        assert!(all.of("b").is_none());
        assert!(Caches::default().of("a").is_none());
        // Nor are caches whose watch has ended (the Controller stopped): they no longer follow.
        drop(everywhere_writers);
        assert!(all.of("b").is_none());
    }
}
