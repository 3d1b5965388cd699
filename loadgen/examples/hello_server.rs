//! A minimal axum server for benchmarks and manual checks: `GET /` and `/healthz` answer "ok";
//! `POST /orders` reads the whole body and answers 201 "ok" when an `Authorization: Bearer`
//! header came with it (401 otherwise), so a benchmark of a POST also shows that the headers
//! and body arrived.
//!
//! `cargo run --release -p benchmatrix-loadgen --example hello_server -- [PORT] [THREADS]`
//! prints `listening on http://127.0.0.1:PORT` once bound (PORT 0 picks a free one). THREADS
//! (default 1) sizes tokio's worker pool, so the peers benchmark can leave the other core to the
//! load generator under test.

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};

async fn order(headers: HeaderMap, body: Bytes) -> (StatusCode, &'static str) {
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer "));
    if bearer && !body.is_empty() {
        (StatusCode::CREATED, "ok")
    } else {
        (StatusCode::UNAUTHORIZED, "no")
    }
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let threads: usize = args.next().and_then(|t| t.parse().ok()).unwrap_or(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let app = Router::new()
            .route("/", get(|| async { "ok" }))
            .route("/healthz", get(|| async { "ok" }))
            .route("/orders", post(order));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        println!("listening on http://{}", listener.local_addr()?);
        axum::serve(listener, app).await
    })
}
