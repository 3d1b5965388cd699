//! `benchmatrix operator`: the BenchmarkRun controller.
//!
//! Staged as observe (read the current cell's children) -> decide (pure) -> build (pure object
//! builders) -> apply (server-side apply, one field manager) -> status. Watches: BenchmarkRuns
//! (through `DeserializeGuard`, so one malformed object cannot stall the watch), the
//! Deployments and Jobs they own, and pods labelled with a run (image pulls, readiness, OOM).

pub mod apply;
pub mod build;
pub mod decide;
pub mod error;
pub mod observe;
pub mod reconcile;

#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::ObjectRef;
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
    let client = kube::Client::try_default().await?;
    let metrics = Arc::new(Metrics::default());
    let admin_state = AdminState {
        metrics: metrics.clone(),
        ready: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind(args.admin_addr).await?;
    tracing::info!(addr = %args.admin_addr, "admin server listening");
    let admin = tokio::spawn(
        axum::serve(listener, admin::app(admin_state.clone()))
            .with_graceful_shutdown(shutdown_signal())
            .into_future(),
    );

    let runs = Api::<DeserializeGuard<BenchmarkRun>>::all(client.clone());
    let managed = watcher::Config::default().labels(&format!(
        "{}={}",
        build::MANAGED_BY_LABEL,
        build::MANAGED_BY
    ));
    let controller = Controller::new(runs, watcher::Config::default().any_semantic());
    let mut ctx = reconcile::Context::new(
        client.clone(),
        controller.store(),
        args.max_active_runs,
        metrics,
    );
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
    controller
        .owns(Api::<Deployment>::all(client.clone()), managed.clone())
        .owns(Api::<Job>::all(client.clone()), managed.clone())
        .watches(Api::<Pod>::all(client.clone()), managed, |pod: Pod| {
            let ns = pod.namespace();
            pod.labels().get(build::RUN_LABEL).map(|run| {
                ObjectRef::<DeserializeGuard<BenchmarkRun>>::new(run)
                    .within(ns.as_deref().unwrap_or("default"))
            })
        })
        .shutdown_on_signal()
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "reconcile did not complete");
            }
        })
        .await;
    tracing::info!("controller stopped; draining the admin server");
    let _ = admin.await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
