//! The operator's own HTTP endpoints: `/healthz` (the process is alive), `/readyz` (the
//! controller has started watching) and `/metrics`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::executors::cluster::telemetry::metrics::Metrics;

/// What the admin endpoints read.
#[derive(Debug, Clone, Default)]
pub struct AdminState {
    /// The operator's metrics.
    pub metrics: Arc<Metrics>,
    /// Set once the controller runs (its watches started).
    pub ready: Arc<AtomicBool>,
    /// Whether this replica may reconcile (the CRD check and the leader Lease): a CRD of
    /// another schema makes it not ready; a standby is ready, and says so.
    pub gate: Arc<crate::executors::cluster::reconciler::gate::Gate>,
}

/// The admin router.
pub fn app(state: AdminState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

async fn readyz(State(state): State<AdminState>) -> impl IntoResponse {
    if let Some(problem) = state.gate.crd_problem() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {problem}"),
        )
    } else if !state.ready.load(Ordering::Relaxed) {
        (StatusCode::SERVICE_UNAVAILABLE, "starting".to_owned())
    } else if !state.gate.is_leading() {
        (
            StatusCode::OK,
            "ready: standby, another replica holds the leader Lease".to_owned(),
        )
    } else {
        (StatusCode::OK, "ready".to_owned())
    }
}

async fn metrics(State(state): State<AdminState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            crate::executors::cluster::telemetry::metrics::CONTENT_TYPE,
        )],
        state.metrics.render(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn get(app: Router, path: &str) -> (StatusCode, String) {
        let res = app
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = res.status();
        let body = res.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn readyz_turns_ready_when_the_controller_runs() {
        let state = AdminState::default();
        let app = app(state.clone());
        assert_eq!(get(app.clone(), "/healthz").await.0, StatusCode::OK);
        assert_eq!(
            get(app.clone(), "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        state.ready.store(true, Ordering::Relaxed);
        assert_eq!(get(app.clone(), "/readyz").await.0, StatusCode::OK);
        let (status, body) = get(app, "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("benchmatrix_reconciles_total"), "{body}");
    }

    #[tokio::test]
    async fn readyz_says_why_the_gate_is_closed() {
        use crate::executors::cluster::reconciler::gate::Gate;
        let state = AdminState {
            gate: Arc::new(Gate::closed(true)),
            ..AdminState::default()
        };
        state.ready.store(true, Ordering::Relaxed);
        let app = app(state.clone());
        let (status, body) = get(app.clone(), "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.contains("not been checked"), "{body}");
        state
            .gate
            .set_crd_problem(Some("the installed CRD differs".into()));
        let (status, body) = get(app.clone(), "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, "not ready: the installed CRD differs");
        state.gate.set_crd_problem(None);
        let (status, body) = get(app.clone(), "/readyz").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("standby"), "{body}");
        state.gate.set_leading(true);
        assert_eq!(get(app, "/readyz").await, (StatusCode::OK, "ready".into()));
    }
}
