//! The wiring of the operator: one Controller per watched namespace (or one over the cluster),
//! each with the watches of the runs' children whose caches the reconciles read, the node
//! cache, and the context every reconcile shares (admission queue, outage, gate, settings).
//! [`drive`] runs a Controller's reconciles and reads what its output says beyond them.

use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::core::{DeserializeGuard, NamespaceResourceScope};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};

use crate::executors::cluster::adapter;
use crate::executors::cluster::children::child_caches;
use crate::executors::cluster::placement::{node_cache, queue};
use crate::executors::cluster::reconciler::{backoff, gate, outage, reconcile};
use crate::executors::cluster::telemetry::kubelet::reader::KubeletReader;
use crate::executors::cluster::telemetry::metrics::Metrics;
use crate::resource::{BenchmarkRun, labels};

/// The operator's Controllers, their caches of runs, and the context they share.
pub struct Wiring {
    /// One Controller per watched namespace, or one over the whole cluster.
    pub controllers: Vec<Controller<DeserializeGuard<BenchmarkRun>>>,
    /// Each Controller's cache of BenchmarkRuns, in the same order.
    pub stores: Vec<Store<DeserializeGuard<BenchmarkRun>>>,
    /// The context every Controller reconciles with; it sees every cache, so the admission
    /// queue counts runs across all watched namespaces.
    pub ctx: Arc<reconcile::Context>,
    /// The watch that keeps the context's cache of nodes (`placement/node_cache.rs`), for the caller to
    /// drive; until it has listed them, each fit check lists them from the API server.
    pub node_watch: futures::future::BoxFuture<'static, ()>,
}

/// Builds the Controllers for `namespaces` (every namespace when empty, see [`controllers`])
/// and the context they share. Their reconciles pass `gate` first (`reconciler/gate.rs`).
pub fn wire(
    client: &kube::Client,
    namespaces: &[String],
    max_active_runs: usize,
    metrics: Arc<Metrics>,
    settings: adapter::Settings,
    kubelet: Option<Arc<KubeletReader>>,
    gate: Arc<gate::Gate>,
) -> Wiring {
    let mut queue = queue::Queue::default();
    let outage = Arc::new(outage::Outage::default());
    let (nodes, node_watch) = node_cache::watch(client);
    let mut children = child_caches::Caches {
        scopes: Vec::new(),
        nodes: Some(nodes),
    };
    let controllers: Vec<_> = controllers(client, namespaces, &outage)
        .into_iter()
        .map(|(scope, controller, caches)| {
            // Waiting runs are woken through this channel when a slot frees up (placement/queue.rs).
            let (waker, wakes) = futures::channel::mpsc::unbounded();
            queue.add_waker(scope, waker);
            children.scopes.push(caches);
            controller.reconcile_on(wakes)
        })
        .collect();
    let stores: Vec<_> = controllers.iter().map(Controller::store).collect();
    let mut caches = stores.iter().cloned();
    let first = caches
        .next()
        .expect("controllers() makes at least one Controller");
    let mut ctx = reconcile::Context::new(client.clone(), first, max_active_runs, metrics);
    ctx.runs.extend(caches);
    ctx.settings = settings;
    ctx.queue = queue;
    ctx.outage = outage;
    ctx.kubelet = kubelet;
    ctx.gate = gate;
    ctx.children = children;
    Wiring {
        controllers,
        stores,
        ctx: Arc::new(ctx),
        node_watch: node_watch.boxed(),
    }
}

/// One Controller per namespace in `namespaces`, or one over the whole cluster when it is empty.
/// Each watches BenchmarkRuns, and the Deployments, Jobs and pods the operator labels, in its
/// scope only.
/// Each comes with its scope (`None` for the whole cluster, or its namespace) and the caches its
/// watches keep.
pub fn controllers(
    client: &kube::Client,
    namespaces: &[String],
    outage: &Arc<outage::Outage>,
) -> Vec<(
    Option<String>,
    Controller<DeserializeGuard<BenchmarkRun>>,
    child_caches::ChildCaches,
)> {
    if namespaces.is_empty() {
        let (controller, caches) = controller(client, None, outage);
        vec![(None, controller, caches)]
    } else {
        namespaces
            .iter()
            .map(|ns| {
                let (controller, caches) = controller(client, Some(ns), outage);
                (Some(ns.clone()), controller, caches)
            })
            .collect()
    }
}

/// The Controller over one namespace, or over all of them (`None`), and the caches of the
/// children it watches.
fn controller(
    client: &kube::Client,
    namespace: Option<&str>,
    outage: &Arc<outage::Outage>,
) -> (
    Controller<DeserializeGuard<BenchmarkRun>>,
    child_caches::ChildCaches,
) {
    let managed = watcher::Config::default().labels(&format!(
        "{}={}",
        labels::MANAGED_BY_LABEL,
        labels::MANAGED_BY
    ));
    // The watches that trigger reconciles keep the caches the reconciles read (`child_caches`).
    let (deployments, deployments_writer) = reflector::store();
    let (services, services_writer) = reflector::store();
    let (jobs, jobs_writer) = reflector::store();
    let (pods, pods_writer) = reflector::store();
    let controller = Controller::new(
        scoped::<DeserializeGuard<BenchmarkRun>>(client, namespace),
        watcher::Config::default().any_semantic(),
    )
    // kube's default grows to 30 s and is shared by all the watches below: after an API server
    // outage the operator sat idle for minutes. See reconciler/backoff.rs.
    .trigger_backoff(backoff::WatchBackoff::new(outage.clone()))
    .owns_stream(
        reflector::reflector(
            deployments_writer,
            watcher(scoped::<Deployment>(client, namespace), managed.clone()),
        )
        .touched_objects(),
    )
    .owns_stream(
        reflector::reflector(
            services_writer,
            watcher(scoped::<Service>(client, namespace), managed.clone()),
        )
        .touched_objects(),
    )
    .owns_stream(
        reflector::reflector(
            jobs_writer,
            watcher(scoped::<Job>(client, namespace), managed.clone()),
        )
        .touched_objects(),
    )
    .watches_stream(
        reflector::reflector(
            pods_writer,
            watcher(scoped::<Pod>(client, namespace), managed.clone()),
        )
        .touched_objects(),
        |pod: Pod| {
            let ns = pod.namespace();
            pod.labels().get(labels::RUN_LABEL).map(|run| {
                ObjectRef::<DeserializeGuard<BenchmarkRun>>::new(run)
                    .within(ns.as_deref().unwrap_or("default"))
            })
        },
    );
    let caches = child_caches::ChildCaches {
        scope: namespace.map(str::to_owned),
        deployments,
        services,
        jobs,
        pods,
    };
    (controller, caches)
}

/// An API over one namespace, or over all of them (`None`).
fn scoped<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Runs `controller`'s reconciles with `ctx` until `shutdown` resolves and the reconciles in
/// flight have ended.
pub fn drive(
    controller: Controller<DeserializeGuard<BenchmarkRun>>,
    ctx: Arc<reconcile::Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> impl Future<Output = ()> + Send {
    controller
        // Not `shutdown_on_signal()`: its graceful drain waits for the BenchmarkRun cache to be
        // listed once, which never happens while the API server is unreachable (see `drain`).
        .graceful_shutdown_on(shutdown)
        .run(reconcile::reconcile, reconcile::error_policy, ctx.clone())
        .for_each(move |result| {
            after_reconcile(&ctx, result);
            std::future::ready(())
        })
}

/// What a Controller's output says beyond the reconcile itself: a watch error starts (or
/// continues) an API server outage, a completed reconcile ends one, and a run that is gone
/// (deleted while Running, say) may have freed a slot for a waiting run.
fn after_reconcile<T, E: std::fmt::Display>(
    ctx: &Arc<reconcile::Context>,
    result: Result<T, kube::runtime::controller::Error<E, watcher::Error>>,
) {
    use kube::runtime::controller::Error as Failed;
    match result {
        Ok(_) => {
            if ctx.outage.answered().is_some() {
                ctx.forget_failures();
            }
        }
        Err(Failed::QueueError(e)) if !outage::watch_unreachable(&e) => {
            // The API server answered (410 Expired after a compaction, say): the watch
            // re-lists by itself.
            tracing::debug!(error = %e, "watch error; re-listing");
        }
        Err(Failed::QueueError(e)) => {
            if ctx.outage.watch_failed(&e) {
                let ctx = ctx.clone();
                tokio::spawn(async move {
                    let client = ctx.client.clone();
                    outage::wait_for_api(client, &ctx.outage, || {
                        ctx.forget_failures();
                        ctx.queue.wake_unfinished(&ctx.runs);
                    })
                    .await;
                });
            }
        }
        Err(Failed::ObjectNotFound(gone)) => {
            tracing::debug!(run = %gone, "a run is gone; waking the runs at the head of the queue");
            ctx.queue.wake_waiting(&ctx.runs);
            // Were it the run woken last to show its place, the next one goes now.
            let mut run = queue::RunRef::new(&gone.name);
            run.namespace.clone_from(&gone.namespace);
            ctx.queue.reconciled(&run, &ctx.runs);
        }
        Err(e) => tracing::debug!(error = %e, "reconcile did not complete"),
    }
}
