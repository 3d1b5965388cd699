//! Starting the operator: [`main`] (the async runtime and the exit code), and a start in named
//! steps: watching for signals, the API client, the admin server, the Controllers and the
//! context they share (`wiring.rs`), readiness, the CRD check and leader election that open the
//! gate, and running until a shutdown signal (`shutdown.rs`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube::core::DeserializeGuard;
use kube::runtime::reflector::Store;

use super::admin::{self, AdminState};
use super::args::OperatorArgs;
use super::leader;
use super::shutdown::{ShutdownSignals, close_admin, run_until_stopped};
use super::wiring::wire;
use crate::executors::cluster::adapter;
use crate::executors::cluster::children::images;
use crate::executors::cluster::placement::queue;
use crate::executors::cluster::reconciler::gate::{self, Gate, LeaseFence};
use crate::executors::cluster::telemetry::kubelet::reader::KubeletReader;
use crate::executors::cluster::telemetry::logging;
use crate::executors::cluster::telemetry::metrics::Metrics;
use crate::resource::BenchmarkRun;
use crate::run_metrics::RunMetrics;

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
    let metrics = Arc::new(Metrics::exporting(RunMetrics::new(args.exported_runs)));
    let client = counted_client(config.clone(), metrics.clone())?;
    let kubelet = kubelet_reader(&args, &config);
    let gate = Arc::new(Gate::closed(args.leader_elect));
    let admin_state = AdminState {
        metrics: metrics.clone(),
        ready: Default::default(),
        gate: gate.clone(),
    };
    let admin = serve_admin(args.admin_addr, admin_state.clone(), &stop).await?;
    let namespaces = watched_namespaces(&args.namespaces);
    let settings = settings(&args);
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
    tokio::spawn(gate::watch_crd(
        client.clone(),
        gate.clone(),
        metrics.clone(),
        wake_all.clone(),
    ));
    let candidacy = stand_for_leader(&args, &config, gate, &metrics, wake_all)?;
    say_starting(args.max_active_runs, &namespaces, &wiring.ctx.settings);
    run_until_stopped(wiring, &stop, args.shutdown_timeout.into()).await;
    // Only once nothing reconciles any more: the standby may take over at once.
    if let Some(candidacy) = candidacy {
        candidacy.release().await;
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

/// The reader of the target containers' figures from the kubelets, unless
/// `--kubelet-metrics=false`.
fn kubelet_reader(args: &OperatorArgs, config: &kube::Config) -> Option<Arc<KubeletReader>> {
    args.kubelet_metrics.then(|| {
        Arc::new(KubeletReader::new(
            config.clone(),
            args.kubelet_insecure_tls,
        ))
    })
}

/// The namespaces `--namespace` names, sorted, each once (none: every namespace).
fn watched_namespaces(named: &[String]) -> Vec<String> {
    let mut namespaces = named.to_vec();
    namespaces.sort();
    namespaces.dedup();
    namespaces
}

/// The operator-wide settings of every run: the default images, the allow-list and the Pod
/// Security level.
fn settings(args: &OperatorArgs) -> adapter::Settings {
    adapter::Settings {
        target_image: args.target_image.clone(),
        loadgen_image: args.loadgen_image.clone(),
        allowed_images: images::ImagePolicy::new(args.allowed_images.clone()),
        pod_security: args.pod_security,
    }
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

/// This replica's part in leader election: the task that keeps the Lease, and the sender that
/// tells it to release the Lease.
struct Candidacy {
    task: tokio::task::JoinHandle<()>,
    release: tokio::sync::oneshot::Sender<()>,
}

impl Candidacy {
    /// Releases the Lease, so a standby may take over at once, waiting at most 3 s for it.
    async fn release(self) {
        let _ = self.release.send(());
        let _ = tokio::time::timeout(Duration::from_secs(3), self.task).await;
    }
}

/// With `--leader-elect`, takes part in leader election on a task of its own, which opens and
/// closes `gate` (and wakes every run through `wake_all` when this replica takes the lead);
/// without it, this replica leads alone.
fn stand_for_leader(
    args: &OperatorArgs,
    config: &kube::Config,
    gate: Arc<Gate>,
    metrics: &Arc<Metrics>,
    wake_all: impl Fn() + Send + 'static,
) -> anyhow::Result<Option<Candidacy>> {
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    if !args.leader_elect {
        metrics.robustness.set_leader(true);
        return Ok(None);
    }
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
    gate.fence_with(LeaseFence::new(
        kube::Api::namespaced(lease_client.clone(), &election.namespace),
        &election.lease,
        &election.identity,
        election.call_timeout(),
    ));
    let task = tokio::spawn(leader::take_part(
        election,
        lease_client,
        gate,
        metrics.clone(),
        wake_all,
        async move {
            let _ = released.await;
        },
    ));
    Ok(Some(Candidacy { task, release }))
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

/// Says what the controller starts with: how many runs may be active, the namespaces watched,
/// the Pod Security level and the images allowed.
fn say_starting(max_active_runs: usize, namespaces: &[String], settings: &adapter::Settings) {
    tracing::info!(
        max_active_runs = max_active_runs,
        namespaces = %if namespaces.is_empty() { "all".to_owned() } else { namespaces.join(",") },
        pod_security = %settings.pod_security,
        allowed_images = %if settings.allowed_images.allows_all() {
            "all".to_owned()
        } else {
            settings.allowed_images.describe()
        },
        "controller starting"
    );
}
