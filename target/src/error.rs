//! Request errors and how they look on the wire: a status code and a small JSON body, so a
//! load generator and a person both see what went wrong.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Everything a handler can fail with.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ApiError {
    /// A query parameter is missing, malformed or out of range.
    #[error("{0}")]
    BadRequest(String),
    /// The pool's queue is full; try again after this many seconds.
    #[error("the CPU pool's queue is full; retry after {retry_after_secs}s")]
    QueueFull {
        /// Value of the Retry-After header.
        retry_after_secs: u64,
    },
    /// The task used its whole CPU deadline.
    #[error("the task used its CPU deadline of {deadline_ms} ms and was abandoned")]
    DeadlineExceeded {
        /// The deadline, for the message.
        deadline_ms: u64,
    },
    /// The pool is shutting down.
    #[error("the service is shutting down")]
    ShuttingDown,
    /// No such route.
    #[error("no such endpoint: {0}")]
    NotFound(String),
}

impl ApiError {
    fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::QueueFull { .. } | ApiError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::DeadlineExceeded { .. } => StatusCode::GATEWAY_TIMEOUT,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "bad_request",
            ApiError::QueueFull { .. } => "queue_full",
            ApiError::DeadlineExceeded { .. } => "deadline_exceeded",
            ApiError::ShuttingDown => "shutting_down",
            ApiError::NotFound(_) => "not_found",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Json(json!({ "error": self.kind(), "message": self.to_string() }));
        let mut res = (self.status(), body).into_response();
        if let ApiError::QueueFull { retry_after_secs } = self
            && let Ok(v) = HeaderValue::from_str(&retry_after_secs.to_string())
        {
            res.headers_mut().insert(header::RETRY_AFTER, v);
        }
        res
    }
}
