//! The endpoints. CPU work runs where the mode says: inline on the event-loop thread
//! (`single`, `threads`, and light work in `pool`), or on a pool worker.

use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{Uri, header};
use axum::response::IntoResponse;
use serde_json::{Value, json};

use crate::config::{Mode, Offload};
use crate::error::ApiError;
use crate::pool::TaskError;
use crate::service::AppState;
use crate::work::{MAX_CPU_MS, MAX_FIB_N, MAX_IO_MS, Work};

/// `/fast`: the configured light CPU work (default 12 ms).
pub async fn fast(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let ms = state.settings.fast_ms;
    run_cpu(&state, Work::Burn { ms }).await
}

/// `/slow`: the configured heavy CPU work (default 380 ms).
pub async fn slow(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let ms = state.settings.slow_ms;
    run_cpu(&state, Work::Burn { ms }).await
}

/// `/cpu?ms=N`: burns N ms of thread CPU time.
pub async fn cpu(
    State(state): State<AppState>,
    RawQuery(q): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let ms = param(q.as_deref(), "ms", MAX_CPU_MS)?;
    run_cpu(&state, Work::Burn { ms }).await
}

/// `/fib?n=N`: naive recursive Fibonacci, the seeds' work.
pub async fn fib(
    State(state): State<AppState>,
    RawQuery(q): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let n = param(q.as_deref(), "n", MAX_FIB_N as u64)? as u32;
    run_cpu(&state, Work::Fib { n }).await
}

/// `/io?ms=N`: waits N ms without using CPU, like a call to a database.
pub async fn io(RawQuery(q): RawQuery) -> Result<Json<Value>, ApiError> {
    let ms = param(q.as_deref(), "ms", MAX_IO_MS)?;
    let start = Instant::now();
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(Json(
        json!({ "waitedMs": start.elapsed().as_secs_f64() * 1e3 }),
    ))
}

/// `/healthz`: answers as soon as the loop gets to it, which is what makes it a probe of
/// event-loop responsiveness.
pub async fn healthz() -> &'static str {
    "ok\n"
}

/// `/stats`: the JSON document of contracts.md.
pub async fn stats(State(state): State<AppState>) -> impl IntoResponse {
    Json(state.stats.snapshot())
}

/// `/metrics`: the same figures in the OpenMetrics text format, plus the lag histogram.
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
        state.metrics.render(),
    )
}

/// Anything else: 404 with a JSON body.
pub async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound(uri.path().to_string())
}

/// Runs CPU work inline or on the pool, as the mode and offload policy say.
async fn run_cpu(state: &AppState, work: Work) -> Result<Json<Value>, ApiError> {
    let settings = &state.settings;
    let estimate = work.estimated_ms(state.fib_ns_per_call);
    let offload = settings.mode == Mode::Pool
        && (settings.offload == Offload::All || estimate >= settings.offload_threshold_ms as f64);
    let (done, placed) = match (&state.pool, offload) {
        (Some(pool), true) => {
            let rx = pool.submit(work).map_err(|e| match e {
                TaskError::QueueFull => ApiError::QueueFull {
                    retry_after_secs: retry_after(estimate, pool.size()),
                },
                _ => ApiError::ShuttingDown,
            })?;
            let done = match rx.await {
                Ok(Ok(done)) => done,
                Ok(Err(TaskError::DeadlineExceeded)) => {
                    return Err(ApiError::DeadlineExceeded {
                        deadline_ms: settings.task_deadline_ms,
                    });
                }
                Ok(Err(_)) | Err(_) => return Err(ApiError::ShuttingDown),
            };
            (done, "pool")
        }
        // Inline: this blocks the event-loop thread for the whole computation. That is the
        // experiment in `single` and `threads` mode, and the deliberate choice for light work
        // in `pool` mode (a hop to the pool costs more than it saves).
        // Work without a deadline cannot exceed one; the error arm only keeps this total.
        _ => match work.run(None) {
            Ok(done) => (done, "loop"),
            Err(_) => {
                return Err(ApiError::DeadlineExceeded {
                    deadline_ms: settings.task_deadline_ms,
                });
            }
        },
    };
    let mut body = json!({ "cpuMs": done.cpu_ms, "ranOn": placed });
    if let Some(v) = done.value {
        body["value"] = json!(v);
    }
    Ok(Json(body))
}

/// Seconds until the queue has plausibly drained: one task of this size per worker ahead.
fn retry_after(estimate_ms: f64, workers: usize) -> u64 {
    let secs = (estimate_ms / 1e3 / workers.max(1) as f64).ceil() as u64;
    secs.max(1)
}

/// Reads `name` from a query string as a whole number in `0..=max`.
fn param(query: Option<&str>, name: &str, max: u64) -> Result<u64, ApiError> {
    let raw = query
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
        .ok_or_else(|| ApiError::BadRequest(format!("query parameter `{name}` is required")))?;
    let value: u64 = raw.parse().map_err(|_| {
        ApiError::BadRequest(format!(
            "`{name}` must be a whole number from 0 to {max}, got `{raw}`"
        ))
    })?;
    if value > max {
        return Err(ApiError::BadRequest(format!(
            "`{name}` must be at most {max}, got {value}"
        )));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params() {
        assert_eq!(param(Some("ms=5"), "ms", 10), Ok(5));
        assert_eq!(param(Some("a=1&ms=0"), "ms", 10), Ok(0));
        assert!(param(Some("ms=11"), "ms", 10).is_err());
        assert!(param(Some("ms=-1"), "ms", 10).is_err());
        assert!(param(Some("ms=abc"), "ms", 10).is_err());
        assert!(param(None, "ms", 10).is_err());
        assert_eq!(
            param(Some("ms=1.5"), "ms", 10).unwrap_err().to_string(),
            "`ms` must be a whole number from 0 to 10, got `1.5`"
        );
    }

    #[test]
    fn retry_after_is_at_least_a_second() {
        assert_eq!(retry_after(12.0, 2), 1);
        assert_eq!(retry_after(3_000.0, 1), 3);
    }
}
