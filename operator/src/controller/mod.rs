//! `benchmatrix operator`: the BenchmarkRun controller.
//!
//! Staged as observe (read the current cell's children) -> decide (pure) -> build (pure object
//! builders) -> apply (server-side apply, one field manager) -> status. Watches: BenchmarkRuns
//! (through `DeserializeGuard`, so one malformed object cannot stall the watch), the
//! Deployments and Jobs they own, and pods labelled with a run (image pulls, readiness, OOM).

pub mod apply;
pub mod build;
pub mod calls;
pub mod decide;
pub mod error;
pub mod fit;
pub mod observe;
pub mod reconcile;
pub mod replicas;

pub use calls::{API_CALLS, ApiCall};

#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, watcher};
use kube::{Api, ResourceExt};

use crate::admin::{self, AdminState};
use crate::api::BenchmarkRun;
use crate::metrics::Metrics;
use crate::telemetry::{self, LogFormat};

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
    #[arg(long, env = "BENCHMATRIX_TARGET_IMAGE", default_value = crate::api::spec::DEFAULT_TARGET_IMAGE)]
    pub target_image: String,
    /// Load generator image for runs whose spec.loadgen.image is not set.
    #[arg(long, env = "BENCHMATRIX_LOADGEN_IMAGE", default_value = crate::api::spec::DEFAULT_LOADGEN_IMAGE)]
    pub loadgen_image: String,
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
}

/// `--shutdown-timeout`: a duration written like "20s", "500ms" or "1m".
#[derive(Debug, Clone, Copy)]
pub struct ShutdownTimeout(pub Duration);

impl From<ShutdownTimeout> for Duration {
    fn from(t: ShutdownTimeout) -> Self {
        t.0
    }
}

fn parse_duration(s: &str) -> Result<ShutdownTimeout, String> {
    s.parse::<benchmatrix_loadgen::duration::Duration>()
        .map(|d| ShutdownTimeout(d.0))
        .map_err(|e| format!("{e} (examples: 20s, 500ms, 1m)"))
}

/// Runs the operator until SIGTERM or Ctrl-C.
pub fn main(args: OperatorArgs) -> std::process::ExitCode {
    telemetry::init(args.log_format);
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
    let client = kube::Client::try_default().await?;
    let metrics = Arc::new(Metrics::default());
    let admin_state = AdminState {
        metrics: metrics.clone(),
        ready: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind(args.admin_addr).await?;
    let admin_addr = listener.local_addr().unwrap_or(args.admin_addr);
    tracing::info!(addr = %admin_addr, "admin server listening");
    let admin = tokio::spawn(
        axum::serve(listener, admin::app(admin_state.clone()))
            .with_graceful_shutdown(stop.clone().requested())
            .into_future(),
    );

    let runs = Api::<DeserializeGuard<BenchmarkRun>>::all(client.clone());
    let managed = watcher::Config::default().labels(&format!(
        "{}={}",
        build::MANAGED_BY_LABEL,
        build::MANAGED_BY
    ));
    let controller = Controller::new(runs, watcher::Config::default().any_semantic());
    let store = controller.store();
    let mut ctx =
        reconcile::Context::new(client.clone(), store.clone(), args.max_active_runs, metrics);
    ctx.settings = decide::Settings {
        target_image: args.target_image.clone(),
        loadgen_image: args.loadgen_image.clone(),
    };
    let ctx = Arc::new(ctx);
    admin_state.ready.store(true, Ordering::Relaxed);
    tracing::info!(
        max_active_runs = args.max_active_runs,
        "controller starting"
    );
    let drive = controller
        .owns(Api::<Deployment>::all(client.clone()), managed.clone())
        .owns(Api::<Job>::all(client.clone()), managed.clone())
        .watches(Api::<Pod>::all(client.clone()), managed, |pod: Pod| {
            let ns = pod.namespace();
            pod.labels().get(build::RUN_LABEL).map(|run| {
                ObjectRef::<DeserializeGuard<BenchmarkRun>>::new(run)
                    .within(ns.as_deref().unwrap_or("default"))
            })
        })
        // Not `shutdown_on_signal()`: its graceful drain waits for the BenchmarkRun cache to be
        // listed once, which never happens while the API server is unreachable (see `drain`).
        .graceful_shutdown_on(stop.clone().requested())
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "reconcile did not complete");
            }
        });
    drain(drive, &store, &stop, args.shutdown_timeout.into()).await;
    // The admin server began its own graceful shutdown with the first signal; an idle
    // keep-alive connection (a metrics scraper) must not hold the process either.
    let mut admin = admin;
    if tokio::time::timeout(Duration::from_secs(1), &mut admin)
        .await
        .is_err()
    {
        admin.abort();
        tracing::debug!("admin server connections closed without waiting");
    }
    tracing::info!("operator stopped");
    Ok(())
}

/// Drives the controller until a shutdown signal, then lets reconciles in flight finish for at
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
