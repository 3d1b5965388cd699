//! The operator's own HTTP endpoints: `/healthz` (the process is alive), `/readyz` (the
//! controller has started watching) and `/metrics`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::executors::cluster::metrics::Metrics;

/// What the admin endpoints read.
#[derive(Debug, Clone, Default)]
pub struct AdminState {
    /// The operator's metrics.
    pub metrics: Arc<Metrics>,
    /// Set once the controller runs (its watches started).
    pub ready: Arc<AtomicBool>,
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
    if state.ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "starting")
    }
}

async fn metrics(State(state): State<AdminState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            crate::executors::cluster::metrics::CONTENT_TYPE,
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
}
