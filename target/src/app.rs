//! The router and the state every handler shares.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;

use crate::config::{Mode, Offload};
use crate::handlers;
use crate::metrics::Metrics;
use crate::pool::Pool;
use crate::stats::Stats;

/// The settings handlers need, resolved from the command line.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Concurrency mode.
    pub mode: Mode,
    /// CPU ms of `/fast`.
    pub fast_ms: u64,
    /// CPU ms of `/slow`.
    pub slow_ms: u64,
    /// What `pool` mode offloads.
    pub offload: Offload,
    /// Work expected to cost at least this many CPU ms is heavy.
    pub offload_threshold_ms: u64,
    /// CPU deadline of a pool task, for error messages.
    pub task_deadline_ms: u64,
}

/// What handlers share: settings, counters, the pool (in `pool` mode) and the fib calibration.
pub struct Service {
    /// Resolved settings.
    pub settings: Settings,
    /// Counters and samples.
    pub stats: Arc<Stats>,
    /// The `/metrics` registry over `stats`.
    pub metrics: Metrics,
    /// The CPU pool; `None` outside `pool` mode.
    pub pool: Option<Pool>,
    /// Measured cost of one recursive fib call, for estimating `/fib` cost.
    pub fib_ns_per_call: f64,
}

/// Cheap-to-clone handle on the [`Service`].
pub type AppState = Arc<Service>;

/// Builds the router. Every response, errors included, is counted in `requestsServed`.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/fast", get(handlers::fast))
        .route("/slow", get(handlers::slow))
        .route("/cpu", get(handlers::cpu))
        .route("/fib", get(handlers::fib))
        .route("/io", get(handlers::io))
        .route("/healthz", get(handlers::healthz))
        .route("/stats", get(handlers::stats))
        .route("/metrics", get(handlers::metrics))
        .fallback(handlers::not_found)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            count_requests,
        ))
        .with_state(state)
}

/// The statistics listener's router: `/stats`, `/healthz` and `/metrics` only. Its responses
/// are not counted in `requestsServed`: reading the figures is not part of the workload. Its
/// `/healthz` says the process is alive; unlike the main port's, it does not wait for a loop.
pub fn stats_app(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(handlers::healthz))
        .route("/stats", get(handlers::stats))
        .route("/metrics", get(handlers::metrics))
        .fallback(handlers::not_found)
        .with_state(state)
}

async fn count_requests(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let res = next.run(req).await;
    state.stats.requests_served.fetch_add(1, Relaxed);
    res
}
