//! `benchmatrix operator`: the BenchmarkRun controller.
//!
//! Each reconcile (`reconcile.rs`) makes sure it decides from a fresh enough copy of the run,
//! reads what the engine's machine names (`observe.rs`), takes one engine turn on it
//! (`adapter`, pure, with the objects from `build`), writes the status by server-side apply,
//! and only then applies and deletes the children it asked for (`write.rs`). Events go out
//! behind the reconciles (`events.rs`).
//!
//! Watches: BenchmarkRuns (through `DeserializeGuard`, so one malformed object cannot stall the
//! watch), the Deployments, Services and Jobs they own, and pods labelled with a run (image
//! pulls, readiness, OOM). The Deployments, Services, Jobs and pods are cached as they are
//! watched (`child_caches.rs`), for the reads while a target comes up and while its load runs.
//!
//! Scope: every namespace by default (one Controller over the cluster, which needs a
//! ClusterRole), or the namespaces named with `--namespace` (one Controller per namespace, each
//! watching only its own, so a Role in each is enough). The Controllers share one context, so
//! `--max-active-runs` counts runs across every watched namespace.

pub mod adapter;
pub mod children;
pub mod placement;
pub mod process;
pub mod reconciler;
pub mod telemetry;

pub use process::calls::{API_CALLS, ApiCall};

#[cfg(test)]
pub(crate) mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::core::{DeserializeGuard, NamespaceResourceScope};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};

use crate::executors::cluster::telemetry::kubelet::reader::KubeletReader;
use crate::executors::cluster::telemetry::metrics::Metrics;
use crate::resource::{BenchmarkRun, labels};
use crate::run_metrics;
use children::{child_caches, images};
use placement::{node_cache, queue};
use process::admin::{self, AdminState};
use process::leader;
use reconciler::{backoff, gate, outage, reconcile};
use telemetry::logging::{self, LogFormat};

/// Arguments of `benchmatrix operator`.
#[derive(Debug, clap::Args)]
pub struct OperatorArgs {
    /// At most this many BenchmarkRuns run at once across the cluster; the others wait in phase
    /// Pending with a message saying they are queued (cells share the cluster's CPU).
    #[arg(long, env = "BENCHMATRIX_MAX_ACTIVE_RUNS", default_value_t = 1)]
    pub max_active_runs: usize,
    /// Address of the /healthz, /readyz and /metrics server.
    #[arg(
        long = "metrics-addr",
        alias = "admin-addr",
        env = "BENCHMATRIX_METRICS_ADDR",
        default_value = "0.0.0.0:8080"
    )]
    pub admin_addr: SocketAddr,
    /// Target image for runs whose spec.target.image is not set.
    #[arg(
        long,
        env = "BENCHMATRIX_TARGET_IMAGE",
        default_value = crate::resource::spec::DEFAULT_TARGET_IMAGE,
        value_parser = parse_image
    )]
    pub target_image: String,
    /// Load generator image for runs whose spec.loadgen.image is not set.
    #[arg(
        long,
        env = "BENCHMATRIX_LOADGEN_IMAGE",
        default_value = crate::resource::spec::DEFAULT_LOADGEN_IMAGE,
        value_parser = parse_image
    )]
    pub loadgen_image: String,
    /// Images runs may use, as glob patterns over the full image reference (nginx:1 is
    /// docker.io/library/nginx:1): `*` matches within one path segment, `**` across them, e.g.
    /// ghcr.io/acme/* or registry.local:5000/bench-*:*. Repeat the flag or separate with
    /// commas. A run whose target or load generator image (its own, or the defaults above)
    /// matches none fails with reason ImageNotAllowed. Not given: every image is allowed (an
    /// image that is no valid reference fails with InvalidImageReference either way).
    #[arg(
        long = "allowed-images",
        env = "BENCHMATRIX_ALLOWED_IMAGES",
        value_delimiter = ',',
        value_name = "PATTERN"
    )]
    pub allowed_images: Vec<images::ImagePattern>,
    /// The Pod Security Standards level every pod the operator creates must meet, checked on
    /// the merged pod before anything of a run is created: restricted, baseline or privileged
    /// (no check). A namespace's pod-security.kubernetes.io/enforce label can make it stricter
    /// there, never looser. A run whose pods would not meet it fails with reason InvalidSpec.
    #[arg(
        long = "pod-security",
        env = "BENCHMATRIX_POD_SECURITY",
        default_value = "restricted",
        value_name = "LEVEL"
    )]
    pub pod_security: crate::resource::pod_security::Level,
    /// Watch only this namespace for BenchmarkRuns (repeat the flag, or separate with commas,
    /// for several). Not given: every namespace, which needs a ClusterRole; with it, a Role in
    /// each named namespace is enough.
    #[arg(
        long = "namespace",
        env = "BENCHMATRIX_WATCH_NAMESPACES",
        value_delimiter = ',',
        value_name = "NAMESPACE",
        value_parser = parse_namespace
    )]
    pub namespaces: Vec<String>,
    /// Log format.
    #[arg(
        long,
        env = "BENCHMATRIX_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    pub log_format: LogFormat,
    /// After SIGTERM, how long reconciles in flight may run before the process exits anyway
    /// (keep it below the pod's terminationGracePeriodSeconds, 30s by default). A second
    /// SIGTERM stops at once.
    #[arg(
        long,
        env = "BENCHMATRIX_SHUTDOWN_TIMEOUT",
        default_value = "20s",
        value_parser = parse_duration
    )]
    pub shutdown_timeout: ShutdownTimeout,
    /// Read each target container's CPU seconds, CFS throttling and memory working set from the
    /// kubelet of its node (`/metrics/resource` and `/metrics/cadvisor`, authorized as
    /// nodes/metrics), for any image. `false`: only what a target reports on its own /stats.
    #[arg(
        long,
        env = "BENCHMATRIX_KUBELET_METRICS",
        default_value_t = true,
        action = clap::ArgAction::Set,
        value_name = "BOOL"
    )]
    pub kubelet_metrics: bool,
    /// Do not verify the kubelets' serving certificates against the cluster CA (as
    /// metrics-server's --kubelet-insecure-tls): for clusters whose kubelets serve self-signed
    /// certificates, such as kind's. The token is still sent only to the address each Node
    /// reports.
    #[arg(long, env = "BENCHMATRIX_KUBELET_INSECURE_TLS")]
    pub kubelet_insecure_tls: bool,
    /// Take part in leader election through a coordination.k8s.io Lease, so that of several
    /// replicas only the holder reconciles (the others stand by with warm caches and take over
    /// when the Lease expires, or at once when the leader shuts down). Needs get, create and
    /// patch on leases in the operator's namespace.
    #[arg(
        long,
        env = "BENCHMATRIX_LEADER_ELECT",
        default_value_t = false,
        action = clap::ArgAction::Set,
        value_name = "BOOL"
    )]
    pub leader_elect: bool,
    /// The leader Lease's name (in the operator's own namespace, or --leader-lease-namespace).
    #[arg(
        long,
        env = "BENCHMATRIX_LEADER_LEASE",
        default_value = "benchmatrix-operator",
        value_parser = parse_namespace
    )]
    pub leader_lease: String,
    /// The leader Lease's namespace. Not given: the operator's own (the POD_NAMESPACE variable,
    /// else the service account's namespace, else the kubeconfig's).
    #[arg(long, env = "POD_NAMESPACE", value_parser = parse_namespace)]
    pub leader_lease_namespace: Option<String>,
    /// How long the leader Lease holds without renewal, in seconds (2 to 300): a standby takes
    /// over at most this long after a leader dies without releasing it. The leader renews a
    /// third of it before expiry.
    #[arg(
        long,
        env = "BENCHMATRIX_LEADER_LEASE_SECONDS",
        default_value_t = 15,
        value_parser = clap::value_parser!(u64).range(2..=300)
    )]
    pub leader_lease_seconds: u64,
    /// Export the figures of this many finished runs on /metrics (the ones that finished last;
    /// 0 to 100): each run adds a few series per cell, phase and endpoint, so the bound keeps
    /// the number of series bounded.
    #[arg(
        long,
        env = "BENCHMATRIX_EXPORTED_RUNS",
        default_value_t = run_metrics::DEFAULT_EXPORTED_RUNS,
        value_parser = run_metrics::parse_limit,
        value_name = "N"
    )]
    pub exported_runs: usize,
}

/// `--shutdown-timeout`: a duration written like "20s", "500ms" or "1m".
#[derive(Debug, Clone, Copy)]
pub struct ShutdownTimeout(pub Duration);

impl From<ShutdownTimeout> for Duration {
    fn from(t: ShutdownTimeout) -> Self {
        t.0
    }
}

/// A namespace name: a DNS-1123 label (lower-case letters, digits and '-', at most 63).
/// A default image must be a valid reference: one that is not would fail every run that
/// leaves the image out, so the operator refuses to start instead. It is kept as written.
fn parse_image(s: &str) -> Result<String, String> {
    match s.parse::<images::ImageReference>() {
        Ok(_) => Ok(s.to_owned()),
        Err(e) => Err(format!("{s:?} is not a valid image reference: {e}")),
    }
}

fn parse_namespace(s: &str) -> Result<String, String> {
    let valid = !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if valid {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a namespace name (lower-case letters, digits and '-', at most 63, \
             starting and ending with a letter or digit)"
        ))
    }
}

fn parse_duration(s: &str) -> Result<ShutdownTimeout, String> {
    s.parse::<benchmatrix_loadgen::duration::Duration>()
        .map(|d| ShutdownTimeout(d.0))
        .map_err(|e| format!("{e} (examples: 20s, 500ms, 1m)"))
}

/// Runs the operator until SIGTERM or Ctrl-C.
pub fn main(args: OperatorArgs) -> std::process::ExitCode {
    logging::init(args.log_format);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("benchmatrix operator: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "operator stopped");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(args: OperatorArgs) -> anyhow::Result<()> {
    // Signals are watched before anything can block on the API server, so a SIGTERM during
    // start-up is not lost.
    let stop = ShutdownSignals::install();
    let config = kube::Config::infer().await?;
    let metrics = Arc::new(Metrics::exporting(run_metrics::RunMetrics::new(
        args.exported_runs,
    )));
    let client = counted_client(config.clone(), metrics.clone())?;
    let kubelet = args.kubelet_metrics.then(|| {
        Arc::new(KubeletReader::new(
            config.clone(),
            args.kubelet_insecure_tls,
        ))
    });
    let gate = Arc::new(gate::Gate::closed(args.leader_elect));
    let admin_state = AdminState {
        metrics: metrics.clone(),
        ready: Default::default(),
        gate: gate.clone(),
    };
    let admin = serve_admin(args.admin_addr, admin_state.clone(), &stop).await?;
    let mut namespaces = args.namespaces.clone();
    namespaces.sort();
    namespaces.dedup();
    let settings = adapter::Settings {
        target_image: args.target_image.clone(),
        loadgen_image: args.loadgen_image.clone(),
        allowed_images: images::ImagePolicy::new(args.allowed_images.clone()),
        pod_security: args.pod_security,
    };
    warn_about_refused_defaults(&settings);
    let wiring = wire(
        &client,
        &namespaces,
        args.max_active_runs,
        metrics.clone(),
        settings,
        kubelet,
        gate.clone(),
    );
    tokio::spawn(ready_once_listed(
        wiring.stores.clone(),
        admin_state.ready.clone(),
    ));
    let wake_all = {
        let ctx = wiring.ctx.clone();
        move || ctx.queue.wake_all(&ctx.runs)
    };
    tokio::spawn(watch_crd(
        client.clone(),
        gate.clone(),
        metrics.clone(),
        wake_all.clone(),
    ));
    let (release_lease, released) = tokio::sync::oneshot::channel::<()>();
    let election = if args.leader_elect {
        let election = leader::Election {
            namespace: args
                .leader_lease_namespace
                .clone()
                .unwrap_or_else(|| config.default_namespace.clone()),
            lease: args.leader_lease.clone(),
            identity: leader_identity(),
            duration: args.leader_lease_seconds,
        };
        tracing::info!(identity = %election.identity, lease = %election.lease, namespace = %election.namespace, "leader election: waiting for the Lease");
        let lease_client = election.client(config.clone())?;
        Some(tokio::spawn(leader::take_part(
            election,
            lease_client,
            gate.clone(),
            metrics.clone(),
            wake_all,
            async move {
                let _ = released.await;
            },
        )))
    } else {
        metrics.robustness.set_leader(true);
        None
    };
    tracing::info!(
        max_active_runs = args.max_active_runs,
        namespaces = %if namespaces.is_empty() { "all".to_owned() } else { namespaces.join(",") },
        pod_security = %wiring.ctx.settings.pod_security,
        allowed_images = %if wiring.ctx.settings.allowed_images.allows_all() {
            "all".to_owned()
        } else {
            wiring.ctx.settings.allowed_images.describe()
        },
        "controller starting"
    );
    run_until_stopped(wiring, &stop, args.shutdown_timeout.into()).await;
    // Only once nothing reconciles any more: the standby may take over at once.
    if let Some(task) = election {
        let _ = release_lease.send(());
        let _ = tokio::time::timeout(Duration::from_secs(3), task).await;
    }
    close_admin(admin).await;
    tracing::info!("operator stopped");
    Ok(())
}

/// The API client of the reconciles and watches, counting each request it sends in
/// `benchmatrix_api_requests_total` (requests per reconcile is that over
/// `benchmatrix_reconciles_total`).
fn counted_client(config: kube::Config, metrics: Arc<Metrics>) -> anyhow::Result<kube::Client> {
    let count =
        tower::util::MapRequestLayer::new(move |request: http::Request<kube::client::Body>| {
            let watch = request
                .uri()
                .query()
                .is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
            let verb = if watch {
                "WATCH"
            } else {
                request.method().as_str()
            };
            metrics.robustness.api_request(verb);
            request
        });
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&count)
        .build())
}

/// This replica's name in the leader Lease: its pod's name (the chart passes POD_NAME), else
/// the host's name, which is the pod's name in a pod.
fn leader_identity() -> String {
    std::env::var("POD_NAME")
        .ok()
        .filter(|n| !n.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| format!("benchmatrix-operator-{}", std::process::id()))
}

/// Checks the installed CRD at once and then every [`gate::CRD_CHECK_EVERY`], keeping the gate
/// closed while it differs from this build's (logged once per installed version, with what
/// differs) and waking every run when it opens.
async fn watch_crd(
    client: kube::Client,
    gate: Arc<gate::Gate>,
    metrics: Arc<Metrics>,
    wake_all: impl Fn(),
) {
    let mut said = None::<String>;
    loop {
        match gate::check_crd(&client).await {
            gate::CrdState::Matches => {
                metrics.robustness.set_crd_schema_matches(true);
                if gate.crd_problem().is_some() {
                    tracing::info!(
                        crd = gate::CRD_NAME,
                        "the installed CRD carries this operator's schema"
                    );
                }
                said = None;
                if gate.set_crd_problem(None) {
                    wake_all();
                }
            }
            gate::CrdState::Differs(why) => {
                metrics.robustness.set_crd_schema_matches(false);
                if said.as_deref() != Some(why.as_str()) {
                    tracing::error!(crd = gate::CRD_NAME, "{why}");
                    said = Some(why.clone());
                }
                gate.set_crd_problem(Some(why));
            }
            gate::CrdState::Unknown {
                why,
                forbidden: true,
            } => {
                // An older chart's RBAC: going on unchecked beats stopping every run.
                if said.as_deref() != Some(why.as_str()) {
                    tracing::warn!(error = %why, "may not read the BenchmarkRun CRD (the chart's ClusterRole needs get on customresourcedefinitions); reconciling without checking its schema");
                    said = Some(why);
                }
                if gate.set_crd_problem(None) {
                    wake_all();
                }
            }
            gate::CrdState::Unknown { why, .. } => {
                // Unreachable for now: the last verdict stands (at start-up, closed).
                tracing::debug!(error = %why, "could not read the BenchmarkRun CRD; checking again");
            }
        }
        tokio::time::sleep(gate::CRD_CHECK_EVERY).await;
    }
}

/// Starts the admin server (`/healthz`, `/readyz`, `/metrics`) on `addr`; it begins its
/// graceful shutdown with the first signal.
async fn serve_admin(
    addr: SocketAddr,
    state: AdminState,
    stop: &ShutdownSignals,
) -> anyhow::Result<tokio::task::JoinHandle<std::io::Result<()>>> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr().unwrap_or(addr);
    tracing::info!(addr = %bound, "admin server listening");
    Ok(tokio::spawn(
        axum::serve(listener, admin::app(state))
            .with_graceful_shutdown(stop.clone().requested())
            .into_future(),
    ))
}

/// Runs every Controller until a shutdown signal, then drains each for at most `deadline`.
async fn run_until_stopped(wiring: Wiring, stop: &ShutdownSignals, deadline: Duration) {
    let Wiring {
        controllers,
        stores,
        ctx,
        node_watch,
    } = wiring;
    // Aborted with the process: a node cache needs no draining.
    tokio::spawn(node_watch);
    let mut drains: FuturesUnordered<_> = controllers
        .into_iter()
        .zip(stores)
        .map(|(controller, store)| {
            let drive = drive(controller, ctx.clone(), stop.clone().requested());
            let stop = stop.clone();
            async move { drain(drive, &store, &stop, deadline).await }
        })
        .collect();
    while drains.next().await.is_some() {
        if !stop.was_requested() {
            // One namespace's controller ended on its own: exit rather than run on blind to that
            // namespace (the Deployment restarts the operator).
            tracing::error!(
                "a controller stopped without a shutdown signal; stopping the operator"
            );
            break;
        }
    }
    // The Events the last reconciles handed over go out before the process ends.
    ctx.events.flush(EVENTS_AT_SHUTDOWN).await;
}

/// How long the Events still queued at shutdown may take to be published.
const EVENTS_AT_SHUTDOWN: Duration = Duration::from_secs(2);

/// The admin server began its own graceful shutdown with the first signal; an idle keep-alive
/// connection (a metrics scraper) must not hold the process either.
async fn close_admin(mut admin: tokio::task::JoinHandle<std::io::Result<()>>) {
    if tokio::time::timeout(Duration::from_secs(1), &mut admin)
        .await
        .is_err()
    {
        admin.abort();
        tracing::debug!("admin server connections closed without waiting");
    }
}

/// The operator's Controllers, their caches of runs, and the context they share.
pub struct Wiring {
    /// One Controller per watched namespace, or one over the whole cluster.
    pub controllers: Vec<Controller<DeserializeGuard<BenchmarkRun>>>,
    /// Each Controller's cache of BenchmarkRuns, in the same order.
    pub stores: Vec<Store<DeserializeGuard<BenchmarkRun>>>,
    /// The context every Controller reconciles with; it sees every cache, so the admission
    /// queue counts runs across all watched namespaces.
    pub ctx: Arc<reconcile::Context>,
    /// The watch that keeps the context's cache of nodes (`node_cache.rs`), for the caller to
    /// drive; until it has listed them, each fit check lists them from the API server.
    pub node_watch: futures::future::BoxFuture<'static, ()>,
}

/// Builds the Controllers for `namespaces` (every namespace when empty, see [`controllers`])
/// and the context they share. Their reconciles pass `gate` first (`gate.rs`).
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
            // Waiting runs are woken through this channel when a slot frees up (queue.rs).
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
    // outage the operator sat idle for minutes. See backoff.rs.
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

/// Turns `/readyz` ready once every Controller's BenchmarkRun watch has listed its runs
/// ([`queue::caches_listed`], checked every 100 ms): before that no reconcile can start, and a
/// rollout that waits for readiness must not take an operator that cannot reach its API server
/// for a working one.
async fn ready_once_listed(
    stores: Vec<Store<DeserializeGuard<BenchmarkRun>>>,
    ready: Arc<AtomicBool>,
) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    while !queue::caches_listed(&stores) {
        tick.tick().await;
    }
    ready.store(true, Ordering::Relaxed);
    tracing::info!("watches listed: ready");
}

/// Says at start-up when the operator's own default images are not on its allow-list: every
/// run that does not name allowed images of its own will then be refused.
fn warn_about_refused_defaults(settings: &adapter::Settings) {
    for (flag, image) in [
        ("--target-image", &settings.target_image),
        ("--loadgen-image", &settings.loadgen_image),
    ] {
        // The flags' parser has checked that the defaults parse.
        if let Ok(parsed) = image.parse()
            && !settings.allowed_images.allows(&parsed)
        {
            tracing::warn!(
                image = %image,
                allowed_images = %settings.allowed_images.describe(),
                "the default image ({flag}) is not allowed: runs must name an allowed image"
            );
        }
    }
}

/// Drives one controller until a shutdown signal, then lets reconciles in flight finish for at
/// most `deadline` (a second signal stops at once).
///
/// Why the deadline and the readiness check: kube's controller starts no reconcile before its
/// BenchmarkRun cache has been listed once, and its graceful shutdown ends only when its
/// (held-back) runner does. With no API server reachable that list never succeeds, so the
/// controller future never completes after a graceful-shutdown request: the process kept
/// running until a second SIGTERM. When the cache was never listed, no reconcile can be in
/// flight, and we stop at once; otherwise in-flight reconciles (a few API calls each) get
/// `deadline` to write their status before the process exits anyway.
async fn drain(
    drive: impl Future<Output = ()>,
    store: &Store<DeserializeGuard<BenchmarkRun>>,
    stop: &ShutdownSignals,
    deadline: Duration,
) {
    tokio::pin!(drive);
    tokio::select! {
        // The signal first: the controller's own graceful shutdown wakes on the same signal,
        // and the readiness check below must decide whether to wait for it.
        biased;
        () = stop.clone().requested() => {}
        () = &mut drive => {
            // The controller's own copy of the signal can win the race against ours: then it
            // has already drained, and that is the normal way out, not a surprise.
            if stop.was_requested() {
                tracing::info!("controller drained");
            } else {
                tracing::warn!("the controller stopped without a shutdown signal");
            }
            return;
        }
    }
    if store.wait_until_ready().now_or_never().is_none() {
        tracing::info!(
            "shutdown requested before the first list of BenchmarkRuns succeeded: no reconcile to wait for"
        );
        return;
    }
    tracing::info!(deadline = ?deadline, "shutdown requested: waiting for reconciles in flight");
    tokio::select! {
        () = &mut drive => tracing::info!("controller drained"),
        () = tokio::time::sleep(deadline) => {
            tracing::warn!(deadline = ?deadline, "reconciles still running at the shutdown deadline; stopping without them (the next operator resumes from status)");
        }
        () = stop.clone().forced() => tracing::warn!("second signal: stopping without waiting for reconciles"),
    }
}

/// SIGTERM / Ctrl-C, counted: the first asks for a graceful shutdown, the second forces one.
#[derive(Clone)]
struct ShutdownSignals {
    count: tokio::sync::watch::Receiver<u32>,
}

impl ShutdownSignals {
    /// Installs the signal handlers now (a signal that arrives before anyone waits still
    /// counts) and counts signals on a background task.
    fn install() -> Self {
        let (tx, count) = tokio::sync::watch::channel(0u32);
        #[cfg(unix)]
        let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
        tokio::spawn(async move {
            #[cfg(unix)]
            let mut term = match term {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot watch SIGTERM; only Ctrl-C stops the operator");
                    None
                }
            };
            loop {
                #[cfg(unix)]
                let term_recv = async {
                    match term.as_mut() {
                        Some(t) => {
                            t.recv().await;
                        }
                        None => std::future::pending::<()>().await,
                    }
                };
                #[cfg(not(unix))]
                let term_recv = std::future::pending::<()>();
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {},
                    () = term_recv => {},
                }
                let n = *tx.borrow() + 1;
                if n == 1 {
                    tracing::info!("graceful shutdown requested; a second signal stops at once");
                }
                if tx.send(n).is_err() {
                    return;
                }
            }
        });
        Self { count }
    }

    async fn at_least(mut self, n: u32) {
        // An error means the counting task ended (runtime shutting down): treat as reached.
        let _ = self.count.wait_for(|c| *c >= n).await;
    }

    /// Whether the first signal has arrived.
    fn was_requested(&self) -> bool {
        *self.count.borrow() >= 1
    }

    /// Resolves on the first signal.
    fn requested(self) -> impl Future<Output = ()> + Send + Sync + 'static {
        self.at_least(1)
    }

    /// Resolves on the second signal.
    fn forced(self) -> impl Future<Output = ()> + Send + Sync + 'static {
        self.at_least(2)
    }
}

#[cfg(test)]
mod args_tests {
    use clap::Parser;

    use super::OperatorArgs;

    #[derive(Debug, Parser)]
    struct Line {
        #[command(flatten)]
        args: OperatorArgs,
    }

    fn parse(flags: &[&str]) -> Result<OperatorArgs, String> {
        Line::try_parse_from(std::iter::once("operator").chain(flags.iter().copied()))
            .map(|l| l.args)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn allowed_images_and_namespaces_repeat_or_take_commas() {
        let args = parse(&[
            "--allowed-images=ghcr.io/acme/*",
            "--allowed-images",
            "registry.local:5000/bench-*:*,docker.io/library/nginx:*",
            "--namespace=bench-a",
            "--namespace",
            "bench-b,bench-c",
        ])
        .unwrap();
        let patterns: Vec<String> = args.allowed_images.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            patterns,
            [
                "ghcr.io/acme/*",
                "registry.local:5000/bench-*:*",
                "docker.io/library/nginx:*"
            ]
        );
        assert_eq!(args.namespaces, ["bench-a", "bench-b", "bench-c"]);
        let none = parse(&[]).unwrap();
        assert!(none.allowed_images.is_empty() && none.namespaces.is_empty());
    }

    #[test]
    fn the_pod_security_level_defaults_to_restricted_and_an_unknown_one_stops_the_start() {
        use crate::resource::pod_security::Level;
        // The environment could set it for the whole test process; the flag wins over it.
        assert_eq!(
            parse(&["--pod-security=restricted"]).unwrap().pod_security,
            Level::Restricted
        );
        if std::env::var_os("BENCHMATRIX_POD_SECURITY").is_none() {
            assert_eq!(parse(&[]).unwrap().pod_security, Level::Restricted);
        }
        assert_eq!(
            parse(&["--pod-security", "baseline"]).unwrap().pod_security,
            Level::Baseline
        );
        for bad in ["Privileged", "none", ""] {
            let flag = format!("--pod-security={bad}");
            let err = parse(&[&flag]).unwrap_err();
            assert!(
                err.contains("expected one of privileged, baseline, restricted")
                    || err.contains("a value is required"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn bad_patterns_and_namespace_names_are_refused_with_a_reason() {
        let err = parse(&["--allowed-images=nginx:*"]).unwrap_err();
        assert!(err.contains("docker.io/library/nginx:*"), "{err}");
        for bad in ["Bench", "-a", "a_b", ""] {
            let flag = format!("--namespace={bad}");
            let err = parse(&[&flag]).unwrap_err();
            assert!(
                err.contains("not a namespace name") || err.contains("a value is required"),
                "{bad}: {err}"
            );
        }
        let long = "a".repeat(64);
        assert!(parse(&["--namespace", &long]).is_err());
    }

    #[test]
    fn default_images_must_be_valid_references_and_are_kept_as_written() {
        let err = parse(&["--target-image=ghcr.io/acme/../x:1"]).unwrap_err();
        assert!(
            err.contains(r#"path component ".." is not a valid name component"#),
            "{err}"
        );
        assert!(parse(&["--loadgen-image=ghcr.io/acme/lg:"]).is_err());
        let args = parse(&["--target-image=nginx:1.27"]).unwrap();
        assert_eq!(args.target_image, "nginx:1.27");
        let defaults = parse(&[]).unwrap();
        assert_eq!(
            defaults.loadgen_image,
            crate::resource::spec::DEFAULT_LOADGEN_IMAGE
        );
    }
}
