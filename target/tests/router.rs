//! Handler-level behaviour through the router, without a process or a socket (axum's
//! `oneshot` pattern).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use benchmatrix_target::app::app;
use benchmatrix_target::config::{Mode, Offload};
use benchmatrix_target::metrics::Metrics;
use benchmatrix_target::pool::Pool;
use benchmatrix_target::service::{AppState, Service, Settings};
use benchmatrix_target::stats::Stats;
use http_body_util::BodyExt;
use tower::ServiceExt;

#[path = "common/openmetrics.rs"]
mod openmetrics;

fn state(mode: Mode, pool_size: usize) -> AppState {
    // A root without cgroup files: the limit is the (given) host count.
    let limit = benchmatrix_quota::detect_in(Path::new("/nonexistent"), None, 2);
    let stats = Arc::new(Stats::new(mode, limit, pool_size, 1));
    let pool = (pool_size > 0)
        .then(|| Pool::start(pool_size, 4, Duration::from_secs(5), Arc::clone(&stats)).unwrap());
    Arc::new(Service {
        settings: Settings {
            mode,
            fast_ms: 2,
            slow_ms: 60,
            offload: Offload::Heavy,
            offload_threshold_ms: 50,
            task_deadline_ms: 5_000,
        },
        metrics: Metrics::new(Arc::clone(&stats)),
        stats,
        pool,
        fib_ns_per_call: 2.0,
    })
}

async fn get(state: &AppState, uri: &str) -> (StatusCode, String, String) {
    let res = app(Arc::clone(state))
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = res.status();
    let ctype = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, ctype, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn stats_has_exactly_the_contract_fields() {
    let s = state(Mode::Single, 0);
    let (status, ctype, body) = get(&s, "/stats").await;
    assert_eq!(status, StatusCode::OK);
    assert!(ctype.starts_with("application/json"));
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut keys: Vec<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    let mut expected = vec![
        "mode",
        "hostCpus",
        "detectedCpus",
        "cpuQuota",
        "quotaSource",
        "poolSize",
        "loopThreads",
        "requestsServed",
        "cpuSecondsUsed",
        "rssBytes",
        "rssPeakBytes",
        "loopLagMaxMs",
        "loopLagP99Ms",
        "queueDepth",
        "queuePeak",
        "rejected",
        "timedOut",
        "throttledPeriods",
        "throttledSeconds",
        "uptimeSeconds",
        "statsPort",
    ];
    expected.sort();
    assert_eq!(keys, expected);
    assert_eq!(doc["mode"], "single");
    assert_eq!(doc["hostCpus"], 2);
    assert_eq!(doc["detectedCpus"], 2);
    assert!(doc["cpuQuota"].is_null());
    assert_eq!(doc["quotaSource"], "host");
    // No cgroup files under the fake root: throttling is unknown, not zero.
    assert!(doc["throttledPeriods"].is_null());
    assert!(doc["rssBytes"].as_u64().unwrap() > 0);
    assert!(doc["rssPeakBytes"].as_u64().unwrap() >= doc["rssBytes"].as_u64().unwrap());
}

#[tokio::test]
async fn metrics_are_openmetrics_text_of_the_same_figures() {
    let s = state(Mode::Pool, 1);
    let _ = get(&s, "/healthz").await;
    let (status, ctype, body) = get(&s, "/metrics").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        ctype,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    for name in [
        "benchmatrix_target_requests_served_total 1\n",
        "# TYPE benchmatrix_target_requests_served counter\n",
        "benchmatrix_target_pool_size 1\n",
        "benchmatrix_target_detected_cpus 2\n",
        "benchmatrix_target_pool_rejected_total 0\n",
        "benchmatrix_target_info{mode=\"pool\",quota_source=\"host\"} 1\n",
    ] {
        assert!(body.contains(name), "missing {name:?} in\n{body}");
    }
    let parsed = openmetrics::parse(&body).unwrap_or_else(|e| panic!("{e}\n{body}"));
    // The figures of /stats, from the same counters.
    let (_, _, doc) = get(&s, "/stats").await;
    let doc: serde_json::Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(
        parsed.value("benchmatrix_target_loop_threads"),
        doc["loopThreads"].as_f64()
    );
    assert_eq!(
        parsed.value("benchmatrix_target_pool_queue_depth"),
        doc["queueDepth"].as_f64()
    );
}

#[tokio::test]
async fn errors_are_json_with_the_right_status() {
    let s = state(Mode::Single, 0);
    for (uri, status, kind) in [
        ("/cpu?ms=-1", StatusCode::BAD_REQUEST, "bad_request"),
        ("/fib?n=1000", StatusCode::BAD_REQUEST, "bad_request"),
        ("/io?ms=999999999", StatusCode::BAD_REQUEST, "bad_request"),
        ("/nope", StatusCode::NOT_FOUND, "not_found"),
    ] {
        let (got, ctype, body) = get(&s, uri).await;
        assert_eq!(got, status, "{uri}");
        assert!(ctype.starts_with("application/json"), "{uri}");
        let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(doc["error"], kind, "{uri}");
    }
}

#[tokio::test]
async fn work_endpoints_do_their_work() {
    let s = state(Mode::Single, 0);
    let (status, _, body) = get(&s, "/fib?n=25").await;
    assert_eq!(status, StatusCode::OK);
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["value"], 75025);
    let (_, _, body) = get(&s, "/cpu?ms=20").await;
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(doc["cpuMs"].as_f64().unwrap() >= 20.0, "{doc}");
    let (_, _, body) = get(&s, "/io?ms=30").await;
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(doc["waitedMs"].as_f64().unwrap() >= 30.0, "{doc}");
    let (status, _, body) = get(&s, "/healthz").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ok\n"));
}

#[tokio::test]
async fn pool_mode_offloads_heavy_work_only() {
    let s = state(Mode::Pool, 1);
    let ran_on =
        |body: String| serde_json::from_str::<serde_json::Value>(&body).unwrap()["ranOn"].clone();
    assert_eq!(ran_on(get(&s, "/fast").await.2), "loop");
    assert_eq!(ran_on(get(&s, "/slow").await.2), "pool");
    assert_eq!(ran_on(get(&s, "/cpu?ms=49").await.2), "loop");
    assert_eq!(
        ran_on(get(&s, "/cpu?ms=50").await.2),
        "pool",
        "the threshold itself is heavy"
    );
}
