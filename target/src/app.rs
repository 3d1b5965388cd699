//! The routers: which handler answers each path, on the main port and the statistics port.

use std::sync::atomic::Ordering::Relaxed;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;

use crate::handlers;
use crate::service::AppState;

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
